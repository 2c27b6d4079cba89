/* Several draft-and-verify rounds in one launch (state.round_max > 1): after
 * a step's accept, block 0 records the round, drafts the next one by prompt
 * lookup over the history the kernel keeps (the token at every position),
 * and one grid barrier later every block runs the stages again, with no
 * host round trip between. The next round is the one the host's decode loop
 * would run (exec/decode.c): its first input the last emitted token, then
 * min(round_drafts, tokens still wanted - 1, room left - 1) drafts found as
 * exec/draft.c's mkc_draft_lookup finds them. A round that emits one of
 * round_stops (the end of generation) ends the launch.
 *
 * With draft_layers > 0 the drafts come from the model's own first layers
 * instead (self-speculation, LayerSkip-style): the next round's drafts are
 * made by that many passes of the stages on one input each, through the
 * first draft_layers passes of the layer loop, the final norm and the LM
 * head, each pass's argmax the next pass's input (mkc_accept's draft branch);
 * the round then verifies them all. The draft passes write the K/V rows of
 * the first layers at the drafts' positions, which the round rewrites. */

#define MKC_LOOKUP_NGRAM_MAX 3 /* exec/draft.h's MKC_DRAFT_NGRAM_MAX */

/* Token i of the history h[0..n_hist) followed by last. */
MKC_DEVICE int mkc_hist_at(const int *h, int n_hist, int last, int i) {
  return i < n_hist ? h[i] : last;
}

/* Prompt lookup over h[0..n_hist) + last by the whole block: the longest
 * suffix (3 tokens down to 1) found earlier, its most recent match, and up to
 * k of the tokens that followed it into out. Returns how many, to every
 * thread. red: MKC_WARPS ints of smem. */
MKC_DEVICE int mkc_lookup_drafts(const int *h, int n_hist, int last, int k, int *out, int *red) {
  int n = n_hist + 1;
  for (int len = MKC_LOOKUP_NGRAM_MAX; len >= 1 && k > 0; len--) {
    if (len >= n) continue;
    int best = -1;
    for (int start = mkc_tid(); start <= n - len - 1; start += MKC_THREADS) {
      int j = 0;
      while (j < len &&
             mkc_hist_at(h, n_hist, last, start + j) == mkc_hist_at(h, n_hist, last, n - len + j))
        j++;
      if (j == len && start > best) best = start;
    }
    for (int m = 16; m > 0; m >>= 1) {
      int o = mkc_shfl_xor_int(best, m);
      best = o > best ? o : best;
    }
    if (mkc_lane() == 0) red[mkc_warp()] = best;
    mkc_sync_block();
    best = -1;
    for (int w = 0; w < MKC_WARPS; w++) best = red[w] > best ? red[w] : best;
    mkc_sync_block(); /* red is reused by the next length */
    if (best >= 0) {
      int got = 0;
      for (int i = best + len; i < n && got < k; i++) got++;
      for (int i = mkc_tid(); i < got; i += MKC_THREADS)
        out[i] = mkc_hist_at(h, n_hist, last, best + len + i);
      return got;
    }
  }
  return 0;
}

/* After a pass of the stages: a draft pass goes on to the next pass; a
 * round's is recorded, and the next round set up. Called by every thread of
 * every block; nonzero when another pass runs (all blocks then see its inputs
 * in the state). history: the tokens by position (mkc_accept writes them);
 * red: MKC_WARPS + 2 ints of smem. */
MKC_DEVICE int mkc_round_next(mkc_state *st, const int *history, int max_ctx, int drafting,
                              int *red) {
  if (drafting) { /* mkc_accept stored the draft; the next pass reads it */
    mkc_grid_sync(st);
    return 1;
  }
  if (st->round_max <= 1) return 0; /* host-written, the same for every block */
  if (mkc_bid() == 0) {
    int more = 0;
    if (mkc_tid() == 0) {
      int round = st->n_rounds; /* draft passes are not rounds */
      mkc_round *r = &st->rounds[round];
      r->n_in = st->n_inputs;
      r->n_out = st->status == MKC_STATUS_OK ? st->n_out : 0;
      r->n_accepted = st->status == MKC_STATUS_OK ? st->n_accepted : 0;
      r->status = st->status;
      for (int i = 0; i < r->n_out; i++) r->out_tokens[i] = st->out_tokens[i];
      st->n_rounds = round + 1;
      int emitted = 0, stop = 0;
      for (int i = 0; i <= round; i++) emitted += st->rounds[i].n_out;
      for (int i = 0; i < r->n_out; i++)
        for (int j = 0; j < st->n_round_stops && j < MKC_ROUND_STOPS; j++)
          stop |= r->out_tokens[i] == st->round_stops[j];
      more = st->status == MKC_STATUS_OK && !stop && round + 1 < st->round_max &&
             round + 1 < MKC_ROUNDS_MAX && emitted < st->round_budget && st->pos < max_ctx;
      if (more) {
        int k = st->round_drafts, want = st->round_budget - emitted, room = max_ctx - st->pos;
        if (k > want - 1) k = want - 1;
        if (k > room - 1) k = room - 1;
        red[MKC_WARPS] = k < 0 ? 0 : k;
        st->inputs[0] = st->out_tokens[st->n_out - 1];
      }
      red[MKC_WARPS + 1] = more;
    }
    mkc_sync_block();
    more = red[MKC_WARPS + 1];
    if (more && st->draft_layers > 0) { /* the drafts come from the next passes */
      if (mkc_tid() == 0) {
        st->n_inputs = 1;
        st->n_fixed = 0;
        st->draft_n = 0;
        st->draft_left = red[MKC_WARPS];
      }
    } else if (more) {
      int got =
          mkc_lookup_drafts(history, st->pos, st->inputs[0], red[MKC_WARPS], st->inputs + 1, red);
      if (mkc_tid() == 0) {
        st->n_inputs = 1 + got;
        st->n_fixed = 0;
      }
    }
    if (mkc_tid() == 0) st->round_go = more;
  }
  mkc_grid_sync(st);
  return st->round_go;
}
