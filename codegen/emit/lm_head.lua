-- Stage: LM head, logits to scratch, per-block greedy partials.
return function(st, ctx)
  local norm = ctx.norm(st, { { "warp_val", ctx.warps * ctx.t_max }, { "warp_idx", ctx.warps * ctx.t_max } })
  local at = ctx.smem_layout(norm.smem)
  local w = st.w
  local reads = { ctx.wread(w), ctx.vbytes(st.x, ctx.wcols(w)) }
  for _, r in ipairs(norm.reads) do reads[#reads + 1] = r end
  return {
    work = ("%d vocab rows, one warp per row; argmax partial per block"):format(w.rows),
    smem = norm.smem,
    items = { c = w.rows, unit = "warp" },
    flops = { t = 2 * w.rows * ctx.wcols(w) },
    reads = reads,
    writes = { ctx.vbytes(st.out, w.rows) }, -- the argmax partials (8 bytes per block and token) are not counted
    code = norm.prologue .. ctx.call("mkc_lm_head", {
      w = ctx.wmat(w), rows = w.rows, n_chunks = ctx.chunks(w),
      x = ctx.value(st.x), x_stride = ctx.vstride(st.x), norm_w = norm.w, inv_rms = norm.inv_rms,
      logits = ctx.value(st.out), logits_stride = ctx.vstride(st.out), t0 = "t0", T = "T",
      part_val = ("scratch + %d"):format(ctx.partials), part_idx = ("(int *)(scratch + %d)"):format(ctx.partials_idx),
      warp_val = ctx.smem_ptr("float", at.warp_val), warp_idx = ctx.smem_ptr("int", at.warp_idx),
    }, { "inv_rms", "part_idx" }) .. ";",
  }
end
