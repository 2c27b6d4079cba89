-- Stage: a norm on a matmul's output (which the matmul's stage stored) added into the residual
-- stream: Gemma's post-attention and post-FFN norms (templates/norm.cuh).
return function(st, ctx)
  local smem = { { "inv_rms", 1 }, { "red", ctx.warps } }
  local at = ctx.smem_layout(smem)
  local n = st.out.n
  return {
    work = ("T x %d elements: each block sums the squares, then adds its share"):format(n),
    smem = smem,
    items = { t = n, unit = "thread" },
    flops = { t = 5 * n },
    reads = { ctx.wread(st.w), ctx.vbytes(st.x, n), ctx.vbytes(st.out, n) }, -- read-modify-write
    writes = { ctx.vbytes(st.out, n) },
    code = ctx.call("mkc_norm_residual", {
      o = ctx.value(st.x), o_stride = ctx.vstride(st.x), w = ctx.weight(st.w), n = n,
      eps = ctx.flt(st.norm.eps), x = ctx.value(st.out), x_stride = ctx.vstride(st.out), T = "T",
      inv_rms = ctx.smem_ptr("float", at.inv_rms), red = ctx.smem_ptr("float", at.red),
    }) .. ";",
  }
end
