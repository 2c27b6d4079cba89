-- Stage: gate and up projections with SwiGLU in the epilogue.
return function(st, ctx)
  local norm = ctx.norm(st)
  local gw, uw = st.gate.inputs[2], st.up.inputs[2]
  local reads = { ctx.wread(gw), ctx.wread(uw), ctx.vbytes(st.x, ctx.wcols(gw)) }
  for _, r in ipairs(norm.reads) do reads[#reads + 1] = r end
  return {
    work = ("%d row pairs (gate, up), one warp per pair"):format(gw.rows),
    smem = norm.smem,
    items = { c = gw.rows, unit = "warp" },
    flops = { t = 4 * gw.rows * ctx.wcols(gw) },
    reads = reads,
    writes = { ctx.vbytes(st.out, gw.rows) },
    code = norm.prologue .. ctx.call("mkc_matvec_swiglu", {
      w_gate = ctx.wmat(gw), w_up = ctx.wmat(uw), rows = gw.rows,
      n_chunks = ctx.chunks(gw), x = ctx.value(st.x), x_stride = ctx.vstride(st.x), norm_w = norm.w,
      inv_rms = norm.inv_rms, out = ctx.value(st.out), out_stride = ctx.vstride(st.out), T = "T",
    }) .. ";",
  }
end
