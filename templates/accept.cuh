/* Greedy choice and speculative accept, run by block 0 after the LM head.
 * inputs = [last, fixed_1..fixed_f, d_1..d_k]; choice[t] is the target's
 * token after input t. Fixed inputs are taken as given; drafts are accepted
 * while each equals the choice before it. pos moves past every accepted input
 * plus `last`: rejected K/V rows lie beyond it and are overwritten later.
 * When sampling (temp > 0), the choice after input t is what mkc_sample drew
 * there, and draft t+1 is kept with probability p_t(draft) (a uniform of its
 * own stream below it), else the residual's token is emitted: speculative
 * sampling with point-mass drafts. Every accepted input's token is written to
 * history at its position (the penalties' window). Choices, draws and
 * log-probabilities exist from input t0 on (a prompt chunk: its last only),
 * at row t - t0; every input a step can accept lies there (n_fixed >= t0). */
MKC_DEVICE void mkc_accept_sampled(const mkc_state *st, const int *drawn, const float *p_draft,
                                   int pos, int t0, int T, int *choice, int *a_out) {
  int a = st->n_fixed;
  for (; a + 1 < T; a++) {
    if (!(mkc_uniform(&st->sampling, (unsigned)(pos + a + 1), MKC_DRAW_ACCEPT) < p_draft[a - t0]))
      break;
    choice[a - t0] = st->inputs[a + 1];
  }
  /* the bonus token after the last input, or the residual's after a rejection */
  choice[a - t0] = drawn[(a - t0) * 2 + (a + 1 < T ? 1 : 0)];
  *a_out = a;
}

/* The best (logit, id) over every block's LM-head partial, for each input:
 * the whole block scans, each thread a stride of the blocks, then a
 * butterfly in each warp and thread 0 over the warps (a serial scan of 1024
 * partials per input was one thread's work before). Ties go to the lower
 * id; mkc_better is a total order, so every lane ends with the same pair. */
MKC_DEVICE void mkc_argmax_partials(const float *part_val, const int *part_idx, int T, int *choice,
                                    float *red_v, int *red_i) {
  for (int t = 0; t < T; t++) {
    float v = MKC_NEG_MAX;
    int i = 0x7fffffff;
    for (int b = mkc_tid(); b < mkc_nblocks(); b += MKC_THREADS)
      if (mkc_better(part_val[b * MKC_STEP_ROWS + t], part_idx[b * MKC_STEP_ROWS + t], v, i)) {
        v = part_val[b * MKC_STEP_ROWS + t];
        i = part_idx[b * MKC_STEP_ROWS + t];
      }
    for (int m = 16; m > 0; m >>= 1) {
      float ov = mkc_shfl_xor(v, m);
      int oi = mkc_shfl_xor_int(i, m);
      if (mkc_better(ov, oi, v, i)) {
        v = ov;
        i = oi;
      }
    }
    if (mkc_lane() == 0) {
      red_v[mkc_warp()] = v;
      red_i[mkc_warp()] = i;
    }
    mkc_sync_block();
    if (mkc_tid() == 0) {
      for (int w = 1; w < MKC_WARPS; w++)
        if (mkc_better(red_v[w], red_i[w], v, i)) {
          v = red_v[w];
          i = red_i[w];
        }
      choice[t] = i;
    }
    mkc_sync_block(); /* red is reused by the next input */
  }
}

MKC_DEVICE void mkc_accept(mkc_state *st, const float *part_val, const int *part_idx,
                           const int *drawn, const float *p_draft, int *history, int vocab, int pos,
                           int t0, int T, int b0, const float *work, float *lp, int *choices,
                           int *choice, float *red_v, int *red_i) {
  if (mkc_bid() != b0 % mkc_nblocks()) return; /* a slot kernel's slots on blocks side by side */
  mkc_argmax_partials(part_val, part_idx, T - t0, choice, red_v, red_i);
  if (mkc_tid() != 0) return;
  /* every input's greedy choice for the host, before sampling replaces any (a drafter head's
   * block: T ints to read where its logits were T rows of the vocabulary) */
  for (int t = 0; t < T - t0; t++) choices[t] = choice[t];
  if (st->draft_left > 0) { /* a draft pass (templates/rounds.cuh): its argmax is the next draft */
    int n = st->draft_n + 1, c = choice[0];
    if (c >= 0 && c < vocab) {
      st->inputs[n] = c;
      st->draft_n = n;
      st->draft_left -= 1;
    } else {
      st->draft_left = 0; /* no finite logit: verify the drafts made so far */
    }
    if (st->draft_left == 0) {
      st->n_inputs = st->draft_n + 1;
      st->n_fixed = 0;
    }
    return;
  }
  int f = st->n_fixed, a = f;
  if (mkc_sampling_on(&st->sampling)) {
    mkc_accept_sampled(st, drawn, p_draft, pos, t0, T, choice, &a);
    if (choice[a - t0] < 0 || choice[a - t0] >= vocab) {
      /* nothing to draw from: every probability was NaN, inf or cut */
      st->status = MKC_STATUS_NONFINITE;
      st->n_out = 0;
      st->n_accepted = 0;
      return;
    }
    for (int t = 0; t <= a; t++) history[pos + t] = st->inputs[t];
    for (int t = f; t <= a; t++) st->out_tokens[t - f] = choice[t - t0];
    /* an emitted token survived every cut: its penalized logit is in work */
    if (st->sampling.logprobs > 0)
      for (int t = f; t <= a; t++) {
        float *l = lp + (t - t0) * MKC_LP_STRIDE;
        l[MKC_LP_EMITTED] = (work[(t - t0) * vocab + choice[t - t0]] - l[0]) * l[2] - l[1];
      }
    st->n_out = a - f + 1;
    st->n_accepted = a - f;
    st->pos = pos + a + 1;
    st->step += 1;
    st->status = MKC_STATUS_OK;
    return;
  }
  for (int t = t0; t <= f; t++)
    if (choice[t - t0] < 0 || choice[t - t0] >= vocab) {
      /* no finite logit won: a NaN or inf reached the head */
      st->status = MKC_STATUS_NONFINITE;
      st->n_out = 0;
      st->n_accepted = 0;
      return;
    }
  while (a + 1 < T && st->inputs[a + 1] == choice[a - t0]) a++;
  if (choice[a - t0] < 0 || choice[a - t0] >= vocab) a--; /* keep the last emitted choice valid */
  for (int t = 0; t <= a; t++) history[pos + t] = st->inputs[t];
  for (int t = f; t <= a; t++) st->out_tokens[t - f] = choice[t - t0];
  st->n_out = a - f + 1;
  st->n_accepted = a - f;
  st->pos = pos + a + 1;
  st->step += 1;
  st->status = MKC_STATUS_OK;
}
