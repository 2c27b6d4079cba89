/* Speculative decoding over one session. The history is the prompt plus
 * what was generated; the token at position pos (the last one) has no K/V
 * yet and is always inputs[0] of the next step. A round: the drafter
 * proposes, the target verifies in one step, the drafter hears how many
 * drafts were kept. */
#include "decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/clock.h"

#include "depth.h"
#include "draft.h"

static int min_int(int a, int b) { return a < b ? a : b; }

static int step_or_fail(mkc_session *s, const int *in, int T, int f, mkc_step_result *r) {
  if (mkc_session_step(s, in, T, f, r) != 0) return -1;
  if (r->status != MKC_STATUS_OK) {
    fprintf(stderr, "mkc: error: the kernel refused a step at pos %d with %d inputs: %s\n",
            mkc_session_pos(s), T, mkc_status_name(r->status));
    return -1;
  }
  return 0;
}

/* Records generated token i of the last step (its log-probabilities first,
 * when asked); nonzero when generation should stop. */
static int emit(mkc_session *s, const mkc_decode_opts *o, int i, int id, int *out, int *hist,
                int *n_hist, mkc_decode_stats *stats) {
  out[stats->generated++] = id;
  hist[(*n_hist)++] = id;
  int n = mkc_session_sampling(s)->logprobs;
  if (o->on_logprobs && n > 0) {
    float lp, lps[MKC_LOGPROBS_MAX];
    int ids[MKC_LOGPROBS_MAX];
    if (mkc_session_logprobs(s, i, &lp, ids, lps) == 0) o->on_logprobs(o->ctx, id, lp, ids, lps, n);
  }
  if (o->on_token && o->on_token(o->ctx, id)) stats->stopped = 1;
  return stats->stopped;
}

/* The constrained choice from the logits after input t of the last step (draft >= 0: the
 * verdict on that draft, mkc_constraint_verify), recorded as emit does; -1 after a message. */
static int emit_constrained(mkc_session *s, const mkc_decode_opts *o, int t, int draft, int *out,
                            int *hist, int *n_hist, mkc_decode_stats *stats) {
  const float *logits = mkc_session_logits(s, t);
  const mkc_sampling *so = mkc_session_sampling(s);
  float lp = 0, lps[MKC_LOGPROBS_MAX];
  int id, ids[MKC_LOGPROBS_MAX];
  if (mkc_constraint_verify(o->constraint, logits, mkc_session_graph(s)->vocab, hist, *n_hist, so,
                            draft, &id, &lp, ids, lps) != 0)
    return -1;
  out[stats->generated++] = id;
  hist[(*n_hist)++] = id;
  if (o->on_logprobs && so->logprobs > 0) o->on_logprobs(o->ctx, id, lp, ids, lps, so->logprobs);
  if (o->on_token && o->on_token(o->ctx, id)) stats->stopped = 1;
  stats->complete = mkc_constraint_done(o->constraint);
  return 0;
}

/* Constrained output's verdict on a step of f fixed inputs and then drafts[0..k): the host
 * chooses after input f, and while its choice is the draft that came next, after that draft too
 * (sampled: speculative sampling's verdict on each draft, mkc_constraint_verify); each choice is
 * recorded as emit does. r becomes the host's verdict (r->n_out 0: nothing
 * left to emit). The cache keeps what the choices confirmed: a rewind drops drafts the kernel
 * took and the host did not, and the drafts the host took past the kernel's are the next step's
 * fixed inputs. 0, or -1 after a message. */
static int constrained_verdict(mkc_session *s, const mkc_decode_opts *o, int f, const int *drafts,
                               int k, mkc_step_result *r, int *out, int *hist, int *n_hist,
                               int n_gen, mkc_decode_stats *stats) {
  int taken = 0;
  for (int j = 0; j <= k; j++) {
    if (emit_constrained(s, o, f + j, j < k ? drafts[j] : -1, out, hist, n_hist, stats) != 0)
      return -1;
    if (j == k || hist[*n_hist - 1] != drafts[j] || stats->stopped || stats->complete ||
        stats->generated >= n_gen)
      break;
    taken++;
  }
  r->n_accepted = taken;
  r->n_out = 0;
  if (mkc_session_pos(s) > *n_hist - 1) return mkc_session_rewind(s, *n_hist - 1);
  return 0;
}

void mkc_decode_split_time(mkc_decode_stats *st) {
  double total = 0, verify = 0;
  double t1 = st->step_count[1] ? st->step_seconds[1] / st->step_count[1] : -1;
  for (int T = 1; T <= MKC_T_CAP; T++) {
    total += st->step_seconds[T];
    double beyond = st->step_seconds[T] - st->step_count[T] * t1;
    if (T > 1 && beyond > 0) verify += beyond;
  }
  st->verify_seconds = t1 < 0 ? -1 : verify;
  st->target_seconds = t1 < 0 ? total : total - verify;
}

int mkc_decode_rounds_check(const mkc_session *s, const mkc_decode_opts *o) {
  const char *why = NULL;
  if (o->rounds < 0 || o->rounds > MKC_ROUNDS_MAX)
    why = "is out of range";
  else if (o->rounds <= 1)
    return 0;
  else if (o->drafter)
    why = "drafts inside the kernel (prompt lookup, or --draft-layers): not with a draft model";
  else if (o->draft_layers >= mkc_session_graph(s)->n_layers)
    why = "with --draft-layers L drafts with the model's first L layers: L must be below its "
          "layer count";
  else if (o->draft_layers > 0 && !mkc_session_graph(s)->draft_in_kernel)
    why = "with --draft-layers needs a kernel whose layer loop is the model's layers (this one's "
          "is not)";
  else if (o->draft_layers > 0 && !mkc_session_kernel_rounds(s))
    why = "with --draft-layers drafts inside the kernel: not on the ref backend";
  else if (o->adaptive)
    why = "keeps the draft depth fixed: not with --draft-adaptive";
  else if (mkc_session_sampling(s)->logprobs > 0)
    why = "keeps only the last round's log-probabilities: not with --logprobs";
  if (!why) return 0;
  fprintf(stderr, "mkc: error: --rounds %d (1..%d) %s\n", o->rounds, MKC_ROUNDS_MAX, why);
  return -1;
}

/* Up to o->rounds generation steps in one launch (mkc_session_rounds): the
 * first on in[0..T), the rest drafted in the kernel. Records and emits them
 * as the loop below does its steps; the launch's time is shared out evenly. */
static int run_rounds(mkc_session *s, const mkc_decode_opts *o, const int *in, int T, int draft_max,
                      int n_gen, double t_draft, int *out, int *hist, int *n_hist,
                      mkc_decode_stats *stats) {
  mkc_round rr[MKC_ROUNDS_MAX];
  int n = 0;
  mkc_rounds_req q = {.rounds = o->rounds,
                      .drafts = draft_max,
                      .budget = n_gen - stats->generated,
                      .draft_layers = o->draft_layers,
                      .first_drafts = o->draft_layers ? T - 1 : 0};
  if (o->draft_layers) T = 1; /* the kernel makes the first round's T - 1 drafts too */
  for (int i = 0; i < o->n_stop_ids && q.n_stops < MKC_ROUND_STOPS; i++)
    q.stops[q.n_stops++] = o->stop_ids[i];
  if (mkc_session_rounds(s, in, T, &q, rr, &n) != 0) return -1;
  stats->launches++;
  double each = mkc_session_step_seconds(s) / n;
  for (int i = 0; i < n; i++) {
    const mkc_round *r = &rr[i];
    if (r->status != MKC_STATUS_OK) {
      fprintf(stderr, "mkc: error: the kernel refused round %d of a launch with %d inputs: %s\n",
              i + 1, r->n_in, mkc_status_name(r->status));
      return -1;
    }
    int k = r->n_in - 1;
    stats->steps++;
    stats->gen_steps++;
    stats->drafted += k;
    stats->accepted += r->n_accepted;
    stats->rounds += k > 0;
    stats->mismatches += r->n_accepted < k;
    stats->all_accepted += k > 0 && r->n_accepted == k;
    stats->draft_seconds += i == 0 ? t_draft : 0;
    stats->step_count[1 + k]++;
    stats->step_seconds[1 + k] += each;
    for (int j = 0; j < r->n_out && stats->generated < n_gen; j++)
      if (emit(s, o, j, r->out_tokens[j], out, hist, n_hist, stats)) return 0;
  }
  return 0;
}

int mkc_decode(mkc_session *s, const mkc_graph *g, const int *prompt, int n_prompt, int n_gen,
               int draft_max, int *out, mkc_decode_stats *stats) {
  mkc_decode_opts o = {.draft_max = draft_max};
  return mkc_decode_with(s, g, prompt, n_prompt, n_gen, &o, out, stats);
}

int mkc_decode_with(mkc_session *s, const mkc_graph *g, const int *prompt, int n_prompt, int n_gen,
                    const mkc_decode_opts *o, int *out, mkc_decode_stats *stats) {
  if (mkc_session_pos(s) != 0) {
    memset(stats, 0, sizeof *stats);
    fprintf(stderr, "mkc: error: mkc_decode needs a fresh session\n");
    return -1;
  }
  return mkc_decode_more(s, g, prompt, n_prompt, 0, n_gen, o, out, stats);
}

int mkc_decode_span(mkc_session *s, const mkc_graph *g, const int *prompt, int n_prompt,
                    int n_cached, int n_gen, const mkc_decode_opts *o, int *out,
                    mkc_decode_stats *stats) {
  memset(stats, 0, sizeof *stats);
  int draft_max = o->draft_max;
  double t0 = mkc_seconds();
  if (n_prompt < 1) {
    fprintf(stderr, "mkc: error: the prompt is empty: at least one token is needed\n");
    return -1;
  }
  if (n_prompt > g->max_ctx) {
    fprintf(stderr,
            "mkc: error: the prompt has %d tokens but the context holds %d (use a larger --ctx)\n",
            n_prompt, g->max_ctx);
    return -1;
  }
  /* The cache keeps what it holds of the prompt, less at least its last
   * token, whose logits choose the first generated one. */
  int keep = n_cached < n_prompt - 1 ? n_cached : n_prompt - 1;
  if (keep < 0) keep = 0;
  /* A sliding window whose ring no longer holds the rows before keep: start over. */
  if (keep < mkc_session_pos(s) && !mkc_session_can_rewind(s, keep)) keep = 0;
  if (keep < mkc_session_pos(s) && mkc_session_rewind(s, keep) != 0) return -1;
  stats->fed = n_prompt - mkc_session_pos(s);
  int cap = n_prompt + (n_gen > 0 ? n_gen : 0);
  int *hist = malloc((size_t)cap * sizeof *hist);
  if (!hist) {
    fprintf(stderr, "mkc: error: out of memory\n");
    return -1;
  }
  memcpy(hist, prompt, (size_t)n_prompt * sizeof *hist);
  int n_hist = n_prompt, in[MKC_CHUNK_CAP], rc = 0;
  mkc_step_result r;
  if (draft_max > g->t_max - 1) draft_max = g->t_max - 1;
  mkc_decode_opts plain;
  if (o->constraint) { /* chosen on the host, drafts verified there too: no rounds */
    plain = *o;
    plain.rounds = plain.draft_layers = 0;
    o = &plain;
  }
  mkc_depth depth;
  mkc_depth_init(&depth, o->draft_min < draft_max ? o->draft_min : draft_max, draft_max);
  mkc_gate gate;
  mkc_gate_init(&gate);
  mkc_drafter *lookup = o->drafter ? NULL : mkc_drafter_lookup();
  mkc_drafter *drafter = o->drafter ? o->drafter : lookup;
  if (!drafter) {
    free(hist);
    return -1;
  }
  if (mkc_decode_rounds_check(s, o) != 0) {
    mkc_drafter_close(lookup);
    free(hist);
    return -1;
  }
  long steps0 = drafter->steps;
  stats->draft_source = o->drafter            ? mkc_drafter_name(o->drafter)
                        : o->draft_layers > 0 ? "self-speculation in the kernel"
                                              : "prompt lookup";

  /* The prompt: every input of a chunk is known, up to the kernel's prompt
   * chunk (t_chunk; past t_max it runs tiled, on tensor cores, unless the
   * backend steps so short a chunk faster); the last chunk's choice is the
   * first generated token. */
  while (mkc_session_pos(s) < n_prompt) {
    if (o->interrupted && *o->interrupted) {
      stats->stopped = 1;
      goto done;
    }
    int pos = mkc_session_pos(s), T = mkc_session_prompt_inputs(s, n_prompt - pos);
    memcpy(in, prompt + pos, (size_t)T * sizeof *in);
    if (step_or_fail(s, in, T, T - 1, &r) != 0) goto fail;
    stats->steps++;
    if (pos + T == n_prompt && n_gen > 0) {
      if (!o->constraint)
        emit(s, o, 0, r.out[0], out, hist, &n_hist, stats);
      else if (emit_constrained(s, o, T - 1, -1, out, hist, &n_hist, stats) != 0)
        goto fail;
    }
  }
  stats->prompt_seconds = mkc_seconds() - t0;
  while (stats->generated < n_gen && !stats->stopped && !stats->complete) {
    if (o->interrupted && *o->interrupted) {
      stats->stopped = 1;
      break;
    }
    int pos = mkc_session_pos(s);
    /* The tokens the cache does not hold yet: the last emitted one, and before it (constrained
     * output) those the host took from drafts the kernel turned down; all but the last are fixed
     * inputs of the step. */
    int f = n_hist - 1 - pos;
    if (f < 0) { /* constrained_verdict rewinds past what the host kept */
      fprintf(stderr, "mkc: error: the cache holds %d tokens past the answer's\n", -f);
      goto fail;
    }
    if (pos + f >= g->max_ctx) {
      stats->ctx_full = 1;
      break;
    }
    int want = n_gen - stats->generated;
    /* Drafts past what is still wanted or past the cache would be wasted or refused. */
    int gated = 0, k = o->adaptive ? mkc_adaptive_next(&depth, &gate, &gated) : draft_max;
    k = min_int(min_int(k, g->t_max - 1 - f), min_int(want - 1, g->max_ctx - pos - f - 1));
    memcpy(in, hist + pos, (size_t)(f + 1) * sizeof *in);
    double t_draft = mkc_seconds();
    if (o->rounds > 1 && o->draft_layers > 0) /* the kernel drafts: k placeholders */
      memset(in + 1, 0, (size_t)k * sizeof *in);
    else if ((k = mkc_drafter_propose(drafter, hist, n_hist, k, in + 1 + f)) < 0)
      goto fail;
    t_draft = mkc_seconds() - t_draft;
    if (o->rounds > 1) {
      if (run_rounds(s, o, in, 1 + k, draft_max, n_gen, t_draft, out, hist, &n_hist, stats) != 0)
        goto fail;
      continue;
    }
    if (step_or_fail(s, in, 1 + f + k, f, &r) != 0) goto fail;
    stats->launches++;
    if (o->constraint &&
        constrained_verdict(s, o, f, in + 1 + f, k, &r, out, hist, &n_hist, n_gen, stats) != 0)
      goto fail;
    double t_target = mkc_session_step_seconds(s), t_verdict = mkc_seconds();
    if (k > 0 && mkc_drafter_accepted(drafter, r.n_accepted) != 0) goto fail;
    t_draft += mkc_seconds() - t_verdict;
    stats->steps++;
    stats->gen_steps++;
    stats->drafted += k;
    stats->accepted += r.n_accepted;
    stats->rounds += k > 0;
    stats->mismatches += r.n_accepted < k;
    stats->all_accepted += k > 0 && r.n_accepted == k;
    stats->draft_seconds += t_draft;
    stats->step_count[1 + f + k]++;
    stats->step_seconds[1 + f + k] += t_target;
    if (o->adaptive)
      mkc_adaptive_update(&depth, &gate, gated, k, r.n_accepted,
                          o->constraint ? r.n_accepted + 1 : r.n_out, t_draft, t_target);
    for (int i = 0; i < r.n_out && stats->generated < n_gen; i++)
      if (emit(s, o, i, r.out[i], out, hist, &n_hist, stats)) break;
  }
  goto done;
fail:
  rc = -1;
done:
  free(hist);
  stats->draft_steps = drafter->steps - steps0;
  stats->fallbacks = gate.fallbacks;
  mkc_decode_split_time(stats);
  mkc_drafter_close(lookup);
  stats->seconds = mkc_seconds() - t0;
  stats->depth_lo = o->adaptive ? depth.lowest : draft_max;
  stats->depth_hi = o->adaptive ? depth.highest : draft_max;
  return rc;
}
