#!/usr/bin/env bash
# SmolLM3's layers without RoPE (NoPE: every 4th layer's q and k keep no position) in its model
# files: `mkc init --preset smollm3-tiny` writes a smollm3 GGUF (llama.cpp's fixed step of 4, no
# key) and a Hugging Face folder (model_type smollm3, no_rope_layers), and the cpu kernel gives
# llama.cpp's greedy tokens and log-probabilities on the one (tests/data/smollm3_llamacpp.txt,
# tools/gemma_llamacpp_fixture.sh) and transformers' on the other
# (tests/data/smollm3_transformers.txt, tools/gemma_hf_fixture.sh). Both oracles rotate no q or k
# in layers 3 and 7; the same weights with RoPE in every layer part from them (checked below), so
# a kernel that rotated them anyway would fail. Lists and presets a file cannot say are refused.
source "$(dirname "$0")/lib.sh"
P=3,1,4,1,5,9,2,6,5,3,5,8,9,7,9,3,2,3,8,4

d=$tmp/s3
"$mkc" init --preset smollm3-tiny --seed 5 -o "$d" 2>"$tmp/err" || fail "init smollm3-tiny -o DIR" "$(cat "$tmp/err")"
"$mkc" init --preset smollm3-tiny --seed 5 -o "$d.gguf" 2>"$tmp/err" || fail "init smollm3-tiny -o FILE.gguf" "$(cat "$tmp/err")"
expect_sha "smollm3-tiny: the GGUF is the file llama.cpp read" "$d.gguf" tests/data/smollm3_llamacpp.txt
expect_greedy "smollm3-tiny's GGUF on the cpu kernel against llama.cpp" tests/data/smollm3_llamacpp.txt "$d.gguf"
expect_sha "smollm3-tiny: model.safetensors is the file transformers read" "$d/model.safetensors" \
  tests/data/smollm3_transformers.txt
expect_greedy "smollm3-tiny's folder on the cpu kernel against transformers" tests/data/smollm3_transformers.txt "$d"

"$mkc" info -m "$d.gguf" >"$tmp/info" 2>&1
grep -q '^architecture: smollm3$' "$tmp/info" && grep -q '^graph: .*(interleaved).*, no RoPE every 4 layers from layer 3 (NoPE))$' "$tmp/info" &&
  ok "info on a smollm3 file: interleaved RoPE, none every 4 layers from layer 3" || fail "info on a smollm3 file" "$(cat "$tmp/info")"
for key in '"model_type":	"smollm3"' '"no_rope_layer_interval":	4' '"no_rope_layers":	[1, 1, 1, 0, 1, 1, 1, 0]' '"pad_token_id":	null'; do
  grep -qF "$key" "$d/config.json" && ok "smollm3 config.json: $key" || fail "smollm3 config.json: $key" "$(cat "$d/config.json")"
done

# The oracles see the NoPE layers: with RoPE in every layer (nope_interval 0) the same weights'
# tokens are not llama.cpp's.
sed 's/^  nope_interval = 4,$/  nope_interval = 0,/' graphs/llama.lua >"$tmp/rope.lua"
grep -q '^  nope_interval = 0,$' "$tmp/rope.lua" || fail "rope.lua: nope_interval 0" "sed found no line"
want=$(grep '^[0-9]' tests/data/smollm3_llamacpp.txt | head -20 | cut -d' ' -f1 | tr '\n' ' ')
got=$("$mkc" run --graph "$tmp/rope.lua" --preset smollm3-tiny --random-weights 5 --prompt-ids $P -n 20 --backend ref 2>/dev/null)
got_nope=$("$mkc" run --preset smollm3-tiny --random-weights 5 --prompt-ids $P -n 20 --backend ref 2>/dev/null)
[ "$got_nope " = "$want" ] && [ -n "$got" ] && [ "$got " != "$want" ] &&
  ok "RoPE in every layer gives other tokens than llama.cpp's; NoPE layers give its 20" ||
  fail "the oracle sees the NoPE layers" "llama.cpp: $want" "nope:     $got_nope" "rope:     $got"

# Speculation across the NoPE layers is lossless: drafts verified as plain decoding.
"$mkc" run -m "$d.gguf" --prompt-ids $P -n 40 --backend cpu >"$tmp/plain" 2>"$tmp/err" &&
  "$mkc" run -m "$d.gguf" --prompt-ids $P -n 40 --backend cpu --draft-max 4 >"$tmp/spec" 2>>"$tmp/err"
cmp -s "$tmp/plain" "$tmp/spec" && [ "$(wc -w <"$tmp/plain")" -eq 40 ] &&
  ok "smollm3 file, --draft-max 4: the greedy tokens of plain decoding (40)" ||
  fail "smollm3 file, --draft-max 4: the greedy tokens of plain decoding" "$(cat "$tmp/err")" "$(cat "$tmp/plain")" "$(cat "$tmp/spec")"

# config.json: the interval alone gives the default list; a list of the same interval reads alike;
# another list, or one of the wrong length, is refused.
runs_as_dir() { # NAME DIR: DIR's tokens are the folder's
  if "$mkc" run -m "$2" --prompt-ids $P -n 20 --backend cpu >"$tmp/x.out" 2>"$tmp/err" &&
    [ "$(cat "$tmp/x.out")" = "$("$mkc" run -m "$d" --prompt-ids $P -n 20 --backend cpu 2>/dev/null)" ]; then
    ok "$1"
  else
    fail "$1" "$(cat "$tmp/err")"
  fi
}
config() { # NAME SED: a folder of smollm3-tiny's weights under its config.json edited by SED
  mkdir -p "$tmp/$1"
  cp "$d/model.safetensors" "$tmp/$1/"
  sed "$2" "$d/config.json" >"$tmp/$1/config.json"
}
config nolist '/"no_rope_layers"/d'
runs_as_dir "config.json without no_rope_layers: every no_rope_layer_interval-th layer" "$tmp/nolist"
config nokeys '/"no_rope_layer/d'
runs_as_dir "config.json without either key: SmolLM3Config's interval, 4" "$tmp/nokeys"
config notie '/"tie_word_embeddings"/d'
runs_as_dir "config.json without tie_word_embeddings: SmolLM3Config's tied head" "$tmp/notie"
config odd 's/"no_rope_layers":.*\[1, 1, 1, 0, 1, 1, 1, 0\]/"no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 1]/'
expect_error "no_rope_layers that no interval gives" \
  "mkc: error: $tmp/odd/config.json: \"no_rope_layers\": layer 7 has RoPE, unlike every 4 layers from layer 3 (mkc runs NoPE layers so)" \
  -- run -m "$tmp/odd" --prompt-ids 1 -n 1
config short 's/"no_rope_layers":.*\[1, 1, 1, 0, 1, 1, 1, 0\]/"no_rope_layers": [1, 1, 1, 0]/'
expect_error "no_rope_layers not one a layer" \
  "mkc: error: $tmp/short/config.json: \"no_rope_layers\": Expected 8 of 0 or 1, one a layer; Actual 4" \
  -- run -m "$tmp/short" --prompt-ids 1 -n 1
config two 's/"no_rope_layers":.*\[1, 1, 1, 0, 1, 1, 1, 0\]/"no_rope_layers": [1, 0, 1, 0, 1, 0, 1, 0]/'
"$mkc" info -m "$tmp/two" >"$tmp/info" 2>&1
grep -q '^graph: .*no RoPE every 2 layers from layer 1 (NoPE))$' "$tmp/info" &&
  ok "no_rope_layers of another interval: NoPE every 2 layers" || fail "no_rope_layers every 2" "$(cat "$tmp/info")"

# Presets a smollm3 file cannot carry: NoPE other than every N from layer N - 1, another interval
# than 4 in a GGUF (its folder says it), Q/K norms, NoPE in another architecture.
nope() { preset_edit smollm3-tiny "$1" "$2" "$tmp/n.lua"; }
nope 'nope_interval = 4,' 'nope_interval = 2,'
expect_error "init: NoPE every 2 layers to a GGUF" \
  "mkc: error: preset smollm3-tiny: NoPE every 2 layers: a smollm3 GGUF's are every 4 (llama.cpp's step; no key says another); its Hugging Face folder can say it (-o DIR)" \
  -- init "$tmp/n.lua" --preset smollm3-tiny --seed 1 -o "$tmp/n.gguf"
"$mkc" init "$tmp/n.lua" --preset smollm3-tiny --seed 5 -o "$tmp/n2" 2>"$tmp/err" &&
  grep -qF '"no_rope_layers":	[1, 0, 1, 0, 1, 0, 1, 0]' "$tmp/n2/config.json" &&
  [ "$("$mkc" run -m "$tmp/n2" --prompt-ids $P -n 20 --backend cpu 2>/dev/null)" = \
    "$("$mkc" run --graph "$tmp/n.lua" --preset smollm3-tiny --random-weights 5 --prompt-ids $P -n 20 --backend ref 2>/dev/null)" ] &&
  ok "init: NoPE every 2 layers to a folder, read back as the preset's reference tokens" ||
  fail "init: NoPE every 2 layers to a folder" "$(cat "$tmp/err")"
nope 'nope_interval = 4,' 'nope_interval = 4, post_norms = true,'
expect_error "init: a NoPE preset with norms after attention" \
  "mkc: error: preset smollm3-tiny: layers without RoPE make it a smollm3 file, which has no norms after attention" \
  -- init "$tmp/n.lua" --preset smollm3-tiny --seed 1 -o "$tmp/n.gguf"
nope 'nope_interval = 4,' 'nope_interval = 4, embed_scale = 8, ffn_act = "gelu_tanh",'
expect_error "init: a NoPE preset with Gemma's scaling" \
  "mkc: error: preset smollm3-tiny: layers without RoPE make it a smollm3 file, which has no scaled embeddings" \
  -- init "$tmp/n.lua" --preset smollm3-tiny --seed 1 -o "$tmp/n"
nope 'nope_interval = 4,' 'nope_interval = 4, rope_dim = 8,'
expect_error "init: a NoPE preset with partial RoPE (llama.cpp's smollm3 rotates every dim)" \
  "mkc: error: preset smollm3-tiny: layers without RoPE make it a smollm3 file, which has no partial RoPE" \
  -- init "$tmp/n.lua" --preset smollm3-tiny --seed 1 -o "$tmp/n.gguf"
nope 'qk_norm = false' 'qk_norm = true'
expect_error "init: a NoPE preset with Q/K norms" \
  "mkc: error: preset smollm3-tiny: layers without RoPE make it a smollm3 file, which has no per-head Q/K norms" \
  -- init "$tmp/n.lua" --preset smollm3-tiny --seed 1 -o "$tmp/n.gguf"
expect_error "init: NoPE layers in a phi3 file" \
  "mkc: error: init: --arch phi3: preset smollm3-tiny has smollm3, which a phi3 file does not carry (phi3: NEOX RoPE halves, no biases or head norms, no windows, no scaling but longrope)" \
  -- init --preset smollm3-tiny --arch phi3 --seed 1 -o "$tmp/p.gguf"
[ ! -e "$tmp/n.gguf" ] && [ ! -e "$tmp/n" ] && [ ! -e "$tmp/p.gguf" ] && ok "init: nothing written for a refused NoPE preset" ||
  fail "init: a refused NoPE preset left a file"
finish
