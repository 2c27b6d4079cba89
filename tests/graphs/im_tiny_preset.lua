-- Appended to graphs/llama.lua (not a graph alone): a 2-layer llama of 64 columns with the
-- stand-in vocabulary's 300 tokens and interleaved RoPE, as llama.cpp reads a llama GGUF, so
-- llama.cpp and mkc run the same model on the file `mkc init` writes of it. tools/
-- quant_ggml_fixture.sh made tests/data/imatrix_llamacpp.gguf on it; test_imatrix_cli.sh checks
-- `mkc imatrix` against that.
preset "im-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 192,
  vocab = 300, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = false, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}
