#!/usr/bin/env bash
# llama.cpp's flags on mkc's commands. Those that ask for nothing mkc does otherwise (threads,
# memory mapping, devices, batch sizes, flash attention, logs, colour) are taken with their
# values and a note each, and change no token (the oracle: the same run without them). Other
# spellings of mkc's own flags give what those give (--temperature, --top-n-sigma, --typical-p,
# the draft's lengths, -st). -sysf and --chat-template-file give what -sys and --chat-template
# give (SmolLM2's prompt tokens, test data); --chat-template takes a template's text too.
# --check-tensors refuses files with values that are not finite (planted). --override-kv sets a
# GGUF's metadata (info shows it; a run's context, SmolLM2's BOS follow). The RoPE flags give what
# overriding the keys llama.cpp reads for the same RoPE gives. --draft-p-min drafts less, losslessly.
# bench's -r and -o (llama-bench's formats). The
# refusals: a value missing, -cnv (mkc chat), -no-cnv with --chat, a file and its text flag
# both, a file that is not there.
source "$(dirname "$0")/lib.sh"
base=(run --preset tiny --random-weights 3 --prompt-ids 3,1,4,1,5 -n 12 --backend cpu)

# same NAME ARGS... -- ARGS2...: run's tokens with ARGS equal those with ARGS2; ARGS's stderr in
# $tmp/err
same() {
  local name=$1 a=()
  shift
  while [ "$1" != -- ]; do
    a+=("$1")
    shift
  done
  shift
  if "$mkc" "${base[@]}" "${a[@]}" >"$tmp/a" 2>"$tmp/err" && "$mkc" "${base[@]}" "$@" >"$tmp/b" 2>/dev/null \
    && [ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/b"; then
    ok "$name"
  else
    fail "$name" "with:    $(cat "$tmp/a")" "without: $(cat "$tmp/b")" "$(grep error "$tmp/err")"
  fi
}

# Flags not followed: one of each group, with and without values; -fa bare (older llama.cpp's
# form) before another flag, and with a value.
flags=(-fa -b 512 --mlock --no-mmap -tb 4 -C 0xff --numa distribute -dev CUDA0 -sm none -mg 0
  -ot 'exps=CPU' -nkvo --swa-full -dt 0.1 -bs --no-warmup --no-perf -lv 3 --log-disable -co on
  --simple-io -fa on -ub 8)
same "llama.cpp's flags that ask for nothing mkc does otherwise: the same tokens" "${flags[@]}" -- -ub 8
notes=$(grep -c '^mkc: note: .*: not followed (llama.cpp.s flag): ' "$tmp/err")
[ "$notes" = 22 ] && grep -q '^mkc: note: -fa: not followed' "$tmp/err" \
  && grep -q '^mkc: note: -fa on: not followed (llama.cpp.s flag): the megakernel.s attention is always fused$' "$tmp/err" \
  && grep -q '^mkc: note: -ot exps=CPU: not followed' "$tmp/err" \
  && ok "... a note for each of the 22, naming its value" || fail "the notes" "$notes notes" "$(cat "$tmp/err")"
same "... on a sampled run with drafts too" --temp 0.8 --seed 5 --draft-max 3 --mlock -fa auto -- \
  --temp 0.8 --seed 5 --draft-max 3
expect_error "a flag's value missing" "mkc: error: -tb needs a value" -- "${base[@]}" -tb
if "$mkc" bench --preset tiny --random-weights 1 -n 4 -p 8 --backend cpu -fa 1 -b 64 >"$tmp/bench" 2>"$tmp/err" \
  && grep -q '^mkc: note: -b 64: not followed' "$tmp/err"; then
  ok "bench takes them too"
else
  fail "bench with llama.cpp's flags" "$(head -n 3 "$tmp/err")"
fi
expect_error "not where the command has no backend" "mkc: error: unknown option '-fa'" -- tokenize -m x -fa

# llama-bench's -r (repetitions) and -o md|csv|json|jsonl: the same rows in each format, every
# repetition's rate listed, the mean and standard deviation of those (worked out here), the
# table's tokens per step; the formats' own parsers read them (python's json and csv)
bflags=(bench --preset tiny --random-weights 1 -p 16 -n 8 --backend cpu --draft-max 2)
for f in md json csv jsonl; do
  "$mkc" "${bflags[@]}" -r 2 -o $f >"$tmp/bench.$f" 2>"$tmp/err" || fail "bench -o $f" "$(cat "$tmp/err")"
done
if python3 - "$tmp/bench" <<'PY'
import csv, json, statistics, sys
base = sys.argv[1]
md = [l.split("|")[1:-1] for l in open(base + ".md") if l.startswith("| llama")]
rows = {"json": json.load(open(base + ".json")),
        "jsonl": [json.loads(l) for l in open(base + ".jsonl")],
        "csv": list(csv.DictReader(open(base + ".csv")))}
names = [r[4].strip() for r in md]
assert len(names) == 6, names
for kind, got in rows.items():
    assert [r["test"] for r in got] == names, (kind, [r["test"] for r in got])
    for r, m in zip(got, md):
        s = [float(x) for x in r["samples_ts"].split(";")] if kind == "csv" else r["samples_ts"]
        assert len(s) == 2, (kind, s)
        assert abs(float(r["avg_ts"]) - statistics.mean(s)) <= 1e-5 * statistics.mean(s), (kind, r)
        assert abs(float(r["stddev_ts"]) - statistics.stdev(s)) <= 1e-4 * statistics.mean(s), (kind, r)
        assert abs(float(r["tokens_per_step"]) - float(m[8])) <= 0.006, (kind, r, m)
        assert int(r["n_gen"]) == (0 if r["test"].startswith("pp") else 8), (kind, r)
        assert int(r["n_draft"]) == (2 if "draft2" in r["test"] or "verify3" in r["test"] else 0), (kind, r)
        assert r["model_filename"] == "tiny" and r["backends"] == "cpu", (kind, r)
PY
then
  ok "bench -r 2 -o md|json|jsonl|csv: the same six rows, two rates each, their mean and deviation, tok/step"
else
  fail "bench's output formats" "$(head -c 400 "$tmp/bench.json")"
fi
expect_error "bench -o: a format it does not write" "mkc: error: bench: -o: expected md, csv, json or jsonl, got 'xml'" \
  -- "${bflags[@]}" -o xml
expect_error "bench -r 0" "mkc: error: -r: expected an integer in 1..100, got '0'" -- "${bflags[@]}" -r 0
expect_error "bench --stages with -o json" "mkc: error: bench: --stages prints a table of its own: with -o md" \
  -- "${bflags[@]}" --stages -o json

# Other spellings of mkc's own flags
same "--temperature is --temp" --temperature 0.9 --seed 4 -- --temp 0.9 --seed 4
same "--top-n-sigma is --top-nsigma" --temp 1 --seed 4 --top-n-sigma 0.5 -- --temp 1 --seed 4 --top-nsigma 0.5
same "--typical-p is --typical" --temp 1 --seed 4 --typical-p 0.5 -- --temp 1 --seed 4 --typical 0.5
for f in --spec-draft-n-max --draft --draft-n; do
  "$mkc" "${base[@]}" "$f" 3 >/dev/null 2>"$tmp/err"
  grep -q 'drafted [1-9]' "$tmp/err" && same "$f is --draft-max" "$f" 3 -- --draft-max 3 \
    || fail "$f drafts" "$(tail -n 1 "$tmp/err")"
done
same "--spec-draft-n-min and --draft-n-min are --draft-min" --draft-max 4 --spec-draft-n-min 2 -- \
  --draft-max 4 --draft-min 2
same "... --draft-n-min" --draft-max 4 --draft-n-min 2 -- --draft-max 4 --draft-min 2
same "-no-cnv: run's plain completion, as without it" -no-cnv -- -n 12

expect_error "-cnv: mkc chat" \
  "mkc: error: -cnv: a conversation is mkc's chat command (mkc chat -m MODEL); run answers one prompt (--chat: with the chat template; -i: the user writes in turn with the model, as text)" \
  -- "${base[@]}" -cnv
# -i is run's interactive text mode (tests/test_interactive.sh), which needs a model's tokenizer
expect_error "-i: run's interactive mode, text" "mkc: error: run -i: the user writes text: -m MODEL (a tokenizer)" \
  -- "${base[@]}" -i
for f in -cnv -i -if; do
  "$mkc" chat $f --help >/dev/null 2>"$tmp/err"
  [ ! -s "$tmp/err" ] && ok "chat $f: taken, as chat is a conversation" || fail "chat $f" "$(cat "$tmp/err")"
done
expect_error "-no-cnv with -st" "mkc: error: -no-cnv and --chat (or -st, -sys, --chat-template): one" \
  -- "${base[@]}" -no-cnv -st
printf 'Be brief.\n' >"$tmp/sys.txt"
expect_error "-sysf and -sys" "mkc: error: -sysf and -sys: give one" -- "${base[@]}" -sysf "$tmp/sys.txt" -sys x
expect_error "-sysf: no such file" "mkc: error: -sysf $tmp/none: No such file or directory" \
  -- "${base[@]}" -sysf "$tmp/none"
expect_error "--chat-template-file: no such file" \
  "mkc: error: --chat-template-file $tmp/none: No such file or directory" -- "${base[@]}" --chat-template-file "$tmp/none"

# --draft-p-min (and newer llama.cpp's --spec-draft-p-min): self-speculation's drafts cut at the
# first unlikely choice (test_draft_sources checks which); the tokens stay the plain run's (lossless)
# and fewer are drafted as the floor rises
drun=(run --preset odd --random-weights 3 --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --draft-max 4 --draft-layers 1 --backend cpu)
"$mkc" run --preset odd --random-weights 3 --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend cpu >"$tmp/plain" 2>/dev/null
counts= same_out=1
for f in "" "--draft-p-min 0.15" "--spec-draft-p-min 0.2" "--draft-p-min 0.9"; do
  "$mkc" "${drun[@]}" $f >"$tmp/x" 2>"$tmp/err"
  cmp -s "$tmp/x" "$tmp/plain" || same_out=0
  counts="$counts $(grep -o 'drafted [0-9]*' "$tmp/err" | cut -d' ' -f2)"
done
read -r c0 c1 c2 c3 <<<"$counts"
[ "$same_out" = 1 ] && [ -n "$c3" ] && [ "$c0" -gt "$c1" ] && [ "$c1" -gt "$c2" ] && [ "$c2" -ge "$c3" ] \
  && ok "--draft-p-min: the plain run's tokens, fewer drafted as the floor rises (drafted:$counts)" \
  || fail "--draft-p-min" "same tokens: $same_out" "drafted:$counts"
"$mkc" "${drun[@]}" -ngld 99 -td 4 -ctkd q8_0 >"$tmp/x" 2>"$tmp/err"
[ "$(grep -c "^mkc: note: .*: not followed (llama.cpp's flag): " "$tmp/err")" = 3 ] && cmp -s "$tmp/x" "$tmp/plain" \
  && grep -q "^mkc: note: -ctkd q8_0: not followed (llama.cpp's flag): the draft's KV cache has the target's" "$tmp/err" \
  && ok "the draft model's -ngld, -td, -ctkd: a note each, the same tokens" \
  || fail "the draft's flags" "$(cat "$tmp/err")"
expect_error "--draft-p-min without a model drafter" \
  "mkc: error: run: --draft-p-min: the confidence of a draft model's (-md) or self-speculation's (--draft-layers) choices, drafted on the host (not with --rounds)" \
  -- run --preset odd --random-weights 3 --prompt-ids 1 -n 1 --draft-max 4 --draft-p-min 0.5
expect_error "--draft-p-min past 1" "mkc: error: --draft-p-min: expected a probability in 0..1, got '1.5'" \
  -- "${drun[@]}" --draft-p-min 1.5

# --check-tensors: every weight finite, else the run refused naming each tensor at fault; a
# bf16 file with a NaN planted in a norm, a Q8_0 file with an infinite block scale (the block's
# values infinite) and a norm at -inf (tests/gguf_poke.py writes them)
"$mkc" init --preset tiny --seed 1 -o "$tmp/ct.gguf" >/dev/null 2>&1
"$mkc" init --preset tiny --seed 1 --type q8_0 -o "$tmp/ct8.gguf" >/dev/null 2>&1
if "$mkc" run -m "$tmp/ct.gguf" --prompt-ids 1,2 -n 2 --backend cpu --check-tensors >/dev/null 2>"$tmp/err" \
  && grep -q "^mkc: $tmp/ct.gguf: --check-tensors: 20 tensors, .* G values, every one finite" "$tmp/err"; then
  ok "--check-tensors on a sound file: a note of what was checked, then the run"
else
  fail "--check-tensors on a sound file" "$(cat "$tmp/err")"
fi
python3 tests/gguf_poke.py "$tmp/ct.gguf" output_norm.weight 6 c07f # bf16 NaN, element 3
expect_error "--check-tensors: a NaN in a bf16 norm" \
  "mkc: error: $tmp/ct.gguf: tensor output_norm.weight: row 0, column 3 is NaN (--check-tensors)" \
  -- run -m "$tmp/ct.gguf" --prompt-ids 1,2 -n 2 --backend cpu --check-tensors
python3 tests/gguf_poke.py "$tmp/ct8.gguf" blk.1.ffn_down.weight 34 007c # block 2's scale: +inf
python3 tests/gguf_poke.py "$tmp/ct8.gguf" output_norm.weight 0 80ff    # -inf
"$mkc" run -m "$tmp/ct8.gguf" --prompt-ids 1,2 -n 2 --backend cpu --check-tensors >"$tmp/out" 2>"$tmp/err"
rc=$?
want="mkc: error: $tmp/ct8.gguf: tensor blk.1.ffn_down.weight: row 0, column 32 is +inf (--check-tensors)
mkc: error: $tmp/ct8.gguf: tensor output_norm.weight: row 0, column 0 is -inf (--check-tensors)
mkc: error: $tmp/ct8.gguf: 2 of 20 tensors hold values that are not finite"
[ "$rc" = 1 ] && [ "$(cat "$tmp/err")" = "$want" ] && [ ! -s "$tmp/out" ] \
  && ok "--check-tensors: an infinite Q8_0 scale and a norm at -inf, each named, the run refused" \
  || fail "--check-tensors on Q8_0" "rc $rc" "$(cat "$tmp/err")"

# --override-kv: the GGUF's metadata as given, before anything is read from it; info shows the
# file as a run with the same flags reads it, and the run follows (its context); several in one
# value and in several flags; each refusal
"$mkc" init --preset tiny --seed 1 -o "$tmp/kv.gguf" >/dev/null 2>&1
"$mkc" info -m "$tmp/kv.gguf" --override-kv 'llama.context_length=int:128,llama.rope.freq_base=float:5000' \
  --override-kv general.name=str:renamed --override-kv 'llama.attention.layer_norm_rms_epsilon=float:1e-6' \
  >"$tmp/info" 2>&1
want="graph: graphs/llama.lua, preset renamed (llama: 2 layers, dim 64, 4 heads (2 KV) of 16, ffn 192, vocab 256, context 128, rope theta 5000 (interleaved), rms eps 1e-06, tied head)"
grep -qx 'name: renamed' "$tmp/info" && grep -qx 'llama.context_length = 128' "$tmp/info" \
  && grep -qx 'llama.rope.freq_base = 5000' "$tmp/info" && grep -qxF "$want" "$tmp/info" \
  && ok "--override-kv on info: the entries and the graph mkc derives from them" \
  || fail "--override-kv on info" "$(grep -E 'name|context_length|freq_base|graph' "$tmp/info")"
"$mkc" run -m "$tmp/kv.gguf" --prompt-ids 1,2 -n 8 --backend cpu --override-kv llama.context_length=int:64 \
  >/dev/null 2>"$tmp/err"
grep -q 'context 64;' "$tmp/err" && ok "--override-kv on run: the context the entry gives (64)" \
  || fail "--override-kv on run" "$(tail -n 1 "$tmp/err")"
expect_error "--override-kv: another kind of value than the file's" \
  "mkc: error: $tmp/kv.gguf: --override-kv llama.context_length: the file's value is of type u32, which int: sets" \
  -- run -m "$tmp/kv.gguf" --prompt-ids 1 -n 1 --override-kv llama.context_length=float:64
expect_error "--override-kv: an int that is not one" \
  "mkc: error: --override-kv: llama.context_length: expected a whole number after int:, got '6x'" \
  -- run -m "$tmp/kv.gguf" --prompt-ids 1 -n 1 --override-kv llama.context_length=int:6x
expect_error "--override-kv: a bool that is not one" \
  "mkc: error: --override-kv: a.b: expected true or false after bool:, got 'yes'" \
  -- run -m "$tmp/kv.gguf" --prompt-ids 1 -n 1 --override-kv a=int:1,a.b=bool:yes
expect_error "--override-kv: no type" \
  "mkc: error: --override-kv: a: expected the type int:, float:, bool: or str:, got '1'" \
  -- run -m "$tmp/kv.gguf" --prompt-ids 1 -n 1 --override-kv a=1
expect_error "--override-kv: no key" \
  "mkc: error: --override-kv: '=int:1': expected KEY=TYPE:VALUE (a key of 1 to 127 bytes)" \
  -- run -m "$tmp/kv.gguf" --prompt-ids 1 -n 1 --override-kv =int:1
expect_error "--override-kv: a quote not closed" \
  "mkc: error: --override-kv: '\"a=str:b,c': a field too long, or a quote not closed" \
  -- run -m "$tmp/kv.gguf" --prompt-ids 1 -n 1 --override-kv '"a=str:b,c'
expect_error "--override-kv without a model file" \
  "mkc: error: --override-kv: a model file's metadata: give -m MODEL" -- "${base[@]}" --override-kv a=int:1
"$mkc" init --preset tiny --seed 1 -o "$tmp/kvhf" >/dev/null 2>&1
expect_error "--override-kv on a Hugging Face folder" \
  "mkc: error: --override-kv: $tmp/kvhf is a Hugging Face model; the flag overrides a GGUF file's metadata" \
  -- run -m "$tmp/kvhf" --prompt-ids 1 -n 1 --override-kv a=int:1

# RoPE flags: each against --override-kv of the keys llama.cpp's loader reads for the same RoPE
# (another path: the description read from the metadata), 40 tokens of each; the oracle first
# shown to tell a changed RoPE from the file's
# same_file FILE NAME ARGS... -- ARGS2...: run -m FILE's 40 tokens with ARGS equal those with ARGS2
same_file() {
  local file=$1 name=$2 a=()
  shift 2
  while [ "$1" != -- ]; do
    a+=("$1")
    shift
  done
  shift
  local run=(run -m "$file" --prompt-ids 1,2,3 -n 40 --backend cpu)
  if "$mkc" "${run[@]}" "${a[@]}" >"$tmp/a" 2>"$tmp/err" && "$mkc" "${run[@]}" "$@" >"$tmp/b" 2>>"$tmp/err" \
    && [ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/b"; then
    ok "$name"
  else
    fail "$name" "flags:    $(cat "$tmp/a")" "override: $(cat "$tmp/b")" "$(grep error "$tmp/err")"
  fi
}
"$mkc" init --preset tiny --seed 1 -o "$tmp/rope.gguf" >/dev/null 2>&1
"$mkc" run -m "$tmp/rope.gguf" --prompt-ids 1,2,3 -n 40 --backend cpu >"$tmp/plain" 2>/dev/null
for f in "--rope-freq-base 5000" "--rope-scale 4"; do
  "$mkc" run -m "$tmp/rope.gguf" --prompt-ids 1,2,3 -n 40 --backend cpu $f >"$tmp/x" 2>/dev/null
  [ -s "$tmp/x" ] && ! cmp -s "$tmp/x" "$tmp/plain" && ok "$f changes the tokens (the oracle tells them apart)" \
    || fail "$f changes the tokens" "$(cat "$tmp/x")"
done
same_file "$tmp/rope.gguf" "--rope-freq-base: the file's llama.rope.freq_base" --rope-freq-base 5000 -- \
  --override-kv llama.rope.freq_base=float:5000
same_file "$tmp/rope.gguf" "--rope-scale 4: linear scaling by 4 (a file without a type is linear)" --rope-scale 4 -- \
  --override-kv llama.rope.scaling.factor=float:4
same_file "$tmp/rope.gguf" "--rope-freq-scale 0.25 = --rope-scale 4" --rope-freq-scale 0.25 -- --rope-scale 4
same_file "$tmp/rope.gguf" "--rope-scaling none: never scaled" --rope-scaling none --rope-scale 4 --
same_file "$tmp/rope.gguf" "--rope-scaling yarn with --rope-scale, --yarn-orig-ctx, --yarn-beta-*, --yarn-ext-factor" \
  --rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 128 --yarn-beta-fast 16 --yarn-beta-slow 2 --yarn-ext-factor 0.5 -- \
  --override-kv llama.rope.scaling.type=str:yarn,llama.rope.scaling.factor=float:4 \
  --override-kv llama.rope.scaling.original_context_length=int:128,llama.rope.scaling.yarn_beta_fast=float:16 \
  --override-kv llama.rope.scaling.yarn_beta_slow=float:2,llama.rope.scaling.yarn_ext_factor=float:0.5
# A Hugging Face folder the same: --rope-freq-base against config.json's rope_theta
"$mkc" init --preset tiny --seed 1 -o "$tmp/ropehf" >/dev/null 2>&1
cp -r "$tmp/ropehf" "$tmp/ropehf5"
python3 -c "
import json, sys
c = json.load(open(sys.argv[1])); c['rope_theta'] = 5000.0
json.dump(c, open(sys.argv[1], 'w'))" "$tmp/ropehf5/config.json"
"$mkc" run -m "$tmp/ropehf5" --prompt-ids 1,2,3 -n 40 --backend cpu >"$tmp/x" 2>/dev/null
"$mkc" run -m "$tmp/ropehf" --prompt-ids 1,2,3 -n 40 --backend cpu --rope-freq-base 5000 >"$tmp/a" 2>"$tmp/err"
[ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/x" && ok "a Hugging Face folder: --rope-freq-base = config.json's rope_theta" \
  || fail "--rope-freq-base on a folder" "$(cat "$tmp/a")" "$(cat "$tmp/x")" "$(cat "$tmp/err")"
# Sliding-window layers keep the base they were trained with (llama.cpp's): Gemma 2's share the
# file's one, so they keep 10000 when the others take 5000; Gemma 3's have their own
"$mkc" init --preset gemma2-tiny --seed 1 -o "$tmp/g2.gguf" >/dev/null 2>&1
"$mkc" init --preset gemma3-tiny --seed 1 -o "$tmp/g3.gguf" >/dev/null 2>&1
same_file "$tmp/g2.gguf" "gemma2: --rope-freq-base moves the global layers' base, the local ones keep 10000" \
  --rope-freq-base 5000 -- --override-kv gemma2.rope.freq_base=float:5000,gemma2.rope.freq_base_swa=float:10000
"$mkc" run -m "$tmp/g2.gguf" --prompt-ids 1,2,3 -n 40 --backend cpu --override-kv gemma2.rope.freq_base=float:5000 \
  >"$tmp/x" 2>/dev/null
! cmp -s "$tmp/x" "$tmp/a" && ok "... which the local layers moving too would not give" || fail "gemma2: the local base matters"
same_file "$tmp/g3.gguf" "gemma3: --rope-freq-base moves the global layers' base" --rope-freq-base 5000 -- \
  --override-kv gemma3.rope.freq_base=float:5000
expect_error "--yarn-* without YaRN" \
  "mkc: error: $tmp/rope.gguf: --yarn-orig-ctx, --yarn-ext-factor and --yarn-beta-*: with YaRN scaling (--rope-scaling yarn, or a model trained so), not linear" \
  -- run -m "$tmp/rope.gguf" --prompt-ids 1 -n 1 --rope-scale 2 --yarn-beta-fast 3
expect_error "YaRN below a factor of 1" \
  "mkc: error: $tmp/rope.gguf: yarn RoPE scaling: factor 0.5 (--rope-scale), beta fast/slow 32/1 (Expected: factor >= 1, the betas > 0)" \
  -- run -m "$tmp/rope.gguf" --prompt-ids 1 -n 1 --rope-scaling yarn --rope-scale 0.5
"$mkc" init --preset llama3-tiny --seed 1 -o "$tmp/l3.gguf" >/dev/null 2>&1
expect_error "--rope-scale on Llama 3's own per-frequency factors" \
  "mkc: error: $tmp/l3.gguf: its RoPE scaling is llama3, with per-frequency factors of its own: --rope-scale, --rope-freq-scale, --rope-scaling and --yarn-* do not apply to it" \
  -- run -m "$tmp/l3.gguf" --prompt-ids 1 -n 1 --rope-scale 2
expect_error "--rope-scaling: a type mkc does not take" "mkc: error: --rope-scaling: expected none, linear or yarn, got 'llama3'" \
  -- run -m "$tmp/rope.gguf" --prompt-ids 1 -n 1 --rope-scaling llama3
expect_error "--rope-scale 0" "mkc: error: --rope-scale: expected a number > 0, got '0'" \
  -- run -m "$tmp/rope.gguf" --prompt-ids 1 -n 1 --rope-scale 0
expect_error "RoPE flags without a model file" "mkc: error: --rope-* and --yarn-*: a model file's RoPE: give -m MODEL" \
  -- "${base[@]}" --rope-freq-base 100

# The texts from files, on SmolLM2 (chatml): the prompt's tokens as the text flags give them
model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$model" ]; then
  skip "-sysf, --chat-template-file on SmolLM2: no test data (tests/data/fetch.sh)"
else
  # prompt_tokens ARGS...: the prompt's tokens run shows (--verbose-prompt), greedy 4 tokens after
  prompt_tokens() {
    "$mkc" run -m "$model" -p Hi -n 4 --backend cpu --verbose-prompt --no-display-prompt "$@" 2>&1 \
      | grep -v '^mkc: cpu'
  }
  prompt_tokens -sysf "$tmp/sys.txt" >"$tmp/a"
  prompt_tokens -sys 'Be brief.' >"$tmp/b"
  grep -q "'system'" "$tmp/a" && cmp -s "$tmp/a" "$tmp/b" \
    && ok "-sysf FILE: -sys with the file's text, its closing newline dropped ($(head -n 1 "$tmp/a" | cut -d: -f2))" \
    || fail "-sysf" "$(diff "$tmp/a" "$tmp/b" | head -6)"
  # chatml as a template's text (the shape of SmolLM2's), from a file and as --chat-template's value
  tpl="{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
  printf '%s' "$tpl" >"$tmp/chatml.jinja"
  prompt_tokens --chat-template-file "$tmp/chatml.jinja" >"$tmp/a"
  prompt_tokens --chat-template "$tpl" >"$tmp/c"
  prompt_tokens --chat-template chatml >"$tmp/b"
  grep -q "'user'" "$tmp/a" && cmp -s "$tmp/a" "$tmp/b" && cmp -s "$tmp/c" "$tmp/b" \
    && ok "--chat-template-file FILE and --chat-template TEXT: the template recognised, chatml's prompt" \
    || fail "--chat-template-file" "$(diff "$tmp/a" "$tmp/b" | head -6)" "$(diff "$tmp/c" "$tmp/b" | head -6)"
  # --override-kv tokenizer.ggml.add_bos_token=bool:true: the prompt begins with BOS (SmolLM2's is
  # <|im_start|>, id 1), as the same text with it written out does; a quoted field with a comma
  prompt_tokens --override-kv 'tokenizer.ggml.add_bos_token=bool:true,"general.name=str:a, b"' >"$tmp/a"
  prompt_tokens -p '<|im_start|>Hi' >"$tmp/b"
  [ "$(sed -n 2p "$tmp/a")" = "     1 -> '<|im_start|>'" ] && cmp -s "$tmp/a" "$tmp/b" \
    && ok "--override-kv tokenizer.ggml.add_bos_token=bool:true: BOS first, the same answer as BOS written" \
    || fail "--override-kv add_bos_token" "$(diff "$tmp/a" "$tmp/b" | head -6)"
  expect_error "--override-kv: an array" \
    "mkc: error: $model: --override-kv tokenizer.ggml.tokens: the file's value is of type array, which no override sets" \
    -- run -m "$model" -p Hi --override-kv tokenizer.ggml.tokens=str:x
  # -rea off: the template told not to reason, as --reasoning-budget 0 (qwen3's empty think
  # block; chatml has no way); on and auto: as without it
  prompt_tokens --chat-template qwen3 -rea off >"$tmp/a"
  prompt_tokens --chat-template qwen3 --reasoning-budget 0 >"$tmp/b"
  prompt_tokens --chat-template qwen3 -rea on >"$tmp/c"
  prompt_tokens --chat-template qwen3 >"$tmp/d"
  grep -q "'think'" "$tmp/a" && cmp -s "$tmp/a" "$tmp/b" && cmp -s "$tmp/c" "$tmp/d" && ! cmp -s "$tmp/a" "$tmp/c" \
    && ok "-rea off = --reasoning-budget 0 (qwen3's empty think block); -rea on as without it" \
    || fail "-rea" "$(diff "$tmp/a" "$tmp/b" | head -4)" "$(diff "$tmp/c" "$tmp/d" | head -4)"
  expect_error "-rea off on chatml" \
    "mkc: error: --reasoning-budget 0: the chatml chat template has no way to turn reasoning off (qwen3's has)" \
    -- run -m "$model" -p Hi -rea off
  expect_error "-rea: a value it does not take" "mkc: error: --reasoning: expected on, off or auto, got 'maybe'" \
    -- run -m "$model" -p Hi -rea maybe
  expect_error "serve --reasoning-format deepseek-legacy" \
    "mkc: error: --reasoning-format: expected none, deepseek or auto (mkc does not give deepseek-legacy's both at once), got 'deepseek-legacy'" \
    -- serve -m "$model" --reasoning-format deepseek-legacy
  printf '{{ messages[0].content }}' >"$tmp/odd.jinja"
  expect_error "--chat-template-file: a template mkc does not know" \
    "mkc: error: --chat-template: the template given is not one mkc knows; pass --chat-template NAME (one of: $("$mkc" run -m "$model" -p x --chat-template none 2>&1 | sed -n 's/.*(one of: \(.*\))$/\1/p'))" \
    -- run -m "$model" -p Hi --backend cpu --chat-template-file "$tmp/odd.jinja"
fi
finish
