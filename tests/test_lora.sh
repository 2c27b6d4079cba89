#!/usr/bin/env bash
# --lora and --lora-scaled (llama.cpp's LoRA adapters, merged into the weights at load): a run
# of a base model with adapters gives token for token, and log-probability for log-probability,
# what the same run gives on the model the adapters stand for, written by tests/lora.py without
# mkc (W += scale * alpha / rank * B A, in bf16), for a bf16 and a Q8_0 base (its adapted
# matrices then planned in bf16), scaled, and two adapters at once; the server takes them too;
# the refusals of a file that is no adapter, another architecture's, a tensor the model lacks,
# half a pair, and of the flags.
source "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null; then
  skip "--lora: no python3"
  finish
  exit
fi
names=()
for l in 0 1; do names+=("blk.$l.attn_q.weight" "blk.$l.attn_v.weight" "blk.$l.ffn_down.weight"); done
run=(run --backend cpu --prompt-ids 3,1,4,1,5,9,2,6 -n 16 --json --logprobs 3)
# same NAME BASE_MODEL ORACLE_MODEL FLAGS...: the base with FLAGS against the oracle alone
same() {
  local name=$1 base=$2 oracle=$3
  shift 3
  if "$mkc" "${run[@]}" -m "$base" "$@" >"$tmp/got" 2>"$tmp/got_err" \
    && "$mkc" "${run[@]}" -m "$oracle" >"$tmp/want" 2>/dev/null \
    && cmp -s <(grep '"id"' "$tmp/got") <(grep '"id"' "$tmp/want"); then
    ok "$name: the oracle model's tokens and log-probabilities ($(grep -c '"id"' "$tmp/got") tokens)"
  else
    fail "$name" "$(diff <(grep '"id"' "$tmp/got") <(grep '"id"' "$tmp/want") | head -4)" "$(tail -2 "$tmp/got_err")"
  fi
}

for type in bf16 q8_0; do
  base=$tmp/base_$type.gguf
  if ! "$mkc" init --preset tiny --seed 5 --type "$type" -o "$base" >/dev/null 2>"$tmp/err"; then
    fail "init --type $type" "$(cat "$tmp/err")"
    continue
  fi
  python3 tests/lora.py adapter "$base" "$tmp/a1_$type.gguf" 1 "${names[@]}"
  python3 tests/lora.py adapter "$base" "$tmp/a2_$type.gguf" 2 "blk.1.attn_q.weight" "blk.0.ffn_up.weight" --alpha 0 --rank 2
  python3 tests/lora.py merge "$base" "$tmp/m1.gguf" "$tmp/a1_$type.gguf:1"
  python3 tests/lora.py merge "$base" "$tmp/m2.gguf" "$tmp/a1_$type.gguf:0.5"
  python3 tests/lora.py merge "$base" "$tmp/m3.gguf" "$tmp/a1_$type.gguf:1" "$tmp/a2_$type.gguf:0.25"
  same "$type base --lora (alpha 8, rank 4: scale 2)" "$base" "$tmp/m1.gguf" --lora "$tmp/a1_$type.gguf"
  grep -q "LoRA merged into 6 matrices (rank 4, scale 2: 1 x alpha 8 / 4)" "$tmp/got_err" \
    && ok "... the note of what was merged" || fail "merge note" "$(cat "$tmp/got_err")"
  "$mkc" "${run[@]}" -m "$base" >"$tmp/plain" 2>/dev/null
  cmp -s <(grep '"id"' "$tmp/got") <(grep '"id"' "$tmp/plain") \
    && fail "$type: the adapter changes nothing" || ok "$type: the adapter changes the answer"
  same "$type base --lora-scaled FILE:0.5" "$base" "$tmp/m2.gguf" --lora-scaled "$tmp/a1_$type.gguf:0.5"
  same "$type base, two adapters (--lora, --lora-scaled; the second alpha 0, rank 2)" "$base" "$tmp/m3.gguf" \
    --lora "$tmp/a1_$type.gguf" --lora-scaled "$tmp/a2_$type.gguf:0.25"
  # self-speculation drafts with the adapted matrices as the target holds them (in bf16)
  same "$type base --lora with --draft-layers 1 --draft-max 3" "$base" "$tmp/m3.gguf" \
    --lora "$tmp/a1_$type.gguf" --lora-scaled "$tmp/a2_$type.gguf:0.25" --draft-layers 1 --draft-max 3
  # the same adapter as PEFT saves it (B's Q/K rows in HF's order): the same model
  python3 tests/lora.py peft "$base" "$tmp/a1_$type.gguf" "$tmp/peft_$type"
  same "$type base --lora PEFT_FOLDER (adapter_config.json, adapter_model.safetensors)" "$base" "$tmp/m1.gguf" \
    --lora "$tmp/peft_$type"
  # use_rslora: alpha / sqrt(r) = 8 / 2, twice the plain 8 / 4
  python3 tests/lora.py peft "$base" "$tmp/a1_$type.gguf" "$tmp/rs_$type" --rslora
  python3 tests/lora.py merge "$base" "$tmp/m4.gguf" "$tmp/a1_$type.gguf:2"
  same "$type base, a PEFT folder with use_rslora" "$base" "$tmp/m4.gguf" --lora "$tmp/rs_$type"
done
same "one --lora-scaled of two adapters, comma-separated" "$tmp/base_q8_0.gguf" "$tmp/m3.gguf" \
  --lora-scaled "$tmp/a1_q8_0.gguf:1,$tmp/a2_q8_0.gguf:0.25"

# serve: a completion of the same ids is the oracle model's run
base=$tmp/base_bf16.gguf
python3 tests/lora.py merge "$base" "$tmp/m1.gguf" "$tmp/a1_bf16.gguf:1"
if start lora -m "$base" --backend cpu --lora "$tmp/a1_bf16.gguf"; then
  source "$(dirname "$0")/serve_lib.sh"
  call POST /v1/completions '{"prompt": [3, 1, 4, 1, 5, 9, 2, 6], "max_tokens": 16}'
  want=$("$mkc" run --backend cpu --prompt-ids 3,1,4,1,5,9,2,6 -n 16 -m "$tmp/m1.gguf" 2>/dev/null)
  [ "$status" = 200 ] && [ "$(get choices 0 text)" = "$want" ] \
    && ok "serve --lora: a completion is the oracle model's ($want)" \
    || fail "serve --lora" "want: $want" "got:  $(head -c 300 "$tmp/ans")"
  call POST /v1/completions '{"prompt": [3, 1, 4, 1, 5, 9, 2, 6], "max_tokens": 16, "lora": [{"id": 0, "scale": 1}]}'
  [ "$status" = 200 ] && [ "$(get choices 0 text)" = "$want" ] \
    && ok "a request's lora with the scale in effect: answered, the same text" \
    || fail "request lora, same scale" "$(head -c 300 "$tmp/ans")"
  refused "a request's lora with another scale" 400 "lora: mkc merges adapters into the weights at load" \
    POST /v1/completions '{"prompt": [3, 1], "max_tokens": 2, "lora": [{"id": 0, "scale": 0.5}]}'
  call GET /lora-adapters
  [ "$status" = 200 ] && [ "$(get 0 id)" = 0 ] && [ "$(get 0 path)" = "$tmp/a1_bf16.gguf" ] \
    && [ "$(get 0 scale)" = 1 ] && [ "$(content 0 task_name)" = '""' ] \
    && ok "GET /lora-adapters: the adapter, its path and scale (llama-server's fields)" \
    || fail "GET /lora-adapters" "$(head -c 300 "$tmp/ans")"
  call POST /lora-adapters '[{"id": 0, "scale": 1}]'
  [ "$status" = 200 ] && [ "$(get success)" = True ] && ok "POST /lora-adapters with the scale in effect: success" \
    || fail "POST /lora-adapters, same scale" "$(head -c 300 "$tmp/ans")"
  refused "POST /lora-adapters with another scale" 400 "their scales are fixed" POST /lora-adapters '[{"id": 0, "scale": 0.5}]'
  refused "POST /lora-adapters with an id past them" 400 "each entry is" POST /lora-adapters '[{"id": 1, "scale": 1}]'
  refused "POST /lora-adapters [], which asks 0 of each (llama-server's)" 400 "an adapter left out asks 0" \
    POST /lora-adapters '[]'
  call GET /v1/health
  [ "$status" = 200 ] && [ "$(get status)" = ok ] && ok "GET /v1/health: llama-server's other name for /health" \
    || fail "/v1/health" "$(head -c 300 "$tmp/ans")"
  stop lora
fi

python3 tests/lora.py adapter "$base" "$tmp/qwen.gguf" 1 "blk.0.attn_q.weight" --arch qwen2
python3 tests/lora.py adapter "$base" "$tmp/missing.gguf" 1 "blk.9.attn_q.weight"
python3 tests/lora.py adapter "$base" "$tmp/half.gguf" 1 "blk.0.attn_q.weight" --half
python3 tests/lora.py adapter "$base" "$tmp/rank0.gguf" 1 "blk.0.attn_q.weight" --rank 0
expect_error "a model file for an adapter" \
  "mkc: error: $base: not an adapter: general.type is '', not 'adapter'" -- run -m "$base" --lora "$base" --prompt-ids 1 -n 1
expect_error "another architecture's adapter" \
  "mkc: error: $tmp/qwen.gguf: an adapter of another model: general.architecture is 'qwen2', not 'llama'" \
  -- run -m "$base" --lora "$tmp/qwen.gguf" --prompt-ids 1 -n 1
expect_error "an adapter of a matrix the model lacks" \
  "mkc: error: $tmp/missing.gguf: LoRA tensor 'blk.9.attn_q.weight' does not exist in the base model (maybe the wrong base model?)" \
  -- run -m "$base" --lora "$tmp/missing.gguf" --prompt-ids 1 -n 1 --backend cpu
expect_error "half a pair" \
  "mkc: error: $tmp/half.gguf: tensor 'blk.0.attn_q.weight.lora_a': the other tensor of its pair is missing" \
  -- run -m "$base" --lora "$tmp/half.gguf" --prompt-ids 1 -n 1
expect_error "a rank-0 adapter" \
  "mkc: error: $tmp/rank0.gguf: tensor 'blk.0.attn_q.weight.lora_a': not a matrix" \
  -- run -m "$base" --lora "$tmp/rank0.gguf" --prompt-ids 1 -n 1
# PEFT folders mkc does not merge: DoRA; a module of another model
cp -r "$tmp/peft_bf16" "$tmp/dora"
python3 -c 'import json,sys; p=sys.argv[1]; c=json.load(open(p)); c["use_dora"]=True; json.dump(c,open(p,"w"))' "$tmp/dora/adapter_config.json"
expect_error "a DoRA folder" \
  "mkc: error: $tmp/dora/adapter_config.json: use_dora: more than a LoRA's low-rank delta, which mkc merges; not followed" \
  -- run -m "$base" --lora "$tmp/dora" --prompt-ids 1 -n 1
python3 - "$tmp/peft_bf16/adapter_model.safetensors" "$tmp/other.safetensors" <<'PY'
import json, struct, sys
buf = open(sys.argv[1], "rb").read()
n = struct.unpack_from("<Q", buf)[0]
head = json.loads(buf[8:8 + n])
head = {k.replace("self_attn.q_proj", "self_attn.qq_proj"): v for k, v in head.items()}
text = json.dumps(head).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + buf[8 + n:])
PY
mkdir -p "$tmp/other" && mv "$tmp/other.safetensors" "$tmp/other/adapter_model.safetensors" \
  && cp "$tmp/peft_bf16/adapter_config.json" "$tmp/other/"
expect_error "a PEFT module the model has not" \
  "mkc: error: $tmp/other/adapter_model.safetensors: tensor 'base_model.model.model.layers.0.self_attn.qq_proj.lora_A.weight': model.layers.0.self_attn.qq_proj.weight names no matrix of a llama model" \
  -- run -m "$base" --lora "$tmp/other" --prompt-ids 1 -n 1
# An adapter file changed while mkc has it open (at MKC_TEST_PAUSE_BEFORE_ADAPTER: opened, no
# tensor read). adapter_changed NAME ADAPTER FILE
adapter_changed() {
  changed_while_open "$1" MKC_TEST_PAUSE_BEFORE_ADAPTER "$3" "truncate -s 0 $3" \
    -- run -m "$base" --lora "$2" --prompt-ids 1 -n 1
}
cp "$tmp/a1_q8_0.gguf" "$tmp/cut.gguf"
adapter_changed "a GGUF adapter emptied while open" "$tmp/cut.gguf" "$tmp/cut.gguf"
cp -r "$tmp/peft_q8_0" "$tmp/cut_peft"
adapter_changed "a PEFT adapter emptied while open" "$tmp/cut_peft" "$tmp/cut_peft/adapter_model.safetensors"
expect_error "--lora-scaled without a scale" \
  "mkc: error: --lora-scaled: expected FILE:SCALE (a finite number), got '$tmp/half.gguf'" \
  -- run -m "$base" --lora-scaled "$tmp/half.gguf" --prompt-ids 1 -n 1
expect_error "--lora without a model file" \
  "mkc: error: --lora: an adapter of a model file's weights: give -m MODEL (and no --kernel DIR, whose kernel was planned without it)" \
  -- run --preset tiny --random-weights 1 --lora "$tmp/half.gguf" --prompt-ids 1 -n 1
finish
