
-- Presets only the tests use, appended to graphs/llama.lua by them (cat graphs/llama.lua
-- tests/data/test_presets.lua): a dim of 256 (wide: every block type stored as asked, ffn_down's
-- 288 columns one fallback) and five layers (deep: --prune-layers of middle ones).
preset "wide" {
  dim = 256, n_layers = 1, n_heads = 4, n_kv_heads = 2, head_dim = 64, ffn = 288,
  vocab = 64, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = false, max_ctx = 64, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}

preset "deep" {
  dim = 64, n_layers = 5, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 128,
  vocab = 64, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = true, max_ctx = 64, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}
