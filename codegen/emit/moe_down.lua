-- Stage: the second half of each input's experts (down), weighted by their router probabilities,
-- added into the residual stream (templates/moe.cuh: mkc_moe_down); any T, a task an (input, row
-- block), the chosen experts' rows in turn.
return function(st, ctx)
  local moe, dw = st.moe, st.moe.inputs[5]
  local K, dim = moe.experts_used, st.out.n
  local ffn = dw.cols
  local bd = moe.inputs[9] -- the experts' down biases (gpt-oss)
  -- the experts' rows a step reads depend on its inputs: at most K experts' an input
  local reads = { ctx.wread_rows(dw, K * dim), ctx.vbytes(st.hidden, K * ffn), ctx.vbytes(st.choice, 2 * K),
                  ctx.vbytes(st.out, dim) } -- the residual: read-modify-write
  if bd then reads[#reads + 1] = ctx.wread_values(bd, K * dim) end
  return {
    work = ("T x %d rows, %d experts' each, one warp per MKC_ROWS"):format(dim, K),
    smem = {},
    items = { t = dim, unit = "warp" },
    flops = { t = 2 * K * dim * ctx.wcols(dw) },
    reads = reads,
    writes = { ctx.vbytes(st.out, dim) },
    code = ctx.call("mkc_moe_down", {
      choice = ctx.value(st.choice), c_stride = ctx.vstride(st.choice), K = K, w_down = ctx.wmat(dw),
      b_down = bd and ctx.weight(bd) or "(const mkc_bf16 *)0",
      dim = dim, n_chunks = ctx.chunks(dw), hidden = ctx.value(st.hidden), h_stride = ctx.vstride(st.hidden),
      ffn = ffn, out = ctx.value(st.out), out_stride = ctx.vstride(st.out), T = "T",
    }, { "K", "n_chunks", "ffn" }) .. ";",
  }
end
