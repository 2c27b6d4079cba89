-- Stage: Q/K/V projections, RoPE, and the KV append at pos..pos+T-1.
return function(st, ctx)
  local norm = ctx.norm(st)
  local att, qw, kw, vw = st.att, st.q.inputs[2], st.k.inputs[2], st.v.inputs[2]
  local kv = ctx.kv(att)
  local pairs = (att.heads + 2 * att.kv_heads) * att.head_dim // 2
  local kv_row = 4 * att.kv_heads * att.head_dim
  local reads = { ctx.wread(qw), ctx.wread(kw), ctx.wread(vw), ctx.vbytes(st.x, ctx.wstride(qw)) }
  for _, r in ipairs(norm.reads) do reads[#reads + 1] = r end
  return {
    work = ("%d row pairs (q/k rotation pairs, v row pairs), one warp per pair"):format(pairs),
    smem = norm.smem,
    items = { c = pairs, unit = "warp" },
    flops = { t = 4 * pairs * ctx.wstride(qw) },
    reads = reads,
    writes = { ctx.vbytes(st.q_rope, att.heads * att.head_dim),
               { "kv", kv.k, { t = kv_row }, "K cache layer " .. att.layer },
               { "kv", kv.v, { t = kv_row }, "V cache layer " .. att.layer } },
    code = norm.prologue .. table.concat({
      ("mkc_qkv_rope(%s, %s, %s, %d, %d,"):format(ctx.weight(qw), ctx.weight(kw),
        ctx.weight(vw), ctx.wstride(qw), ctx.chunks(qw)),
      ("             %d, %d, %d, %d, %s,"):format(att.heads, att.kv_heads, att.head_dim,
        st.q_rope.layout == "neox" and 1 or 0, ctx.flt(st.q_rope.theta)),
      ("             %s, %d, %s, %s,"):format(ctx.value(st.x), ctx.vstride(st.x), norm.w, norm.inv_rms),
      ("             %s, %d, kv + %d, kv + %d, %d, pos, T);"):format(ctx.value(st.q_rope),
        ctx.vstride(st.q_rope), kv.k, kv.v, ctx.max_ctx),
    }, "\n  "),
  }
end
