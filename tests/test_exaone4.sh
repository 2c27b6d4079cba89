#!/usr/bin/env bash
# EXAONE 4's layers in its model files: no norm before attention and the MLP, one after each, per-head
# Q/K norms; the 32B's 3 local layers over a window for each global one, which has no RoPE.
# `mkc init --preset exaone4-tiny` (every layer global) and `--preset exaone4-swa-tiny` (64 layers
# with windows: llama.cpp gives windows to a 64-layer exaone4 file only) write an exaone4 GGUF and a
# Hugging Face folder (model_type exaone4); the cpu kernel gives llama.cpp's greedy tokens and
# log-probabilities on the GGUFs (tests/data/exaone4{,_swa}_llamacpp.txt,
# tools/gemma_llamacpp_fixture.sh) with F32 matrices (with BF16 ones llama.cpp's CPU rounds
# activations: 0.014 apart over 64 layers) and an F16 cache as llama.cpp's, and transformers' on the
# folders (tests/data/exaone4{,_swa}_transformers.txt, tools/gemma_hf_fixture.sh) with an F32 cache
# as transformers'. (With bf16's, exaone4-swa-tiny's step 33, a near tie of 0.003, goes the other
# way.) What a file cannot carry is refused.
source "$(dirname "$0")/lib.sh"
P=3,1,4,1,5,9,2,6,5,3,5,8,9,7,9,3,2,3,8,4

for preset in exaone4-tiny exaone4-swa-tiny; do
  name=${preset%-tiny}
  name=${name/-/_}
  d=$tmp/$preset
  "$mkc" init --preset "$preset" --seed 5 -o "$d" 2>"$tmp/err" || fail "init $preset -o DIR" "$(cat "$tmp/err")"
  "$mkc" init --preset "$preset" --seed 5 --type f32 -o "$d.gguf" 2>"$tmp/err" ||
    fail "init $preset --type f32 -o FILE.gguf" "$(cat "$tmp/err")"
  expect_sha "$preset: the GGUF is the file llama.cpp read" "$d.gguf" "tests/data/${name}_llamacpp.txt"
  MKC_KV_DTYPE=f16 expect_greedy "$preset's GGUF on the cpu kernel against llama.cpp" \
    "tests/data/${name}_llamacpp.txt" "$d.gguf"
  expect_sha "$preset: model.safetensors is the file transformers read" "$d/model.safetensors" \
    "tests/data/${name}_transformers.txt"
  MKC_KV_DTYPE=f32 expect_greedy "$preset's folder on the cpu kernel against transformers" \
    "tests/data/${name}_transformers.txt" "$d"
done

d=$tmp/exaone4-swa-tiny
"$mkc" info -m "$d.gguf" >"$tmp/info" 2>&1
grep -q '^architecture: exaone4$' "$tmp/info" &&
  grep -q '^graph: .*(neox).*qk norm, 3 local : 1 global layers over a window of 16, no RoPE every 4 layers from layer 3 (NoPE), norms after attention and the MLP (none before))$' "$tmp/info" &&
  ok "info on a 64-layer exaone4 file: windows, its global layers without RoPE, norms after only" ||
  fail "info on a 64-layer exaone4 file" "$(cat "$tmp/info")"
"$mkc" info -m "$tmp/exaone4-tiny.gguf" >"$tmp/info" 2>&1
grep -q '^graph: .*qk norm, norms after attention and the MLP (none before))$' "$tmp/info" &&
  ok "info on a 3-layer exaone4 file: every layer global, with RoPE" || fail "info on a 3-layer exaone4 file" "$(cat "$tmp/info")"
for key in '"model_type":	"exaone4"' '"sliding_window":	16' '"sliding_window_pattern":	4' \
  '"layer_types":	["sliding_attention", "sliding_attention", "sliding_attention", "full_attention", '; do
  grep -qF "$key" "$d/config.json" && ok "exaone4 config.json: $key" || fail "exaone4 config.json: $key" "$(cat "$d/config.json")"
done
grep -qF '"sliding_window":	null' "$tmp/exaone4-tiny/config.json" &&
  ok "exaone4 config.json without windows: sliding_window null" || fail "exaone4 config.json: null window" "$(cat "$tmp/exaone4-tiny/config.json")"

perl -0777 -pe 's/blk\.0\.post_ffw_norm/blk.0.post_ffw_norX/' "$tmp/exaone4-tiny.gguf" >"$tmp/bad.gguf"
expect_error "an exaone4 file without a norm after the MLP" \
  "mkc: error: $tmp/bad.gguf: exaone4 model without blk.0.post_ffw_norm.weight" \
  -- run -m "$tmp/bad.gguf" --prompt-ids 1 -n 1

# Windows whose pattern makes every layer global: no layer has RoPE, as llama.cpp (a 64-layer GGUF
# whose sliding_window_pattern is 1) and transformers (a window, every layer full_attention) run it.
perl -0777 -pe 's/(sliding_window_pattern\x04\x00\x00\x00)\x04\x00\x00\x00/${1}\x01\x00\x00\x00/' "$d.gguf" >"$tmp/all-global.gguf"
"$mkc" info -m "$tmp/all-global.gguf" >"$tmp/info" 2>&1
grep -q 'exaone4.attention.sliding_window_pattern = 1$' "$tmp/info" && grep -q '^graph: .*, no RoPE in any layer (NoPE)' "$tmp/info" &&
  ! grep -q '^graph: .*local' "$tmp/info" &&
  ok "a 64-layer exaone4 GGUF whose pattern makes every layer global: no RoPE in any" ||
  fail "a 64-layer exaone4 GGUF, pattern 1" "$(cat "$tmp/info")"

# config.json's other spellings of the windows: sliding_window_pattern as an integer or "LLLG"
# without layer_types reads as layer_types does; absent, Exaone4Config's 4096 and 4.
config() { # NAME PERL: a folder of exaone4-swa-tiny's weights under its config.json edited by PERL
  mkdir -p "$tmp/$1"
  cp "$d/model.safetensors" "$tmp/$1/"
  perl -0777 -pe "s/,\s*\"layer_types\":\s*\[[^\]]*\]//; $2" "$d/config.json" >"$tmp/$1/config.json"
}
config int ''
config lllg 's/("sliding_window_pattern":\s*)4/$1"LLLG"/'
config lgl 's/("sliding_window_pattern":\s*)4/$1"LGL"/'
config nowindow 's/,\s*"sliding_window":\s*16,\s*"sliding_window_pattern":\s*4//'
config allfull 's/"sliding_attention"/"full_attention"/g; s/(\s*"sliding_window_pattern":\s*4)/$1,\n\t"layer_types":\t["full_attention"]/'
want=$(MKC_KV_DTYPE=f32 "$mkc" run -m "$d" --prompt-ids $P -n 20 --backend cpu 2>/dev/null)
for c in int lllg; do
  got=$(MKC_KV_DTYPE=f32 "$mkc" run -m "$tmp/$c" --prompt-ids $P -n 20 --backend cpu 2>"$tmp/err")
  [ -n "$want" ] && [ "$got" = "$want" ] && grep -q '"sliding_window_pattern"' "$tmp/$c/config.json" &&
    ! grep -q '"layer_types"' "$tmp/$c/config.json" &&
    ok "config.json's sliding_window_pattern ($c) without layer_types: the same tokens" ||
    fail "sliding_window_pattern ($c) without layer_types" "$(cat "$tmp/err")"
done
expect_error "a sliding_window_pattern string not local layers then one global" \
  "mkc: error: $tmp/lgl/config.json: \"sliding_window_pattern\": \"LGL\": expected local layers then one global, as \"LLLG\"" \
  -- run -m "$tmp/lgl" --prompt-ids 1 -n 1
sed -i 's/\["full_attention"\]/['"$(printf '"full_attention", %.0s' $(seq 63))"'"full_attention"]/' "$tmp/allfull/config.json"
"$mkc" info -m "$tmp/allfull" >"$tmp/info" 2>&1
grep -q '^graph: .*, no RoPE in any layer (NoPE)' "$tmp/info" && ! grep -q '^graph: .*local' "$tmp/info" &&
  ok "config.json with a window and every layer full_attention: no RoPE in any (transformers')" ||
  fail "exaone4 config.json, every layer full_attention" "$(cat "$tmp/info")" "$(cat "$tmp/allfull/config.json")"
"$mkc" info -m "$tmp/nowindow" >"$tmp/info" 2>&1
grep -q '^graph: .*3 local : 1 global layers over a window of 4096, no RoPE every 4 layers from layer 3' "$tmp/info" &&
  ok "config.json without the window's keys: Exaone4Config's window of 4096 on 3 local : 1 global" ||
  fail "exaone4 config.json without the window's keys" "$(cat "$tmp/info")"

# Presets an exaone4 file cannot carry.
e4() { preset_edit exaone4-tiny "$1" "$2" "$tmp/e.lua"; }
e4 'qk_norm = true' 'qk_norm = false'
expect_error "init: no norms before attention, no Q/K norms" \
  "mkc: error: preset exaone4-tiny: no norms before attention and the MLP make it an exaone4 file, which cannot carry no per-head Q/K norms" \
  -- init "$tmp/e.lua" --preset exaone4-tiny --seed 1 -o "$tmp/e.gguf"
e4 'n_layers = 3' 'n_layers = 64'
expect_error "init: a 64-layer exaone4 GGUF without windows (llama.cpp would give it the 32B's)" \
  "mkc: error: preset exaone4-tiny: 64 layers without sliding windows: llama.cpp gives a 64-layer exaone4 GGUF windows (the 32B's); its Hugging Face folder can say none (-o DIR)" \
  -- init "$tmp/e.lua" --preset exaone4-tiny --seed 1 -o "$tmp/e.gguf"
e4 'pre_norms = false,' 'pre_norms = false, residual_scale = 0.5,'
expect_error "init: an exaone4 preset with Granite's multipliers" \
  "mkc: error: preset exaone4-tiny: no norms before attention and the MLP make it an exaone4 file, which cannot carry Granite's multipliers" \
  -- init "$tmp/e.lua" --preset exaone4-tiny --seed 1 -o "$tmp/e"
preset_edit exaone4-swa-tiny 'pattern = "3 local : 1 global" }' 'pattern = "3 local : 1 global", rope_theta = 5000 }' "$tmp/eb.lua"
expect_error "init: an exaone4 folder whose local layers have a RoPE base of their own" \
  "mkc: error: preset exaone4-swa-tiny: local layers with a RoPE base of their own (5000): an exaone4 folder's have the global one (Exaone4Config has one); use -o FILE.gguf" \
  -- init "$tmp/eb.lua" --preset exaone4-swa-tiny --seed 1 -o "$tmp/e"
"$mkc" init "$tmp/eb.lua" --preset exaone4-swa-tiny --seed 5 -o "$tmp/eb.gguf" 2>"$tmp/err" &&
  "$mkc" info -m "$tmp/eb.gguf" >"$tmp/info" 2>&1 && grep -q 'window of 16 (rope theta 5000)' "$tmp/info" &&
  [ "$("$mkc" run -m "$tmp/eb.gguf" --prompt-ids $P -n 20 --backend cpu 2>/dev/null)" = \
    "$("$mkc" run --graph "$tmp/eb.lua" --preset exaone4-swa-tiny --random-weights 5 --prompt-ids $P -n 20 --backend ref 2>/dev/null)" ] &&
  ok "init: the local RoPE base to a GGUF (rope.freq_base_swa), read back as the preset's tokens" ||
  fail "init: an exaone4 GGUF with a local RoPE base" "$(cat "$tmp/err")" "$(cat "$tmp/info")"
preset_edit exaone4-swa-tiny 'nope_interval = 4,' 'nope_interval = 0,' "$tmp/e.lua"
expect_error "init: an exaone4 preset whose global layers have RoPE" \
  "mkc: error: preset exaone4-swa-tiny: layer 3 has RoPE; an exaone4 file's layers have it but for the global layers of its windows" \
  -- init "$tmp/e.lua" --preset exaone4-swa-tiny --seed 1 -o "$tmp/e.gguf"
preset_edit exaone4-swa-tiny 'n_layers = 64' 'n_layers = 8' "$tmp/e8.lua"
expect_error "init: an exaone4 GGUF with windows in 8 layers" \
  "mkc: error: preset exaone4-swa-tiny: sliding windows in 8 layers: an exaone4 GGUF has them only with 64 layers (llama.cpp's 32B; no key turns them on); its Hugging Face folder can say them (-o DIR)" \
  -- init "$tmp/e8.lua" --preset exaone4-swa-tiny --seed 1 -o "$tmp/e.gguf"
"$mkc" init "$tmp/e8.lua" --preset exaone4-swa-tiny --seed 5 -o "$tmp/e8" 2>"$tmp/err" &&
  [ "$("$mkc" run -m "$tmp/e8" --prompt-ids $P -n 20 --backend cpu 2>/dev/null)" = \
    "$("$mkc" run --graph "$tmp/e8.lua" --preset exaone4-swa-tiny --random-weights 5 --prompt-ids $P -n 20 --backend ref 2>/dev/null)" ] &&
  ok "init: windows in 8 layers to a folder, read back as the preset's reference tokens" ||
  fail "init: windows in 8 layers to a folder" "$(cat "$tmp/err")"
[ ! -e "$tmp/e.gguf" ] && [ ! -e "$tmp/e" ] && ok "init: nothing written for a refused exaone4 preset" || fail "init: a refused exaone4 preset left a file"
finish
