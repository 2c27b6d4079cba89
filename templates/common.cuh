/* Building blocks every stage uses: lane/warp ids, warp and block reductions,
 * the atomics-based grid barrier, and the step's begin check. */
#define MKC_WARPS (MKC_THREADS / 32)

/* The KV cache's element type, chosen at generation time: the kernel defines
 * MKC_KV_BF16, MKC_KV_F16 or MKC_KV_F32. K and V are rounded to it (to
 * nearest even) once, when appended, and widened to float where attention
 * reads them; the reference executor rounds its K and V alike. */
#if defined(MKC_KV_BF16)
typedef mkc_bf16 mkc_kv;
MKC_DEVICE mkc_kv mkc_kv_from_f32(float f) { return mkc_f32_to_bf16(f); }
MKC_DEVICE float mkc_kv_to_f32(mkc_kv v) { return mkc_bf16_to_f32(v); }
#elif defined(MKC_KV_F16)
typedef mkc_f16 mkc_kv;
MKC_DEVICE mkc_kv mkc_kv_from_f32(float f) { return mkc_f32_to_f16(f); }
MKC_DEVICE float mkc_kv_to_f32(mkc_kv v) { return mkc_f16_to_f32(v); }
#elif defined(MKC_KV_F32)
typedef float mkc_kv;
MKC_DEVICE mkc_kv mkc_kv_from_f32(float f) { return f; }
MKC_DEVICE float mkc_kv_to_f32(mkc_kv v) { return v; }
#else
#error "the kernel names no KV cache type: define MKC_KV_BF16, MKC_KV_F16 or MKC_KV_F32"
#endif
#define MKC_NEG_MAX (-3.402823466e38f)

MKC_DEVICE int mkc_lane(void) { return mkc_tid() & 31; }

/* bench --stages: block 0's clock after stage i (0: the step's start). After
 * a grid barrier that is when every block has finished the stage; after a
 * stage without one, when block 0 has. */
MKC_DEVICE void mkc_stage_time(unsigned long long *timers, int i) {
  if (mkc_bid() == 0 && mkc_tid() == 0) timers[i] = mkc_globaltimer();
}
MKC_DEVICE int mkc_warp(void) { return mkc_tid() >> 5; }
/* Warps of the whole grid: matvec rows are dealt out one warp at a time. */
MKC_DEVICE int mkc_grid_warp(void) { return mkc_bid() * MKC_WARPS + mkc_warp(); }
MKC_DEVICE int mkc_grid_warps(void) { return mkc_nblocks() * MKC_WARPS; }

/* The sum over the warp, the same bits in every lane (see the preludes). */
MKC_DEVICE float mkc_warp_sum(float v) {
  mkc_warp_sum_rows(&v, 1, 1, 1);
  return v;
}

MKC_DEVICE float mkc_warp_max(float v) {
  for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, mkc_shfl_xor(v, m));
  return v;
}

/* Nonzero in every lane when v is nonzero in any lane. */
MKC_DEVICE int mkc_warp_or(int v) {
  for (int m = 16; m > 0; m >>= 1) v |= mkc_shfl_xor_int(v, m);
  return v;
}

/* The gated MLP's glu(gate, up): act(gate) * up, act SiLU (SwiGLU), or where the kernel defines
 * MKC_GEGLU, GELU's tanh form (GeGLU: Gemma's gelu_pytorch_tanh); where it defines MKC_OAI_GLU,
 * gpt-oss's: gate clamped above and up on both sides at MKC_OAI_LIMIT, gate * sigmoid(MKC_OAI_ALPHA
 * gate) * (up + 1) (codegen defines both constants, graph.h the reference's). */
MKC_DEVICE float mkc_glu(float g, float u) {
#if defined(MKC_OAI_GLU)
  g = fminf(g, (float)MKC_OAI_LIMIT);
  u = fmaxf(fminf(u, (float)MKC_OAI_LIMIT), -(float)MKC_OAI_LIMIT);
  return g / (1.0f + expf(-(float)MKC_OAI_ALPHA * g)) * (u + 1.0f);
#elif defined(MKC_GEGLU)
  return 0.5f * g * (1.0f + tanhf(0.7978845608f * (g + 0.044715f * g * g * g))) * u;
#else
  return g / (1.0f + expf(-g)) * u;
#endif
}

/* Gemma 2's soft caps, x -> c tanh(x / c): mkc_score on the scaled attention
 * scores where the kernel defines MKC_ATTN_SOFTCAP, mkc_logit on the logits
 * where it defines MKC_LOGIT_SOFTCAP; else each is x. */
#ifdef MKC_ATTN_SOFTCAP
#define mkc_score(s) (MKC_ATTN_SOFTCAP * tanhf((s) / MKC_ATTN_SOFTCAP))
#else
#define mkc_score(s) (s)
#endif
/* Granite's multipliers: the logits times MKC_LOGIT_SCALE (1 / logits_scaling) before any cap,
 * and a residual branch times MKC_RESIDUAL_SCALE before it is added (mkc_branch). */
#ifdef MKC_LOGIT_SCALE
#define mkc_logit_scaled(z) ((z)*MKC_LOGIT_SCALE)
#else
#define mkc_logit_scaled(z) (z)
#endif
#ifdef MKC_LOGIT_SOFTCAP
#define mkc_logit(z) (MKC_LOGIT_SOFTCAP * tanhf(mkc_logit_scaled(z) / MKC_LOGIT_SOFTCAP))
#else
#define mkc_logit(z) mkc_logit_scaled(z)
#endif
#ifdef MKC_RESIDUAL_SCALE
#define mkc_branch(v) ((v)*MKC_RESIDUAL_SCALE)
#else
#define mkc_branch(v) (v)
#endif

/* Attention's output of query head h: acc (its p.v sum) over l (its weights' sum, taken at the
 * running max m); with sinks (gpt-oss: each head's score that joins the sum with no value), over
 * l + exp(sink - m), both taken at max(m, sink) so that neither exp overflows. */
MKC_DEVICE_INLINE float mkc_att_out(float acc, float l, float m, const mkc_bf16 *sinks, int h) {
  if (!sinks) return acc / l;
  float s = mkc_bf16_to_f32(sinks[h]), top = fmaxf(m, s), a = expf(m - top);
  return acc * a / (l * a + expf(s - top));
}

/* A matmul's value v of row r: its bias added (bias: 0 where it has none: gpt-oss's output
 * projection and router have one), then stored, or with accumulate (a residual epilogue) added
 * as a branch onto prior, the value *o had (read by the caller, before its dot products: see
 * mkc_matvec; mkc_put reads it here). */
MKC_DEVICE_INLINE void mkc_put_onto(float *o, float prior, float v, const mkc_bf16 *bias, int r,
                                    int accumulate) {
  if (bias) v += mkc_bf16_to_f32(bias[r]);
  *o = accumulate ? prior + mkc_branch(v) : v;
}

/* mkc_put_onto with *o read now: the same bits. */
MKC_DEVICE_INLINE void mkc_put(float *o, float v, const mkc_bf16 *bias, int r, int accumulate) {
  mkc_put_onto(o, accumulate ? *o : 0.0f, v, bias, r, accumulate);
}

/* Sum over the block, returned to every thread; red: MKC_WARPS floats of smem. */
MKC_DEVICE float mkc_block_sum(float v, float *red) {
  v = mkc_warp_sum(v);
  if (mkc_lane() == 0) red[mkc_warp()] = v;
  mkc_sync_block();
  float s = 0.0f;
  for (int w = 0; w < MKC_WARPS; w++) s += red[w];
  mkc_sync_block(); /* red is reused by the next reduction */
  return s;
}

MKC_DEVICE float mkc_block_max(float v, float *red) {
  v = mkc_warp_max(v);
  if (mkc_lane() == 0) red[mkc_warp()] = v;
  mkc_sync_block();
  float m = MKC_NEG_MAX;
  for (int w = 0; w < MKC_WARPS; w++) m = fmaxf(m, red[w]);
  mkc_sync_block();
  return m;
}

/* Grid barrier on two counters in the state: every block must be resident
 * (cooperative launch on the GPU, one host thread per block on the CPU). The
 * generation is read before arriving, so the last arriver cannot bump it
 * unseen; the counter is reset before the bump that releases the others. */
MKC_DEVICE void mkc_grid_sync(mkc_state *st) {
  mkc_sync_block();
  if (mkc_tid() == 0) {
    unsigned gen = mkc_load_volatile_u32(&st->barrier_gen);
    mkc_fence();
    unsigned arrived = mkc_atomic_add_u32(&st->barrier_count, 1u) + 1u;
    if (arrived == (unsigned)mkc_nblocks()) {
      mkc_store_u32(&st->barrier_count, 0u);
      mkc_fence();
      mkc_atomic_add_u32(&st->barrier_gen, 1u);
    } else {
      while (mkc_load_volatile_u32(&st->barrier_gen) == gen) mkc_pause();
    }
    mkc_fence();
  }
  mkc_sync_block();
}

/* Flow: a grid barrier split in two, so a block has something to do while
 * the others finish. A stage ends with mkc_flow_arrive: the block's writes
 * are done (__syncthreads), and thread 0 adds one to state->flow_count with
 * release order. The next stage starts by prefetching its own weights into
 * L2 (mkc_prefetch_first), which reads nothing another block writes, then
 * mkc_flow_wait: thread 0 spins with acquire loads until every block has
 * arrived as often as this one has waited (*waited counts, in blocks), and
 * the block meets at __syncthreads. The host zeroes flow_count before every
 * launch; one release and one acquire per block and stage, where
 * mkc_grid_sync pays for three fences, a reset and a second counter. */
/* A layer's output kept for the host (a drafter head's features): slot 0
 * keeps nothing; slot k copies every input's row of x into slot k - 1 of
 * keep (slot_floats each, rows at x's stride), the whole grid at once. */
MKC_DEVICE void mkc_keep(const float *x, int x_stride, int n, int T, float *keep, int slot_floats,
                         int slot) {
  if (slot == 0) return;
  float *dst = keep + (slot - 1) * slot_floats;
  for (int i = mkc_bid() * MKC_THREADS + mkc_tid(); i < T * n; i += mkc_nblocks() * MKC_THREADS)
    dst[i / n * x_stride + i % n] = x[i / n * x_stride + i % n];
}

MKC_DEVICE void mkc_flow_arrive(mkc_state *st) {
  mkc_sync_block();
  if (mkc_tid() == 0) mkc_add_release_u32(&st->flow_count, 1u);
}

MKC_DEVICE void mkc_flow_wait(mkc_state *st, unsigned *waited) {
  *waited += (unsigned)mkc_nblocks();
  if (mkc_tid() == 0)
    while ((int)(mkc_load_acquire_u32(&st->flow_count) - *waited) < 0) mkc_pause();
  mkc_sync_block();
}

/* A step's inputs checked: enum mkc_status. A step takes up to t_max inputs
 * (1 + drafts), or, as a prompt chunk whose inputs are all known, up to
 * t_chunk. */
MKC_DEVICE int mkc_inputs_status(const mkc_state *st, int vocab, int max_ctx, int t_max,
                                 int t_chunk) {
  int T = st->n_inputs, pos = st->pos, status = MKC_STATUS_OK;
  if (T < 1 || T > t_chunk || st->n_fixed < 0 || st->n_fixed >= T ||
      (T > t_max && st->n_fixed != T - 1))
    status = MKC_STATUS_BAD_INPUT;
  else if (pos < 0 || pos + T > max_ctx)
    status = MKC_STATUS_CTX_FULL;
  else
    for (int t = 0; t < T; t++)
      if (st->inputs[t] < 0 || st->inputs[t] >= vocab) status = MKC_STATUS_BAD_INPUT;
  return status;
}

/* A step refused before it ran: its status and nothing emitted, written by
 * one thread of the grid. */
MKC_DEVICE void mkc_step_refused(mkc_state *st, int status) {
  if (mkc_bid() == 0 && mkc_tid() == 0) {
    st->status = status;
    st->n_out = 0;
    st->n_accepted = 0;
  }
}

/* Every block reads the same state, so every block reaches the same verdict;
 * on a bad step nothing is written but the status. */
MKC_DEVICE int mkc_step_begin(mkc_state *st, int vocab, int max_ctx, int t_max, int t_chunk) {
  int status = mkc_inputs_status(st, vocab, max_ctx, t_max, t_chunk);
  if (status != MKC_STATUS_OK) {
    mkc_step_refused(st, status);
    return 0;
  }
  return 1;
}

/* This block's index counted from block b0 (which is 0). */
MKC_DEVICE int mkc_bid_from(int b0) {
  int n = mkc_nblocks(), b = mkc_bid() - b0 % n;
  return b < 0 ? b + n : b;
}

/* Whether (v, i) beats (best_v, best_i) in a greedy choice: the larger
 * logit, ties to the lower id. */
MKC_DEVICE int mkc_better(float v, int i, float best_v, int best_i) {
  return v > best_v || (v == best_v && i < best_i);
}
