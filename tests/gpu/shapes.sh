# Sourced by tests/gpu/bench.sh and tests/gpu/prime.sh: the GPU run's
# benchmarks, so that the kernels primed ahead are the ones the run asks for.
# BENCH_RUNS: "NAME [VAR=VALUE...] ARGS..." for mkc bench, in priority order (bench.sh runs
# the first eight before compute-sanitizer; --backend cuda is added; VAR=VALUE: its
# environment), the model files under $models (made by make_model). The A/Bs that the
# 2026-11-27 calls settled are gone from the list (docs/PERF.md has their numbers and
# commands): the unrolled kernel (MKC_UNFOLD=1, minutes to prime), MKC_SPLIT=1,
# MKC_WEIGHT_NC=0, MKC_MV_UNROLL=2 and 4, MKC_PREFETCH_BYTES=0, 32768 and 65536.
l1b="--preset llama-3.2-1b --random-weights 1 --ctx 8192 --draft-max 4 -n 128"
# l1b-d512 and l1b-d4096 add the adaptive controller (--draft-adaptive): its row beside plain
# decoding and fixed-depth lookup, which on the bench's scattered history does not pay there.
l1bt="--preset llama-3.2-1b --random-weights 1 --ctx 8192 --draft-max 4 -p 16 -n 64"
bias128=$(for i in $(seq 0 127); do printf ' -l %d+0.5' $((i * 997)); done)
BENCH_RUNS=(
  "l1b-d0 $l1b -p 512 --rounds 8"
  # the T = 1 kernel: its short matmuls split over a block's warps by default since the H200's
  # 2026-12-04 run (871 against 737 t/s, docs/PERF.md); its stages, and the unsplit ones beside
  "tune-t1 ${l1bt/--draft-max 4/--draft-max 0}"
  # ... with two chunks a row in flight (MKC_MV_UNROLL=2). Since 2026-12-04's fourth session gate
  # and up together keep one (8 loads a lane, as the 4-row calls at 2), so the T = 1 kernel
  # keeps 128 registers and 4 blocks an SM (it took 147-148 at 3, and spilled at 4). The H200's
  # stages fit about 4.4 us a stage plus 1.6 us a round trip of a lane's loads (o-proj 2, qkv 4,
  # down 8, the LM head 128): 2 chunks halve the round trips. Unsplit at 3 blocks it gained 10 %
  # (814 against 737 t/s); split at 4, not yet run. The kernel with drafts keeps its 168
  # registers (147 before 2026-12-05's second session), 0 spill
  "u2-t1 MKC_MV_UNROLL=2 ${l1bt/--draft-max 4/--draft-max 0}"
  "u2-d0 MKC_MV_UNROLL=2 $l1b -p 512 --rounds 8"
  # the decode loop's bf16 rows unpacked once for all of a step's inputs (2026-12-05, second
  # session; by default where no matrix is quantized): a T = 5 turn of o-proj's loop took 497
  # instructions, 309 now (SASS; the unpacking had been redone at every input). MKC_DOT_ONCE=0 is
  # the loop before, beside l1b-d0: its verify5 column is the A/B
  "once0-d0 MKC_DOT_ONCE=0 $l1b -p 512 --rounds 8"
  "l1b-d512 $l1b -p 64 -d 512 --draft-adaptive"
  "l1b-d4096 $l1b -p 64 -d 4096 --draft-adaptive"
  # the verify steps on tensor cores with split-K (that pair made 16 slots 3.3 x faster and 1
  # slot 1.9 x faster than the tensor cores alone; at T <= 5 not yet run): verify5 is 2.5 x a T = 1
  # step on CUDA cores, issue 12 asks 1.3 x
  "mma-splitk-d0 MKC_MMA_DECODE=1 MKC_SPLITK=1 $l1b -p 512 --rounds 8"
  # llama.cpp's samplers the kernel lacks, chosen on the host (2026-12-06): each token's logits
  # row read back (0.5 MB) and the host's chain (0.4-1.7 ms a token on this 2-core machine with
  # top-k 40, docs/PERF.md) against the kernel's own sampled rows, l1b-d0's kernel: its "host
  # draft4" row verifies the drafts on the host
  "host-dry-d0 $l1b -p 64 --dry-multiplier 0.8"
  # the sampler's block (2026-12-05, third session): its union of the slices' top-40 lists is also
  # bounded by the slices' maxima, about 50-130 candidates where it was 2000-13000 (bench_cands;
  # the sample stage took 308 us at 396 blocks and 380 at 528 on the H200). MKC_CANDS_BOUND=0 is
  # the gather before, beside tune-t1 (528 blocks): their "sampled" rows are the A/B
  "cands0-t1 MKC_CANDS_BOUND=0 ${l1bt/--draft-max 4/--draft-max 0}"
  # logit biases (2026-12-05, fourth session): each LM head row adds its bias when the step has a
  # table; 128 of them (bench -l, ids 0, 997, ... 126619) against tune-t1's none, the same kernel
  "bias128-t1 ${l1bt/--draft-max 4/--draft-max 0}$bias128"
  # attention at depth (2026-12-05): K and V rows, and the merge's partials, 4 loads ahead where
  # each waited on the one before (a 4096-position T = 1 step's item: 4 round trips for K, 4 for V,
  # and one block's 20-odd L2 round trips to merge 66 splits; the H200's kernel with drafts took
  # 0.22 ms a token more at 4096 than at 0 for 134 MB of K and V). MKC_ATT_AHEAD=1 is the loads
  # one at a time as before (the merge stays shared over the block), beside l1b-d4096
  "ahead1-d4096 MKC_ATT_AHEAD=1 $l1b -p 64 -d 4096 --draft-adaptive"
  # the T = 1 kernel at 3 blocks an SM: since 2026-12-04's fourth session a dense bf16 kernel of
  # one input a step asks ptxas for 4 (128 registers, 0 spill; left to itself it took 132 once the
  # split took its own norm). 4 unbounded ran 3.3 % faster than 3 on the H200; on the H100 on
  # 2026-11-27 an older kernel forced to 128 (and spilling) was 9.5 % slower
  "mb3-t1 MKC_MIN_BLOCKS=3 ${l1bt/--draft-max 4/--draft-max 0}"
  # the T = 1 kernel at 4096 cached positions (issue 12's second target: >= 0.70 of copy), and its
  # stages there
  "t1-d4096 ${l1b/--draft-max 4/--draft-max 0} -p 64 -d 4096"
  "t1-stages4096 ${l1b/--draft-max 4/--draft-max 0} -p 64 -d 4096 -n 32 --stages"
  "t1-stages ${l1bt/--draft-max 4/--draft-max 0} -n 32 --stages"
  # the T <= 5 kernel's stages, with a verify5 column since 2026-12-04 (third session): where a
  # verify step's 3 x goes, stage by stage
  "l1b-stages $l1b -p 64 -n 32 --stages"
  # a stage streaming no weights (attention) asks L2 for the next stage's (MKC_NEXT_PREFETCH=1:
  # o-proj's 8 MB while attention runs; the short stages took about 5 us each beyond their bytes on
  # 2026-12-04). It takes the T = 1 kernel to 132 registers, 3 blocks an SM, so 4 are asked (128
  # registers, 0 spill)
  "nextpf-t1 MKC_NEXT_PREFETCH=1 MKC_MIN_BLOCKS=4 ${l1bt/--draft-max 4/--draft-max 0}"
  # ... and =2: o-proj and gate/up, their own rows done, ask for the next stage's first 16 MiB
  # while the last blocks finish and all wait (132 registers: 4 blocks asked, as above)
  "nextpf2-t1 MKC_NEXT_PREFETCH=2 MKC_MIN_BLOCKS=4 ${l1bt/--draft-max 4/--draft-max 0}"
  # the T = 1 kernel's warps in fewer, larger blocks (MKC_THREADS: 264 or 132 arrivals at each
  # flow wait's counter against 528; 128 registers as at 4 blocks of 128). tests/gpu/probe_flow.cu's
  # hop table says what a wait costs by block shape, apart from the kernel
  "th256-t1 MKC_THREADS=256 ${l1bt/--draft-max 4/--draft-max 0}"
  "th512-t1 MKC_THREADS=512 ${l1bt/--draft-max 4/--draft-max 0}"
  "smollm2-q41 -m \$models/smollm2-q41.gguf --ctx 8192 --draft-max 4 -n 128 -p 512 --rounds 8"
  "nextpf-d0 MKC_NEXT_PREFETCH=1 $l1b -p 512 --rounds 8"
  # the T = 1 kernel's stages unsplit
  "nosplit-t1-stages MKC_SPLIT=0 ${l1bt/--draft-max 4/--draft-max 0} -n 32 --stages"
  # the round trips, stage by stage (u2-t1's), and four chunks a row (152 registers, 3 blocks)
  "u2-t1-stages MKC_MV_UNROLL=2 ${l1bt/--draft-max 4/--draft-max 0} -n 32 --stages"
  "u4-t1 MKC_MV_UNROLL=4 ${l1bt/--draft-max 4/--draft-max 0}"
  # one row a warp in the matvecs that leave warps idle (MKC_MV_ROW1; 2026-12-04: +12-16 % in the
  # unsplit T = 1 kernel, +1.4 % at T = 1 and -7 % at verify5 in the T <= 5 kernel)
  "row1-d0 MKC_MV_ROW1=8 $l1b -p 512 --rounds 8"
  "row1x4-nosplit-t1 MKC_SPLIT=0 MKC_MV_ROW1=4 ${l1bt/--draft-max 4/--draft-max 0}"
  "mma-splitk-stages MKC_MMA_DECODE=1 MKC_SPLITK=1 $l1b -p 64 -n 32 --stages"
  # the copies for one input off (MKC_T1_PATH=0: 9.5 % slower at T = 1 on the H200, twice)
  "t1path0-d0 MKC_T1_PATH=0 $l1b -p 512 --rounds 8"
  "t1path0-d4096 MKC_T1_PATH=0 $l1b -p 64 -d 4096 --draft-adaptive"
  "l1b-grid MKC_SYNC=grid $l1b -p 512"
  # the knobs the H200 measured slower on 2026-12-04 (docs/PERF.md): the matvec's weight rows
  # copied ahead into shared memory (MKC_CP_RING), the decode matmuls on tensor cores
  # (MKC_MMA_DECODE), attention's K and V rows asked of L2 a tile at once (MKC_ATT_PREFETCH)
  "ring16-d0 MKC_CP_RING=16 $l1b -p 512 --rounds 8"
  "mma-d0 MKC_MMA_DECODE=1 $l1b -p 512 --rounds 8"
  "attpf-d4096 MKC_ATT_PREFETCH=1 $l1b -p 64 -d 4096 --draft-adaptive"
  "ring16-attpf-d4096 MKC_CP_RING=16 MKC_ATT_PREFETCH=1 $l1b -p 64 -d 4096 --draft-adaptive"
  "mma-ring16-d0 MKC_MMA_DECODE=1 MKC_CP_RING=16 $l1b -p 512 --rounds 8"
  "ring32-d0 MKC_CP_RING=32 $l1b -p 512 --rounds 8"
  "ring16-stages MKC_CP_RING=16 $l1b -p 64 -n 32 --stages"
  "ring16-attpf-stages4096 MKC_CP_RING=16 MKC_ATT_PREFETCH=1 $l1b -p 64 -d 4096 -n 32 --stages"
  "ring16-t1 MKC_CP_RING=16 ${l1bt/--draft-max 4/--draft-max 0}"
  "ring16-mb4-t1 MKC_MIN_BLOCKS=4 MKC_CP_RING=16 ${l1bt/--draft-max 4/--draft-max 0}"
  "ring16-d4096 MKC_CP_RING=16 $l1b -p 64 -d 4096 --draft-adaptive"
  "mma-split-d0 MKC_MMA_DECODE=1 MKC_SPLIT=1 $l1b -p 512 --rounds 8"
  "mma-stages MKC_MMA_DECODE=1 $l1b -p 64 -n 32 --stages"
  "mma-d4096 MKC_MMA_DECODE=1 $l1b -p 64 -d 4096 --draft-adaptive"
  "mma-u8-d0 MKC_MMA_DECODE=1 MKC_MMA_UNROLL=8 $l1b -p 512 --rounds 8"
  # at 2 blocks an SM: since 3 blocks spill nothing either (docs/PERF.md), what fewer warps cost
  "mb2-t1 MKC_MIN_BLOCKS=2 ${l1bt/--draft-max 4/--draft-max 0}"
  # the T = 1 kernel on tensor cores
  "mma-t1 MKC_MMA_DECODE=1 ${l1bt/--draft-max 4/--draft-max 0}"
  # the tensor-core kernels take 128 registers since nothing spills (docs/PERF.md): 4 blocks an SM
  "mma-mb4-d0 MKC_MMA_DECODE=1 MKC_MIN_BLOCKS=4 $l1b -p 512 --rounds 8"
  "l1b-q4k-d0 -m \$models/l1b-q4k.gguf --ctx 8192 --draft-max 4 -n 128 -p 512"
  # SmolLM2's T = 1 kernel: also tests/gpu/prose.sh's plain decoding (the same shapes as the real file)
  "smollm2-t1 -m \$models/smollm2-q41.gguf --ctx 8192 --draft-max 0 -n 128 -p 512"
  "smollm2-bf16 -m \$models/smollm2-q41.gguf --ctx 8192 --draft-max 4 -n 128 -p 512 --dequant"
  # the draft sources (issue 15): plain, prompt lookup and self-speculation (first L
  # layers), one step per launch and 16 drafted in the kernel; the drafter head on the
  # hidden state (random weights: its cost, not its acceptance)
  "l1b-self $l1bt --draft-layers 4 --rounds 16"
  "l1b-head $l1bt --draft-head"
  "smollm2-self -m \$models/smollm2-q41.gguf --ctx 8192 --draft-max 4 -n 64 -p 16 --draft-layers 8 --rounds 16"
  # llama-3.2-1b with every matrix IQ3_S (the grid types' decoders: a table lookup a chunk),
  # the T = 1 kernel; its model is made on the machine (mkc init on every core)
  "l1b-iq3s-t1 -m \$models/l1b-iq3s.gguf --ctx 2048 --draft-max 0 -n 64 -p 16"
  # Gemma 3 1B's shape (2026-11-29): heads of 256, 5 local layers over 512 positions for each
  # global one, a post-norm stage before each residual add (7 stages a layer)
  "g1b-d0 --preset gemma-3-1b --random-weights 1 --ctx 4096 --draft-max 4 -n 128 -p 512 --rounds 8"
  "g1b-d4096 --preset gemma-3-1b --random-weights 1 --ctx 8192 --draft-max 4 -p 64 -d 4096"
  # experts (2026-11-29, fifth session): Qwen3-30B-A3B's layers, 8 of 48, bf16; bench's size
  # counts the 8 of 128 experts an input runs, so weights GB/s is the experts' streaming rate
  "moe8l-d0 --preset qwen3-30b-a3b-8l --random-weights 1 --ctx 4096 --draft-max 4 -n 64 -p 128"
  # gpt-oss (2026-12-01, sixth session): gpt-oss-20b's layers, 8 of 24, bf16 (its files' experts
  # are MXFP4: a run of a real file will stream 4 times fewer expert bytes)
  "oss8l-d0 --preset gpt-oss-20b-8l --random-weights 1 --ctx 4096 --draft-max 4 -n 64 -p 128"
)

# Slots (issue 16): B sequences per step on a slot kernel, llama-3.2-1b's shapes on random
# weights: `mkc run --batch` of B lines of 16-token prompts, 128 greedy tokens each, no drafts,
# against the plain kernel's one sequence (B = 1); the aggregate tokens/s is the stats line's.
# B = 64: 64 rows, past the decode path's 32, so its steps are wide (templates/slots.cuh, tiled).
# An entry is "B [VAR=VALUE...] [--stages]": the knobs against each B's default, for B = 16 >= 8 x
# B = 1; --stages adds the decode steps' time in each stage of the slot kernel (run --batch
# --stages, since 2026-12-04's third session), its table into the summary.
# In priority order: bench.sh stops where its budget says and tests/gpu/second.sh takes the rest
# by name (slots-B[-VAR=VALUE...]).
# Since 2026-12-04 a slot kernel of 16 slots or more runs on tensor cores with split-K by default
# (16 slots: 4319 against 1318 t/s); 64 slots were not run with it, nor 4 and 8 with split-K.
SLOT_RUNS=(1 16 64 "16 --stages" "16 MKC_MMA_DECODE=0" "8 MKC_MMA_DECODE=1 MKC_SPLITK=1" 8
  "4 MKC_MMA_DECODE=1 MKC_SPLITK=1" 4 "64 MKC_MMA_DECODE=0" "32 MKC_MMA_DECODE=1 MKC_SPLITK=1")
slot_args() { # B FILE: the run's arguments (FILE: B prompt lines, written here)
  local b=$1 i
  : >"$2"
  for ((i = 0; i < b; i++)); do seq -s, $((i + 1)) $((i + 16)) >>"$2"; done
  slot_run=(run --preset llama-3.2-1b --random-weights 1 --ctx 4096 -n 128)
  if [ "$b" -eq 1 ]; then
    slot_run+=(--prompt-ids "$(head -n 1 "$2")")
  else
    slot_run+=(--batch "$2" --slots "$b" --draft-max 0)
  fi
}

slot_parts() { # ENTRY: its B into b, its VAR=VALUE words into slot_envs, its flags into slot_extra
  local w rest
  read -r b rest <<<"$1"
  slot_envs=() slot_extra=()
  for w in $rest; do
    if [[ $w == --* ]]; then slot_extra+=("$w"); else slot_envs+=("$w"); fi
  done
}

slot_bench() { # ENTRY DIR: one SLOT_RUNS entry on cuda (its prompts and logs in DIR), its stats line
  local f rc
  slot_parts "$1"
  f="$2/slots-${1// /-}"
  slot_args "$b" "$f.txt"
  say "-- slots B = $b: ${slot_envs[*]} mkc ${slot_run[*]} ${slot_extra[*]}"
  timeout "$(limit 60)" env "${slot_envs[@]}" build/mkc "${slot_run[@]}" "${slot_extra[@]}" --backend cuda \
    >"$f.out" 2>"$f.err"
  rc=$?
  say "exit $rc: $(tail -n 1 "$f.err")"
  [ ${#slot_extra[@]} -gt 0 ] && sed -n '/^Stages of/,$p' "$f.out" | tee -a "$log"
  return 0
}

make_model() { # NAME DIR: a model file BENCH_RUNS reads (seeded random weights)
  [ -f "$2/$1.gguf" ] && return 0
  case $1 in
  smollm2-q41) build/mkc init --preset smollm2-135m --seed 1 --type q4_1 \
    --tensor-type token_embd.weight=q8_0 -o "$2/$1.gguf" ;;
  l1b-q4k) build/mkc init --preset llama-3.2-1b --seed 1 --type q4_k -o "$2/$1.gguf" ;;
  l1b-iq3s) build/mkc init --preset llama-3.2-1b --seed 1 --type iq3_s -o "$2/$1.gguf" ;;
  smollm2-q41-vocab) build/mkc init --preset smollm2-135m --seed 1 --type q4_1 \
    --vocab tests/data/standin_vocab.gguf -o "$2/$1.gguf" ;;
  esac
}

# mkc imatrix as bench.sh times it, with --no-ppl and without (prime.sh compiles both kernels
# ahead): SmolLM2-135M's shapes in
# Q4_1 with the stand-in vocabulary, over imatrix_text.txt 40 times (about 24k tokens)
imatrix_text() { for _ in $(seq 40); do cat tests/data/imatrix_text.txt; done >"$1"; }
IMATRIX_ARGS=(-c 512 --chunks 16 --backend cuda)

run_model() { # DIR ARGS...: make the model file a run's arguments name (-m DIR/NAME.gguf), if any
  local dir=$1 a
  shift
  for a in "$@"; do
    [[ $a == "$dir"/*.gguf ]] && { make_model "$(basename "$a" .gguf)" "$dir" || return 1; }
  done
  return 0
}

run_parts() { # RUN: a BENCH_RUNS entry into run_name, run_envs and run_args (arrays)
  eval "set -- $1"
  run_name=$1
  shift
  run_envs=()
  while [[ ${1:-} == [A-Z]*=* ]]; do run_envs+=("$1") && shift; done
  run_args=("$@")
}
