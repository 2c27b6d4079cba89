-- Stage: token embedding of the T inputs.
return function(st, ctx)
  local x, tw = st.out, st.table_w
  local wread = ctx.wread(tw)
  wread[3] = { t = ctx.wrow_bytes(tw) } -- one table row per input token
  return {
    work = ("T x %d elements, grid-strided over threads"):format(x.n),
    smem = {},
    items = { t = x.n, unit = "thread" },
    flops = {},
    reads = { wread },
    writes = { ctx.vbytes(x, x.n) },
    code = ctx.call("mkc_embed", { table = ctx.wmat(tw), dim = x.n, scale = ctx.flt(x.scale or 1),
      x = ctx.value(x), x_stride = ctx.vstride(x), tokens = "inputs", T = "T" }) .. ";",
  }
end
