-- Stage: one matmul, stored or (residual epilogue) added into the residual stream.
return function(st, ctx)
  local norm = ctx.norm(st)
  local accumulate = st.kind == "matvec_residual" and 1 or 0
  local rows, w = st.w.rows, st.w
  return {
    work = ("%d rows, one warp per row"):format(rows),
    smem = norm.smem,
    code = norm.prologue .. ("mkc_matvec(%s, %d, %d, %d, %s, %d, %s, %s, %s, %d, %d, T);"):format(
      ctx.weight(w), ctx.wstride(w), rows, ctx.chunks(w), ctx.value(st.x), ctx.vstride(st.x),
      norm.w, norm.inv_rms, ctx.value(st.out), ctx.vstride(st.out), accumulate),
  }
end
