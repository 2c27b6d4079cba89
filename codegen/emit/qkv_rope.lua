-- Stage: Q/K/V projections, RoPE, and the KV append at pos..pos+T-1.
return function(st, ctx)
  local norm = ctx.norm(st)
  local att, qw = st.att, st.q.inputs[2]
  local kv = ctx.kv(att)
  local pairs = (att.heads + 2 * att.kv_heads) * att.head_dim // 2
  return {
    work = ("%d row pairs (q/k rotation pairs, v row pairs), one warp per pair"):format(pairs),
    smem = norm.smem,
    code = norm.prologue .. table.concat({
      ("mkc_qkv_rope(%s, %s, %s, %d, %d,"):format(ctx.weight(qw), ctx.weight(st.k.inputs[2]),
        ctx.weight(st.v.inputs[2]), ctx.wstride(qw), ctx.chunks(qw)),
      ("             %d, %d, %d, %d, %s,"):format(att.heads, att.kv_heads, att.head_dim,
        st.q_rope.layout == "neox" and 1 or 0, ctx.flt(st.q_rope.theta)),
      ("             %s, %d, %s, %s,"):format(ctx.value(st.x), ctx.vstride(st.x), norm.w, norm.inv_rms),
      ("             %s, %d, kv + %d, kv + %d, %d, pos, T);"):format(ctx.value(st.q_rope),
        ctx.vstride(st.q_rope), kv.k, kv.v, ctx.max_ctx),
    }, "\n  "),
  }
end
