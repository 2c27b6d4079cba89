-- Appended to graphs/llama.lua (not a graph alone): 8 layers of 256 columns, so that the
-- quantize mixes' first-eighth rules have a layer to act on and every K and IQ type fits the
-- rows (tests/test_quantize_cli.sh).
preset "mix8" {
  dim = 256, n_layers = 8, n_heads = 4, n_kv_heads = 1, head_dim = 64, ffn = 256,
  vocab = 300, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-5,
  tied = false, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}
