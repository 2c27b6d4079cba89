-- preset: tiny
-- expect: tests/fails/add_scale_negative.lua:28: error: add: scale must be a positive number, got -0.5
-- Defect: a residual branch scaled by a negative number.

preset "tiny" {
  dim = 64, n_layers = 1, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 192,
  vocab = 256, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  max_ctx = 128, rope_scaling = "none",
}

function build(g, p)
  local q_dim, kv_dim = p.n_heads * p.head_dim, p.n_kv_heads * p.head_dim
  local rope = { theta = p.rope_theta, layout = p.rope_layout, head_dim = p.head_dim,
                 scaling = p.rope_scaling }

  local x = g.embed(g.weight("token_embd.weight", p.vocab, p.dim), g.tokens())
  local h = g.rmsnorm(x, g.weight("blk.0.attn_norm.weight", 1, p.dim), p.norm_eps)
  local q = g.rope(g.matmul(h, g.weight("blk.0.attn_q.weight", q_dim, p.dim)), p.n_heads, rope)
  local k = g.rope(g.matmul(h, g.weight("blk.0.attn_k.weight", kv_dim, p.dim)), p.n_kv_heads, rope)
  local v = g.matmul(h, g.weight("blk.0.attn_v.weight", kv_dim, p.dim))
  local a = g.attention(q, k, v, { layer = 0, heads = p.n_heads, kv_heads = p.n_kv_heads,
                                   head_dim = p.head_dim })
  x = g.add(x, g.matmul(a, g.weight("blk.0.attn_output.weight", p.dim, q_dim)))

  h = g.rmsnorm(x, g.weight("blk.0.ffn_norm.weight", 1, p.dim), p.norm_eps)
  local gate = g.matmul(h, g.weight("blk.0.ffn_gate.weight", p.ffn, p.dim))
  local up = g.matmul(h, g.weight("blk.0.ffn_up.weight", p.ffn, p.dim))
  x = g.add(x, g.matmul(g.swiglu(gate, up), g.weight("blk.0.ffn_down.weight", p.dim, p.ffn)), { scale = -0.5 })

  h = g.rmsnorm(x, g.weight("output_norm.weight", 1, p.dim), p.norm_eps)
  g.logits(g.matmul(h, g.weight("token_embd.weight", p.vocab, p.dim)))
end
