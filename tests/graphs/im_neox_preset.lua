-- Appended to graphs/llama.lua (not a graph alone): im-tiny (im_tiny_preset.lua) with NeoX RoPE,
-- which a phi3 file carries. `mkc init --arch phi3` writes it with each layer's Q, K and V in
-- attn_qkv and its gate and up in ffn_up; tools/quant_ggml_fixture.sh made
-- tests/data/imatrix_phi3_llamacpp.gguf on that file, which test_imatrix_cli.sh checks
-- `mkc imatrix` against (the entries named as the file's fused matrices).
preset "im-neox" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 192,
  vocab = 300, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-5,
  tied = false, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}
