-- Stage: Q/K/V projections with their biases, per-head Q/K norms, RoPE, and the
-- KV append at pos..pos+T-1 (rows (pos + t) % kv_rows: a sliding window's ring).

-- The rope node's base and scaling as the template's maker of that scaling (mkc_rope_*), whose
-- parameters it passes as literals; the kernel derives each pair's frequency from them.
local function rotary(r, flt)
  if r.nope == 1 then return "mkc_rope_none()" end -- a NoPE layer: q and k as they are
  local args = { r.theta }
  if r.rope_scaling == "linear" then
    args = { r.theta, r.rope_factor }
  elseif r.rope_scaling == "llama3" then
    args = { r.theta, r.rope_factor, r.rope_low_freq_factor, r.rope_high_freq_factor, r.rope_orig_ctx }
  elseif r.rope_scaling == "yarn" then
    args = { r.theta, r.rope_factor, r.rope_orig_ctx, r.rope_beta_fast, r.rope_beta_slow, r.rope_ext_factor,
             r.rope_attn_factor }
  elseif r.rope_scaling == "longrope" then
    args = { r.theta, r.rope_attn_factor } -- and the factors' table, emit.source's
  end
  for i, v in ipairs(args) do args[i] = flt(v) end
  -- an integral base as an integer literal (converted exactly): the layer loop (codegen/fold.lua)
  -- tables differing integers, so layers whose bases differ (Gemma 3's local ones) still fold
  if r.theta == math.floor(r.theta) and math.abs(r.theta) < 2 ^ 24 then
    args[1] = ("%d"):format(math.tointeger(r.theta))
  end
  if r.rope_scaling == "longrope" then args[#args + 1] = "mkc_rope_factors" end
  local maker = r.rope_scaling == "none" and "plain" or r.rope_scaling
  local made = ("mkc_rope_%s(%s)"):format(maker, table.concat(args, ", "))
  if r.rot_dim < r.head_dim then made = ("mkc_rope_partial(%s, %d)"):format(made, r.rot_dim) end
  return made
end

-- The tiled variant's tile: whole heads, max(1, 64 // head_dim) of them, in columns of 64.
local function c_cols(head_dim)
  local group = head_dim < 64 and 64 // head_dim or 1
  return (group * head_dim + 63) // 64 * 64
end

return function(st, ctx)
  -- the split's partials, sums and the norm's squares (templates/matvec.cuh: mkc_split_dot, <= 8 rows)
  local extra = { { "part", ((ctx.warps + 1) * 8 + ctx.warps) * ctx.t_max } }
  if ctx.tiled then for _, r in ipairs(ctx.gemm_smem(c_cols(st.att.head_dim))) do extra[#extra + 1] = r end end
  local norm = ctx.norm(st, extra)
  local at = ctx.smem_layout(norm.smem)
  local att, qw, kw, vw = st.att, st.q.inputs[2], st.k.inputs[2], st.v.inputs[2]
  local kv = ctx.kv(att)
  local pairs = (att.heads + 2 * att.kv_heads) * att.head_dim // 2
  local q_floats, kv_floats, kv_row = att.heads * att.head_dim, att.kv_heads * att.head_dim, ctx.kv_row(att)
  local none = "(const mkc_bf16 *)0"
  local reads = { ctx.wread(qw), ctx.wread(kw), ctx.wread(vw), ctx.vbytes(st.x, ctx.wcols(qw)) }
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
  local tiled = ctx.tiled and ctx.call("mkc_gemm_qkv", ctx.gemm_args({
    w_q = ctx.wmat(qw), w_k = ctx.wmat(kw), w_v = ctx.wmat(vw),
    b_q = biases[1], b_k = biases[2], b_v = biases[3], quantized = ctx.quantized(qw, kw, vw),
    n_chunks = ctx.chunks(qw), heads = att.heads, kv_heads = att.kv_heads,
    head_dim = att.head_dim, layout = st.q_rope.layout == "neox" and 1 or 0,
    rotary = rotary(st.q_rope, ctx.flt),
    x = ctx.value(st.x), x_stride = ctx.vstride(st.x), n_x = norm.n, norm_w = norm.w, eps = norm.eps,
    q_norm_w = head_norms[1], k_norm_w = head_norms[2], head_eps = ctx.flt(head_norm and head_norm.eps or 0),
    q_out = ctx.value(st.q_rope), q_stride = ctx.vstride(st.q_rope),
    k_cache = ("kv + %d"):format(kv.k), v_cache = ("kv + %d"):format(kv.v), kv_rows = kv.rows, pos = "pos",
    T = "T", rows = ctx.rows, c_cols = c_cols(att.head_dim),
  }, at), { "w_v", "b_v", "rotary", "eps", "head_eps", "v_cache", "rows" })
  return {
    work = work,
    smem = norm.smem,
    items = { c = pairs, unit = "warp" },
    flops = { t = 4 * pairs * ctx.wcols(qw) },
    reads = reads,
    writes = writes,
    code = ctx.variants(tiled, norm.before .. ctx.call("mkc_qkv_rope", {
      w_q = ctx.wmat(qw), w_k = ctx.wmat(kw), w_v = ctx.wmat(vw),
      b_q = biases[1], b_k = biases[2], b_v = biases[3],
      n_chunks = ctx.chunks(qw), heads = att.heads, kv_heads = att.kv_heads,
      head_dim = att.head_dim, layout = st.q_rope.layout == "neox" and 1 or 0,
      rotary = rotary(st.q_rope, ctx.flt),
      x = ctx.value(st.x), x_stride = ctx.vstride(st.x), norm_w = norm.w, inv_rms = norm.inv_rms,
      n_x = norm.n, eps = norm.eps, red = norm.red,
      q_norm_w = head_norms[1], k_norm_w = head_norms[2], head_eps = ctx.flt(head_norm and head_norm.eps or 0),
      head_ready = head_norm and ctx.head_ready() or "(unsigned *)0",
      q_out = ctx.value(st.q_rope), q_stride = ctx.vstride(st.q_rope), k_raw = k_raw[1], k_raw_stride = k_raw[2],
      k_cache = ("kv + %d"):format(kv.k), v_cache = ("kv + %d"):format(kv.v), kv_rows = kv.rows, pos = "pos",
      T = "T", rows = ctx.rows, part = ctx.smem_ptr("float", at.part), splitk = ctx.splitk(),
    }, { "w_v", "b_v", "rotary", "red", "head_ready", "k_raw_stride", "T" }) .. ";"),
  }
end
