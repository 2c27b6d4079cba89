-- A drafter head conditioned on the target's hidden state (issue 15; EAGLE's idea, drafting a
-- block in one step as a block-diffusion drafter does). Each input is a token's embedding (the
-- target's table) plus a projection of the feature: the outputs of n_features of the target's
-- layers at its last chosen token, one after another (by default its last layer's, the LM head's
-- input before its norm: mkc_session_hidden; others the target's kernel keeps,
-- mkc_gen_opts.keep_layers, mkc_session_hidden_layer); one decoder layer of its own;
-- its own final norm and the target's LM head. A step takes the target's last token then
-- mask_token at every other input, the same feature on each, and drafts the token after each input
-- (exec/draft_head.c). Weights: the target's by name (token_embd.weight, output.weight) and its
-- own under "dh.". The presets have the shapes of graphs/llama.lua's of the same name.

preset "tiny" {
  dim = 64, n_layers = 1, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 128,
  vocab = 256, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = true, max_ctx = 64, mask_token = 0, n_features = 1,
}

preset "odd" {
  dim = 72, n_layers = 1, n_heads = 6, n_kv_heads = 2, head_dim = 12, ffn = 172,
  vocab = 300, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-5,
  tied = false, max_ctx = 64, mask_token = 0, n_features = 1,
}

preset "qwen3-tiny" {
  dim = 64, n_layers = 1, n_heads = 4, n_kv_heads = 2, head_dim = 80, ffn = 160,
  vocab = 272, rope_theta = 1000000, rope_layout = "neox", norm_eps = 1e-6,
  tied = true, max_ctx = 64, mask_token = 0, n_features = 1,
}

-- tiny's shape reading two of the target's layers (EAGLE-3 reads a low, a middle and a high one):
-- the outputs of layers 0 and 1, one after another.
preset "tiny-2" {
  dim = 64, n_layers = 1, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 128,
  vocab = 256, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = true, max_ctx = 64, mask_token = 0, n_features = 2,
}

-- SmolLM2-135M's shape (its GGUF's preset, smollm2-135m-8k-lc100k-mix1-ep2, is made from the file).
preset "smollm2-135m" {
  dim = 576, n_layers = 1, n_heads = 9, n_kv_heads = 3, head_dim = 64, ffn = 1536,
  vocab = 49152, rope_theta = 100000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = true, max_ctx = 64, mask_token = 0, n_features = 1,
}

-- Llama 3.2 1B's shape, for GPU benches on random weights (bench --draft-head).
preset "llama-3.2-1b" {
  dim = 2048, n_layers = 1, n_heads = 32, n_kv_heads = 8, head_dim = 64, ffn = 8192,
  vocab = 128256, rope_theta = 500000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = true, max_ctx = 64, mask_token = 0, n_features = 1,
}

function build(g, p)
  local function own(name, rows, cols) return g.weight("dh." .. name .. ".weight", rows, cols) end
  local q_dim, kv_dim = p.n_heads * p.head_dim, p.n_kv_heads * p.head_dim
  local rope = { theta = p.rope_theta, layout = p.rope_layout, head_dim = p.head_dim }

  local x = g.embed(g.weight("token_embd.weight", p.vocab, p.dim), g.tokens())
  x = g.add(x, g.matmul(g.feature(p.n_features * p.dim), own("fc", p.dim, p.n_features * p.dim)))

  local h = g.rmsnorm(x, own("attn_norm", 1, p.dim), p.norm_eps)
  local q = g.rope(g.matmul(h, own("attn_q", q_dim, p.dim)), p.n_heads, rope)
  local k = g.rope(g.matmul(h, own("attn_k", kv_dim, p.dim)), p.n_kv_heads, rope)
  local v = g.matmul(h, own("attn_v", kv_dim, p.dim))
  local a = g.attention(q, k, v, { layer = 0, heads = p.n_heads, kv_heads = p.n_kv_heads,
                                   head_dim = p.head_dim })
  x = g.add(x, g.matmul(a, own("attn_output", p.dim, q_dim)))
  h = g.rmsnorm(x, own("ffn_norm", 1, p.dim), p.norm_eps)
  local gate = g.matmul(h, own("ffn_gate", p.ffn, p.dim))
  local up = g.matmul(h, own("ffn_up", p.ffn, p.dim))
  x = g.add(x, g.matmul(g.swiglu(gate, up), own("ffn_down", p.dim, p.ffn)))

  h = g.rmsnorm(x, own("output_norm", 1, p.dim), p.norm_eps)
  local head = p.tied and g.weight("token_embd.weight", p.vocab, p.dim)
                      or g.weight("output.weight", p.vocab, p.dim)
  g.logits(g.matmul(h, head))
end
