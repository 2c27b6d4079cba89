#!/usr/bin/env bash
# Gemma 3 as a Hugging Face folder: `mkc init --preset gemma3-tiny -o DIR` writes config.json as
# transformers writes Gemma 3's (gemma3_text) and its norms as transformers stores them (the scale
# less 1); mkc reads it back as the GGUF's model, and its cpu kernel gives transformers' own greedy
# tokens and log-probabilities on that folder (tests/data/gemma3_transformers.txt) and on the same
# weights under the config transformers 5 saves (tests/data/gemma3_transformers5.json: layer_types,
# rope_parameters per layer type, query_pre_attn_scalar 64, the global layers' RoPE scaled);
# multimodal checkpoints' text_config and tensor names read as the text model's.
source "$(dirname "$0")/lib.sh"
P=3,1,4,1,5,9,2,6

"$mkc" init --preset gemma3-tiny --seed 5 -o "$tmp/g3" 2>"$tmp/err" || fail "init gemma3-tiny -o DIR" "$(cat "$tmp/err")"
"$mkc" init --preset gemma3-tiny --seed 5 -o "$tmp/g3.gguf" 2>"$tmp/err" || fail "init gemma3-tiny -o FILE.gguf" "$(cat "$tmp/err")"
for key in '"model_type":	"gemma3_text"' '"hidden_activation":	"gelu_pytorch_tanh"' '"query_pre_attn_scalar":	256' \
  '"sliding_window":	16' '"sliding_window_pattern":	3' '"rope_local_base_freq":	10000' \
  '"layer_types":	["sliding_attention", "sliding_attention", "full_attention"]'; do
  grep -qF "$key" "$tmp/g3/config.json" && ok "config.json: $key" || fail "config.json: $key" "$(cat "$tmp/g3/config.json")"
done
"$mkc" run -m "$tmp/g3" --prompt-ids $P -n 40 --backend cpu >"$tmp/dir.out" 2>"$tmp/err" &&
  "$mkc" run -m "$tmp/g3.gguf" --prompt-ids $P -n 40 --backend cpu >"$tmp/gguf.out" 2>>"$tmp/err"
if cmp -s "$tmp/dir.out" "$tmp/gguf.out" && [ "$(wc -w <"$tmp/dir.out")" -eq 40 ]; then
  ok "the folder runs as the GGUF of the same seed (40 tokens, cpu)"
else
  fail "the folder runs as the GGUF of the same seed" "$(cat "$tmp/err")" "dir:  $(cat "$tmp/dir.out")" "gguf: $(cat "$tmp/gguf.out")"
fi

# transformers on the folder (tools/gemma3_hf_fixture.sh): every greedy step, log-probabilities
# within 0.01 (lib.sh: greedy_agrees; both keep activations in float, the kernel's KV cache is bf16).
# The weights' file is the one transformers read, byte for byte: a writer and reader wrong the
# same way (the norms' 1) cannot agree with each other and pass.
want=$(sed -n 's/^sha256 \([0-9a-f]*\) model.safetensors$/\1/p' tests/data/gemma3_transformers.txt)
[ -n "$want" ] && [ "$(sha256sum <"$tmp/g3/model.safetensors" | cut -d' ' -f1)" = "$want" ] &&
  ok "model.safetensors is the file transformers read (sha256)" ||
  fail "model.safetensors is the file transformers read" "want sha256 $want"
if greedy_agrees tests/data/gemma3_transformers.txt "$tmp/g3"; then
  ok "the folder on the cpu kernel: transformers' 48 greedy tokens and log-probabilities"
else
  fail "the folder on the cpu kernel: transformers' greedy tokens and log-probabilities" "$(head -30 "$tmp/greedy")"
fi
mkdir "$tmp/g3v"
cp "$tmp/g3/model.safetensors" "$tmp/g3v/"
cp tests/data/gemma3_transformers5.json "$tmp/g3v/config.json"
"$mkc" info -m "$tmp/g3v" >"$tmp/info" 2>&1
grep -q '^graph: .*rope theta 1e+06 (neox, linear scaling: factor 4), .*2 local : 1 global layers over a window of 16 (rope theta 10000).*attention scale 0.125' "$tmp/info" &&
  ok "transformers 5's config.json: layer_types, rope_parameters per layer type, query_pre_attn_scalar" ||
  fail "transformers 5's config.json read" "$(cat "$tmp/info")"
if greedy_agrees tests/data/gemma3_transformers5.txt "$tmp/g3v"; then
  ok "under transformers 5's config (scores x 64^-1/2, global RoPE linear x 4): transformers' 48 greedy tokens"
else
  fail "under transformers 5's config: transformers' greedy tokens and log-probabilities" "$(head -30 "$tmp/greedy")"
fi

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
    cmp -s "$tmp/mm.out" "$tmp/dir.out" && grep -q "\"$prefix" "$d/model.safetensors"; then
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
