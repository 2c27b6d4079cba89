-- Stage: gate and up projections with SwiGLU in the epilogue.
return function(st, ctx)
  local norm = ctx.norm(st)
  local gw, uw = st.gate.inputs[2], st.up.inputs[2]
  local reads = { ctx.wread(gw), ctx.wread(uw), ctx.vbytes(st.x, ctx.wstride(gw)) }
  for _, r in ipairs(norm.reads) do reads[#reads + 1] = r end
  return {
    work = ("%d row pairs (gate, up), one warp per pair"):format(gw.rows),
    smem = norm.smem,
    items = { c = gw.rows, unit = "warp" },
    flops = { t = 4 * gw.rows * ctx.wstride(gw) },
    reads = reads,
    writes = { ctx.vbytes(st.out, gw.rows) },
    code = norm.prologue .. ("mkc_matvec_swiglu(%s, %s, %d, %d, %d, %s, %d, %s, %s, %s, %d, T);"):format(
      ctx.weight(gw), ctx.weight(uw), ctx.wstride(gw), gw.rows, ctx.chunks(gw), ctx.value(st.x),
      ctx.vstride(st.x), norm.w, norm.inv_rms, ctx.value(st.out), ctx.vstride(st.out)),
  }
end
