-- Stage: token embedding of the T inputs.
return function(st, ctx)
  local x = st.out
  return {
    work = ("T x %d elements, grid-strided over threads"):format(x.n),
    smem = {},
    code = ("mkc_embed(%s, %d, %d, %s, %d, state->inputs, T);"):format(
      ctx.weight(st.table_w), ctx.wstride(st.table_w), x.n, ctx.value(x), ctx.vstride(x)),
  }
end
