-- preset: tiny
-- expect: tests/fails/attention_layer_reused.lua:24: error: attention layer 0 already used at line 24
-- Defect: layer = 0 hard-coded in a two-layer loop (for layer = l): both attentions share one KV cache.

preset "tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 192,
  vocab = 256, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  max_ctx = 128,
}

function build(g, p)
  local function blk(l, name, rows, cols)
    return g.weight(("blk.%d.%s.weight"):format(l, name), rows, cols)
  end
  local q_dim, kv_dim = p.n_heads * p.head_dim, p.n_kv_heads * p.head_dim
  local rope = { theta = p.rope_theta, layout = p.rope_layout, head_dim = p.head_dim }

  local x = g.embed(g.weight("token_embd.weight", p.vocab, p.dim), g.tokens())
  for l = 0, p.n_layers - 1 do
    local h = g.rmsnorm(x, blk(l, "attn_norm", 1, p.dim), p.norm_eps)
    local q = g.rope(g.matmul(h, blk(l, "attn_q", q_dim, p.dim)), p.n_heads, rope)
    local k = g.rope(g.matmul(h, blk(l, "attn_k", kv_dim, p.dim)), p.n_kv_heads, rope)
    local v = g.matmul(h, blk(l, "attn_v", kv_dim, p.dim))
    local a = g.attention(q, k, v, { layer = 0, heads = p.n_heads, kv_heads = p.n_kv_heads,
                                     head_dim = p.head_dim })
    x = g.add(x, g.matmul(a, blk(l, "attn_output", p.dim, q_dim)))

    h = g.rmsnorm(x, blk(l, "ffn_norm", 1, p.dim), p.norm_eps)
    local gate = g.matmul(h, blk(l, "ffn_gate", p.ffn, p.dim))
    local up = g.matmul(h, blk(l, "ffn_up", p.ffn, p.dim))
    x = g.add(x, g.matmul(g.swiglu(gate, up), blk(l, "ffn_down", p.dim, p.ffn)))
  end
  local h = g.rmsnorm(x, g.weight("output_norm.weight", 1, p.dim), p.norm_eps)
  g.logits(g.matmul(h, g.weight("token_embd.weight", p.vocab, p.dim)))
end
