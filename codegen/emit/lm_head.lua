-- Stage: LM head, logits to scratch, per-block greedy partials.
return function(st, ctx)
  local norm = ctx.norm(st, { { "warp_val", ctx.warps * ctx.t_max }, { "warp_idx", ctx.warps * ctx.t_max } })
  local at = ctx.smem_layout(norm.smem)
  local w = st.w
  local reads = { ctx.wread(w), ctx.vbytes(st.x, ctx.wstride(w)) }
  for _, r in ipairs(norm.reads) do reads[#reads + 1] = r end
  return {
    work = ("%d vocab rows, one warp per row; argmax partial per block"):format(w.rows),
    smem = norm.smem,
    items = { c = w.rows, unit = "warp" },
    flops = { t = 2 * w.rows * ctx.wstride(w) },
    reads = reads,
    writes = { ctx.vbytes(st.out, w.rows) }, -- the argmax partials (8 bytes per block and token) are not counted
    code = norm.prologue .. table.concat({
      ("mkc_lm_head(%s, %d, %d, %d, %s, %d, %s, %s,"):format(ctx.weight(w), ctx.wstride(w), w.rows,
        ctx.chunks(w), ctx.value(st.x), ctx.vstride(st.x), norm.w, norm.inv_rms),
      ("            %s, %d, T, scratch + %d, (int *)(scratch + %d),"):format(ctx.value(st.out),
        ctx.vstride(st.out), ctx.partials, ctx.partials_idx),
      ("            %s, %s);"):format(ctx.smem_ptr("float", at.warp_val), ctx.smem_ptr("int", at.warp_idx)),
    }, "\n  "),
  }
end
