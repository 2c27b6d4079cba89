-- Stage: causal GQA attention of the T queries over the KV cache (a sliding window's: the last
-- window positions, in a ring of kv.rows rows).
return function(st, ctx)
  local att = st.att
  local kv = ctx.kv(att)
  local seen = att.window > 0 and math.min(att.window, ctx.max_ctx) or ctx.max_ctx -- scores per item
  local smem = { { "scores", seen }, { "q_head", att.head_dim }, { "red", ctx.warps } }
  -- a prompt chunk's variant (templates/gemm_attn.cuh): its tiles over the CUDA-core regions
  local a = ctx.attn_tile
  local tiles = { { "q_tile", a.bm * (8 * a.dt + 4), variant = true }, { "k_tile", a.bn * (8 * a.dt + 4) },
                  { "v_tile", a.bn * (8 * a.dt + 8) }, { "p_tile", a.bm * (a.bn + 4) } }
  local tiled = ctx.tiled and att.head_dim <= 8 * a.dt and att.heads // att.kv_heads <= a.bm
  if tiled then for _, r in ipairs(tiles) do smem[#smem + 1] = r end end
  local at = ctx.smem_layout(smem)
  local q_floats, kv_row = att.heads * att.head_dim, ctx.kv_row(att)
  local function args(extra)
    local t = {
      q = ctx.value(st.q), q_stride = ctx.vstride(st.q), k_cache = ("kv + %d"):format(kv.k),
      v_cache = ("kv + %d"):format(kv.v), out = ctx.value(st.out), out_stride = ctx.vstride(st.out),
      heads = att.heads, group = att.heads // att.kv_heads, head_dim = att.head_dim, kv_rows = kv.rows,
      window = att.window,
      scale = ctx.flt(1 / math.sqrt(att.head_dim)), pos = "pos", T = "T",
    }
    for _, r in ipairs(extra) do t[r] = ctx.smem_ptr("float", at[r]) end
    return t
  end
  local code = ctx.call("mkc_attention", args({ "scores", "q_head", "red" }), { "out_stride", "T" }) .. ";"
  if tiled then
    tiled = ctx.call("mkc_gemm_attention", args({ "q_tile", "k_tile", "v_tile", "p_tile" }), { "out_stride", "T" })
    code = ctx.variants(tiled, code)
  end
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
    code = code,
  }
end
