-- Stage: each input's experts chosen from the router's scores, and the first half of theirs
-- (gate and up, SwiGLU) on the normed input (templates/moe.cuh: mkc_moe_up); any T, a task an
-- (input, expert, row block).
return function(st, ctx)
  local moe, gw, uw = st.moe, st.moe.inputs[3], st.moe.inputs[4]
  local E, K, ffn = moe.experts, moe.experts_used, gw.rows // moe.experts
  local rows = ctx.step_rows > ctx.t_chunk and ctx.step_rows or ctx.t_chunk -- T at most
  local smem = { { "sel", rows * 2 * K }, { "inv", rows } }
  local at = ctx.smem_layout(smem)
  -- the experts' rows a step reads depend on its inputs: at most K experts' an input
  local reads = { ctx.wread_rows(gw, K * ffn), ctx.wread_rows(uw, K * ffn), ctx.vbytes(st.x, ctx.wcols(gw)),
                  ctx.vbytes(st.router, E) }
  local nw = st.norm and st.norm.inputs[2]
  if nw then reads[#reads + 1] = ctx.wread(nw) end
  -- the biases (gpt-oss): K experts' rows of each at most
  local function bias(b)
    if not b then return "(const mkc_bf16 *)0" end
    reads[#reads + 1] = ctx.wread_values(b, K * ffn)
    return ctx.weight(b)
  end
  return {
    work = ("T x %d of %d experts x %d row pairs (gate, up), one warp per MKC_ROWS"):format(K, E, ffn),
    smem = smem,
    items = { t = K * ffn, unit = "warp" },
    flops = { t = 4 * K * ffn * ctx.wcols(gw) },
    reads = reads,
    writes = { ctx.vbytes(st.hidden, K * ffn), ctx.vbytes(st.choice, 2 * K) },
    code = ctx.call("mkc_moe_up", {
      router = ctx.value(st.router), r_stride = ctx.vstride(st.router), E = E, K = K,
      norm_topk = moe.norm_topk, w_gate = ctx.wmat(gw), w_up = ctx.wmat(uw), b_gate = bias(moe.inputs[7]),
      b_up = bias(moe.inputs[8]), ffn = ffn,
      n_chunks = ctx.chunks(gw), x = ctx.value(st.x), x_stride = ctx.vstride(st.x), n = st.x.n,
      norm_w = nw and ctx.weight(nw) or "(const mkc_bf16 *)0", eps = ctx.flt(st.norm and st.norm.eps or 0),
      out = ctx.value(st.hidden), out_stride = ctx.vstride(st.hidden), choice = ctx.value(st.choice),
      c_stride = ctx.vstride(st.choice), T = "T", sel = ctx.smem_ptr("float", at.sel),
      inv = ctx.smem_ptr("float", at.inv),
    }, { "norm_topk", "n_chunks", "eps", "c_stride" }) .. ";",
  }
end
