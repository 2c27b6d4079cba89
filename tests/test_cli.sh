#!/usr/bin/env bash
# The mkc command line: golden kernels (they change only on purpose: `make
# golden`), `mkc run` on the cpu backend against the ref backend, and clear
# errors for bad flags and inputs.
source "$(dirname "$0")/lib.sh"

# Golden kernels.
for p in tiny odd llama-3.2-1b; do
  golden=tests/golden/llama.$p.cu
  if ! "$mkc" gen graphs/llama.lua --preset "$p" --draft-max 4 -o "$tmp/$p.cu" 2>"$tmp/err"; then
    fail "gen $p" "$(cat "$tmp/err")"
  elif ! diff -u "$golden" "$tmp/$p.cu" >"$tmp/diff"; then
    fail "gen $p matches $golden (if the change is on purpose: make golden)" "$(head -n 40 "$tmp/diff")"
  else
    ok "gen $p matches $golden"
  fi
done
n=$(grep -c '__global__' "$tmp/tiny.cu")
[ "$n" -eq 1 ] && ok "the tiny kernel has exactly one __global__" || fail "one __global__" "found $n"
grep -q '^#define MKC_T_MAX 5$' "$tmp/tiny.cu" && grep -q 'mkc_step_begin(state, 256, 512, 5, 128)' "$tmp/tiny.cu" \
  && ok "model sizes are literals in the kernel" || fail "model sizes are literals in the kernel"
grep -q 'generated: do not edit' "$tmp/tiny.cu" && ok "the kernel header says generated: do not edit" \
  || fail "generated header"
"$mkc" gen graphs/llama.lua --preset tiny -o - >"$tmp/stdout.cu" 2>/dev/null && grep -q 'MKC_T_MAX 1$' "$tmp/stdout.cu" \
  && ok "gen -o - writes to stdout, draft-max 0 by default" || fail "gen -o -"

# run: cpu backend and the reference executor agree, with and without drafts.
for p in tiny odd; do
  for k in 0 4; do
    args=(run --preset "$p" --random-weights 7 -n 48 --prompt-ids 3,1,4,1,5,9,2,6 --draft-max "$k")
    if "$mkc" "${args[@]}" >"$tmp/cpu" 2>"$tmp/cpu.err" && "$mkc" "${args[@]}" --backend ref >"$tmp/ref" 2>"$tmp/ref.err"; then
      words=$(wc -w <"$tmp/cpu")
      if [ "$words" -eq 48 ] && cmp -s "$tmp/cpu" "$tmp/ref"; then
        ok "run $p --draft-max $k: 48 ids, cpu = ref"
      else
        fail "run $p --draft-max $k: 48 ids, cpu = ref" "cpu: $(cat "$tmp/cpu")" "ref: $(cat "$tmp/ref")"
      fi
      grep -Eq 'tok/s\); greedy; drafted [0-9]+, accepted [0-9]+, acceptance [0-9.]+%, [0-9.]+ tokens/step' "$tmp/cpu.err" \
        && ok "run $p --draft-max $k: stats line" || fail "run $p: stats line" "$(cat "$tmp/cpu.err")"
    else
      fail "run $p --draft-max $k" "$(cat "$tmp/cpu.err" "$tmp/ref.err")"
    fi
  done
done
"$mkc" run --preset tiny --random-weights 7 -n 8 >"$tmp/a" 2>/dev/null
"$mkc" run --preset tiny --random-weights 8 -n 8 >"$tmp/b" 2>/dev/null
! cmp -s "$tmp/a" "$tmp/b" && ok "the seed changes the weights" || fail "the seed changes the weights"
"$mkc" run --preset tiny --random-weights 7 -n 0 >"$tmp/a" 2>/dev/null && [ "$(wc -w <"$tmp/a")" -eq 0 ] \
  && ok "-n 0 generates nothing" || fail "-n 0"

# run --context-shift: past a full context of 24, each span equals a plain run (the reference
# executor, no shift) of the history llama.cpp's rule leaves: the first --keep 2 tokens, then the
# later half of the rest of the cached ones.
prompt=(3 1 4 1 5 9) ctx=24 keep=2 n=50
if "$mkc" run --preset tiny --random-weights 7 --ctx $ctx --prompt-ids "$(IFS=,; echo "${prompt[*]}")" \
  -n $n --context-shift --keep $keep --draft-max 3 >"$tmp/shift" 2>"$tmp/shift.err"; then
  read -ra got <"$tmp/shift"
  hist=("${prompt[@]}") done=0 spans=0 bad=
  while [ $done -lt $n ] && [ -z "$bad" ]; do
    room=$((ctx + 1 - ${#hist[@]})) want=$((n - done))
    [ $want -gt $room ] && want=$room
    "$mkc" run --preset tiny --random-weights 7 --ctx $ctx --backend ref -n $want \
      --prompt-ids "$(IFS=,; echo "${hist[*]}")" >"$tmp/span" 2>/dev/null || bad="span $spans failed"
    read -ra span <"$tmp/span"
    [ "${span[*]}" = "${got[*]:done:want}" ] || bad="span $spans: want ${span[*]}, got ${got[*]:done:want}"
    hist+=("${span[@]}") done=$((done + want)) spans=$((spans + 1))
    discard=$(((${#hist[@]} - 1 - keep) / 2))
    hist=("${hist[@]:0:keep}" "${hist[@]:keep+discard}")
  done
  [ ${#got[@]} -eq $n ] && [ -z "$bad" ] && ok "run --context-shift: $n ids in $spans spans, each a plain run of the shifted history" \
    || fail "run --context-shift: spans" "${bad:-${#got[@]} ids}"
  grep -q "context $ctx, shifted $((spans - 1)) times (.* tokens fed again in .* steps); stopped: -n reached" "$tmp/shift.err" \
    && ok "run --context-shift: the stats line counts the shifts" || fail "run --context-shift: stats" "$(cat "$tmp/shift.err")"
else
  fail "run --context-shift" "$(cat "$tmp/shift.err")"
fi
expect_error "--keep without --context-shift" \
  "mkc: error: run: --keep N says what a context shift keeps: it goes with --context-shift" \
  -- run --preset tiny --random-weights 1 -n 4 --keep 3
# llama.cpp's -ngl: 0 is the cpu backend (the same tokens as --backend cpu; with a device on
# the fake driver, test_fake_cuda.sh); contradictions and bad counts refused
ngl=(run --preset tiny --random-weights 1 -n 6 --prompt-ids 1,2,3)
if [ "$("$mkc" "${ngl[@]}" -ngl 0 2>"$tmp/ngl.err")" = "$("$mkc" "${ngl[@]}" --backend cpu 2>/dev/null)" ] \
  && grep -q '^mkc: cpu backend' "$tmp/ngl.err"; then
  ok "-ngl 0: the cpu backend, its tokens"
else
  fail "-ngl 0" "$(cat "$tmp/ngl.err")"
fi
expect_error "-ngl 0 with --backend cuda" "mkc: error: -ngl 0 keeps every layer off the GPU: not with --backend cuda" \
  -- "${ngl[@]}" -ngl 0 --backend cuda
expect_error "--n-gpu-layers 8 with --backend cpu" "mkc: error: -ngl puts layers on the GPU: not with --backend cpu" \
  -- "${ngl[@]}" --n-gpu-layers 8 --backend cpu
expect_error "-ngl not a count" "mkc: error: -ngl: expected a number of layers (0: none on the GPU), all or auto, got 'x'" \
  -- "${ngl[@]}" -ngl x
# llama.cpp's -ctk/-ctv: mkc's one KV type, given for both or once; the pool a batch reports is
# --kv-dtype f32's (twice bf16's)
printf '1,2,3\n4,5\n' >"$tmp/two.txt"
pool() { "$mkc" run --preset tiny --random-weights 1 --batch "$tmp/two.txt" -n 2 --backend cpu "$@" 2>&1 | grep -o 'pool of [0-9.]* MiB'; }
p_bf16=$(pool) p_f32=$(pool --kv-dtype f32) p_kv=$(pool -ctk f32 -ctv f32) p_v=$(pool --cache-type-v f32)
[ -n "$p_f32" ] && [ "$p_kv" = "$p_f32" ] && [ "$p_v" = "$p_f32" ] && [ "$p_bf16" != "$p_f32" ] \
  && ok "-ctk f32 -ctv f32, and -ctv f32 alone: --kv-dtype f32's cache ($p_f32; bf16's: $p_bf16)" \
  || fail "-ctk/-ctv" "bf16 $p_bf16, f32 $p_f32, -ctk -ctv $p_kv, -ctv $p_v"
expect_error "-ctk and -ctv that differ" "mkc: error: -ctk f16 and -ctv bf16: mkc's K and V rows share one type; give the same" \
  -- "${ngl[@]}" -ctk f16 -ctv bf16
expect_error "-ctk q8_0" "mkc: error: -ctk/-ctv: the KV cache is bf16, f16 or f32 here, not 'q8_0'" \
  -- "${ngl[@]}" -ctk q8_0 -ctv q8_0
expect_error "-ctk with another --kv-dtype" "mkc: error: -ctk/-ctv f32 and --kv-dtype: one type, given once" \
  -- "${ngl[@]}" -ctk f32 --kv-dtype f16
expect_error "-ngl where no backend is chosen" "mkc: error: unknown option '-ngl'" -- tokenize -m x -ngl 1
expect_error "--context-shift and --no-context-shift" "mkc: error: run: --context-shift or --no-context-shift: one" \
  -- run --preset tiny --random-weights 1 -n 4 --context-shift --no-context-shift
expect_error "--context-shift with --batch and no -n" \
  "mkc: error: run --batch --context-shift: give -n N, each line's token budget (a shifted answer has no other end)" \
  -- run --preset tiny --random-weights 1 --batch /dev/null --context-shift

# Bad input: clear messages, non-zero exit, no crash.
expect_error "unknown command" "mkc: error: unknown command 'frobnicate' (expected one of: run, chat, gen, compile, bench, inspect, init, info, serve, embed, tokenize, perplexity, quantize, imatrix, gguf-split)" -- frobnicate
expect_error "unknown option" "mkc: error: unknown option '--fast'" -- run --preset tiny --fast 1
expect_error "--draft-max out of range" "mkc: error: --draft-max: expected an integer in 0..31, got '40'" \
  -- gen graphs/llama.lua --preset tiny --draft-max 40 -o "$tmp/x.cu"
expect_error "--draft-max not a number" "mkc: error: --draft-max: expected an integer in 0..31, got '4x'" \
  -- run --preset tiny --random-weights 1 -n 4 --draft-max 4x
expect_error "missing value" "mkc: error: -n needs a value" -- run --preset tiny --random-weights 1 -n
expect_error "missing preset" "mkc: error: run: -m FILE, --preset or --kernel DIR is required" -- run --random-weights 1 -n 4
expect_error "missing seed" "mkc: error: run: --random-weights SEED is required without -m" \
  -- run --preset tiny -n 4
expect_error "unknown backend" "mkc: error: --backend: expected cuda, cpu, ref or auto, got 'gpu'" \
  -- run --preset tiny --random-weights 1 -n 4 --backend gpu
expect_error "token outside the vocabulary" "mkc: error: --prompt-ids: token 256 is outside the vocabulary (0..255)" \
  -- run --preset tiny --random-weights 1 -n 4 --prompt-ids 1,256
expect_error "malformed prompt ids" "mkc: error: --prompt-ids: expected comma-separated token ids, got '1,,2'" \
  -- run --preset tiny --random-weights 1 -n 4 --prompt-ids 1,,2
expect_error "prompt + n past the context" \
  "mkc: error: 3 prompt tokens + 30 generated need 32 positions but the context holds 16 (use --ctx)" \
  -- run --preset tiny --random-weights 1 -n 30 --prompt-ids 1,2,3 --ctx 16
expect_error "prompt longer than the context" \
  "mkc: error: the prompt is 20 tokens but the context holds 16: nothing was run (use --ctx 20 or a shorter prompt)" \
  -- run --preset tiny --random-weights 1 -n 1 --prompt-ids 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20 --ctx 16
expect_error "unknown preset" "graphs/llama.lua:37: error: unknown preset huge (this graph has: tiny, odd, llama-3.2-1b, qwen2-tiny, qwen3-tiny, llama3-tiny, yarn-tiny, linear-tiny, longrope-tiny, partial-tiny, granite-tiny, gemma-3-1b, gemma-2-2b, smollm2-135m, blocks-tiny, swa-tiny, gemma-tiny, gemma3-tiny, gemma2-tiny, gemma1-tiny, smollm3-tiny, exaone4-tiny, exaone4-swa-tiny, hybrid-tiny, moe-tiny, mixtral-tiny, granitemoe-tiny, qwen3-30b-a3b-8l, gptoss-tiny, gpt-oss-20b-8l)" \
  -- gen graphs/llama.lua --preset huge -o "$tmp/x.cu"
expect_error "missing graph file" "mkc: error: cannot open graph nope.lua" -- gen nope.lua --preset tiny -o "$tmp/x.cu"
# --keep-layers: a keep stage before every layer (the loop still folds), the asked-for layer's slot
"$mkc" gen graphs/llama.lua --preset llama-3.2-1b --keep-layers 3,8 -o "$tmp/keep.cu" 2>/dev/null \
  && grep -q '^  for (int layer = 0; layer < (drafting ? state->draft_layers : 16); layer++) { /\* layer loop \*/$' "$tmp/keep.cu" \
  && [ "$(grep -c '^  mkc_keep(scratch + 0, 2048, 2048, T, scratch + [0-9]*, [0-9]*, lay_i\[0\]);$' "$tmp/keep.cu")" -eq 1 ] \
  && ok "gen --keep-layers 3,8: a keep stage in the 16-pass layer loop" || fail "gen --keep-layers" "$(grep -n 'mkc_keep\|layer loop' "$tmp/keep.cu" | head)"
expect_error "--keep-layers past the model" "mkc: error: keep layers: layer 2 is not one of the model's 0..1" \
  -- gen graphs/llama.lua --preset tiny --keep-layers 2 -o "$tmp/x.cu"
expect_error "--keep-layers twice" "mkc: error: keep layers: layer 1 is named twice" \
  -- gen graphs/llama.lua --preset tiny --keep-layers 1,1 -o "$tmp/x.cu"
expect_error "--keep-layers not a list" "mkc: error: --keep-layers: expected up to 8 layer numbers separated by commas, got '0,x'" \
  -- gen graphs/llama.lua --preset tiny --keep-layers 0,x -o "$tmp/x.cu"
expect_error "unwritable output" "mkc: error: cannot write /nonexistent/x.cu: No such file or directory" \
  -- gen graphs/llama.lua --preset tiny -o /nonexistent/x.cu
"$mkc" run --preset tiny --random-weights 1 -n 5 --prompt-ids 1,2,3 --ctx 7 >"$tmp/out" 2>/dev/null \
  && [ "$(wc -w <"$tmp/out")" -eq 5 ] && ok "prompt + n exactly filling the context runs" \
  || fail "prompt + n exactly filling the context runs"

# A recurrent (linear attention) layer: only the reference runs it. Elsewhere a clear error at its
# graph line; on the reference, self-speculation (its first two layers, both recurrent, draft and
# roll back their states) gives plain decoding's tokens.
expect_error "hybrid-tiny on the cpu backend" \
  "$PWD/graphs/llama.lua:$(grep -n 'local o = g.recurrent(' graphs/llama.lua | cut -d: -f1): error: recurrent (gated_delta): no kernel emits this op yet; the reference executor runs it (--backend ref)" \
  -- run --preset hybrid-tiny --random-weights 7 -n 4 --backend cpu
expect_error "init hybrid-tiny" \
  "mkc: error: preset hybrid-tiny: layer 0 is a recurrent (linear attention) layer, which mkc's model files do not carry yet; run the preset with --random-weights --backend ref instead" \
  -- init --preset hybrid-tiny --seed 1 -o "$tmp/hybrid.gguf"
args=(run --preset hybrid-tiny --random-weights 7 -n 32 --prompt-ids 1,2 --backend ref)
if "$mkc" "${args[@]}" >"$tmp/h.plain" 2>/dev/null &&
  "$mkc" "${args[@]}" --draft-layers 2 --draft-max 3 >"$tmp/h.spec" 2>"$tmp/h.err" &&
  cmp -s "$tmp/h.plain" "$tmp/h.spec" && [ "$(wc -w <"$tmp/h.plain")" -eq 32 ] &&
  grep -q 'accepted [1-9]' "$tmp/h.err" && grep -q ' [1-9][0-9]* mismatches' "$tmp/h.err"; then
  ok "hybrid-tiny on the reference: self-speculation over recurrent layers = plain decoding"
else
  fail "hybrid-tiny on the reference: self-speculation over recurrent layers = plain decoding" \
    "$(cat "$tmp/h.plain")" "$(cat "$tmp/h.spec")" "$(tail -n 1 "$tmp/h.err")"
fi

# The CUDA backend without a driver: a clear message, never a crash.
MKC_LIBCUDA=/nonexistent/libcuda.so.1 expect_error "cuda backend, no driver" \
  "mkc: error: no CUDA driver (/nonexistent/libcuda.so.1 not found); use --backend cpu" \
  -- run --preset tiny --random-weights 1 -n 4 --backend cuda
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
  expect_error "cuda backend on a machine without libcuda" \
    "mkc: error: no CUDA driver (libcuda.so.1 not found); use --backend cpu" \
    -- run --preset tiny --random-weights 1 -n 4 --backend cuda
fi
MKC_LIBCUDA=/nonexistent/libcuda.so.1 "$mkc" run --preset tiny --random-weights 1 -n 4 >"$tmp/out" 2>"$tmp/err" \
  && grep -q '^mkc: cpu backend' "$tmp/err" && ok "--backend auto without a driver runs on the cpu backend" \
  || fail "--backend auto without a driver runs on the cpu backend" "$(cat "$tmp/err")"

# compile + run --kernel.
if "$mkc" compile "$tmp/tiny.cu" --arch sm_80,sm_90 -o "$tmp/aot" 2>"$tmp/err"; then
  [ -s "$tmp/aot/llama.tiny.sm_80.cubin" ] && [ -s "$tmp/aot/llama.tiny.sm_90.cubin" ] \
    && [ -s "$tmp/aot/llama.tiny.compute_80.ptx" ] && [ -s "$tmp/aot/manifest.json" ] \
    && ok "compile writes cubins, PTX and manifest.json" || fail "compile outputs" "$(ls "$tmp/aot")"
  MKC_LIBCUDA=/nonexistent/libcuda.so.1 expect_error "run --kernel without a driver" \
    "mkc: error: no CUDA driver (/nonexistent/libcuda.so.1 not found); --kernel needs a GPU (use --backend cpu without --kernel)" \
    -- run --kernel "$tmp/aot" --random-weights 1 -n 4
  sed -i 's/"draft_max":\t4/"draft_max":\t3/' "$tmp/aot/manifest.json"
  expect_error "run --kernel whose source no longer matches" \
    "mkc: error: $tmp/aot was compiled from another kernel than mkc generates now for graphs/llama.lua, preset tiny (source hash $(grep -o '"source":\s*"[0-9a-f]*"' "$tmp/aot/manifest.json" | grep -o '[0-9a-f]\{16\}'), now $("$mkc" gen graphs/llama.lua --preset tiny --draft-max 3 -o - 2>/dev/null | python3 -c 'import sys
h=0xcbf29ce484222325
for b in sys.stdin.buffer.read(): h=((h^b)*0x100000001b3)&(2**64-1)
print("%016x"%h)')): the graph or templates changed; run mkc gen and mkc compile again" \
    -- run --kernel "$tmp/aot" --random-weights 1 -n 4
else
  fail "compile tiny for sm_80,sm_90" "$(cat "$tmp/err")"
fi
expect_error "compile: bad arch" "mkc: error: --arch: expected a list like sm_80,sm_90, got 'ampere'" \
  -- compile "$tmp/tiny.cu" --arch ampere -o "$tmp/aot2"
expect_error "run --kernel with no manifest" \
  "mkc: error: cannot read /nonexistent/manifest.json: No such file or directory (make one with mkc compile)" \
  -- run --kernel /nonexistent --random-weights 1 -n 4

# MKC_MV_UNROLL (the matvec's loads in flight, a benchmark knob): checked, emitted, and on the
# checking schedule (every lane's share run by that lane) the kernel keeps the reference's tokens.
MKC_MV_UNROLL=7 expect_error "MKC_MV_UNROLL out of range" \
  'mkc: error: MKC_MV_UNROLL must be 1, 2, 3 or 4, got "7"' -- gen graphs/llama.lua --preset tiny -o "$tmp/u7.cu"
args=(run --preset odd --random-weights 7 -n 24 --prompt-ids 3,1,4,1,5 --draft-max 4)
if MKC_MV_UNROLL=2 "$mkc" gen graphs/llama.lua --preset odd -o "$tmp/u2.cu" 2>/dev/null &&
  grep -q '^#define MKC_MV_UNROLL 2 ' "$tmp/u2.cu" &&
  MKC_MV_UNROLL=2 MKC_SIMT_SEED=1 "$mkc" "${args[@]}" --backend cpu >"$tmp/u2.out" 2>/dev/null &&
  "$mkc" "${args[@]}" --backend ref >"$tmp/u2.ref" 2>/dev/null && cmp -s "$tmp/u2.out" "$tmp/u2.ref" &&
  [ "$(wc -w <"$tmp/u2.out")" -eq 24 ]; then
  ok "MKC_MV_UNROLL=2: emitted, and the lane path gives the reference's 24 tokens (odd)"
else
  fail "MKC_MV_UNROLL=2" "$(cat "$tmp/u2.out" "$tmp/u2.ref" 2>/dev/null)"
fi

# MKC_MV_ROW1 (the idle-warp matvecs' rows one a warp, a benchmark knob): checked, emitted, and on
# the checking schedule the kernel keeps the reference's tokens, at T <= 5 and in T = 1's copies.
MKC_MV_ROW1=3 expect_error "MKC_MV_ROW1 out of range" \
  'mkc: error: MKC_MV_ROW1 must be 0, 2, 4 or 8, got "3"' -- gen graphs/llama.lua --preset tiny -o "$tmp/r3.cu"
MKC_CP_RING=16 MKC_MV_ROW1=8 expect_error "MKC_CP_RING with MKC_MV_ROW1" \
  'mkc: error: MKC_CP_RING takes the place of the loads MKC_MV_ROW1 unrolls: set one of the two' \
  -- gen graphs/llama.lua --preset tiny -o "$tmp/r8r.cu"
# 16 blocks (64 warps): every matvec row block leaves warps idle, so o-proj and down take the path
# (MKC_SPLIT=0: the T = 1 kernel's split would take them first).
# blocks-tiny with 2 chunks a lane: down's 96 chunks a row in two turns, the second one short.
for r1 in "odd 8 4" "odd 8 0" "blocks-tiny 2 4"; do
  read -r p u dm <<<"$r1"
  r1args=(run --preset "$p" --random-weights 7 -n 24 --prompt-ids 3,1,4,1,5 --draft-max "$dm")
  if MKC_MV_ROW1=$u "$mkc" gen graphs/llama.lua --preset "$p" -o "$tmp/r1.cu" 2>/dev/null &&
    grep -q "^#define MKC_MV_ROW1 $u " "$tmp/r1.cu" &&
    MKC_SPLIT=0 MKC_MV_ROW1=$u MKC_SIMT_SEED=1 "$mkc" "${r1args[@]}" --blocks 16 --backend cpu >"$tmp/r1.out" 2>/dev/null &&
    "$mkc" "${r1args[@]}" --backend ref >"$tmp/r1.ref" 2>/dev/null && cmp -s "$tmp/r1.out" "$tmp/r1.ref" &&
    [ "$(wc -w <"$tmp/r1.out")" -eq 24 ]; then
    ok "MKC_MV_ROW1=$u: emitted, and the lane path gives the reference's 24 tokens ($p, --draft-max $dm)"
  else
    fail "MKC_MV_ROW1=$u $p --draft-max $dm" "$(cat "$tmp/r1.out" "$tmp/r1.ref" 2>/dev/null)"
  fi
done

# tiny's default kernel, which the knobs' checks below compare with (made before the first, which
# looked for what it lacks in a file not yet written)
"$mkc" gen graphs/llama.lua --preset tiny -o "$tmp/nc.cu" 2>/dev/null || fail "gen tiny's default kernel"
# MKC_NEXT_PREFETCH=1 (a stage streaming no weights asks L2 for the next one's; a knob until
# measured): checked; emitted in tiny's attention stages (the loop's one, and the embedding's for
# layer 0's Q, K, V: 4 calls), each before the stage's flow wait, which inspect --check accepts;
# =2 adds, after o-proj's and gate/up's own work, the next stage's first rows (3 calls in the
# loop); a hint that changes no token on the lane path (odd, with and without drafts).
MKC_NEXT_PREFETCH=3 expect_error "MKC_NEXT_PREFETCH not 0, 1 or 2" \
  'mkc: error: MKC_NEXT_PREFETCH must be 0, 1 or 2, got "3"' -- gen graphs/llama.lua --preset tiny -o "$tmp/np3.cu"
# knob_runs VAR SEED VALUE...: odd's 24 tokens with VAR at each VALUE, drafts 4 and 0, on the lane
# path (MKC_SIMT_SEED=SEED), against the reference's (u2.ref)
knob_runs() {
  local var=$1 seed=$2 v dm
  shift 2
  for v in "$@"; do
    for dm in 4 0; do
      env "$var=$v" MKC_SIMT_SEED="$seed" "$mkc" run --preset odd --random-weights 7 -n 24 \
        --prompt-ids 3,1,4,1,5 --draft-max $dm --backend cpu >"$tmp/kr.out" 2>/dev/null &&
        cmp -s "$tmp/kr.out" "$tmp/u2.ref" || return 1
    done
  done
}
if MKC_NEXT_PREFETCH=1 "$mkc" gen graphs/llama.lua --preset tiny --draft-max 4 -o "$tmp/np.cu" 2>/dev/null &&
  [ "$(grep -c '^ *mkc_prefetch_next(' "$tmp/np.cu")" -eq 4 ] &&
  grep -A1 '^ *mkc_prefetch_next(mkc_wmat_of(weights + lay_i' "$tmp/np.cu" | grep -q 'mkc_flow_wait(' &&
  [ -s "$tmp/nc.cu" ] && ! grep -q '^ *mkc_prefetch_next(' "$tmp/nc.cu" &&
  MKC_NEXT_PREFETCH=2 "$mkc" gen graphs/llama.lua --preset tiny --draft-max 4 -o "$tmp/np2.cu" 2>/dev/null &&
  [ "$(grep -c '^ *mkc_prefetch_next(.*the next stage.s first rows' "$tmp/np2.cu")" -eq 3 ] &&
  [ "$(grep -A1 'the next stage.s first rows' "$tmp/np2.cu" | grep -c '^ *mkc_flow_arrive(')" -eq 2 ] &&
  "$mkc" inspect --check "$tmp/np.cu" >"$tmp/np.insp" 2>&1 &&
  "$mkc" inspect --check "$tmp/np2.cu" >>"$tmp/np.insp" 2>&1 && knob_runs MKC_NEXT_PREFETCH 4 1 2; then
  ok "MKC_NEXT_PREFETCH=1: 4 prefetches before flow waits; =2 adds 3 after o-proj's and gate/up's work, before their arrivals; inspect --check clean; the reference's tokens (odd, lane path)"
else
  fail "MKC_NEXT_PREFETCH=1" "$(grep -c 'mkc_prefetch_next(' "$tmp/np.cu" 2>&1; tail -n 3 "$tmp/np.insp" "$tmp/kr.out" 2>&1)"
fi

# MKC_THREADS (threads per block, a knob for the GPU's A/B of fewer arrivals at each flow wait):
# checked; emitted with its register bound (at 512, one block an SM); the reference's tokens on
# odd (the split's shares over 8 and 16 warps at T = 1, the row blocks at T <= 5), and at 512 a
# prompt of several tokens goes a step a token (no tiles past 256).
MKC_THREADS=384 expect_error "MKC_THREADS not 128, 256 or 512" \
  'mkc: error: MKC_THREADS must be 128, 256 or 512, got "384"' -- gen graphs/llama.lua --preset tiny -o "$tmp/th.cu"
if MKC_THREADS=512 "$mkc" gen graphs/llama.lua --preset tiny -o "$tmp/th.cu" 2>"$tmp/th.err" &&
  grep -q '^#define MKC_THREADS 512$' "$tmp/th.cu" && grep -q '^#define MKC_MIN_BLOCKS 1 ' "$tmp/th.cu" &&
  grep -q 'prompt chunks <= 1,' "$tmp/th.err" && grep -q '^#define MKC_THREADS 128$' "$tmp/nc.cu" && knob_runs MKC_THREADS 5 256 512; then
  ok "MKC_THREADS=512: emitted with 1 block an SM, prompts untiled; 256 and 512 give the reference's tokens (odd)"
else
  fail "MKC_THREADS" "$(grep -n 'define MKC_THREADS\|define MKC_MIN_BLOCKS' "$tmp/th.cu"; cat "$tmp/th.err")"
fi

# MKC_SYNC=grid (grid barriers instead of flow waits, to compare them on a GPU) and
# MKC_PREFETCH_BYTES (a flow wait's prefetch): checked, emitted, the same tokens as the reference.
MKC_SYNC=fast expect_error "MKC_SYNC unknown" \
  'mkc: error: MKC_SYNC must be flow or grid, got "fast"' -- gen graphs/llama.lua --preset tiny -o "$tmp/s.cu"
MKC_WEIGHT_NC=2 expect_error "MKC_WEIGHT_NC not 0 or 1" \
  'mkc: error: MKC_WEIGHT_NC must be 0 or 1, got "2"' -- gen graphs/llama.lua --preset tiny -o "$tmp/n.cu"
# knob_emits VAR=VALUE LINE DEFAULT NAME: gen of tiny under VAR=VALUE writes the #define LINE,
# and the default kernel ($tmp/nc.cu) has the #define DEFAULT ("!DEFAULT": lacks it).
knob_emits() {
  local f="$tmp/knob-${1%%=*}.cu" want=${3#!} has=1
  [ "$want" != "$3" ] && has=0
  if env "$1" "$mkc" gen graphs/llama.lua --preset tiny -o "$f" 2>/dev/null &&
    grep -q "^#define $2 " "$f" && [ "$(grep -c "^#define $want " "$tmp/nc.cu")" -eq "$has" ]; then
    ok "$4"
  else
    fail "$1" "$(grep -n "define ${1%%=*}" "$f" "$tmp/nc.cu" 2>/dev/null)"
  fi
}
knob_emits MKC_WEIGHT_NC=0 "MKC_WEIGHT_NC 0" "MKC_WEIGHT_NC 1" \
  "the non-caching weight loads are the default, MKC_WEIGHT_NC=0 turns them off"
# MKC_MIN_BLOCKS (the blocks per SM the register bound leaves room for, a GPU A/B knob)
MKC_MIN_BLOCKS=9 expect_error "MKC_MIN_BLOCKS out of range" \
  'mkc: error: MKC_MIN_BLOCKS must be 1 to 8, got "9"' -- gen graphs/llama.lua --preset tiny -o "$tmp/mb.cu"
knob_emits MKC_MIN_BLOCKS=3 "MKC_MIN_BLOCKS 3" "MKC_MIN_BLOCKS 4" \
  "MKC_MIN_BLOCKS=3 is emitted; 4 without it (tiny's kernel of one input a step)"
# MKC_SPLIT (short matmuls split over a block's warps): by default in all-bf16 kernels of one input a
# step (tiny's default kernel, $tmp/nc.cu), not at T <= 5, nor in a Q8_0 file's kernel; MKC_SPLIT=0
# or 1 decides it for any. test_kernel checks its values.
MKC_SPLIT=2 expect_error "MKC_SPLIT not 0 or 1" \
  'mkc: error: MKC_SPLIT must be 0 or 1, got "2"' -- gen graphs/llama.lua --preset tiny -o "$tmp/sp.cu"
knob_emits MKC_SPLIT=1 "MKC_SPLIT 1" "MKC_SPLIT 1" "MKC_SPLIT=1 emits the split's switch, as the T = 1 kernel's default does"
# a Q8_0 file: the defaults measured in all-bf16 kernels leave its kernels alone (here and below)
"$mkc" init --preset tiny --seed 1 --type q8_0 -o "$tmp/q8.gguf" >/dev/null 2>&1
if [ -f "$tmp/q8.gguf" ] && "$mkc" gen -m "$tmp/q8.gguf" -o "$tmp/spq.cu" 2>/dev/null &&
  MKC_SPLIT=1 "$mkc" gen -m "$tmp/q8.gguf" -o "$tmp/spq-on.cu" 2>/dev/null &&
  MKC_SPLIT=0 "$mkc" gen graphs/llama.lua --preset tiny -o "$tmp/sp-off.cu" 2>/dev/null &&
  "$mkc" gen graphs/llama.lua --preset tiny --draft-max 4 -o "$tmp/sp-t5.cu" 2>/dev/null &&
  MKC_SPLIT=1 "$mkc" gen graphs/llama.lua --preset tiny --draft-max 4 -o "$tmp/sp-t5-on.cu" 2>/dev/null &&
  ! grep -q '^#define MKC_SPLIT 1' "$tmp/spq.cu" "$tmp/sp-off.cu" "$tmp/sp-t5.cu" &&
  grep -q '^#define MKC_SPLIT 1' "$tmp/spq-on.cu" && grep -q '^#define MKC_SPLIT 1' "$tmp/sp-t5-on.cu"; then
  ok "MKC_SPLIT: not by default at T <= 5 or in a Q8_0 file's kernel, nor with MKC_SPLIT=0; MKC_SPLIT=1 asks"
else
  fail "MKC_SPLIT's default" "$(grep -c '^#define MKC_SPLIT 1' "$tmp"/sp*.cu 2>&1)"
fi
# MKC_MIN_BLOCKS' default: 4 in a kernel of one input a step whose matrices are all bf16, without
# experts (where ptxas fits llama-3.2-1b's in 128 registers); 3 at T <= 5, in a Q8_0 file's kernel and
# with experts (which spilled at 4)
if "$mkc" gen graphs/llama.lua --preset moe-tiny -o "$tmp/mb-moe.cu" 2>/dev/null &&
  grep -q '^#define MKC_MIN_BLOCKS 4 ' "$tmp/nc.cu" && grep -q '^#define MKC_MIN_BLOCKS 3 ' "$tmp/sp-t5.cu" &&
  grep -q '^#define MKC_MIN_BLOCKS 3 ' "$tmp/spq.cu" && grep -q '^#define MKC_MIN_BLOCKS 3 ' "$tmp/mb-moe.cu"; then
  ok "MKC_MIN_BLOCKS: 4 by default in a dense bf16 kernel of one input a step; 3 at T <= 5, in a Q8_0 file's, with experts"
else
  fail "MKC_MIN_BLOCKS' default" "$(grep -H '^#define MKC_MIN_BLOCKS' "$tmp"/nc.cu "$tmp"/sp-t5.cu "$tmp"/spq.cu "$tmp"/mb-moe.cu 2>&1)"
fi
# MKC_MMA_DECODE=1 (bf16 decode matmuls on tensor cores; 55 % slower at T = 1 on an H200): checked,
# emitted, and speculation on it is lossless: drafts and the lane path (checking schedule) give
# plain decoding's tokens, which are the reference's. test_kernel checks its logits.
MKC_MMA_DECODE=2 expect_error "MKC_MMA_DECODE not 0 or 1" \
  'mkc: error: MKC_MMA_DECODE must be 0 or 1, got "2"' -- gen graphs/llama.lua --preset tiny -o "$tmp/mm.cu"
knob_emits MKC_MMA_DECODE=1 "MKC_MMA_DECODE 1" "!MKC_MMA_DECODE 1" "MKC_MMA_DECODE=1 is emitted, and only then"
# ... and with split-K by default in all-bf16 slot kernels of 16 slots or more (not 8; not with
# either knob set; MKC_MMA_DECODE=1 alone asks no split-K)
mma_slots() { # NAME SLOTS [VAR=VALUE]: tiny's slot kernel into $tmp/ms.NAME.cu
  env ${3:-} "$mkc" gen graphs/llama.lua --preset tiny --slots "$2" --draft-max 0 -o "$tmp/ms.$1.cu" 2>/dev/null
}
if mma_slots s16 16 && mma_slots s8 8 && mma_slots off 16 MKC_MMA_DECODE=0 && mma_slots mma 16 MKC_MMA_DECODE=1 &&
  grep -q '^#define MKC_MMA_DECODE 1' "$tmp/ms.s16.cu" && grep -q '^#define MKC_SPLITK 1' "$tmp/ms.s16.cu" &&
  ! grep -q '^#define MKC_MMA_DECODE 1\|^#define MKC_SPLITK 1' "$tmp/ms.s8.cu" "$tmp/ms.off.cu" &&
  grep -q '^#define MKC_MMA_DECODE 1' "$tmp/ms.mma.cu" && ! grep -q '^#define MKC_SPLITK 1' "$tmp/ms.mma.cu"; then
  ok "16 slots: tensor cores and split-K by default; 8 slots, MKC_MMA_DECODE=0: neither; MKC_MMA_DECODE=1: no split-K"
else
  fail "the slot kernels' tensor-core default" "$(grep -c '^#define MKC_MMA_DECODE 1\|^#define MKC_SPLITK 1' "$tmp"/ms.*.cu 2>&1)"
fi
MKC_MMA_UNROLL=9 expect_error "MKC_MMA_UNROLL out of range" \
  'mkc: error: MKC_MMA_UNROLL must be 1 to 8, got "9"' -- gen graphs/llama.lua --preset tiny -o "$tmp/mu.cu"
knob_emits MKC_MMA_UNROLL=8 "MKC_MMA_UNROLL 8" "!MKC_MMA_UNROLL 8" "MKC_MMA_UNROLL=8 is emitted, and only then"
MKC_SPLITK=1 expect_error "MKC_SPLITK without MKC_MMA_DECODE" \
  'mkc: error: MKC_SPLITK=1 splits the tensor-core decode matmuls: it needs MKC_MMA_DECODE=1' \
  -- gen graphs/llama.lua --preset tiny -o "$tmp/sk.cu"
MKC_MMA_DECODE=1 MKC_SPLITK=2 expect_error "MKC_SPLITK not 0 or 1" \
  'mkc: error: MKC_SPLITK must be 0 or 1, got "2"' -- gen graphs/llama.lua --preset tiny -o "$tmp/sk.cu"
mma_run() { # NAME DRAFTS [VAR=VALUE [ARGS...]]: odd's 32 tokens under MKC_MMA_DECODE=1 into $tmp/mma.NAME
  local name=$1 k=$2
  shift 2
  env MKC_MMA_DECODE=1 ${1:-} "$mkc" run --preset odd --random-weights 7 -n 32 --prompt-ids 3,1,4,1,5,3,1,4 \
    --draft-max "$k" --backend cpu "${@:2}" >"$tmp/mma.$name" 2>/dev/null
}
if mma_run plain 0 && mma_run k4 4 && mma_run k7 7 MKC_SIMT_SEED=2 && mma_run split 4 MKC_SPLIT=1 &&
  mma_run u8 4 MKC_MMA_UNROLL=8 && mma_run splitk 4 MKC_SPLITK=1 --blocks 12 &&
  "$mkc" run --preset odd --random-weights 7 -n 32 --prompt-ids 3,1,4,1,5,3,1,4 --backend ref >"$tmp/mma.ref" 2>/dev/null &&
  [ "$(wc -w <"$tmp/mma.plain")" -eq 32 ] && cmp -s "$tmp/mma.plain" "$tmp/mma.ref" &&
  cmp -s "$tmp/mma.k4" "$tmp/mma.plain" && cmp -s "$tmp/mma.k7" "$tmp/mma.plain" && cmp -s "$tmp/mma.split" "$tmp/mma.plain" &&
  cmp -s "$tmp/mma.u8" "$tmp/mma.plain" && cmp -s "$tmp/mma.splitk" "$tmp/mma.plain"; then
  ok "MKC_MMA_DECODE=1: drafts 4 and 7 (lane path), split, unroll 8, split-K on 12 blocks give plain decoding's 32 tokens, the reference's (odd)"
else
  fail "MKC_MMA_DECODE=1 lossless" "$(head -c 300 "$tmp"/mma.* 2>/dev/null)"
fi
# MKC_CP_RING (weight rows copied ahead into shared memory; a knob until a GPU measures it):
# checked and emitted; test_cp_ring checks its values.
MKC_CP_RING=65 expect_error "MKC_CP_RING out of range" \
  'mkc: error: MKC_CP_RING must be 0 to 64 (16-byte pieces per thread), got "65"' -- gen graphs/llama.lua --preset tiny -o "$tmp/cr.cu"
knob_emits MKC_CP_RING=16 "MKC_CP_RING 16" "!MKC_CP_RING 16" "MKC_CP_RING=16 is emitted, and only then"
MKC_CP_RING=16 MKC_MV_UNROLL=2 expect_error "MKC_CP_RING with MKC_MV_UNROLL" \
  'mkc: error: MKC_CP_RING takes the place of the loads MKC_MV_UNROLL unrolls: set one of the two' \
  -- gen graphs/llama.lua --preset tiny -o "$tmp/cr2.cu"
# MKC_ATT_PREFETCH=1 (attention's tile of K and V rows asked of L2 at once; a knob until measured):
# checked, emitted; a prefetch changes no value: with the ring too, on the lane path, and on
# paged slots (whose row map the ring must not overlap), the tokens of the kernel without them.
MKC_ATT_PREFETCH=2 expect_error "MKC_ATT_PREFETCH not 0 or 1" \
  'mkc: error: MKC_ATT_PREFETCH must be 0 or 1, got "2"' -- gen graphs/llama.lua --preset tiny -o "$tmp/ap.cu"
knob_emits MKC_ATT_PREFETCH=1 "MKC_ATT_PREFETCH 1" "!MKC_ATT_PREFETCH 1" "MKC_ATT_PREFETCH=1 is emitted, and only then"
printf '1,2,3\n5,6,7,8,9,10,11\n42,7\n' >"$tmp/ap-batch.txt"
ap_batch=(run --preset tiny --random-weights 7 -n 40 --batch "$tmp/ap-batch.txt" --slots 3 --draft-max 2 --backend cpu)
if MKC_ATT_PREFETCH=1 MKC_CP_RING=16 MKC_SIMT_SEED=4 "$mkc" "${args[@]}" --backend cpu >"$tmp/ap.out" 2>/dev/null &&
  cmp -s "$tmp/ap.out" "$tmp/u2.ref" &&
  "$mkc" "${ap_batch[@]}" >"$tmp/ap-batch.plain" 2>/dev/null &&
  MKC_ATT_PREFETCH=1 MKC_CP_RING=16 MKC_SIMT_SEED=5 "$mkc" "${ap_batch[@]}" >"$tmp/ap-batch.out" 2>/dev/null &&
  [ "$(wc -l <"$tmp/ap-batch.out")" -eq 3 ] && cmp -s "$tmp/ap-batch.out" "$tmp/ap-batch.plain"; then
  ok "MKC_ATT_PREFETCH=1 with MKC_CP_RING=16: the reference's tokens (odd, lane path); 3 paged slots (the ring past their row map) as without"
else
  fail "MKC_ATT_PREFETCH=1" "$(head -c 400 "$tmp"/ap.out "$tmp"/ap-batch.* 2>/dev/null)"
fi
# MKC_ATT_AHEAD (attention's K and V rows, and its merge's partials, a thread loads before it uses
# the first; 4 by default, 1 for the GPU's A/B): checked, emitted only when set; the reference's
# tokens at 1 and 3 (odd: one element a load; tiny: 16-byte loads), with drafts, on the lane path
MKC_ATT_AHEAD=9 expect_error "MKC_ATT_AHEAD out of range" \
  'mkc: error: MKC_ATT_AHEAD must be 1 to 8, got "9"' -- gen graphs/llama.lua --preset tiny -o "$tmp/aa.cu"
knob_emits MKC_ATT_AHEAD=1 "MKC_ATT_AHEAD 1" "!MKC_ATT_AHEAD 1" "MKC_ATT_AHEAD=1 is emitted, and only then"
aa_ok=1
for p in odd tiny; do
  "$mkc" run --preset $p --random-weights 5 -n 40 --prompt-ids 3,1,4,1,5,9,2,6 --backend ref >"$tmp/aa.$p.ref" 2>/dev/null || aa_ok=0
  for a in 1 3; do
    MKC_ATT_AHEAD=$a MKC_SIMT_SEED=$a "$mkc" run --preset $p --random-weights 5 -n 40 --prompt-ids 3,1,4,1,5,9,2,6 \
      --draft-max 3 --backend cpu >"$tmp/aa.$p.$a" 2>/dev/null && cmp -s "$tmp/aa.$p.$a" "$tmp/aa.$p.ref" || aa_ok=0
  done
done
[ "$aa_ok" = 1 ] && [ "$(wc -w <"$tmp/aa.odd.ref")" -eq 40 ] \
  && ok "MKC_ATT_AHEAD=1 and 3: the reference's 40 tokens with drafts (odd, tiny; lane path)" \
  || fail "MKC_ATT_AHEAD lossless" "$(head -c 300 "$tmp"/aa.* 2>/dev/null)"
# MKC_DOT_ONCE (a bf16 row's chunk unpacked once for all of a step's inputs; by default where no
# matrix is quantized, so the template decides and nothing is emitted; 0 is the loop before
# 2026-12-05, for the GPU's A/B): checked, emitted only when set; at 0, the reference's tokens with
# drafts on the lane path (MKC_SIMT_SEED), where the loop runs at T = 1 and at T = 4
MKC_DOT_ONCE=2 expect_error "MKC_DOT_ONCE not 0 or 1" \
  'mkc: error: MKC_DOT_ONCE must be 0 or 1, got "2"' -- gen graphs/llama.lua --preset tiny -o "$tmp/do.cu"
knob_emits MKC_DOT_ONCE=0 "MKC_DOT_ONCE 0" "!MKC_DOT_ONCE 0" "MKC_DOT_ONCE=0 is emitted, and only then"
do_ok=1
for p in odd tiny; do
  MKC_DOT_ONCE=0 MKC_SIMT_SEED=2 "$mkc" run --preset $p --random-weights 5 -n 40 --prompt-ids 3,1,4,1,5,9,2,6 \
    --draft-max 3 --backend cpu >"$tmp/do.$p" 2>/dev/null && cmp -s "$tmp/do.$p" "$tmp/aa.$p.ref" || do_ok=0
done
[ "$do_ok" = 1 ] && ! grep -q '^#define MKC_DOT_ONCE [01] ' "$tmp/nc.cu" "$tmp/spq.cu" \
  && ok "MKC_DOT_ONCE=0: the reference's 40 tokens with drafts (odd, tiny; lane path); unset by default" \
  || fail "MKC_DOT_ONCE=0 lossless" "$(head -c 300 "$tmp"/do.* 2>/dev/null)"
# MKC_CANDS_BOUND (the sampler's union also bounded by the slices' maxima since 2026-12-05; 0 is
# the gather before, for the GPU's A/B): checked, emitted only when set; the draws are the same
# bits either way, so a sampled run with drafts (top-k 5: the candidates stage) gives the same
# tokens at 0 and by default, on a grid of many slices (--blocks 12)
MKC_CANDS_BOUND=2 expect_error "MKC_CANDS_BOUND not 0 or 1" \
  'mkc: error: MKC_CANDS_BOUND must be 0 or 1, got "2"' -- gen graphs/llama.lua --preset tiny -o "$tmp/cb.cu"
knob_emits MKC_CANDS_BOUND=0 "MKC_CANDS_BOUND 0" "!MKC_CANDS_BOUND 0" "MKC_CANDS_BOUND=0 is emitted, and only then"
cb_args=(run --preset tiny --random-weights 5 -n 40 --prompt-ids 3,1,4,1,5,9,2,6 --draft-max 3 --temp 0.9
  --top-k 5 --top-p 1 --min-p 0 --seed 11 --backend cpu --blocks 12)
"$mkc" "${cb_args[@]}" >"$tmp/cb.1" 2>"$tmp/cb.1.err"
MKC_CANDS_BOUND=0 "$mkc" "${cb_args[@]}" >"$tmp/cb.0" 2>/dev/null
cmp -s "$tmp/cb.0" "$tmp/cb.1" && [ "$(wc -w <"$tmp/cb.1")" -eq 40 ] && grep -q 'accepted [1-9]' "$tmp/cb.1.err" \
  && ok "MKC_CANDS_BOUND=0 and the default: the same 40 sampled tokens, drafts accepted (tiny, 12 blocks)" \
  || fail "MKC_CANDS_BOUND=0 = default" "$(cat "$tmp/cb.0" "$tmp/cb.1" "$tmp/cb.1.err" 2>/dev/null | head -c 600)"
# Each decode stage also written for steps of one input, by default in all-bf16 kernels since
# 2026-12-04 (the H200's T = 1 steps 9.6 % faster); MKC_T1_PATH=0 leaves the copies out:
# checked, said in a kernel for several inputs a step (only there: a T = 1 kernel is all one
# input), and both lossless on the lane path; test_t1_path checks the copies' logits bit for bit.
MKC_T1_PATH=2 expect_error "MKC_T1_PATH not 0 or 1" \
  'mkc: error: MKC_T1_PATH must be 0 or 1, got "2"' -- gen graphs/llama.lua --preset tiny -o "$tmp/t1.cu"
if env -u MKC_T1_PATH "$mkc" gen graphs/llama.lua --preset tiny --draft-max 4 -o "$tmp/t1.cu" 2>/dev/null &&
  env -u MKC_T1_PATH "$mkc" gen graphs/llama.lua --preset tiny -o "$tmp/t1-one.cu" 2>/dev/null &&
  MKC_T1_PATH=0 "$mkc" gen graphs/llama.lua --preset tiny --draft-max 4 -o "$tmp/t1-off.cu" 2>/dev/null &&
  grep -q '^#define MKC_T1_PATH 1 ' "$tmp/t1.cu" && [ "$(grep -c 'if (T == 1) { /\* one input' "$tmp/t1.cu")" -eq 6 ] &&
  ! grep -q 'MKC_T1_PATH\|one input: T = 1' "$tmp/t1-one.cu" && ! grep -q 'MKC_T1_PATH\|one input: T = 1' "$tmp/t1-off.cu"; then
  ok "one-input copies: six stages get one where T <= 5, and it is said; none where T <= 1 or MKC_T1_PATH=0"
else
  fail "one-input copies emitted" "$(grep -c 'one input' "$tmp/t1.cu" "$tmp/t1-one.cu" "$tmp/t1-off.cu" 2>&1)"
fi
# ... by default only where every matrix is bf16 (measured there; quantized kernels spilled with
# them): a Q8_0 file's kernel has none unless MKC_T1_PATH=1 asks
if [ -f "$tmp/q8.gguf" ] && env -u MKC_T1_PATH "$mkc" gen -m "$tmp/q8.gguf" --draft-max 4 -o "$tmp/t1q.cu" 2>/dev/null &&
  MKC_T1_PATH=1 "$mkc" gen -m "$tmp/q8.gguf" --draft-max 4 -o "$tmp/t1q-on.cu" 2>/dev/null &&
  ! grep -q 'MKC_T1_PATH\|one input: T = 1' "$tmp/t1q.cu" &&
  [ "$(grep -c 'if (T == 1) { /\* one input' "$tmp/t1q-on.cu")" -eq 6 ]; then
  ok "one-input copies: none by default in a Q8_0 file's kernel, six with MKC_T1_PATH=1"
else
  fail "one-input copies of a quantized kernel" "$(grep -c 'one input' "$tmp/t1q.cu" "$tmp/t1q-on.cu" 2>&1)"
fi
if MKC_T1_PATH=0 MKC_SIMT_SEED=6 "$mkc" "${args[@]}" --backend cpu >"$tmp/t1.out" 2>/dev/null &&
  cmp -s "$tmp/t1.out" "$tmp/u2.ref"; then
  ok "MKC_T1_PATH=0: the reference's tokens with drafts (odd, lane path)"
else
  fail "MKC_T1_PATH=0 lossless" "$(head -c 300 "$tmp/t1.out")"
fi
MKC_PREFETCH_BYTES=100 expect_error "MKC_PREFETCH_BYTES not lines" \
  'mkc: error: MKC_PREFETCH_BYTES must be a multiple of 128 in 0..65536, got "100"' -- gen graphs/llama.lua --preset tiny -o "$tmp/p.cu"
if MKC_SYNC=grid "$mkc" gen graphs/llama.lua --preset odd -o "$tmp/grid.cu" 2>/dev/null &&
  grep -q ' 0 flow waits;' "$tmp/grid.cu" && ! grep -q 'mkc_flow_wait(state' "$tmp/grid.cu" &&
  "$mkc" gen graphs/llama.lua --preset odd -o "$tmp/flow.cu" 2>/dev/null &&
  grep -q ' 0 grid barriers, 14 flow waits;' "$tmp/flow.cu" &&
  MKC_SYNC=grid MKC_SIMT_SEED=2 "$mkc" "${args[@]}" --backend cpu >"$tmp/grid.out" 2>/dev/null &&
  MKC_PREFETCH_BYTES=0 MKC_SIMT_SEED=3 "$mkc" "${args[@]}" --backend cpu >"$tmp/p0.out" 2>/dev/null &&
  cmp -s "$tmp/grid.out" "$tmp/u2.ref" && cmp -s "$tmp/p0.out" "$tmp/u2.ref"; then
  ok "MKC_SYNC=grid emits barriers, the default flow waits; both give the reference's tokens (odd)"
else
  fail "MKC_SYNC=grid / MKC_PREFETCH_BYTES=0" "$(head -c 600 "$tmp/grid.cu" "$tmp/grid.out" 2>/dev/null)"
fi

# --rounds with --draft-layers: the kernel drafts with its first layers; what it cannot do is named.
rr=(run --preset tiny --random-weights 7 -n 8 --prompt-ids 1,2,3 --draft-max 4 --rounds 4)
expect_error "--rounds --draft-layers: as many layers as the model" \
  "mkc: error: --rounds 4 (1..16) with --draft-layers L drafts with the model's first L layers: L must be below its layer count" \
  -- "${rr[@]}" --draft-layers 2 --backend cpu
expect_error "--rounds --draft-layers on ref" \
  "mkc: error: --rounds 4 (1..16) with --draft-layers drafts inside the kernel: not on the ref backend" \
  -- "${rr[@]}" --draft-layers 1 --backend ref

# bench on the cpu backend: the table's rows.
if "$mkc" bench --preset tiny --random-weights 1 -n 8 --draft-max 2 --backend cpu >"$tmp/bench" 2>"$tmp/err"; then
  rows=$(grep -c '^| llama tiny BF16 | 0.22 MiB | 0.12 M | cpu | ' "$tmp/bench")
  [ "$rows" -eq 6 ] && grep -q '| pp511 |' "$tmp/bench" && grep -q '| tg8 draft2 |' "$tmp/bench" &&
    grep -q '| tg8 verify3 |' "$tmp/bench" &&
    grep -q '| tg8 sampled |' "$tmp/bench" && grep -q '| tg8 sampled draft2 |' "$tmp/bench" &&
    ok "bench prints pp, tg, tg-with-drafts, verify and sampled rows" || fail "bench rows" "$(cat "$tmp/bench")"
else
  fail "bench runs on the cpu backend" "$(cat "$tmp/err")"
fi
# bench on experts: the size a one-input step streams is the file's other tensors and 3 of 8 of
# its experts' (moe-tiny: 3 of 8 experts an input), counted from the GGUF init writes
"$mkc" init --preset moe-tiny --seed 1 -o "$tmp/moe.gguf" 2>/dev/null
want=$(python3 - "$tmp/moe.gguf" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
def u(f, o): return struct.unpack_from(f, b, o)[0]
n_t, n_kv, o = u("<Q", 8), u("<Q", 16), 24
def skip_value(t, o):
    if t == 8: return o + 8 + u("<Q", o)
    if t == 9:
        et, n = u("<I", o), u("<Q", o + 4)
        o += 12
        for _ in range(n): o = skip_value(et, o)
        return o
    return o + {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}[t]
for _ in range(n_kv):
    o += 8 + u("<Q", o)
    o = skip_value(u("<I", o), o + 4)
total = 0.0
for _ in range(n_t):
    name_len = u("<Q", o); name = b[o + 8:o + 8 + name_len].decode(); o += 8 + name_len
    nd = u("<I", o); ne = struct.unpack_from("<%dQ" % nd, b, o + 4); o += 4 + 8 * nd + 4 + 8
    count = 1
    for x in ne: count *= x
    total += 2 * count * (3 / 8 if "_exps." in name else 1)  # BF16
print("%.2f MiB" % (total / 1048576))
PY
)
if "$mkc" bench -m "$tmp/moe.gguf" -p 8 -n 8 --backend cpu >"$tmp/bench" 2>"$tmp/err" &&
  grep -q "^| llama llama-moe-tiny BF16 | $want | 0.21 M | cpu | tg8 |" "$tmp/bench"; then
  ok "bench on experts: size $want, the experts an input runs (3 of 8)"
else
  fail "bench on experts: size $want" "$(cat "$tmp/bench" "$tmp/err" | head)"
fi
# bench --stages: a row per stage of the kernel (tiny: 15), block 0's clock greedy and
# sampled, and the total; the sampler stage does work only when sampling.
if "$mkc" bench --preset tiny --random-weights 1 -p 8 -n 6 --stages --backend cpu >"$tmp/bench" 2>"$tmp/err" &&
  [ "$(grep -cE '^\| [0-9]+ \| [a-z_]+ \| .* \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \| ' "$tmp/bench")" -eq 15 ] &&
  grep -qE '^\| all \| \| \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \|' "$tmp/bench" &&
  grep -qE '^\| 2 \| qkv_rope \| .* \| 17152 \|' "$tmp/bench" &&
  awk -F' [|] ' '$2 == "sample" { found = 1; more = $5 > 10 * $4 } END { exit !(found && more) }' "$tmp/bench"; then
  ok "bench --stages: 15 stage rows with their bytes (qkv_rope of tiny: 17152), greedy and sampled times (the sampler's 10 x more sampled), a total"
else
  fail "bench --stages" "$(cat "$tmp/bench" "$tmp/err")"
fi
# bench --stages of a kernel that takes drafts: a verify column (4 drafts every step), its steps
# counted once however many tokens each emitted (tiny accepts some: fewer steps than tokens).
if "$mkc" bench --preset tiny --random-weights 1 -p 8 -n 16 --draft-max 4 --stages --backend cpu \
  >"$tmp/bench" 2>"$tmp/err" &&
  grep -q '| us verify5 | bytes |' "$tmp/bench" &&
  [ "$(grep -cE '^\| [0-9]+ \| [a-z_]+ \| .* \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \| ' "$tmp/bench")" -eq 15 ] &&
  grep -qE '^\| all \| \| \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \|' "$tmp/bench" &&
  steps=$(grep -oE 'every step \([0-9]+ steps\)' "$tmp/bench" | grep -oE '[0-9]+ steps' | cut -d' ' -f1) &&
  [ "${steps:-0}" -ge 1 ] && [ "$steps" -lt 16 ]; then
  ok "bench --stages with drafts: a verify5 column on the 15 rows and the total, over $steps steps for 16 tokens"
else
  fail "bench --stages with drafts" "$(cat "$tmp/bench" "$tmp/err" | tail -n 25)"
fi
# bench --draft-adaptive: the controller's row between fixed-depth drafting and verify.
if "$mkc" bench --preset tiny --random-weights 1 -p 8 -n 8 --draft-max 2 --draft-min 1 --draft-adaptive \
  --backend cpu >"$tmp/bench" 2>"$tmp/err" &&
  grep -A1 '| tg8 draft2 |' "$tmp/bench" | grep -q '| tg8 draft1..2 adaptive |' &&
  [ "$(grep -c '^| llama tiny BF16 ' "$tmp/bench")" -eq 7 ]; then
  ok "bench --draft-adaptive: a tg8 draft1..2 adaptive row after the fixed-depth one"
else
  fail "bench --draft-adaptive" "$(cat "$tmp/bench" "$tmp/err")"
fi
expect_error "bench --draft-adaptive with --rounds" \
  "mkc: error: bench: --rounds drafts inside the kernel (prompt lookup, or --draft-layers), at a fixed depth and without log-probabilities: not with --draft-adaptive" \
  -- bench --preset tiny --random-weights 1 --draft-max 2 --draft-adaptive --rounds 4

# llama-bench's -p and -d: the pp test's length, and tokens cached before each test.
if "$mkc" bench --preset tiny --random-weights 1 -p 16 -n 4 -d 100 --backend cpu >"$tmp/bench" 2>"$tmp/err" &&
  grep -q '| pp16 @ d100 | ' "$tmp/bench" && grep -q '| tg4 @ d100 | ' "$tmp/bench"; then
  ok "bench -p 16 -d 100: pp16 @ d100 and tg4 @ d100 rows"
else
  fail "bench -p -d" "$(cat "$tmp/bench" "$tmp/err")"
fi
expect_error "bench -d past the context" \
  "mkc: error: bench: -d 500 and the longest test (16 tokens) need 516 positions, more than the context (512); use --ctx" \
  -- bench --preset tiny --random-weights 1 -p 16 -n 4 -d 500 --backend cpu
expect_error "bench -p not a number" \
  "mkc: error: bench: -p: expected a prompt length in 1..1048576, got 'abc'" \
  -- bench --preset tiny --random-weights 1 -p abc
expect_error "bench on the ref backend" "mkc: error: bench: the ref backend is an oracle, not something to time" \
  -- bench --preset tiny --random-weights 1 --backend ref

# Every subcommand answers --help with its own usage on stdout, status 0.
for cmd in run chat gen compile bench inspect init info serve embed quantize imatrix; do
  if "$mkc" "$cmd" --help >"$tmp/help" 2>"$tmp/help.err" && grep -q "^usage: mkc $cmd" "$tmp/help" &&
    [ ! -s "$tmp/help.err" ]; then
    ok "$cmd --help: its own usage"
  else
    fail "$cmd --help" "$(head -n 2 "$tmp/help")" "$(head -n 2 "$tmp/help.err")"
  fi
done
# Help fits an 80-column terminal: mkc --help and each command's, every line at most 80 characters.
long=
for cmd in "" run chat embed serve gen compile bench inspect init info tokenize perplexity quantize imatrix; do
  line=$("$mkc" ${cmd:+"$cmd"} --help 2>&1 |
    LC_ALL=C.UTF-8 awk 'length($0) > 80 { print length($0) " columns: " $0; exit }')
  [ -n "$line" ] && long="mkc ${cmd:+$cmd }--help: $line" && break
done
[ -z "$long" ] && ok "--help lines fit 80 columns (mkc and every command)" ||
  fail "--help lines fit 80 columns (mkc and every command)" "$long"
version=$(sed -n 's/#define MKC_VERSION "\(.*\)"/\1/p' runtime/util/version.h)
[ "$("$mkc" --version)" = "mkc $version" ] && ok "--version: mkc $version" || fail "--version" "$("$mkc" --version 2>&1)"
# A model file where a kernel belongs: inspect says to use info -m.
"$mkc" init --preset tiny --seed 1 -o "$tmp/m.gguf" 2>/dev/null
expect_error "inspect on a model file" \
  "mkc: error: inspect: $tmp/m.gguf is a model file, not a kernel: \`mkc info -m $tmp/m.gguf\` says what it holds; \`mkc gen -m $tmp/m.gguf -o model.cu\` writes its kernel to inspect" \
  -- inspect "$tmp/m.gguf"
# -m NAME: a model in the model directory, by its file name.
mkdir -p "$tmp/models" && cp "$tmp/m.gguf" "$tmp/models/by-name.gguf"
if MKC_MODEL_DIR="$tmp/models" "$mkc" info -m by-name.gguf >"$tmp/info" 2>"$tmp/info.err" &&
  grep -q "^file: $tmp/models/by-name.gguf$" "$tmp/info" &&
  grep -q "using $tmp/models/by-name.gguf" "$tmp/info.err"; then
  ok "-m NAME: found in \$MKC_MODEL_DIR, and says where"
else
  fail "-m NAME" "$(cat "$tmp/info" "$tmp/info.err" | head -n 4)"
fi
MKC_MODEL_DIR="$tmp/models" "$mkc" info -m nowhere.gguf >/dev/null 2>"$tmp/err"
grep -q "nor in the model directory $tmp/models" "$tmp/err" && ok "-m NAME: a missing model names the model directory" ||
  fail "-m NAME missing" "$(cat "$tmp/err")"
# info and run say the same context: the preset's, or the model's capped.
grep -q '^context: 512 positions (as trained)$' <("$mkc" info -m "$tmp/m.gguf") &&
  ok "info: the context run uses" || fail "info: context" "$("$mkc" info -m "$tmp/m.gguf" | grep context)"
# A job that would take the cpu backend many minutes asks for --backend cpu.
if ! "$mkc" run --preset tiny --random-weights 1 -n 1 --backend cuda >/dev/null 2>&1; then
  "$mkc" bench --preset llama-3.2-1b --random-weights 1 >/dev/null 2>"$tmp/err"
  rc=$?
  if [ "$rc" = 1 ] && grep -q "pass --backend cpu to run it anyway" "$tmp/err"; then
    ok "bench llama-3.2-1b without a GPU: says so up front"
  else
    fail "bench llama-3.2-1b without a GPU" "status $rc" "$(cat "$tmp/err")"
  fi
else
  skip "bench's cpu guard: a GPU is here"
fi

# Sampling in the kernel: the same seed gives the same tokens (drafts on),
# another seed others; the stats line names the seed; bad options are
# refused before anything loads; the ref backend (greedy only) refuses it.
samp=(run --preset tiny --random-weights 1 -n 24 --prompt-ids 1,2,3,1,2,3 --draft-max 4 --temp 1.2)
a=$("$mkc" "${samp[@]}" -s 5 2>"$tmp/samp.err") b=$("$mkc" "${samp[@]}" --seed 5 2>/dev/null)
c=$("$mkc" "${samp[@]}" --seed 6 2>/dev/null) g=$("$mkc" "${samp[@]/--temp/--ctx}" 2>/dev/null)
if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" != "$c" ] && [ "$a" != "$g" ] &&
  grep -q "; sampled, seed 5; " "$tmp/samp.err"; then
  ok "run --temp: the same seed, the same tokens; another seed, others; the seed in the stats"
else
  fail "run --temp" "seed 5: $a" "again:  $b" "seed 6: $c" "greedy: $g" "$(cat "$tmp/samp.err")"
fi
expect_error "--top-p 0" "mkc: error: --top-p: expected a number in (0, 1]" -- \
  run --preset tiny --random-weights 1 -n 4 --temp 1 --top-p 0
expect_error "--top-k -1" "mkc: error: --top-k: expected an integer in 0..1073741824, got '-1'" -- \
  run --preset tiny --random-weights 1 -n 4 --temp 1 --top-k -1
expect_error "--repeat-last-n 300" "mkc: error: --repeat-last-n: expected an integer in 0..256, got '300'" -- \
  run --preset tiny --random-weights 1 -n 4 --repeat-last-n 300
"$mkc" run --preset tiny --random-weights 1 -n 4 --temp 1 --backend ref >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] && grep -q "the ref backend decodes greedily only" "$tmp/err" &&
  ok "run --backend ref --temp: refused (the ref backend is greedy only)" ||
  fail "run --backend ref --temp" "status $rc" "$(cat "$tmp/err")"

# --draft-adaptive: the depth follows the acceptance rate; the tokens stay plain greedy's.
ad=(run --preset tiny --random-weights 1 -n 48 --prompt-ids 1,2,3,1,2,3)
p=$("$mkc" "${ad[@]}" 2>/dev/null) q=$("$mkc" "${ad[@]}" --draft-max 6 --draft-adaptive 2>"$tmp/ad.err")
if [ -n "$p" ] && [ "$p" = "$q" ] && grep -Eq 'drafted [0-9]+ \(adaptive depth [0-9]+\.\.[0-9]+\)' "$tmp/ad.err"; then
  ok "run --draft-adaptive: plain greedy's tokens; the depths in the stats"
else
  fail "run --draft-adaptive" "plain:    $p" "adaptive: $q" "$(cat "$tmp/ad.err")"
fi

finish
