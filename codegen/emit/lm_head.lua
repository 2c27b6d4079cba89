-- Stage: LM head, logits to scratch, per-block greedy partials. A wide slot step (several slots'
-- rows past t_max, templates/slots.cuh) takes the tiled variant: every row's logits on tensor cores.
return function(st, ctx)
  local extra = { { "warp_val", ctx.warps * ctx.t_max }, { "warp_idx", ctx.warps * ctx.t_max } }
  if ctx.wide then
    local tiles = ctx.gemm_smem(64)
    tiles[1].variant = true -- the tiled variant's regions share the decode path's bytes
    tiles[#tiles + 1] = { "best_v", ctx.step_rows, tiled = true }
    tiles[#tiles + 1] = { "best_i", ctx.step_rows, tiled = true }
    for _, r in ipairs(tiles) do extra[#extra + 1] = r end
  end
  local norm = ctx.norm(st, extra)
  local at = ctx.smem_layout(norm.smem)
  local w = st.w
  local reads = { ctx.wread(w), ctx.vbytes(st.x, ctx.wcols(w)) }
  for _, r in ipairs(norm.reads) do reads[#reads + 1] = r end
  local part_val = ("scratch + %d"):format(ctx.partials)
  local part_idx = ("(int *)(scratch + %d)"):format(ctx.partials_idx)
  -- each row's request's logit bias: a slot kernel's rows through its row map
  local rmap = ctx.slots > 0 and "rm" or "(const mkc_rowmap *)0"
  local code = norm.prologue .. ctx.call("mkc_lm_head", {
    w = ctx.wmat(w), rows = w.rows, n_chunks = ctx.chunks(w),
    x = ctx.value(st.x), x_stride = ctx.vstride(st.x), norm_w = norm.w, inv_rms = norm.inv_rms,
    logits = ctx.value(st.out), logits_stride = ctx.vstride(st.out), t0 = "t0", T = "T",
    st = "state", rmap = rmap, part_val = part_val, part_idx = part_idx,
    warp_val = ctx.smem_ptr("float", at.warp_val), warp_idx = ctx.smem_ptr("int", at.warp_idx),
  }, { "inv_rms", "part_idx" }) .. ";"
  if ctx.wide then
    local nw = st.norm and st.norm.inputs[2]
    local tiled = ctx.call("mkc_gemm_lm_head", ctx.gemm_args({
      w = ctx.wmat(w), rows = w.rows, quantized = ctx.quantized(w), n_chunks = ctx.chunks(w),
      x = ctx.value(st.x), x_stride = ctx.vstride(st.x), n_x = st.x.n,
      norm_w = nw and ctx.weight(nw) or "(const mkc_bf16 *)0", eps = ctx.flt(st.norm and st.norm.eps or 0),
      logits = ctx.value(st.out), logits_stride = ctx.vstride(st.out), T = "T",
      st = "state", rmap = rmap, part_val = part_val, part_idx = part_idx,
      best_v = ctx.smem_ptr("float", at.best_v), best_i = ctx.smem_ptr("int", at.best_i),
    }, at), { "eps", "part_idx", "best_i" })
    code = ctx.variants(tiled, code, "T > MKC_T_MAX && rm->single < 0", "a wide step")
  else
    code = ctx.one_input(code)
  end
  return {
    work = ("%d vocab rows, one warp per row; argmax partial per block"):format(w.rows),
    smem = norm.smem,
    items = { c = w.rows, unit = "warp" },
    flops = { t = 2 * w.rows * ctx.wcols(w) },
    reads = reads,
    writes = { ctx.vbytes(st.out, w.rows) }, -- the argmax partials (8 bytes per block and token) are not counted
    code = code,
  }
end
