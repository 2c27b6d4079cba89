-- Stage: one matmul, stored or (residual epilogue) added into the residual stream; a prompt chunk
-- takes the tiled variant (templates/gemm.cuh).
return function(st, ctx)
  -- the split's partials, sums and the norm's squares (templates/matvec.cuh: mkc_split_dot, <= 8 rows)
  local extra = { { "part", ((ctx.warps + 1) * 8 + ctx.warps) * ctx.t_max } }
  if ctx.tiled then for _, r in ipairs(ctx.gemm_smem(64)) do extra[#extra + 1] = r end end
  local norm = ctx.norm(st, extra)
  local at = ctx.smem_layout(norm.smem)
  local residual = st.kind == "matvec_residual"
  local rows, w = st.w.rows, st.w
  local reads = { ctx.wread(w), ctx.vbytes(st.x, ctx.wcols(w)) }
  for _, r in ipairs(norm.reads) do reads[#reads + 1] = r end
  -- the bias (gpt-oss's output projection and router), added before the store or the residual add
  local bias = "(const mkc_bf16 *)0"
  if st.bias then
    bias = ctx.weight(st.bias)
    reads[#reads + 1] = ctx.wread(st.bias)
  end
  if residual then reads[#reads + 1] = ctx.vbytes(st.out, rows) end -- read-modify-write
  local decode = norm.before .. ctx.call("mkc_matvec", {
    w = ctx.wmat(w), rows = rows, n_chunks = ctx.chunks(w),
    x = ctx.value(st.x), x_stride = ctx.vstride(st.x), norm_w = norm.w, inv_rms = norm.inv_rms,
    n_x = norm.n, eps = norm.eps, red = norm.red,
    out = ctx.value(st.out), out_stride = ctx.vstride(st.out), accumulate = residual and 1 or 0,
    bias = bias, T = "T", part = ctx.smem_ptr("float", at.part), splitk = ctx.splitk(),
  }) .. ";"
  local tiled = ctx.tiled and ctx.call("mkc_gemm_matvec", ctx.gemm_args({
    w = ctx.wmat(w), rows = rows, quantized = ctx.quantized(w), n_chunks = ctx.chunks(w),
    x = ctx.value(st.x), x_stride = ctx.vstride(st.x), n_x = norm.n, norm_w = norm.w, eps = norm.eps,
    out = ctx.value(st.out), out_stride = ctx.vstride(st.out), accumulate = residual and 1 or 0,
    bias = bias, T = "T", st = "(const mkc_state *)0", rmap = "(const mkc_rowmap *)0",
    best_v = "(float *)0", best_i = "(int *)0",
  }, at), { "eps", "T" })
  return {
    work = ("%d rows, one warp per row"):format(rows),
    smem = norm.smem,
    items = { c = rows, unit = "warp" },
    flops = { t = 2 * rows * ctx.wcols(w) },
    reads = reads,
    writes = { ctx.vbytes(st.out, rows) },
    code = ctx.variants(tiled, decode),
  }
end
