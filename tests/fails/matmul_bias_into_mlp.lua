-- preset: qwen
-- expect: tests/fails/matmul_bias_into_mlp.lua:30: error: codegen: no emitter for matmul with a bias into a gated MLP
-- Defect: a bias on the MLP's gate, which no fused stage adds (the output projection's and a
-- router's are added since gpt-oss; a gated MLP's no model has).

preset "qwen" {
  dim = 64, n_layers = 1, n_heads = 4, n_kv_heads = 2, head_dim = 24, ffn = 160,
  vocab = 256, rope_theta = 1000000, rope_layout = "neox", norm_eps = 1e-6,
  max_ctx = 128,
}

function build(g, p)
  local q_dim, kv_dim = p.n_heads * p.head_dim, p.n_kv_heads * p.head_dim
  local rope = { theta = p.rope_theta, layout = p.rope_layout, head_dim = p.head_dim }

  local x = g.embed(g.weight("token_embd.weight", p.vocab, p.dim), g.tokens())
  local h = g.rmsnorm(x, g.weight("blk.0.attn_norm.weight", 1, p.dim), p.norm_eps)
  local q = g.matmul(h, g.weight("blk.0.attn_q.weight", q_dim, p.dim), g.weight("blk.0.attn_q.bias", 1, q_dim))
  local k = g.matmul(h, g.weight("blk.0.attn_k.weight", kv_dim, p.dim), g.weight("blk.0.attn_k.bias", 1, kv_dim))
  local v = g.matmul(h, g.weight("blk.0.attn_v.weight", kv_dim, p.dim), g.weight("blk.0.attn_v.bias", 1, kv_dim))
  q = g.rmsnorm(q, g.weight("blk.0.attn_q_norm.weight", 1, p.head_dim), p.norm_eps, { group = p.head_dim })
  k = g.rmsnorm(k, g.weight("blk.0.attn_k_norm.weight", 1, p.head_dim), p.norm_eps, { group = p.head_dim })
  q = g.rope(q, p.n_heads, rope)
  k = g.rope(k, p.n_kv_heads, rope)
  local a = g.attention(q, k, v, { layer = 0, heads = p.n_heads, kv_heads = p.n_kv_heads,
                                   head_dim = p.head_dim })
  x = g.add(x, g.matmul(a, g.weight("blk.0.attn_output.weight", p.dim, q_dim)))

  h = g.rmsnorm(x, g.weight("blk.0.ffn_norm.weight", 1, p.dim), p.norm_eps)
  local gate = g.matmul(h, g.weight("blk.0.ffn_gate.weight", p.ffn, p.dim), g.weight("blk.0.ffn_gate.bias", 1, p.ffn))
  local up = g.matmul(h, g.weight("blk.0.ffn_up.weight", p.ffn, p.dim))
  x = g.add(x, g.matmul(g.swiglu(gate, up), g.weight("blk.0.ffn_down.weight", p.dim, p.ffn)))

  h = g.rmsnorm(x, g.weight("output_norm.weight", 1, p.dim), p.norm_eps)
  g.logits(g.matmul(h, g.weight("token_embd.weight", p.vocab, p.dim)))
end
