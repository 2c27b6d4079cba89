-- Stage: Q/K/V projections with their biases, per-head Q/K norms, RoPE, and the
-- KV append at pos..pos+T-1.
return function(st, ctx)
  local norm = ctx.norm(st)
  local att, qw, kw, vw = st.att, st.q.inputs[2], st.k.inputs[2], st.v.inputs[2]
  local kv = ctx.kv(att)
  local pairs = (att.heads + 2 * att.kv_heads) * att.head_dim // 2
  local q_floats, kv_floats, kv_row = att.heads * att.head_dim, att.kv_heads * att.head_dim, ctx.kv_row(att)
  local none = "(const mkc_bf16 *)0"
  local reads = { ctx.wread(qw), ctx.wread(kw), ctx.wread(vw), ctx.vbytes(st.x, ctx.wstride(qw)) }
  for _, r in ipairs(norm.reads) do reads[#reads + 1] = r end
  local function weight_arg(w)
    if not w then return none end
    reads[#reads + 1] = ctx.wread(w)
    return ctx.weight(w)
  end
  local biases = { weight_arg(st.q.inputs[3]), weight_arg(st.k.inputs[3]), weight_arg(st.v.inputs[3]) }
  local head_norms = { weight_arg(st.q_norm and st.q_norm.inputs[2]),
                       weight_arg(st.k_norm and st.k_norm.inputs[2]) }
  -- a normed head is written raw in float (q in place, k to scratch), then read back by the warp
  -- that completes it
  local writes = { ctx.vbytes(st.q_rope, q_floats) }
  if st.q_norm then reads[#reads + 1] = ctx.vbytes(st.q_rope, q_floats) end
  local k_raw = { "(float *)0", 0 }
  if st.k_norm then
    k_raw = { ctx.value(st.k), ctx.vstride(st.k) }
    reads[#reads + 1] = ctx.vbytes(st.k, kv_floats)
    writes[#writes + 1] = ctx.vbytes(st.k, kv_floats)
  end
  writes[#writes + 1] = { "kv", kv.k, { t = kv_row }, "K cache layer " .. att.layer }
  writes[#writes + 1] = { "kv", kv.v, { t = kv_row }, "V cache layer " .. att.layer }
  local head_norm = st.q_norm or st.k_norm
  local work = ("%d row pairs (q/k rotation pairs, v row pairs), one warp per pair"):format(pairs)
  if head_norm then work = work .. "; the warp that completes a q/k head norms and rotates it" end
  return {
    work = work,
    smem = norm.smem,
    items = { c = pairs, unit = "warp" },
    flops = { t = 4 * pairs * ctx.wstride(qw) },
    reads = reads,
    writes = writes,
    code = norm.prologue .. table.concat({
      ("mkc_qkv_rope(%s, %s, %s,"):format(ctx.weight(qw), ctx.weight(kw), ctx.weight(vw)),
      ("             %s, %s, %s,"):format(biases[1], biases[2], biases[3]),
      ("             %d, %d, %d, %d, %d, %d, %s,"):format(ctx.wstride(qw), ctx.chunks(qw), att.heads,
        att.kv_heads, att.head_dim, st.q_rope.layout == "neox" and 1 or 0, ctx.flt(st.q_rope.theta)),
      ("             %s, %d, %s, %s,"):format(ctx.value(st.x), ctx.vstride(st.x), norm.w, norm.inv_rms),
      ("             %s, %s, %s, %s,"):format(head_norms[1], head_norms[2],
        ctx.flt(head_norm and head_norm.eps or 0), head_norm and ctx.head_ready() or "(unsigned *)0"),
      ("             %s, %d, %s, %d,"):format(ctx.value(st.q_rope), ctx.vstride(st.q_rope), k_raw[1], k_raw[2]),
      ("             kv + %d, kv + %d, %d, pos, T);"):format(kv.k, kv.v, ctx.max_ctx),
    }, "\n  "),
  }
end
