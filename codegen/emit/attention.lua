-- Stage: causal GQA attention of the T queries over the KV cache (a sliding window's: the last
-- window positions, in a ring of kv.rows rows).
return function(st, ctx)
  local att = st.att
  local kv = ctx.kv(att)
  local seen = att.window > 0 and math.min(att.window, ctx.max_ctx) or ctx.max_ctx -- scores per item
  local smem = { { "scores", seen }, { "q_head", att.head_dim }, { "red", ctx.warps } }
  local at = ctx.smem_layout(smem)
  local q_floats, kv_row = att.heads * att.head_dim, ctx.kv_row(att)
  return {
    work = ("%d heads x T items, one block per item"):format(att.heads),
    smem = smem,
    items = { t = att.heads, unit = "block" },
    -- q.k and p.v: 2 * head_dim each per head and attended position
    flops = { att = 4 * att.head_dim * att.heads },
    reads = { ctx.vbytes(st.q, q_floats),
              { "kv", kv.k, { ctx = kv_row }, "K cache layer " .. att.layer },
              { "kv", kv.v, { ctx = kv_row }, "V cache layer " .. att.layer } },
    writes = { ctx.vbytes(st.out, q_floats) },
    code = ctx.call("mkc_attention", {
      q = ctx.value(st.q), q_stride = ctx.vstride(st.q), k_cache = ("kv + %d"):format(kv.k),
      v_cache = ("kv + %d"):format(kv.v), out = ctx.value(st.out), out_stride = ctx.vstride(st.out),
      heads = att.heads, group = att.heads // att.kv_heads, head_dim = att.head_dim, kv_rows = kv.rows,
      window = att.window,
      scale = ctx.flt(1 / math.sqrt(att.head_dim)), pos = "pos", T = "T",
      scores = ctx.smem_ptr("float", at.scores), q_head = ctx.smem_ptr("float", at.q_head),
      red = ctx.smem_ptr("float", at.red),
    }, { "out_stride", "T" }) .. ";",
  }
end
