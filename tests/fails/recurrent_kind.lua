-- preset: tiny
-- expect: tests/fails/recurrent_kind.lua:20: error: recurrent: kind must be "gated_delta", got "mamba"
-- Defect: a recurrence of a kind mkc does not know.

preset "tiny" {
  dim = 64, n_layers = 1, heads = 2, k_dim = 8, v_dim = 8, ffn = 192,
  vocab = 256, norm_eps = 1e-5, max_ctx = 128,
}

function build(g, p)
  local channels = p.heads * (2 * p.k_dim + p.v_dim)
  local function w(name, rows, cols) return g.weight("blk.0." .. name .. ".weight", rows, cols) end

  local x = g.embed(g.weight("token_embd.weight", p.vocab, p.dim), g.tokens())
  local h = g.rmsnorm(x, w("attn_norm", 1, p.dim), p.norm_eps)
  local mixed = g.matmul(h, w("ssm_in", channels, p.dim))
  local gates = g.matmul(h, w("ssm_ba", 2 * p.heads, p.dim))
  local conv = w("ssm_conv1d", channels, 4)
  local a_log, dt_bias = g.weight("blk.0.ssm_a", 1, p.heads), g.weight("blk.0.ssm_dt.bias", 1, p.heads)
  local o = g.recurrent(mixed, gates, conv, a_log, dt_bias,
                        { layer = 0, kind = "mamba", heads = p.heads, k_dim = p.k_dim, v_dim = p.v_dim })
  x = g.add(x, g.matmul(o, w("ssm_out", p.dim, p.heads * p.v_dim)))
  h = g.rmsnorm(x, g.weight("output_norm.weight", 1, p.dim), p.norm_eps)
  g.logits(g.matmul(h, g.weight("token_embd.weight", p.vocab, p.dim)))
end
