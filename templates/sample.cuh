/* Sampling in the step (issue 14), after the LM head: for each input
 * position t one block turns the raw logits into the distribution p_t that
 * the options ask for — penalties over the last repeat_last_n tokens (the
 * step's earlier inputs included, as if appended), top-k, top-p, min-p on
 * the untempered softmax, then temperature: llama.cpp's chain order — and
 * draws from it with a counter-based generator, so a token depends only on
 * (seed, position, purpose) and nothing is saved between steps. No sort: each
 * cut is a threshold found by bisection over the logits' ordered bit
 * patterns, every probe a block-wide count or mass.
 *
 * Per position t the block writes: the token drawn from p_t, p_t(draft) for
 * the draft that follows input t, and a token drawn from the residual
 * norm(max(0, p_t - q)) where q is the point mass on that draft. mkc_accept
 * then keeps a draft with probability p_t(draft) and otherwise emits the
 * residual token: speculative sampling, lossless for point-mass drafts. */

/* The repeat penalty, 1 (none) for the all-zero options a fresh or reset
 * state holds: zero options are plain greedy decoding. */
MKC_DEVICE float mkc_repeat_penalty(const mkc_sampling *o) {
  return o->repeat_penalty > 0.0f ? o->repeat_penalty : 1.0f;
}

/* Whether the step samples rather than takes the plain argmax: a
 * temperature, or penalties (which greedy decoding applies too, as llama.cpp's
 * does: then the choice is the argmax of the penalized logits), or
 * log-probabilities (MKC_SAMPLING_ON, mkc_state.h). */
MKC_DEVICE int mkc_sampling_on(const mkc_sampling *o) { return MKC_SAMPLING_ON(o); }

/* What to draw a uniform for: one stream each, so they are independent. */
#define MKC_DRAW_SAMPLE 0u
#define MKC_DRAW_ACCEPT 1u
#define MKC_DRAW_RESIDUAL 2u

/* Philox4x32-10 (Salmon et al., SC'11): ten rounds of two 32x32->64-bit
 * multiplies over a 128-bit counter, the 64-bit key bumped by the Weyl
 * constants between rounds. By value: the counter stays in registers. */
MKC_DEVICE mkc_u4 mkc_philox4x32(mkc_u4 c, unsigned k0, unsigned k1) {
  for (int r = 0; r < 10; r++) {
    unsigned long long p0 = (unsigned long long)0xD2511F53u * c.x;
    unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c.z;
    mkc_u4 n;
    n.x = (unsigned)(p1 >> 32) ^ c.y ^ k0;
    n.y = (unsigned)p1;
    n.z = (unsigned)(p0 >> 32) ^ c.w ^ k1;
    n.w = (unsigned)p0;
    c = n;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

/* A uniform in [0, 1) with 24 random bits, for the token at `position`. */
MKC_DEVICE float mkc_uniform(const mkc_sampling *o, unsigned position, unsigned purpose) {
  mkc_u4 c;
  c.x = position;
  c.y = purpose;
  c.z = 0u;
  c.w = 0u;
  c = mkc_philox4x32(c, o->seed_lo, o->seed_hi);
  return (float)(c.x >> 8) * (1.0f / 16777216.0f);
}

/* The float's order as an unsigned: a < b exactly when key(a) < key(b). */
MKC_DEVICE unsigned mkc_order_key(float f) {
  unsigned u = mkc_f32_bits(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* A token cut by top-k, top-p or min-p: exp of it is 0. */
#define MKC_CUT MKC_NEG_MAX

/* The token at absolute position q: the step's inputs from pos on, the
 * history (every position's token, written by mkc_accept) before. */
MKC_DEVICE int mkc_token_at(const mkc_state *st, const int *history, int pos, int q) {
  return q >= pos ? st->inputs[q - pos] : history[q];
}

/* Penalties for the token after input t: the window is the last
 * repeat_last_n tokens up to and including input t; each distinct token in
 * it is penalized once, with its count. Only tokens in [lo, hi) (a block's
 * slice of the vocabulary, mkc_sample_cands) are touched. */
MKC_DEVICE void mkc_penalize(const mkc_sampling *o, const mkc_state *st, const int *history,
                             int pos, int t, float *work, int lo, int hi) {
  int last = pos + t, n = o->repeat_last_n < last + 1 ? o->repeat_last_n : last + 1;
  if (n > MKC_HIST_CAP) n = MKC_HIST_CAP; /* the host checks; the kernel stays in bounds */
  float rp = mkc_repeat_penalty(o);
  if (rp == 1.0f && o->presence_penalty == 0.0f && o->frequency_penalty == 0.0f) return;
  for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
    int tok = mkc_token_at(st, history, pos, last - j), first = 1, count = 0;
    if (tok < lo || tok >= hi) continue;
    for (int i = 0; i < n; i++) {
      int other = mkc_token_at(st, history, pos, last - i);
      if (other != tok) continue;
      count++;
      if (i < j) first = 0; /* a nearer copy applies it */
    }
    if (!first) continue;
    float l = work[tok];
    l = l <= 0.0f ? l * rp : l / rp;
    work[tok] = l - (float)count * o->frequency_penalty - o->presence_penalty;
  }
  mkc_sync_block();
}

/* This thread's contiguous share of [0, n). */
MKC_DEVICE void mkc_share(int n, int *lo, int *hi) {
  int per = (n + MKC_THREADS - 1) / MKC_THREADS;
  *lo = mkc_tid() * per < n ? mkc_tid() * per : n;
  *hi = *lo + per < n ? *lo + per : n;
}

/* The weight a token adds to a threshold probe: 1 when counting (top-k,
 * mass_scale 0), else its mass exp((l - max) * mass_scale) (top-p). */
MKC_DEVICE float mkc_probe_weight(float l, float max, float mass_scale) {
  return mass_scale > 0.0f ? expf((l - max) * mass_scale) : 1.0f;
}

/* The candidates a pass visits: every id, or after top-k the survivors'
 * ids in ascending order (list). */
MKC_DEVICE int mkc_cand(const int *list, int j) { return list ? list[j] : j; }

/* The amount (count or mass) of candidates whose key is >= key, block-wide. */
MKC_DEVICE float mkc_amount_at_least(const float *work, const int *list, int n, unsigned key,
                                     float max, float mass_scale, float *red) {
  float s = 0.0f;
  for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
    float l = work[mkc_cand(list, j)];
    if (l > MKC_CUT && mkc_order_key(l) >= key) s += mkc_probe_weight(l, max, mass_scale);
  }
  return mkc_block_sum(s, red);
}

/* The largest key whose at-least amount reaches target, bit by bit. */
MKC_DEVICE unsigned mkc_key_bisect(const float *work, const int *list, int n, float target,
                                   float max, float mass_scale, float *red) {
  unsigned key = 0u;
  for (int b = 31; b >= 0; b--) {
    unsigned probe = key | (1u << b);
    if (mkc_amount_at_least(work, list, n, probe, max, mass_scale, red) >= target) key = probe;
  }
  return key;
}

/* The same for counts (top-k) in four passes of 8 bits: a histogram of the
 * next byte among the candidates' keys that match the bytes found so far,
 * then the byte where the count from the top reaches what is still needed.
 * Counts are integers: the atomics give the same result in any order. hist:
 * 256 unsigned of smem; sel: 2 ints of smem. */
MKC_DEVICE unsigned mkc_key_radix(const float *work, const int *list, int n, int k, unsigned *hist,
                                  int *sel) {
  unsigned key = 0u;
  int need = k;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = mkc_tid(); i < 256; i += MKC_THREADS) hist[i] = 0u;
    mkc_sync_block();
    unsigned high = shift == 24 ? 0u : 0xffffffffu << (shift + 8);
    for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
      float l = work[mkc_cand(list, j)];
      if (l <= MKC_CUT) continue;
      unsigned kk = mkc_order_key(l);
      if ((kk & high) == (key & high)) mkc_atomic_add_u32(&hist[(kk >> shift) & 255u], 1u);
    }
    mkc_sync_block();
    if (mkc_tid() == 0) {
      /* from the top, eight bins a turn while none of them reaches need: their loads are
       * independent, where one bin a turn made a chain of up to 255 loads and adds */
      int d = 255, above = 0;
      while (d >= 8) {
        int h = 0;
        for (int i = 0; i < 8; i++) h += (int)hist[d - i];
        if (above + h >= need) break;
        above += h;
        d -= 8;
      }
      while (d > 0 && above + (int)hist[d] < need) above += (int)hist[d--];
      sel[0] = d;
      sel[1] = need - above;
    }
    mkc_sync_block();
    key |= (unsigned)sel[0] << shift;
    need = sel[1];
    mkc_sync_block(); /* sel and hist are rewritten next pass */
  }
  return key;
}

/* Keeps the candidates above the boundary key and as many of its ties
 * (lowest ids first) as target needs, each tie weighing the same; cuts the
 * rest. */
MKC_DEVICE void mkc_cut_below(float *work, const int *list, int n, unsigned key, float target,
                              float max, float mass_scale, float *red, float *part) {
  float above = key == 0xffffffffu
                    ? 0.0f
                    : mkc_amount_at_least(work, list, n, key + 1u, max, mass_scale, red);
  int lo, hi;
  mkc_share(n, &lo, &hi);
  float mine = 0.0f, each = 0.0f;
  for (int j = lo; j < hi; j++) {
    float l = work[mkc_cand(list, j)];
    if (l > MKC_CUT && mkc_order_key(l) == key) {
      each = mkc_probe_weight(l, max, mass_scale);
      mine += 1.0f;
    }
  }
  part[mkc_tid()] = mine;
  mkc_sync_block();
  /* The tie count before this thread's share (ids in order across threads). */
  float before = 0.0f;
  for (int i = 0; i < mkc_tid(); i++) before += part[i];
  float w = mkc_block_max(each, red); /* a tie's weight, in every thread */
  float need = 0.0f;                  /* ceil((target - above) / w): whole ties */
  if (w > 0.0f) {
    float q = (target - above) / w;
    need = (float)(int)q;
    if (need < q) need += 1.0f;
  }
  if (need < 1.0f) need = 1.0f;
  for (int j = lo; j < hi; j++) {
    int i = mkc_cand(list, j);
    if (work[i] <= MKC_CUT) continue;
    unsigned k = mkc_order_key(work[i]);
    if (k < key || (k == key && !(before++ < need))) work[i] = MKC_CUT;
  }
  mkc_sync_block();
}

/* Counts over the block's threads in thread order: *at, the counts of the
 * threads before this one; returns the total. part: MKC_THREADS floats. */
MKC_DEVICE int mkc_count_before(int mine, float *part, int *at) {
  part[mkc_tid()] = (float)mine;
  mkc_sync_block();
  int total = 0;
  *at = 0;
  for (int i = 0; i < MKC_THREADS; i++) {
    if (i < mkc_tid()) *at += (int)part[i];
    total += (int)part[i];
  }
  return total;
}

/* The candidates that survive, base + id in candidate order, into out;
 * their count. */
MKC_DEVICE int mkc_compact(const float *work, const int *list, int n, int base, int *out,
                           float *part) {
  int lo, hi;
  mkc_share(n, &lo, &hi);
  int mine = 0;
  for (int j = lo; j < hi; j++) mine += work[mkc_cand(list, j)] > MKC_CUT;
  int at, total = mkc_count_before(mine, part, &at);
  for (int j = lo; j < hi; j++)
    if (work[mkc_cand(list, j)] > MKC_CUT) out[at++] = base + mkc_cand(list, j);
  mkc_sync_block();
  return total;
}

/* Log-probabilities of one position (lp: MKC_LP_STRIDE floats): the
 * log-softmax over the whole vocabulary of the penalized logits over the
 * temperature (1 when greedy), before any cut; its normalizer and the top
 * `logprobs` tokens (ties to the lower id), one block-wide argmax each. */
MKC_DEVICE void mkc_logprobs_top(const mkc_sampling *o, const float *work, int vocab, float max,
                                 float *lp, float *red) {
  float inv = o->temp > 0.0f ? 1.0f / o->temp : 1.0f, z = 0.0f;
  for (int i = mkc_tid(); i < vocab; i += MKC_THREADS) z += expf((work[i] - max) * inv);
  float norm = logf(mkc_block_sum(z, red));
  int *ids = (int *)(lp + MKC_LP_IDS);
  for (int r = 0; r < o->logprobs; r++) {
    float best = MKC_NEG_MAX, first = -(float)vocab;
    for (int i = mkc_tid(); i < vocab; i += MKC_THREADS) {
      int taken = 0;
      for (int j = 0; j < r; j++) taken |= ids[j] == i;
      if (!taken) best = fmaxf(best, work[i]);
    }
    best = mkc_block_max(best, red);
    for (int i = mkc_tid(); i < vocab; i += MKC_THREADS) {
      int taken = 0;
      for (int j = 0; j < r; j++) taken |= ids[j] == i;
      if (!taken && work[i] == best && -(float)i > first) first = -(float)i;
    }
    int id = (int)-mkc_block_max(first, red);
    if (mkc_tid() == 0) {
      ids[r] = id < vocab ? id : -1;
      lp[MKC_LP_VALS + r] = (best - max) * inv - norm;
    }
    mkc_sync_block();
  }
  if (mkc_tid() == 0) {
    lp[0] = max;
    lp[1] = norm;
    lp[2] = inv;
  }
}

/* One position's draw from the tempered survivors by inverse CDF over the
 * candidates in id order, skipping id `skip` (the residual: p without the
 * draft, renormalized). -1 when nothing is left. */
MKC_DEVICE int mkc_draw(const float *work, const int *list, int n, float max, float inv_temp,
                        int skip, float u, float *part, int *winner) {
  int lo, hi;
  mkc_share(n, &lo, &hi);
  float mine = 0.0f;
  for (int j = lo; j < hi; j++) {
    int i = mkc_cand(list, j);
    if (i != skip) mine += expf((work[i] - max) * inv_temp);
  }
  part[mkc_tid()] = mine;
  if (mkc_tid() == 0) *winner = -1;
  mkc_sync_block();
  float before = 0.0f, total = 0.0f;
  for (int i = 0; i < MKC_THREADS; i++) {
    if (i < mkc_tid()) before += part[i];
    total += part[i];
  }
  float target = u * total;
  if (total > 0.0f && target >= before &&
      (target < before + mine || mkc_tid() == MKC_THREADS - 1)) {
    /* This share holds the target (the last one takes what rounding left). */
    float run = before;
    int last = -1;
    for (int j = lo; j < hi; j++) {
      int i = mkc_cand(list, j);
      if (i == skip) continue;
      float e = expf((work[i] - max) * inv_temp);
      if (e <= 0.0f) continue;
      last = i;
      run += e;
      if (target < run) break;
    }
    if (last >= 0) *winner = last;
  }
  mkc_sync_block();
  int r = *winner;
  if (r < 0 && total > 0.0f) { /* rounding put the target past every share's end */
    if (mkc_tid() == 0)
      for (int j = n - 1; j >= 0; j--) {
        int i = mkc_cand(list, j);
        if (i != skip && expf((work[i] - max) * inv_temp) > 0.0f) {
          *winner = i;
          break;
        }
      }
    mkc_sync_block();
    r = *winner;
  }
  mkc_sync_block(); /* winner and part are reused */
  return r;
}

/* Whether the step's top-k is small enough for the candidates stage: then
 * each block keeps its slice's top k, and the sampler reads the union of
 * those lists instead of the vocabulary. Log-probabilities span the whole
 * vocabulary and greedy takes the argmax: both stay on the full path. */
MKC_DEVICE int mkc_cands_on(const mkc_sampling *o, int vocab) {
  return o->temp > 0.0f && o->top_k > 0 && o->top_k <= MKC_CANDS_K && o->top_k < vocab &&
         o->logprobs == 0;
}

/* A slot kernel's stage conditions (templates/slots.cuh): some slot in the
 * step samples, or takes the candidates stage. */
MKC_DEVICE int mkc_slots_sampling(const mkc_state *st, const mkc_rowmap *rm) {
  for (int s = 0; s < MKC_SLOT_N; s++)
    if (rm->count[s] > 0 && mkc_sampling_on(&st[s].sampling)) return 1;
  return 0;
}
MKC_DEVICE int mkc_slots_cands(const mkc_state *st, const mkc_rowmap *rm, int vocab) {
  for (int s = 0; s < MKC_SLOT_N; s++)
    if (rm->count[s] > 0 && mkc_cands_on(&st[s].sampling, vocab)) return 1;
  return 0;
}

/* Block b's slice of the vocabulary: contiguous, in block order. */
MKC_DEVICE void mkc_slice(int vocab, int b, int *lo, int *hi) {
  int per = (vocab + mkc_nblocks() - 1) / mkc_nblocks();
  *lo = b * per < vocab ? b * per : vocab;
  *hi = *lo + per < vocab ? *lo + per : vocab;
}

/* The candidates stage, every block, before the sampler when mkc_cands_on:
 * for each position t in [t0, T), block b copies its slice of the logits into
 * work and penalizes it (a penalty may raise a logit, so it comes before any
 * selection), writes the slice's maximum, cuts all but the slice's top k by
 * (value descending, id ascending) and lists the survivors' ids in ascending
 * order at the slice's own offset in lists. The global top k under that order
 * lie in the union of the slices' lists: an id with fewer than k ids before
 * it in the vocabulary has fewer than k before it in its slice. And every id
 * outside the union is cut in work, as the full path's top-k cut leaves it.
 * cand_max: [T][MKC_MAX_BLOCKS] floats; cand_n: [T][MKC_MAX_BLOCKS] ints. */
MKC_DEVICE void mkc_sample_cands(const mkc_state *st, const int *history, const float *logits,
                                 int logits_stride, int vocab, int pos, int t0, int T, float *work,
                                 int *lists, float *cand_max, int *cand_n, float *cand_kth,
                                 float *red, float *part, unsigned *hist, int *sel) {
  const mkc_sampling *o = &st->sampling;
  int lo, hi, k = o->top_k;
  mkc_slice(vocab, mkc_bid(), &lo, &hi);
  for (int t = t0; t < T; t++) {
    int row = t - t0, n = hi - lo;
    float *w = work + row * vocab;
    for (int i = lo + mkc_tid(); i < hi; i += MKC_THREADS) w[i] = logits[row * logits_stride + i];
    mkc_sync_block();
    mkc_penalize(o, st, history, pos, t, w, lo, hi);
    float max = MKC_NEG_MAX;
    for (int i = lo + mkc_tid(); i < hi; i += MKC_THREADS) max = fmaxf(max, w[i]);
    max = mkc_block_max(max, red);
    if (k < n) {
      unsigned key = mkc_key_radix(w + lo, 0, n, k, hist, sel);
      mkc_cut_below(w + lo, 0, n, key, (float)k, max, 0.0f, red, part);
    }
    int kept = mkc_compact(w + lo, 0, n, lo, lists + row * vocab + lo, part);
    /* the slice's k-th value, the least it kept (MKC_CUT: it kept fewer than k) */
    float least = MKC_NEG_MAX;
    for (int j = mkc_tid(); j < kept; j += MKC_THREADS)
      least = fmaxf(least, -w[lists[row * vocab + lo + j]]);
    least = -mkc_block_max(least, red);
    if (mkc_tid() == 0) {
      cand_max[row * MKC_MAX_BLOCKS + mkc_bid()] = max;
      cand_n[row * MKC_MAX_BLOCKS + mkc_bid()] = kept;
      cand_kth[row * MKC_MAX_BLOCKS + mkc_bid()] = k > 0 && kept >= k ? least : MKC_CUT;
    }
  }
}

/* Whether the sampler's union is also bounded by the threads' slice maxima, and the slices
 * below the bound skipped (mkc_cands_gather): 1 since 2026-12-05's third session; 0 is the
 * gather before, every list walked against the slices' k-th values, for the GPU's A/B. The
 * draws are the same bits either way. */
#ifndef MKC_CANDS_BOUND
#define MKC_CANDS_BOUND 1
#endif

/* The union of the blocks' lists for one row, in block order (so ids
 * ascend), into out; its size. Only the candidates at or above a bound that
 * is at most the row's k-th value join it, the same survivors in the same
 * order, from a union cut down before the passes over it. The bound is the
 * larger of two:
 * - the largest of the slices' k-th values (cand_kth): a slice that kept k
 *   has k values at or above its k-th;
 * - the k-th largest of the threads' maxima over their shares of the slices'
 *   maxima (cand_max): those are k values of k different ids.
 * The first alone left a union of 12932 ids of llama-3.2-1b's 128256 on
 * random weights (528 slices), and 4399 of SmolLM2's 49152 on its own
 * logits; with the second, 52 and 127 (build/bench_cands, docs/PERF.md). A
 * slice whose maximum is below the bound holds nobody above it: its list is
 * not walked. Ids outside the union keep their values in w, which nothing
 * after the cut reads (p(draft) reads the survivors). part: MKC_THREADS
 * floats; out is complete after the block's next barrier. */
MKC_DEVICE int mkc_cands_gather(const int *lists, const int *cand_n, const float *cand_kth,
                                const float *cand_max, int vocab, int k, const float *w, int *out,
                                float *part, float *red) {
  float bound = MKC_CUT;
  for (int s = mkc_tid(); s < mkc_nblocks(); s += MKC_THREADS) bound = fmaxf(bound, cand_kth[s]);
  int b_lo, b_hi, mine = 0;
  mkc_share(mkc_nblocks(), &b_lo, &b_hi);
  if (MKC_CANDS_BOUND) {
    float top = MKC_CUT; /* this thread's maximum: of its share's slices */
    for (int b = b_lo; b < b_hi; b++) top = fmaxf(top, cand_max[b]);
    part[mkc_tid()] = top;
    mkc_sync_block();
    int above = 0; /* its rank: the threads' maxima before it, larger or tied at a lower thread */
    for (int i = 0; i < MKC_THREADS; i++)
      above += part[i] > top || (part[i] == top && i < mkc_tid());
    if (above == k - 1) bound = fmaxf(bound, top);
  }
  bound = mkc_block_max(bound, red); /* its barriers also end the reads of part */
  for (int b = b_lo; b < b_hi; b++) {
    if (MKC_CANDS_BOUND && !(cand_max[b] >= bound)) continue;
    int lo, hi;
    mkc_slice(vocab, b, &lo, &hi);
    for (int j = 0; j < cand_n[b]; j++) mine += w[lists[lo + j]] >= bound;
  }
  int at, total = mkc_count_before(mine, part, &at);
  for (int b = b_lo; b < b_hi; b++) {
    if (MKC_CANDS_BOUND && !(cand_max[b] >= bound)) continue;
    int lo, hi;
    mkc_slice(vocab, b, &lo, &hi);
    for (int j = 0; j < cand_n[b]; j++) {
      int id = lists[lo + j];
      if (w[id] >= bound) out[at++] = id;
    }
  }
  return total; /* no barrier: the caller's mkc_key_radix has one before it reads out */
}

/* The sampler stage: block b takes positions t = t0 + b, t0 + b + nblocks,
 * ... < T (t0: the first input with logits; a prompt chunk's last), each at
 * row t - t0 of what it reads and writes. cands: the candidates stage ran
 * (mkc_cands_on): work already holds the penalized logits with everything
 * outside the slices' top k cut, cand_max and cand_n its slices' maxima and
 * list sizes, and top-k reads their union (gathered into uni: [T][vocab]
 * ints). The survivors are then the full path's, the same ids in the same
 * order with the same values, so the draws are the same bits.
 * history: the token at every position before pos (mkc_accept writes it).
 * lp: [T][MKC_LP_STRIDE] log-probabilities, when the options ask.
 * logits: [T][logits_stride] raw; work: [T][vocab] scratch; lists: [T][vocab]
 * ints, top-k's survivors; drawn: [T][2] (the token from p_t, the token from
 * the residual); p_draft: [T]. smem: red (MKC_WARPS floats), part
 * (MKC_THREADS floats), winner (3 ints), hist (256 unsigned). Block b0 takes
 * the first input, the blocks after it the next ones (a slot kernel's slots
 * start at their first rows, so their samplers run side by side). */
MKC_DEVICE void mkc_sample(const mkc_state *st, const int *history, const float *logits,
                           int logits_stride, int vocab, int pos, int t0, int T, int b0,
                           float *work, int *lists, int cands, const float *cand_max,
                           const int *cand_n, const float *cand_kth, int *uni, int *drawn,
                           float *p_draft_out, float *lp, float *red, float *part, int *winner,
                           unsigned *hist) {
  const mkc_sampling *o = &st->sampling;
  for (int t = t0 + mkc_bid_from(b0); t < T; t += mkc_nblocks()) {
    int row = t - t0;
    float *w = work + row * vocab;
    float max = MKC_NEG_MAX;
    if (cands) {
      for (int b = mkc_tid(); b < mkc_nblocks(); b += MKC_THREADS)
        max = fmaxf(max, cand_max[row * MKC_MAX_BLOCKS + b]);
    } else {
      for (int i = mkc_tid(); i < vocab; i += MKC_THREADS) w[i] = logits[row * logits_stride + i];
      mkc_sync_block();
      mkc_penalize(o, st, history, pos, t, w, 0, vocab);
      for (int i = mkc_tid(); i < vocab; i += MKC_THREADS) max = fmaxf(max, w[i]);
    }
    max = mkc_block_max(max, red);
    int draft = t + 1 < T ? st->inputs[t + 1] : -1;
    if (o->logprobs > 0) mkc_logprobs_top(o, w, vocab, max, lp + row * MKC_LP_STRIDE, red);
    if (o->temp <= 0.0f) {
      /* greedy on penalized logits: the first id at the max; a draft is kept
       * exactly when it is that id (p_t is a point mass) */
      float first = -(float)vocab; /* minus the lowest id at the max: ids < 2^24 are exact */
      for (int i = mkc_tid(); i < vocab; i += MKC_THREADS)
        if (w[i] == max && -(float)i > first) first = -(float)i;
      int best = (int)-mkc_block_max(first, red);
      if (best >= vocab) best = -1;
      if (mkc_tid() == 0) {
        drawn[row * 2 + 0] = best;
        drawn[row * 2 + 1] = best;
        p_draft_out[row] = draft >= 0 && draft == best ? 1.0f : 0.0f;
      }
      mkc_sync_block();
      continue;
    }
    float inv_temp = 1.0f / o->temp;
    /* The candidates: every id, or after top-k its k survivors, so that the
     * later cuts and draws read k values rather than the vocabulary. */
    const int *list = 0;
    int n = vocab;
    int k = o->top_k;
    if (k > 0 && k < vocab) {
      /* on the candidates' union (cands) or every id */
      const int *from = 0;
      float *vals = w; /* what the radix and the cut read: every id's value, or ... */
      if (cands) {
        from = uni + row * vocab;
        n = mkc_cands_gather(lists + row * vocab, cand_n + row * MKC_MAX_BLOCKS,
                             cand_kth + row * MKC_MAX_BLOCKS, cand_max + row * MKC_MAX_BLOCKS,
                             vocab, k, w, uni + row * vocab, part, red);
        mkc_sync_block();
        /* ... the union's values in order, in its lists' row (read): the radix's four passes
         * and the cut's three read them there, from L1, not work[id] through the ids, two
         * dependent loads an element (the union: blocks x k ids, 15840 on llama-3.2-1b).
         * Positions ascend with ids, so the cut's ties go by id as before. */
        vals = (float *)(lists + row * vocab);
        for (int j = mkc_tid(); j < n; j += MKC_THREADS) vals[j] = w[from[j]];
      }
      unsigned key = mkc_key_radix(vals, 0, n, k, hist, winner + 1);
      mkc_cut_below(vals, 0, n, key, (float)k, max, 0.0f, red, part);
      if (cands) {
        for (int j = mkc_tid(); j < n; j += MKC_THREADS) /* the cuts, back in work */
          if (vals[j] <= MKC_CUT) w[from[j]] = MKC_CUT;
        mkc_sync_block();
      }
      n = mkc_compact(w, from, n, 0, lists + row * vocab, part);
      list = lists + row * vocab;
    }
    if (o->top_p < 1.0f) {
      float scale = 1.0f; /* top-p on the untempered softmax: temperature comes last */
      float z = 0.0f;
      for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
        float l = w[mkc_cand(list, j)];
        if (l > MKC_CUT) z += mkc_probe_weight(l, max, scale);
      }
      z = mkc_block_sum(z, red);
      unsigned key = mkc_key_bisect(w, list, n, o->top_p * z, max, scale, red);
      mkc_cut_below(w, list, n, key, o->top_p * z, max, scale, red, part);
    }
    if (o->min_p > 0.0f) {
      float floor_l = max + logf(o->min_p);
      for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
        int i = mkc_cand(list, j);
        if (w[i] < floor_l) w[i] = MKC_CUT;
      }
      mkc_sync_block();
    }
    unsigned position = (unsigned)(pos + t + 1); /* of the token drawn */
    int token = mkc_draw(w, list, n, max, inv_temp, -1, mkc_uniform(o, position, MKC_DRAW_SAMPLE),
                         part, winner);
    int residual = -1;
    float p_draft = 0.0f;
    if (draft >= 0) {
      /* p_t(draft): its weight over all the survivors' (0 when it is none of them), added
       * where it is met: past the candidates' union, work holds values no cut has seen */
      float z = 0.0f, e = 0.0f;
      for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
        int i = mkc_cand(list, j);
        float x = expf((w[i] - max) * inv_temp);
        z += x;
        if (i == draft) e = x;
      }
      z = mkc_block_sum(z, red);
      e = mkc_block_sum(e, red); /* one thread's, and zeros: its bits */
      p_draft = z > 0.0f ? e / z : 0.0f;
      residual = mkc_draw(w, list, n, max, inv_temp, draft,
                          mkc_uniform(o, position, MKC_DRAW_RESIDUAL), part, winner);
    }
    if (mkc_tid() == 0) {
      drawn[row * 2 + 0] = token;
      drawn[row * 2 + 1] = residual;
      p_draft_out[row] = p_draft;
    }
  }
}
