-- Stage: one matmul, stored or (residual epilogue) added into the residual stream.
return function(st, ctx)
  local norm = ctx.norm(st)
  local residual = st.kind == "matvec_residual"
  local rows, w = st.w.rows, st.w
  local reads = { ctx.wread(w), ctx.vbytes(st.x, ctx.wstride(w)) }
  for _, r in ipairs(norm.reads) do reads[#reads + 1] = r end
  if residual then reads[#reads + 1] = ctx.vbytes(st.out, rows) end -- read-modify-write
  return {
    work = ("%d rows, one warp per row"):format(rows),
    smem = norm.smem,
    items = { c = rows, unit = "warp" },
    flops = { t = 2 * rows * ctx.wstride(w) },
    reads = reads,
    writes = { ctx.vbytes(st.out, rows) },
    code = norm.prologue .. ("mkc_matvec(%s, %d, %d, %d, %s, %d, %s, %s, %s, %d, %d, T);"):format(
      ctx.weight(w), ctx.wstride(w), rows, ctx.chunks(w), ctx.value(st.x), ctx.vstride(st.x),
      norm.w, norm.inv_rms, ctx.value(st.out), ctx.vstride(st.out), residual and 1 or 0),
  }
end
