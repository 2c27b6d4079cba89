-- Stage: causal GQA attention of the T queries over the KV cache.
return function(st, ctx)
  local att = st.att
  local kv = ctx.kv(att)
  local smem = { { "scores", ctx.max_ctx }, { "q_head", att.head_dim }, { "red", ctx.warps } }
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
    code = table.concat({
      ("mkc_attention(%s, %d, kv + %d, kv + %d, %s, %d,"):format(ctx.value(st.q), ctx.vstride(st.q),
        kv.k, kv.v, ctx.value(st.out), ctx.vstride(st.out)),
      ("              %d, %d, %d, %d, %s, pos, T,"):format(att.heads, att.heads // att.kv_heads,
        att.head_dim, ctx.max_ctx, ctx.flt(1 / math.sqrt(att.head_dim))),
      ("              %s, %s, %s);"):format(ctx.smem_ptr("float", at.scores),
        ctx.smem_ptr("float", at.q_head), ctx.smem_ptr("float", at.red)),
    }, "\n  "),
  }
end
