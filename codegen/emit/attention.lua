-- Stage: causal GQA attention of the T queries over the KV cache (a sliding window's: the last
-- window positions, in a ring of kv.rows rows), split-KV (templates/attention.cuh): a kv head's
-- query heads per pass, its positions split across the grid, the partials merged by the last block.
-- A prompt chunk past t_max takes the tiled variant (templates/gemm_attn.cuh) instead.
local buffers = require("buffers")

return function(st, ctx)
  local att = st.att
  local kv = ctx.kv(att)
  local pass_heads = buffers.att_pass_heads(att)
  -- 16-byte K/V loads where a row is whole vectors (the slots and rows are then 16-byte aligned)
  local vec = 16 // ctx.kv_elem_bytes
  if att.head_dim % vec ~= 0 then vec = 1 end
  local slices = ctx.threads // (att.head_dim // vec) -- p.v: position slices of the block
  local tile = 256 -- MKC_ATT_TILE: two buffers of a tile's scores
  local smem = { { "q_s", pass_heads * att.head_dim }, { "sc2", 2 * pass_heads * tile }, { "stat", 3 * 4 + ctx.warps },
                 { "red", slices * pass_heads * att.head_dim } }
  -- a prompt chunk's variant (templates/gemm_attn.cuh): its tiles over the CUDA-core regions
  local a = ctx.attn_tile
  local tiles = { { "q_tile", a.bm * (8 * a.dt + 4), variant = true, tiled = true },
                  { "k_tile", a.bn * (8 * a.dt + 4), tiled = true }, { "v_tile", a.bn * (8 * a.dt + 8), tiled = true },
                  { "p_tile", a.bm * (a.bn + 4), tiled = true } }
  local tiled = ctx.tiled and att.head_dim <= 8 * a.dt and att.heads // att.kv_heads <= a.bm
  if tiled then for _, r in ipairs(tiles) do smem[#smem + 1] = r end end
  local at = ctx.smem_layout(smem)
  local q_floats, kv_row = att.heads * att.head_dim, ctx.kv_row(att)
  -- the sinks (gpt-oss): each head's score in its softmax's sum
  local sinks = att.inputs[4] and ctx.weight(att.inputs[4]) or "(const mkc_bf16 *)0"
  local function args(extra)
    local t = {
      q = ctx.value(st.q), q_stride = ctx.vstride(st.q), k_cache = ("kv + %d"):format(kv.k),
      v_cache = ("kv + %d"):format(kv.v), out = ctx.value(st.out), out_stride = ctx.vstride(st.out),
      heads = att.heads, group = att.heads // att.kv_heads, head_dim = att.head_dim, kv_rows = kv.rows,
      window = att.window,
      scale = ctx.flt(att.scale or 1 / math.sqrt(att.head_dim)), sinks = sinks, pos = "pos", T = "T",
    }
    for k, v in pairs(extra) do t[k] = v end
    return t
  end
  local code = ctx.call("mkc_attention", args({
    pass_heads = pass_heads, vec = vec, rows = ctx.rows, part = ctx.att_partials(), counters = ctx.att_counters(),
    q_s = ctx.smem_ptr("float", at.q_s), sc2 = ctx.smem_ptr("float", at.sc2),
    stat = ctx.smem_ptr("float", at.stat), red = ctx.smem_ptr("float", at.red),
  }), { "out_stride", "T" }) .. ";"
  if tiled then
    local t = {}
    for _, r in ipairs({ "q_tile", "k_tile", "v_tile", "p_tile" }) do t[r] = ctx.smem_ptr("float", at[r]) end
    t.rows = ctx.rows
    -- the tiles hold one sequence's rows: a wide slot step's are several slots'
    local cond = ctx.slots > 0 and "T > MKC_T_MAX && rm->single >= 0" or nil
    code = ctx.variants(ctx.call("mkc_gemm_attention", args(t), { "out_stride", "T" }), code, cond,
      ctx.slots > 0 and "a prompt chunk" or nil)
  else
    code = ctx.one_input(code)
  end
  return {
    work = ("%d kv heads x %d-head passes x T units, positions split across the blocks; tiles of %d")
      :format(att.kv_heads, pass_heads, tile),
    smem = smem,
    items = { t = att.kv_heads * ((att.heads // att.kv_heads + pass_heads - 1) // pass_heads), unit = "block" },
    -- q.k and p.v: 2 * head_dim each per head and attended position
    flops = { att = 4 * att.head_dim * att.heads },
    reads = { ctx.vbytes(st.q, q_floats),
              { "kv", kv.k, { ctx = kv_row }, "K cache layer " .. att.layer },
              { "kv", kv.v, { ctx = kv_row }, "V cache layer " .. att.layer },
              att.inputs[4] and ctx.wread(att.inputs[4]) or nil },
    writes = { ctx.vbytes(st.out, q_floats) }, -- the split partials (per block, not per position) are not counted
    code = code,
  }
end
