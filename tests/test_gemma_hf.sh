#!/usr/bin/env bash
# Gemma 1, 2 and 3 as Hugging Face folders and GGUF files: `mkc init --preset gemma3-tiny -o DIR`
# writes config.json as transformers writes Gemma 3's (gemma3_text), gemma2-tiny Gemma 2's (soft
# caps on the scores and the logits), gemma1-tiny Gemma 1's (gemma), and their norms as
# transformers stores them (the scale less 1); mkc reads each back as the GGUF's model, and its
# cpu kernel gives transformers' own greedy tokens and log-probabilities on those folders
# (tests/data/gemma{1,2,3}_transformers.txt) and on gemma3-tiny's weights under the config
# transformers 5 saves (tests/data/gemma3_transformers5.json: layer_types, rope_parameters per
# layer type, query_pre_attn_scalar 64, the global layers' RoPE scaled), and llama.cpp's on
# gemma1-tiny's and gemma2-tiny's GGUFs (tests/data/gemma{1,2}_llamacpp.txt; test_gguf_cli.sh has
# gemma3-tiny's); multimodal checkpoints' text_config and tensor names read as the text model's.
source "$(dirname "$0")/lib.sh"
P=3,1,4,1,5,9,2,6

for g in 1 2 3; do
  d=$tmp/g$g
  "$mkc" init --preset "gemma$g-tiny" --seed 5 -o "$d" 2>"$tmp/err" || fail "init gemma$g-tiny -o DIR" "$(cat "$tmp/err")"
  "$mkc" init --preset "gemma$g-tiny" --seed 5 -o "$d.gguf" 2>"$tmp/err" || fail "init gemma$g-tiny -o FILE.gguf" "$(cat "$tmp/err")"
  "$mkc" run -m "$d" --prompt-ids $P -n 40 --backend cpu >"$d.dir.out" 2>"$tmp/err" &&
    "$mkc" run -m "$d.gguf" --prompt-ids $P -n 40 --backend cpu >"$d.gguf.out" 2>>"$tmp/err"
  if cmp -s "$d.dir.out" "$d.gguf.out" && [ "$(wc -w <"$d.dir.out")" -eq 40 ]; then
    ok "gemma$g-tiny: the folder runs as the GGUF of the same seed (40 tokens, cpu)"
  else
    fail "gemma$g-tiny: the folder runs as the GGUF of the same seed" "$(cat "$tmp/err")" "dir:  $(cat "$d.dir.out")" "gguf: $(cat "$d.gguf.out")"
  fi
  # transformers on the folder (tools/gemma_hf_fixture.sh): every greedy step, log-probabilities
  # within 0.01 (lib.sh: expect_greedy; both keep activations in float, the kernel's KV cache is
  # bf16). The weights' file is the one transformers read, byte for byte: a writer and reader wrong
  # the same way (the norms' 1) cannot agree with each other and pass.
  fixture=tests/data/gemma${g}_transformers.txt
  expect_sha "gemma$g-tiny: model.safetensors is the file transformers read" "$d/model.safetensors" \
    "$fixture"
  expect_greedy "gemma$g-tiny's folder on the cpu kernel against transformers" "$fixture" "$d"
done
for key in '"model_type":	"gemma3_text"' '"hidden_activation":	"gelu_pytorch_tanh"' '"query_pre_attn_scalar":	256' \
  '"sliding_window":	16' '"sliding_window_pattern":	3' '"rope_local_base_freq":	10000' \
  '"layer_types":	["sliding_attention", "sliding_attention", "full_attention"]' '"final_logit_softcapping":	null'; do
  grep -qF "$key" "$tmp/g3/config.json" && ok "gemma3 config.json: $key" || fail "gemma3 config.json: $key" "$(cat "$tmp/g3/config.json")"
done
for key in '"model_type":	"gemma2"' '"attn_logit_softcapping":	2.0' '"final_logit_softcapping":	3.0' \
  '"layer_types":	["sliding_attention", "full_attention", "sliding_attention"]'; do
  grep -qF "$key" "$tmp/g2/config.json" && ok "gemma2 config.json: $key" || fail "gemma2 config.json: $key" "$(cat "$tmp/g2/config.json")"
done
grep -q rope_local_base_freq "$tmp/g2/config.json" && fail "gemma2 config.json: no local RoPE base" || ok "gemma2 config.json: no local RoPE base"
for key in '"model_type":	"gemma"' '"hidden_act":	"gelu_pytorch_tanh"' '"tie_word_embeddings":	true'; do
  grep -qF "$key" "$tmp/g1/config.json" && ok "gemma config.json: $key" || fail "gemma config.json: $key" "$(cat "$tmp/g1/config.json")"
done
grep -q -e softcapping -e sliding_window -e layer_types "$tmp/g1/config.json" &&
  fail "gemma config.json: no caps or windows" "$(cat "$tmp/g1/config.json")" || ok "gemma config.json: no caps or windows"
# Gemma 1's official configs say "gelu", which GemmaConfig reads as the tanh form; another
# activation is refused rather than run as GELU.
mkdir "$tmp/g1gelu" "$tmp/g1relu"
for d in g1gelu g1relu; do cp "$tmp/g1/model.safetensors" "$tmp/$d/"; done
sed -e 's/"hidden_act":.*"gelu_pytorch_tanh",/"hidden_act": "gelu",/' -e '/"hidden_activation"/d' "$tmp/g1/config.json" >"$tmp/g1gelu/config.json"
sed 's/"hidden_act":.*"gelu_pytorch_tanh",/"hidden_act": "relu",/' "$tmp/g1/config.json" >"$tmp/g1relu/config.json"
grep -q '"hidden_act": "gelu",' "$tmp/g1gelu/config.json" && ! grep -q hidden_activation "$tmp/g1gelu/config.json" &&
  "$mkc" run -m "$tmp/g1gelu" --prompt-ids $P -n 40 --backend cpu >"$tmp/g1gelu.out" 2>"$tmp/err" &&
  cmp -s "$tmp/g1gelu.out" "$tmp/g1.dir.out" && ok "a gemma config's legacy \"hidden_act\": \"gelu\": the tanh form's tokens" ||
  fail "a gemma config's legacy \"hidden_act\": \"gelu\"" "$(cat "$tmp/err")" "$(cat "$tmp/g1gelu.out")"
expect_error "a gemma config with another activation" \
  "mkc: error: $tmp/g1relu/config.json: unsupported hidden_act \"relu\" (mkc's Gemma MLP is GELU with the tanh approximation, gelu_pytorch_tanh)" \
  -- run -m "$tmp/g1relu" --prompt-ids 1 -n 1
# llama.cpp on gemma1-tiny's GGUF (tools/gemma_llamacpp_fixture.sh): scaled embeddings and GeGLU
# from the architecture alone, no norms after attention and the MLP.
expect_greedy "gemma1-tiny's GGUF on the cpu kernel against llama.cpp" tests/data/gemma1_llamacpp.txt "$tmp/g1.gguf"
expect_sha "gemma1-tiny: the GGUF is the file llama.cpp read" "$tmp/g1.gguf" tests/data/gemma1_llamacpp.txt
"$mkc" info -m "$tmp/g1.gguf" >"$tmp/info" 2>&1
grep -q '^architecture: gemma$' "$tmp/info" && grep -q '^graph: .*GeGLU, embeddings x 4)$' "$tmp/info" &&
  ok "info on a gemma file: GeGLU and embeddings times sqrt(dim), nothing more" || fail "info on a gemma file" "$(cat "$tmp/info")"
# llama.cpp on gemma2-tiny's GGUF (tools/gemma_llamacpp_fixture.sh): its caps are the file's keys.
expect_greedy "gemma2-tiny's GGUF on the cpu kernel against llama.cpp" tests/data/gemma2_llamacpp.txt "$tmp/g2.gguf"
"$mkc" info -m "$tmp/g2.gguf" >"$tmp/info" 2>&1
grep -q '^graph: .*1 local : 1 global layers over a window of 16, .*scores capped at 2, logits capped at 3)$' "$tmp/info" &&
  ok "info on a gemma2 file: the window on every other layer, both caps" || fail "info on a gemma2 file" "$(cat "$tmp/info")"

mkdir "$tmp/g3v"
cp "$tmp/g3/model.safetensors" "$tmp/g3v/"
cp tests/data/gemma3_transformers5.json "$tmp/g3v/config.json"
"$mkc" info -m "$tmp/g3v" >"$tmp/info" 2>&1
grep -q '^graph: .*rope theta 1e+06 (neox, linear scaling: factor 4), .*2 local : 1 global layers over a window of 16 (rope theta 10000).*attention scale 0.125' "$tmp/info" &&
  ok "transformers 5's config.json: layer_types, rope_parameters per layer type, query_pre_attn_scalar" ||
  fail "transformers 5's config.json read" "$(cat "$tmp/info")"
expect_greedy "under transformers 5's config (scores x 64^-1/2, global RoPE linear x 4), against transformers" \
  tests/data/gemma3_transformers5.txt "$tmp/g3v"
# gemma2 files without the caps' keys get llama.cpp's defaults, 50 and 30; with a window
# pattern of 1, every layer is global (fuzz/corpus/gguf: gemma2_caps.gguf, gemma2_global.gguf)
perl -0777 -pe 's/(attn|final)_logit_softcapping/$1_logit_softcappinX/g' fuzz/corpus/gguf/gemma2_caps.gguf >"$tmp/nocaps.gguf"
"$mkc" info -m "$tmp/nocaps.gguf" >"$tmp/info" 2>&1
grep -q '^graph: .*scores capped at 50, logits capped at 30)$' "$tmp/info" &&
  ok "a gemma2 file without its caps: llama.cpp's defaults, 50 and 30" || fail "a gemma2 file without its caps" "$(cat "$tmp/info")"
"$mkc" info -m fuzz/corpus/gguf/gemma2_global.gguf >"$tmp/info" 2>&1
grep '^graph: ' "$tmp/info" | grep -qv 'local' && grep -q '^graph: .*GeGLU' "$tmp/info" &&
  ok "a gemma2 file whose window pattern is 1: every layer global" || fail "gemma2 pattern 1: every layer global" "$(cat "$tmp/info")"

# Caps no file can carry: a gemma2 file always caps both (llama.cpp's defaults stand in for an
# absent key), a gemma3 file never its scores (llama.cpp's gemma3 loader ignores the key).
sed 's/attn_softcap = 2, final_softcap = 3,/attn_softcap = 0, final_softcap = 3,/' graphs/llama.lua >"$tmp/nocap.lua"
expect_error "init: a gemma2 preset without a score cap" \
  "mkc: error: preset gemma2-tiny: a gemma2 file caps both its attention scores and its logits; the preset caps its scores at 0 and its logits at 3 (0: none)" \
  -- init "$tmp/nocap.lua" --preset gemma2-tiny --seed 1 -o "$tmp/nocap.gguf"
awk '/^preset "gemma3-tiny"/ { g = 1 } g && /post_norms = true,/ { sub(/post_norms = true,/, "post_norms = true, attn_softcap = 50,"); g = 0 } 1' \
  graphs/llama.lua >"$tmp/g3cap.lua"
expect_error "init: a gemma3 preset with a score cap" \
  "mkc: error: preset gemma3-tiny: a gemma3 file does not cap its attention scores; the preset caps its scores at 50 and its logits at 0 (0: none)" \
  -- init "$tmp/g3cap.lua" --preset gemma3-tiny --seed 1 -o "$tmp/g3cap.gguf"

# What a gemma file cannot carry: the scaled embeddings and GeGLU make a preset without norms after
# attention and the MLP a gemma file, which has no windows, caps, Q/K norms, biases or experts.
g1() { preset_edit gemma1-tiny "$1" "$2" "$tmp/g1x.lua"; }
g1 'sliding_window = "none"' 'sliding_window = { size = 16 }'
expect_error "init: a gemma preset with a window" \
  "mkc: error: preset gemma1-tiny: a gemma file has no sliding windows (gemma2's and gemma3's do)" \
  -- init "$tmp/g1x.lua" --preset gemma1-tiny --seed 1 -o "$tmp/g1x.gguf"
g1 'ffn_act = "gelu_tanh",' 'ffn_act = "gelu_tanh", final_softcap = 30,'
expect_error "init: a gemma preset with a cap" \
  "mkc: error: preset gemma1-tiny: a gemma file caps neither its attention scores nor its logits; the preset caps its scores at 0 and its logits at 30 (0: none)" \
  -- init "$tmp/g1x.lua" --preset gemma1-tiny --seed 1 -o "$tmp/g1x.gguf"
g1 'qk_norm = false' 'qk_norm = true'
expect_error "init: a gemma preset with Q/K norms" \
  "mkc: error: preset gemma1-tiny: scaled embeddings or a GELU-gated MLP make it a gemma file, which has no per-head Q/K norms" \
  -- init "$tmp/g1x.lua" --preset gemma1-tiny --seed 1 -o "$tmp/g1x.gguf"
g1 'tied = true' 'tied = false'
expect_error "init: a gemma GGUF with a separate head (llama.cpp's gemma takes token_embd)" \
  "mkc: error: preset gemma1-tiny: a separate LM head: a gemma GGUF's is token_embd (llama.cpp's loader takes no output.weight); its Hugging Face folder can say it (-o DIR)" \
  -- init "$tmp/g1x.lua" --preset gemma1-tiny --seed 1 -o "$tmp/g1x.gguf"
"$mkc" init "$tmp/g1x.lua" --preset gemma1-tiny --seed 5 -o "$tmp/g1x" 2>"$tmp/err" &&
  grep -qF '"tie_word_embeddings":	false' "$tmp/g1x/config.json" &&
  [ "$("$mkc" run -m "$tmp/g1x" --prompt-ids $P -n 20 --backend cpu 2>/dev/null)" = \
    "$("$mkc" run --graph "$tmp/g1x.lua" --preset gemma1-tiny --random-weights 5 --prompt-ids $P -n 20 --backend ref 2>/dev/null)" ] &&
  ok "init: a separate head to a gemma folder, read back as the preset's reference tokens" ||
  fail "init: a gemma folder with a separate head" "$(cat "$tmp/err")"
[ ! -e "$tmp/g1x.gguf" ] && ok "init: nothing written for a refused gemma preset" || fail "init: a refused gemma preset left a file"

# A multimodal checkpoint: Gemma3Config's text_config, the text model's tensors under
# language_model.model.* (transformers 4's Gemma3ForConditionalGeneration) or
# model.language_model.* (transformers 5's), the vision tower's beside them, unread.
# rename PREFIX IN OUT: the safetensors file IN with every "model." name as PREFIX, plus one
# vision tensor's entry (its bytes are the first tensor's), the header's length rewritten.
rename() {
  perl -0777 -e '
    my ($prefix, $in, $out) = @ARGV;
    open my $f, "<:raw", $in or die; local $/; my $all = <$f>;
    my $n = unpack("Q<", substr($all, 0, 8));
    my $h = substr($all, 8, $n);
    $h =~ s/"model\./"$prefix/g;
    $h =~ s/^\{/{"vision_tower.vision_model.post_layernorm.weight":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},/;
    $h =~ s/ +$//;
    $h .= " " x ((8 - length($h) % 8) % 8);
    open my $o, ">:raw", $out or die;
    print $o pack("Q<", length $h), $h, substr($all, 8 + $n);' "$@"
}
for prefix in language_model.model. model.language_model.; do
  d=$tmp/mm-$prefix
  mkdir "$d"
  rename "$prefix" "$tmp/g3/model.safetensors" "$d/model.safetensors"
  { printf '{"model_type": "gemma3", "vision_config": {"model_type": "siglip_vision_model"}, "text_config": '
    cat "$tmp/g3/config.json"
    printf '}\n'; } >"$d/config.json"
  if "$mkc" run -m "$d" --prompt-ids $P -n 40 --backend cpu >"$tmp/mm.out" 2>"$tmp/err" &&
    cmp -s "$tmp/mm.out" "$tmp/g3.dir.out" && grep -q "\"$prefix" "$d/model.safetensors"; then
    ok "a multimodal checkpoint, text model under $prefix: the text model's tokens"
  else
    fail "a multimodal checkpoint, text model under $prefix" "$(cat "$tmp/err")" "$(cat "$tmp/mm.out")"
  fi
done
mkdir "$tmp/mm-x"
cp "$tmp/g3/config.json" "$tmp/mm-x/"
perl -0777 -pe 's/layers\.0\.post_feedforward_layernorm/layers.0.post_feedforward_layernorX/' \
  "$tmp/g3/model.safetensors" >"$tmp/mm-x/model.safetensors"
expect_error "a missing tensor is named as the text model names it" \
  "mkc: error: $tmp/mm-x: tensor 'blk.0.post_ffw_norm.weight' is missing (HF name 'model.layers.0.post_feedforward_layernorm.weight'; the graph needs it as [1, 16])" \
  -- run -m "$tmp/mm-x" --prompt-ids 1 -n 1
finish
