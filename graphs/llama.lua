-- Llama-family decoder: token embedding, pre-norm attention with RoPE and grouped-query heads
-- (Q/K/V biases for qwen2: qkv_bias; per-head Q/K norms for qwen3: qk_norm), SwiGLU MLP, final
-- norm, LM head (tied or untied). GGUF weight names; [rows][cols] = [out][in], vectors [1][n].
-- rope_scaling: "none", or how a model stretched past the context it was first trained on scales
-- RoPE: { type = "linear" | "llama3" | "yarn", factor = ..., ... }, or { type = "longrope",
-- short_factor = {...}, long_factor = {...}, orig_ctx = N, attn_factor = A } (docs/MODELS.md).
-- sliding_window: "none", or { size = N } (every layer's attention sees the last N positions, its
-- own included: Mistral), or { size = N, pattern = "5 local : 1 global" } (the pattern repeats
-- over the layers from layer 0: Gemma's local and global layers), with rope_theta = B where the
-- local layers' RoPE has a base of its own, unscaled (Gemma 3's 10000).
-- Optional (a preset without them gets the default): rope_dim, the dims RoPE rotates, each head's
-- first (head_dim; Phi-4-mini: 3/4 of them, the others passed through); embed_scale, each
-- embedding multiplied by it (1; Gemma: sqrt(dim)); attn_scale, the attention scores' scale (0:
-- 1 / sqrt(head_dim)); ffn_act, the MLP gate's activation, "silu" (SwiGLU, the default) or
-- "gelu_tanh" (Gemma's GeGLU);
-- post_norms, a norm on the attention's and the MLP's outputs before each residual add (false;
-- Gemma 2 and 3: GGUF post_attention_norm, post_ffw_norm); attn_softcap and final_softcap, caps c
-- that map the scaled attention scores and the logits x to c * tanh(x / c) (0: none; Gemma 2: 50, 30);
-- residual_scale, each residual branch multiplied by it before it is added (1; Granite's
-- residual_multiplier), and logit_scale, the logits divided by it (1; Granite's logits_scaling).
-- linear_attention: "none", or { pattern = "3 linear : 1 full", heads = H, k_dim = K, v_dim = V,
-- conv = C }: the pattern's linear layers replace attention by a gated delta-rule recurrence
-- (Qwen3-Next's "gated DeltaNet": g.recurrent, runtime/exec/delta_rule.h), which only the
-- reference executor runs so far (--backend ref).
-- moe: "none", or { experts = E, used = K, ffn = F, norm_topk = true | false }: every layer's MLP
-- is sparse (g.moe): a router picks K of E experts per input, each an MLP of F (Qwen3-MoE, Mixtral:
-- GGUF ffn_gate_inp, ffn_{gate,up,down}_exps; templates/moe.cuh); bias = true: each of those
-- matrices has a bias (gpt-oss).
-- attn_sinks (false): each attention head has a sink, a score in its softmax's sum with no value
-- (gpt-oss: blk.N.attn_sinks.weight); o_bias (false): the attention's output projection has a bias.
-- ffn_act "swiglu_oai": gpt-oss's clamped glu, gate * sigmoid(1.702 gate) * (up + 1).
-- ffn_norm_name ("ffn_norm"): the MLP's norm's GGUF name (gpt-oss: "post_attention_norm").
-- nope_interval (0): every nope_interval-th layer, from layer nope_interval - 1, has no RoPE: its q
-- and k pass through rope nodes marked nope (NoPE; SmolLM3: 4). pre_norms (true): false for layers
-- whose attention and MLP read the residual stream as it is, normed after instead (EXAONE 4).

preset "tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 192,
  vocab = 256, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = true, max_ctx = 512, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}

-- Sizes that are not multiples of 32 or of the block size: tails must be right.
preset "odd" {
  dim = 72, n_layers = 2, n_heads = 6, n_kv_heads = 2, head_dim = 12, ffn = 172,
  vocab = 300, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-5,
  tied = false, max_ctx = 384, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}

-- Llama 3.2 1B as Meta ships it: trained on 8192 positions, stretched 32 times by Llama 3's scaling.
preset "llama-3.2-1b" {
  dim = 2048, n_layers = 16, n_heads = 32, n_kv_heads = 8, head_dim = 64, ffn = 8192,
  vocab = 128256, rope_theta = 500000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = true, max_ctx = 4096, qkv_bias = false, qk_norm = false,
  rope_scaling = { type = "llama3", factor = 32, low_freq_factor = 1, high_freq_factor = 4, orig_ctx = 8192 },
  sliding_window = "none", linear_attention = "none",
}

-- Qwen2's shape in small: Q/K/V biases, 5 query heads on one KV head, a dim
-- that is not a multiple of 8 (padded rows), untied head.
preset "qwen2-tiny" {
  dim = 60, n_layers = 2, n_heads = 5, n_kv_heads = 1, head_dim = 12, ffn = 148,
  vocab = 288, rope_theta = 1000000, rope_layout = "neox", norm_eps = 1e-6,
  tied = false, max_ctx = 256, qkv_bias = true, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}

-- Qwen3's shape in small: per-head Q/K norms, n_heads * head_dim != dim, and
-- heads wider than a warp (a lane takes more than one element and pair).
preset "qwen3-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 80, ffn = 160,
  vocab = 272, rope_theta = 1000000, rope_layout = "neox", norm_eps = 1e-6,
  tied = true, max_ctx = 256, qkv_bias = false, qk_norm = true,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}

-- RoPE scaling in small: trained contexts so short that the tests' positions reach past them, and
-- each kind of pair (kept, scaled, mixed) present in a 16-dim head.
-- Llama 3's (the file carries rope_freqs.weight).
preset "llama3-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 192,
  vocab = 256, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = true, max_ctx = 512, qkv_bias = false, qk_norm = false,
  rope_scaling = { type = "llama3", factor = 8, low_freq_factor = 1, high_freq_factor = 4, orig_ctx = 64 },
  sliding_window = "none", linear_attention = "none",
}

-- YaRN on Qwen2's shape (as Qwen2.5 runs past 32k), cos and sin scaled too.
preset "yarn-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 160,
  vocab = 272, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-6,
  tied = false, max_ctx = 256, qkv_bias = true, qk_norm = false,
  rope_scaling = { type = "yarn", factor = 4, orig_ctx = 64 },
  sliding_window = "none", linear_attention = "none",
}

-- Linear scaling on Qwen3's shape: the heads a per-head norm finishes are scaled too.
preset "linear-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 160,
  vocab = 264, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-6,
  tied = true, max_ctx = 256, qkv_bias = false, qk_norm = true,
  rope_scaling = { type = "linear", factor = 4 },
  sliding_window = "none", linear_attention = "none",
}

-- LongRoPE on Phi-3's shape (NEOX halves, separate head; `mkc init --arch phi3` writes it as
-- Phi-3's 128k files are): the short factors where the kernel's context is within the 256
-- positions first trained on (`--ctx 256`), the long ones past it; attn_factor is what Phi-3's
-- converters derive, sqrt(1 + ln(1024 / 256) / ln 256).
preset "longrope-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 160,
  vocab = 276, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-5,
  tied = false, max_ctx = 1024, qkv_bias = false, qk_norm = false,
  rope_scaling = { type = "longrope", orig_ctx = 256, attn_factor = math.sqrt(1.25),
                   short_factor = { 1, 1.02, 1.05, 1.1, 1.25, 1.5, 1.9, 2.4 },
                   long_factor = { 1.1, 1.4, 2.2, 3.6, 5.5, 8, 11.5, 16 } },
  sliding_window = "none", linear_attention = "none",
}

-- Partial RoPE with LongRoPE on Phi-4-mini's shape (NEOX halves, tied head): the first 12 of each
-- head's 16 dims rotated (Phi-4-mini: 96 of 128), the other 4 passed through; a longrope factor
-- for each rotated pair.
preset "partial-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 160,
  vocab = 282, rope_theta = 10000, rope_layout = "neox", rope_dim = 12, norm_eps = 1e-5,
  tied = true, max_ctx = 1024, qkv_bias = false, qk_norm = false,
  rope_scaling = { type = "longrope", orig_ctx = 256, attn_factor = math.sqrt(1.25),
                   short_factor = { 1, 1.05, 1.2, 1.5, 2, 3 }, long_factor = { 1.3, 2, 4, 7, 12, 20 } },
  sliding_window = "none", linear_attention = "none",
}

-- Granite 3's multipliers in small (llama's layers; ibm-granite/granite-3.x: embeddings times 12,
-- scores times 1/128 for heads of 128 (here 1/16), each residual branch times 0.22, logits divided
-- by 8). The head is separate: tied, random weights only repeat the last token (Granite 3 ties it).
preset "granite-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 160,
  vocab = 284, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = false, max_ctx = 256, qkv_bias = false, qk_norm = false,
  embed_scale = 12, attn_scale = 0.0625, residual_scale = 0.22, logit_scale = 8,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}

-- Gemma 3 1B's shape (google/gemma-3-1b-it, text): heads of 256, 5 local layers over 512 positions for
-- each global one, for benchmarks on random weights (`mkc bench --preset gemma-3-1b`); max_ctx is
-- what the benchmarks use, not its trained 32768.
preset "gemma-3-1b" {
  dim = 1152, n_layers = 26, n_heads = 4, n_kv_heads = 1, head_dim = 256, ffn = 6912,
  vocab = 262144, rope_theta = 1000000, rope_layout = "neox", norm_eps = 1e-6,
  tied = true, max_ctx = 4096, qkv_bias = false, qk_norm = true,
  rope_scaling = "none", sliding_window = { size = 512, pattern = "5 local : 1 global", rope_theta = 10000 },
  linear_attention = "none",
  embed_scale = math.sqrt(1152), attn_scale = 0, ffn_act = "gelu_tanh", post_norms = true,
}

-- Gemma 2 2B's shape (google/gemma-2-2b-it): heads of 256, a window of 4096 on every other layer
-- from layer 0, the scores capped at 50 and the logits at 30, for benchmarks on random weights
-- (`mkc bench --preset gemma-2-2b`); max_ctx is what the benchmarks use, not its trained 8192.
preset "gemma-2-2b" {
  dim = 2304, n_layers = 26, n_heads = 8, n_kv_heads = 4, head_dim = 256, ffn = 9216,
  vocab = 256000, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-6,
  tied = true, max_ctx = 4096, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = { size = 4096, pattern = "1 local : 1 global" },
  linear_attention = "none",
  embed_scale = 48, attn_scale = 0, ffn_act = "gelu_tanh", post_norms = true,
  attn_softcap = 50, final_softcap = 30,
}

-- SmolLM2-135M's shape (HuggingFaceTB/SmolLM2-135M-Instruct): for a GPU machine that cannot
-- download the model, `mkc init --preset smollm2-135m --type q4_1` writes a file of its size.
preset "smollm2-135m" {
  dim = 576, n_layers = 30, n_heads = 9, n_kv_heads = 3, head_dim = 64, ffn = 1536,
  vocab = 49152, rope_theta = 100000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = true, max_ctx = 8192, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}

-- Every matrix's columns a whole number of 256-element blocks, so each quantized type (Q4_K and
-- Q6_K included) can store each matrix; a vocabulary that is not a multiple of the rows a warp
-- takes, and an untied head, so the embedding and the LM head are separate tables.
preset "blocks-tiny" {
  dim = 256, n_layers = 2, n_heads = 4, n_kv_heads = 1, head_dim = 64, ffn = 768,
  vocab = 300, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-5,
  tied = false, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
}

-- Mistral's shape in small: every layer's attention over a sliding window, short enough that the
-- tests' positions wrap its ring of rows several times.
preset "swa-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 1, head_dim = 16, ffn = 192,
  vocab = 256, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = false, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = { size = 16 }, linear_attention = "none",
}

-- Local and global layers interleaved, as Gemma's (mkc's own graph otherwise): two layers over a
-- window of 16, then one over every position.
preset "gemma-tiny" {
  dim = 64, n_layers = 3, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 160,
  vocab = 264, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-6,
  tied = true, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = { size = 16, pattern = "2 local : 1 global" },
  linear_attention = "none",
}

-- Gemma 3's shape in small: embeddings scaled by sqrt(dim) (a narrow dim: at 64, a scale of 8
-- drowns what random layers add and the output cycles through two tokens), per-head Q/K norms
-- over heads of 256 as in Gemma 3 1B to 12B (past the chunk attention's tensor-core tiles, which
-- take heads up to 128), a norm after attention and after the MLP too (before each
-- residual add), a GELU-gated MLP, and local layers over a window with a RoPE base of their own,
-- two for each global one.
preset "gemma3-tiny" {
  dim = 16, n_layers = 3, n_heads = 4, n_kv_heads = 1, head_dim = 256, ffn = 160,
  vocab = 280, rope_theta = 1000000, rope_layout = "neox", norm_eps = 1e-6,
  tied = true, max_ctx = 256, qkv_bias = false, qk_norm = true,
  rope_scaling = "none", sliding_window = { size = 16, pattern = "2 local : 1 global", rope_theta = 10000 },
  linear_attention = "none",
  embed_scale = 4, attn_scale = 0, ffn_act = "gelu_tanh", post_norms = true,
}

-- Gemma 2's shape in small: Gemma 3's without its Q/K norms or a local RoPE base, local and global
-- layers taking turns from layer 0, and soft caps on the attention scores and the logits, low
-- enough (Gemma 2's are 50 and 30) that random weights' scores and logits reach where tanh bends.
preset "gemma2-tiny" {
  dim = 16, n_layers = 3, n_heads = 4, n_kv_heads = 2, head_dim = 64, ffn = 96,
  vocab = 288, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-6,
  tied = true, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = { size = 16, pattern = "1 local : 1 global" },
  linear_attention = "none",
  embed_scale = 4, attn_scale = 0, ffn_act = "gelu_tanh", post_norms = true,
  attn_softcap = 2, final_softcap = 3,
}

-- Gemma 1's shape in small (Gemma 2B's heads of 256 on one KV head): embeddings scaled by sqrt(dim)
-- and a GELU-gated MLP, and none of what Gemma 2 and 3 added: no norms after attention and the MLP,
-- no windows, no caps.
preset "gemma1-tiny" {
  dim = 16, n_layers = 3, n_heads = 4, n_kv_heads = 1, head_dim = 256, ffn = 96,
  vocab = 272, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-6,
  tied = true, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
  embed_scale = 4, attn_scale = 0, ffn_act = "gelu_tanh",
}

-- SmolLM3's layers in small: llama's, but every 4th layer's attention has no RoPE (NoPE: its queries
-- and keys carry no position; layers 3 and 7 here).
preset "smollm3-tiny" {
  dim = 64, n_layers = 8, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 160,
  vocab = 320, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-6,
  tied = true, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
  nope_interval = 4,
}

-- EXAONE 4's layers in small (the 1.2B's: every layer global): no norm before attention or the MLP,
-- a norm after each instead (before the residual add), per-head Q/K norms, NEOX RoPE halves.
preset "exaone4-tiny" {
  dim = 64, n_layers = 3, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 160,
  vocab = 320, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-5,
  tied = true, max_ctx = 256, qkv_bias = false, qk_norm = true,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
  post_norms = true, pre_norms = false,
}

-- EXAONE 4 32B's layers in small: EXAONE 4's, with 3 local layers over a window for each global
-- one, which has no RoPE; 64 layers, as llama.cpp gives windows to a 64-layer exaone4 file only.
preset "exaone4-swa-tiny" {
  dim = 64, n_layers = 64, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 64,
  vocab = 320, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-5,
  tied = true, max_ctx = 256, qkv_bias = false, qk_norm = true,
  rope_scaling = "none", sliding_window = { size = 16, pattern = "3 local : 1 global" },
  linear_attention = "none", post_norms = true, pre_norms = false, nope_interval = 4,
}

-- Qwen3-Next's layer pattern in small (mkc's own graph and weight names otherwise): three linear
-- layers, each a gated delta-rule recurrence in place of attention, then one with attention; runs on
-- the reference executor only (--backend ref).
preset "hybrid-tiny" {
  dim = 64, n_layers = 4, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 160,
  vocab = 256, rope_theta = 10000, rope_layout = "neox", norm_eps = 1e-6,
  tied = true, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none",
  linear_attention = { pattern = "3 linear : 1 full", heads = 4, k_dim = 16, v_dim = 16, conv = 4 },
}

-- Qwen3-MoE's shape in small (Qwen3's per-head norms, 8 experts, 3 per input, their weights
-- renormalized).
preset "moe-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 160,
  vocab = 288, rope_theta = 1000000, rope_layout = "neox", norm_eps = 1e-6,
  tied = false, max_ctx = 256, qkv_bias = false, qk_norm = true,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
  moe = { experts = 8, used = 3, ffn = 48, norm_topk = true },
}

-- Mixtral's shape in small (Llama's layers, 4 experts as wide as the dense size, 2 per input):
-- GGUF llama with experts, HF mixtral.
preset "mixtral-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 96,
  vocab = 288, rope_theta = 1000000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = false, max_ctx = 256, qkv_bias = false, qk_norm = false,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
  moe = { experts = 4, used = 2, ffn = 96, norm_topk = true },
}

-- Granite MoE's shape in small (granite-tiny's multipliers, 4 experts as wide as the dense size, 2
-- per input): GGUF granitemoe, HF granitemoe (every expert's gate and up in one tensor).
preset "granitemoe-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 96,
  vocab = 284, rope_theta = 10000, rope_layout = "interleaved", norm_eps = 1e-5,
  tied = false, max_ctx = 256, qkv_bias = false, qk_norm = false,
  embed_scale = 12, attn_scale = 0.0625, residual_scale = 0.22, logit_scale = 8,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
  moe = { experts = 4, used = 2, ffn = 96, norm_topk = true },
}

-- Qwen3-30B-A3B's layers (Qwen/Qwen3-30B-A3B: 128 experts of 768, 8 an input, head norms, heads of
-- 128 on 4 KV heads), 8 of its 48: a GPU bench of expert streaming in 10 GB of bf16 random weights,
-- which a device call can make in seconds (the whole model's 61 GB take minutes).
preset "qwen3-30b-a3b-8l" {
  dim = 2048, n_layers = 8, n_heads = 32, n_kv_heads = 4, head_dim = 128, ffn = 6144,
  vocab = 151936, rope_theta = 1000000, rope_layout = "neox", norm_eps = 1e-6,
  tied = false, max_ctx = 40960, qkv_bias = false, qk_norm = true,
  rope_scaling = "none", sliding_window = "none", linear_attention = "none",
  moe = { experts = 128, used = 8, ffn = 768, norm_topk = true },
}

-- gpt-oss's shape in small (openai/gpt-oss-20b: attention sinks, biases on Q/K/V and the output,
-- local layers over a window taking turns with global ones from layer 0, YaRN, 32 experts with
-- biases, 4 an input, its clamped glu), the window short enough that the tests pass it.
preset "gptoss-tiny" {
  dim = 64, n_layers = 2, n_heads = 4, n_kv_heads = 2, head_dim = 16, ffn = 64,
  vocab = 288, rope_theta = 150000, rope_layout = "neox", norm_eps = 1e-5,
  tied = false, max_ctx = 256, qkv_bias = true, qk_norm = false,
  rope_scaling = { type = "yarn", factor = 4, orig_ctx = 64 },
  sliding_window = { size = 16, pattern = "1 local : 1 global" }, linear_attention = "none",
  attn_sinks = true, o_bias = true, ffn_act = "swiglu_oai", ffn_norm_name = "post_attention_norm",
  moe = { experts = 8, used = 3, ffn = 64, norm_topk = true, bias = true },
}

-- gpt-oss-20b's layers (openai/gpt-oss-20b: 32 experts of 2880, 4 an input, 64 heads of 64 on 8 KV
-- heads, local layers over 128 positions), 8 of its 24: a GPU bench in 15.5 GB of bf16 random weights.
preset "gpt-oss-20b-8l" {
  dim = 2880, n_layers = 8, n_heads = 64, n_kv_heads = 8, head_dim = 64, ffn = 2880,
  vocab = 201088, rope_theta = 150000, rope_layout = "neox", norm_eps = 1e-5,
  tied = false, max_ctx = 131072, qkv_bias = true, qk_norm = false,
  rope_scaling = { type = "yarn", factor = 32, orig_ctx = 4096 },
  sliding_window = { size = 128, pattern = "1 local : 1 global" }, linear_attention = "none",
  attn_sinks = true, o_bias = true, ffn_act = "swiglu_oai", ffn_norm_name = "post_attention_norm",
  moe = { experts = 32, used = 4, ffn = 2880, norm_topk = true, bias = true },
}

-- Layer l's attention window: 0 where it sees every position.
local function window_of(p, l)
  local w = p.sliding_window
  if w == "none" then return 0 end
  if type(w) ~= "table" or math.type(w.size) ~= "integer" or w.size < 1 then
    error("sliding_window: expected \"none\" or { size = N, pattern = \"L local : G global\" }", 2)
  end
  if w.pattern == nil then return w.size end
  local n_local, n_global = tostring(w.pattern):match("^(%d+) local : (%d+) global$")
  n_local, n_global = tonumber(n_local), tonumber(n_global)
  if not n_local or n_local + n_global == 0 then
    error(("sliding_window: pattern %q: expected \"L local : G global\""):format(tostring(w.pattern)), 2)
  end
  return l % (n_local + n_global) < n_local and w.size or 0
end

-- Whether layer l is a linear layer (a recurrence instead of attention).
local function linear_layer(p, l)
  local a = p.linear_attention
  if a == "none" then return false end
  local n_linear, n_full = tostring(type(a) == "table" and a.pattern):match("^(%d+) linear : (%d+) full$")
  n_linear, n_full = tonumber(n_linear), tonumber(n_full)
  if not n_linear or n_linear + n_full == 0 then
    error("linear_attention: expected \"none\" or { pattern = \"L linear : F full\", heads = H, k_dim = K, "
          .. "v_dim = V, conv = C }", 2)
  end
  return l % (n_linear + n_full) < n_linear
end

-- A linear layer's mixer on the normed input h: one projection to q, k and v, one to the gates
-- (a, b), the recurrence, a per-head norm gated by silu(z), and the output projection.
local function linear_mixer(g, p, l, h, blk)
  local a = p.linear_attention
  local H, dk, dv = a.heads, a.k_dim, a.v_dim
  local channels = H * (2 * dk + dv)
  local mixed = g.matmul(h, blk(l, "ssm_in", channels, p.dim))
  local z = g.matmul(h, blk(l, "ssm_gate", H * dv, p.dim))
  local gates = g.matmul(h, blk(l, "ssm_ba", 2 * H, p.dim))
  local o = g.recurrent(mixed, gates, blk(l, "ssm_conv1d", channels, a.conv),
                        g.weight(("blk.%d.ssm_a"):format(l), 1, H), g.weight(("blk.%d.ssm_dt.bias"):format(l), 1, H),
                        { layer = l, kind = "gated_delta", heads = H, k_dim = dk, v_dim = dv })
  o = g.rmsnorm(o, blk(l, "ssm_norm", 1, dv), p.norm_eps, { group = dv })
  return g.matmul(g.swiglu(z, o), blk(l, "ssm_out", p.dim, H * dv))
end

function build(g, p)
  local function blk(l, name, rows, cols)
    return g.weight(("blk.%d.%s.weight"):format(l, name), rows, cols)
  end
  local q_dim, kv_dim = p.n_heads * p.head_dim, p.n_kv_heads * p.head_dim
  local rope = { theta = p.rope_theta, layout = p.rope_layout, head_dim = p.head_dim,
                 scaling = p.rope_scaling, rot_dim = optional(p, "rope_dim", p.head_dim) }
  -- local layers with a RoPE base of their own (Gemma 3), unscaled
  local sw = p.sliding_window
  local local_rope = type(sw) == "table" and sw.rope_theta and
                     { theta = sw.rope_theta, layout = p.rope_layout, head_dim = p.head_dim, scaling = "none" }
  -- every nope_interval-th layer's q and k keep no position (SmolLM3's NoPE layers); its rope node
  -- says the model's RoPE all the same, which a file's metadata reads off the global layers
  local nope = { theta = rope.theta, layout = rope.layout, head_dim = rope.head_dim, scaling = rope.scaling,
                 rot_dim = rope.rot_dim, nope = true }
  local attn_scale = optional(p, "attn_scale", 0) ~= 0 and p.attn_scale or nil
  local resid = optional(p, "residual_scale", 1) ~= 1 and { scale = p.residual_scale } or nil
  local function post_norm(l, name, y) -- y, or y normed before its residual add
    return optional(p, "post_norms", false) and g.rmsnorm(y, blk(l, name, 1, p.dim), p.norm_eps) or y
  end
  local function bias_w(l, name, rows) return g.weight(("blk.%d.%s.bias"):format(l, name), 1, rows) end
  local function bias(l, name, rows) -- nil where the model has none
    return p.qkv_bias and bias_w(l, name, rows) or nil
  end

  local function attention_mixer(l, h)
    local q = g.matmul(h, blk(l, "attn_q", q_dim, p.dim), bias(l, "attn_q", q_dim))
    local k = g.matmul(h, blk(l, "attn_k", kv_dim, p.dim), bias(l, "attn_k", kv_dim))
    local v = g.matmul(h, blk(l, "attn_v", kv_dim, p.dim), bias(l, "attn_v", kv_dim))
    if p.qk_norm then -- each head normalized on its own, before RoPE
      q = g.rmsnorm(q, blk(l, "attn_q_norm", 1, p.head_dim), p.norm_eps, { group = p.head_dim })
      k = g.rmsnorm(k, blk(l, "attn_k_norm", 1, p.head_dim), p.norm_eps, { group = p.head_dim })
    end
    local window = window_of(p, l)
    local r = window > 0 and local_rope or rope
    local every = optional(p, "nope_interval", 0)
    if every > 0 and (l + 1) % every == 0 then r = nope end
    q = g.rope(q, p.n_heads, r)
    k = g.rope(k, p.n_kv_heads, r)
    local sinks = optional(p, "attn_sinks", false) and g.weight(("blk.%d.attn_sinks.weight"):format(l), 1, p.n_heads)
    local a = g.attention(q, k, v, { layer = l, heads = p.n_heads, kv_heads = p.n_kv_heads,
                                     head_dim = p.head_dim, window = window, scale = attn_scale,
                                     softcap = optional(p, "attn_softcap", 0), sinks = sinks or nil })
    local o_bias = optional(p, "o_bias", false) and bias_w(l, "attn_output", p.dim)
    return post_norm(l, "post_attention_norm",
                     g.matmul(a, blk(l, "attn_output", p.dim, q_dim), o_bias or nil))
  end

  -- the MLP on the normed input h: dense, or with moe a router's choice of experts
  local function mlp(l, h)
    local act = optional(p, "ffn_act", "silu") ~= "silu" and p.ffn_act or nil
    local moe = optional(p, "moe", "none")
    if moe ~= "none" then
      if type(moe) ~= "table" or math.type(moe.experts) ~= "integer" or math.type(moe.ffn) ~= "integer" then
        error("moe: expected \"none\" or { experts = E, used = K, ffn = F, norm_topk = true | false }", 2)
      end
      local E = moe.experts
      local biases = moe.bias and { router = bias_w(l, "ffn_gate_inp", E), gate = bias_w(l, "ffn_gate_exps", E * moe.ffn),
                                    up = bias_w(l, "ffn_up_exps", E * moe.ffn), down = bias_w(l, "ffn_down_exps", E * p.dim) }
      local y = g.moe(h, blk(l, "ffn_gate_inp", E, p.dim), blk(l, "ffn_gate_exps", E * moe.ffn, p.dim),
                      blk(l, "ffn_up_exps", E * moe.ffn, p.dim), blk(l, "ffn_down_exps", E * p.dim, moe.ffn),
                      { experts = E, used = moe.used, norm_topk = moe.norm_topk, act = act, biases = biases or nil })
      return y -- not a tail call: the node's line is this one
    end
    local gate = g.matmul(h, blk(l, "ffn_gate", p.ffn, p.dim))
    local up = g.matmul(h, blk(l, "ffn_up", p.ffn, p.dim))
    local y = g.matmul(g.swiglu(gate, up, act and { act = act }), blk(l, "ffn_down", p.dim, p.ffn))
    return y
  end

  local x = g.embed(g.weight("token_embd.weight", p.vocab, p.dim), g.tokens(),
                    optional(p, "embed_scale", 1) ~= 1 and { scale = p.embed_scale } or nil)
  for l = 0, p.n_layers - 1 do
    local pre = optional(p, "pre_norms", true)
    local h = pre and g.rmsnorm(x, blk(l, "attn_norm", 1, p.dim), p.norm_eps) or x
    x = g.add(x, linear_layer(p, l) and linear_mixer(g, p, l, h, blk) or attention_mixer(l, h), resid)

    h = pre and g.rmsnorm(x, blk(l, optional(p, "ffn_norm_name", "ffn_norm"), 1, p.dim), p.norm_eps) or x
    x = g.add(x, post_norm(l, "post_ffw_norm", mlp(l, h)), resid)
  end
  local h = g.rmsnorm(x, g.weight("output_norm.weight", 1, p.dim), p.norm_eps)
  local head = p.tied and g.weight("token_embd.weight", p.vocab, p.dim)
                      or g.weight("output.weight", p.vocab, p.dim)
  g.logits(g.matmul(h, head), { softcap = optional(p, "final_softcap", 0),
                                scale = 1 / optional(p, "logit_scale", 1) })
end
