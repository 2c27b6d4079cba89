-- Stage: gate and up projections with SwiGLU in the epilogue; a prompt chunk takes the tiled
-- variant (templates/gemm.cuh).
return function(st, ctx)
  -- the split's partials and sums of gate and up rows, and the norm's squares (templates/matvec.cuh:
  -- mkc_split_dot)
  local extra = { { "part", ((ctx.warps + 1) * 16 + ctx.warps) * ctx.t_max } }
  if ctx.tiled then for _, r in ipairs(ctx.gemm_smem(64)) do extra[#extra + 1] = r end end
  local norm = ctx.norm(st, extra)
  local at = ctx.smem_layout(norm.smem)
  local gw, uw = st.gate.inputs[2], st.up.inputs[2]
  local reads = { ctx.wread(gw), ctx.wread(uw), ctx.vbytes(st.x, ctx.wcols(gw)) }
  for _, r in ipairs(norm.reads) do reads[#reads + 1] = r end
  local decode = norm.before .. ctx.call("mkc_matvec_swiglu", {
    w_gate = ctx.wmat(gw), w_up = ctx.wmat(uw), rows = gw.rows,
    n_chunks = ctx.chunks(gw), x = ctx.value(st.x), x_stride = ctx.vstride(st.x), norm_w = norm.w,
    inv_rms = norm.inv_rms, n_x = norm.n, eps = norm.eps, red = norm.red,
    out = ctx.value(st.out), out_stride = ctx.vstride(st.out), T = "T",
    part = ctx.smem_ptr("float", at.part), splitk = ctx.splitk(),
  }) .. ";"
  local tiled = ctx.tiled and ctx.call("mkc_gemm_swiglu", ctx.gemm_args({
    w_gate = ctx.wmat(gw), w_up = ctx.wmat(uw), rows = gw.rows, quantized = ctx.quantized(gw, uw),
    n_chunks = ctx.chunks(gw), x = ctx.value(st.x), x_stride = ctx.vstride(st.x), n_x = norm.n,
    norm_w = norm.w, eps = norm.eps, out = ctx.value(st.out), out_stride = ctx.vstride(st.out), T = "T",
  }, at), { "w_up", "eps", "T" })
  return {
    work = ("%d row pairs (gate, up), one warp per pair"):format(gw.rows),
    smem = norm.smem,
    items = { c = gw.rows, unit = "warp" },
    flops = { t = 4 * gw.rows * ctx.wcols(gw) },
    reads = reads,
    writes = { ctx.vbytes(st.out, gw.rows) },
    code = ctx.variants(tiled, decode),
  }
end
