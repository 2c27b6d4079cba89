#!/usr/bin/env bash
# make test-gpu: the correctness suite on the cuda backend, graph replay
# against plain launches, and compute-sanitizer (memcheck, racecheck,
# synccheck) on tiny (greedy and sampled), odd, qwen2-tiny and qwen3-tiny, and
# tiny's slot kernel (run --batch).
# Where there is no GPU it says so and counts as skipped. Prints "N passed,
# N failed, N skipped" last. MKC_GPU_PARTS=suite or =sanitizer runs one of
# the two halves (tests/gpu/bench.sh runs them apart); MKC_GPU_SKIP="PROGRAM
# ..." leaves those test programs out of the suite (each one a skip, never a
# pass; test_fake_cuda.sh's doubles); MKC_CACHE_DIR, if set, is kept.
source "$(dirname "$0")/../lib.sh"
export MKC_CACHE_DIR="${MKC_CACHE_DIR:-$PWD/build/test-cache}"
parts=${MKC_GPU_PARTS:-suite,sanitizer}
unset MKC_KV_DTYPE # bf16, the default; test_kv_dtype covers f16 and f32

if ! "$mkc" run --preset tiny --random-weights 1 -n 1 --backend cuda >/dev/null 2>"$tmp/probe"; then
  echo "skipped: no GPU ($(head -n 1 "$tmp/probe"))"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

# The CPU suite's checks, on the GPU.
[[ $parts == *suite* ]] && for t in build/test_kernel build/test_spec build/test_kv_dtype build/test_snapshot build/test_window build/test_slots build/test_sched build/test_cp_ring build/test_t1_path build/test_wtypes build/test_embed build/test_kv_file build/test_slot_rows; do
  if [[ " ${MKC_GPU_SKIP:-} " == *" $t "* ]]; then
    skip "$t (cuda): MKC_GPU_SKIP leaves it out"
    continue
  fi
  if [ ! -x "$t" ]; then # not built or not carried: a failure named as such, and the rest goes on
    fail "$t (cuda): not found (make; a device call carries it)"
    continue
  fi
  MKC_TEST_BACKEND=cuda "$t" >"$tmp/log" 2>&1
  rc=$?
  grep -v '^ok' "$tmp/log" | sed 's/^/     | /'
  line=$(tail -n 1 "$tmp/log")
  read -r p _ f _ <<<"${line//,/}"
  [[ $p =~ ^[0-9]+$ ]] || p=0 # a crash leaves no count line: a failure, not an arithmetic error
  [[ $f =~ ^[0-9]+$ ]] || f=1
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-1}))
  [ "$rc" -eq 0 ] || [ "${f:-1}" -gt 0 ] || fail "$t exited with $rc"
  echo "     $t (cuda): $line"
done

# Graph replay gives the tokens plain launches and the cpu backend give.
[[ $parts == *suite* ]] && for p in tiny odd qwen2-tiny qwen3-tiny; do
  args=(run --preset "$p" --random-weights 7 -n 96 --prompt-ids 3,1,4,1,5,9,2,6 --draft-max 4)
  "$mkc" "${args[@]}" --backend cuda >"$tmp/graph" 2>"$tmp/graph.err"
  MKC_CUDA_GRAPH=0 "$mkc" "${args[@]}" --backend cuda >"$tmp/plain" 2>"$tmp/plain.err"
  "$mkc" "${args[@]}" --backend cpu >"$tmp/cpu" 2>/dev/null
  if grep -q 'CUDA graph replay' "$tmp/graph.err" && grep -q 'direct cooperative launches' "$tmp/plain.err"; then
    ok "$p: the default run replays a CUDA graph, MKC_CUDA_GRAPH=0 launches directly"
  else
    fail "$p: graph replay in use" "$(cat "$tmp/graph.err")"
  fi
  cmp -s "$tmp/graph" "$tmp/plain" && cmp -s "$tmp/graph" "$tmp/cpu" && [ "$(wc -w <"$tmp/graph")" -eq 96 ] \
    && ok "$p: graph replay = plain launches = cpu backend (96 tokens)" \
    || fail "$p: graph replay = plain launches = cpu" "graph: $(cat "$tmp/graph")" "plain: $(cat "$tmp/plain")" "cpu:   $(cat "$tmp/cpu")"
done

# compute-sanitizer: zero errors.
# mkc imatrix's kernel on the device: llama-imatrix's matrix of the same model and text
# (tests/test_imatrix_cli.sh, which checks the cpu backend's against it)
# (and of moe-tiny's experts)
if [[ $parts == *suite* ]]; then
  cat graphs/llama.lua tests/graphs/im_tiny_preset.lua >"$tmp/im.lua"
  "$mkc" init "$tmp/im.lua" --preset im-tiny --seed 2 --type f32 --vocab tests/data/standin_vocab.gguf \
    -o "$tmp/im.gguf" >/dev/null 2>&1
  "$mkc" init --preset moe-tiny --seed 2 --type f32 --vocab tests/data/standin_vocab.gguf \
    -o "$tmp/moe.gguf" >/dev/null 2>&1
  for m in im:imatrix_llamacpp moe:imatrix_moe_llamacpp; do
    if "$mkc" imatrix -m "$tmp/${m%%:*}.gguf" -f tests/data/imatrix_text.txt -c 64 --chunks 4 --kv-dtype f32 \
      --backend cuda -o "$tmp/im-cuda.gguf" >"$tmp/im.out" 2>"$tmp/im.err"; then
      got=$(python3 tests/imatrix_compare.py "$tmp/im-cuda.gguf" "tests/data/${m#*:}.gguf")
      [[ $got == ok* ]] && ok "imatrix on cuda, ${m%%:*}: llama-imatrix's matrix: $got" \
        || fail "imatrix on cuda, ${m%%:*}" "$got"
      if [ "${m%%:*}" = im ]; then # and the perplexity estimates it printed
        got=$(python3 tests/ppl_compare.py "$tmp/im.out" tests/data/imatrix_ppl_llamacpp.txt)
        [[ $got == ok* ]] && ok "imatrix on cuda, im: llama-imatrix's estimates within 1e-4: ${got%% \[*}" \
          || fail "imatrix on cuda, im: the estimates" "$got"
      fi
    else
      fail "imatrix on cuda, ${m%%:*}" "$(tail -n 3 "$tmp/im.err")"
    fi
  done
fi

cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ $parts != *sanitizer* ]]; then
  :
elif [ -n "${MKC_SKIP_SANITIZER:-}" ]; then
  skip "compute-sanitizer: MKC_SKIP_SANITIZER is set ($MKC_SKIP_SANITIZER)"
elif [ -x "$cs" ]; then
  # sanitize NAME ARGS...: mkc ARGS on cuda under each tool, 0 errors each
  sanitize() {
    local name=$1 tool rc
    shift
    for tool in memcheck racecheck synccheck; do
      MKC_CUDA_GRAPH=0 "$cs" --tool "$tool" --error-exitcode 99 "$mkc" "$@" --backend cuda >"$tmp/cs" 2>&1
      rc=$?
      # racecheck sums up as "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
      if [ "$rc" -eq 0 ] && grep -Eq 'ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards' "$tmp/cs"; then
        ok "$name: compute-sanitizer $tool: 0 errors"
      else
        fail "$name: compute-sanitizer $tool (exit $rc)" "$(grep -E 'ERROR|Error|error' "$tmp/cs" | head -n 20)"
      fi
    done
  }
  # greedy on every preset; tiny sampled too (top-k 40: the candidates stage, then the sampler)
  for run in tiny odd qwen2-tiny qwen3-tiny "tiny --temp 0.8 --seed 1"; do
    read -r p extra <<<"$run"
    # shellcheck disable=SC2086
    sanitize "$run" run --preset "$p" --random-weights 3 -n 6 --prompt-ids 1,2,3,1,2 --draft-max 2 $extra
  done
  # the idle-warp matvecs' rows one a warp, 8 chunks a lane at once (MKC_MV_ROW1=8), at T <= 3
  MKC_MV_ROW1=8 sanitize "odd, MKC_MV_ROW1=8" run --preset odd --random-weights 3 -n 6 \
    --prompt-ids 1,2,3,1,2 --draft-max 2
  # the next stage's weights asked of L2 in attention and after o-proj and gate/up
  # (MKC_NEXT_PREFETCH=2, which includes =1's): addresses in bounds
  MKC_NEXT_PREFETCH=2 sanitize "odd, MKC_NEXT_PREFETCH=2" run --preset odd --random-weights 3 -n 6 \
    --prompt-ids 1,2,3,1,2 --draft-max 2
  # 512 threads a block (MKC_THREADS=512) at T = 1: the split's shares over 16 warps, untiled prompts
  MKC_THREADS=512 sanitize "odd, MKC_THREADS=512" run --preset odd --random-weights 3 -n 6 \
    --prompt-ids 1,2,3,1,2 --draft-max 0
  # the decode matmuls on tensor cores (MKC_MMA_DECODE=1): by warp at T = 8, split over a block's
  # warps (its shared-memory partials), and a slot kernel's two m-tiles (T = 9)
  MKC_MMA_DECODE=1 sanitize "odd, MKC_MMA_DECODE=1" run --preset odd --random-weights 3 -n 6 \
    --prompt-ids 1,2,3,1,2 --draft-max 7
  MKC_MMA_DECODE=1 MKC_SPLIT=1 sanitize "odd, MKC_MMA_DECODE=1 MKC_SPLIT=1" run --preset odd \
    --random-weights 3 -n 6 --prompt-ids 1,2,3,1,2 --draft-max 7
  # the matvec's weight rows through shared memory (MKC_CP_RING: cp.async copies, their waits),
  # and attention's prefetches (MKC_ATT_PREFETCH: each of a tile's rows, paged or not)
  MKC_CP_RING=16 MKC_ATT_PREFETCH=1 sanitize "odd, MKC_CP_RING=16 MKC_ATT_PREFETCH=1" run --preset odd \
    --random-weights 3 -n 6 --prompt-ids 1,2,3,1,2 --draft-max 2
  MKC_MMA_DECODE=1 MKC_CP_RING=16 sanitize "odd, MKC_MMA_DECODE=1 MKC_CP_RING=16" run --preset odd \
    --random-weights 3 -n 6 --prompt-ids 1,2,3,1,2 --draft-max 7
  # a slot kernel: three sequences in one step, one sampled (the per-slot sampler loops)
  printf '1,2,3\n5,6,7,8,9\n42,7\n' >"$tmp/batch.txt"
  sanitize "tiny --batch on 3 slots" run --preset tiny --random-weights 3 -n 6 --batch "$tmp/batch.txt" \
    --slots 3 --draft-max 2 --temp 0.8 --seed 1
  # wide steps: 3 slots of 1 + 12 drafts, 39 rows past the decode path's 32 (the tiled path)
  sanitize "tiny --batch, wide steps" run --preset tiny --random-weights 3 -n 8 --batch "$tmp/batch.txt" \
    --slots 3 --draft-max 12
  MKC_MMA_DECODE=1 sanitize "tiny --batch on 3 slots, MKC_MMA_DECODE=1" run --preset tiny \
    --random-weights 3 -n 6 --batch "$tmp/batch.txt" --slots 3 --draft-max 2
  # 16 slots: tensor cores and split-K by default (split-K's partials and counters in a slot kernel)
  sanitize "tiny --batch on 16 slots" run --preset tiny --random-weights 3 -n 6 --batch "$tmp/batch.txt" \
    --slots 16 --draft-max 0
else
  skip "compute-sanitizer: not found"
fi

finish
