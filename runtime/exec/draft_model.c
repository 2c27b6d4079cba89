/* Drafts from a model's own greedy steps: self-speculation (the target's
 * first layers as a kernel of their own) or a draft model file. The draft
 * runs on its own session, KV cache and position counter. Before drafting
 * it catches up with the history: the cache keeps the longest prefix it
 * shares with the history (a rewind forgets the rest) and the remaining
 * tokens go in as known tokens, in steps of up to t_max, the last of which
 * gives the first draft; each further draft is one step of one token. After
 * the target's verdict the cache is rolled back to exactly the tokens the
 * target kept, so both caches hold the same tokens after every round. */
#include "draft.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct model_drafter {
  mkc_drafter base;
  mkc_session *s; /* the draft's session: pos = tokens whose K/V its cache holds */
  const mkc_graph *g;
  int *held;             /* [g->max_ctx]: the token at each position of the draft's cache */
  int n_hist;            /* the history length of the last proposal */
  float p_min;           /* > 0: a choice less likely than it among the top 10 ends a draft */
  int n_drafted;         /* the tokens it proposed */
  int drafts[MKC_T_CAP]; /* ... and which */
} model_drafter;

/* One step of T inputs, all but the drafts known: feeds in[0..T-1] at the
 * cache's end; *next is the draft's choice after them. 0; 1 when the
 * session refused the step (nothing moved: no more drafts now); -1 when
 * the backend failed. */
static int feed(model_drafter *m, const int *in, int T, int *next) {
  mkc_step_result r;
  int pos = mkc_session_pos(m->s);
  if (mkc_session_step(m->s, in, T, T - 1, &r) != 0) return -1;
  m->base.steps++;
  if (r.status != MKC_STATUS_OK) return 1;
  memcpy(m->held + pos, in, (size_t)T * sizeof *in);
  *next = r.out[0];
  return 0;
}

/* The cache made to hold hist[0..n-2] then hist[n-1] fed: *next is the
 * draft's choice after the history. Same returns as feed. */
static int catch_up(model_drafter *m, const int *hist, int n, int *next) {
  int pos = mkc_session_pos(m->s), same = 0;
  while (same < pos && same < n - 1 && m->held[same] == hist[same]) same++;
  if (same < pos && mkc_session_rewind(m->s, same) != 0) return -1;
  int rc = 0;
  for (pos = same; rc == 0 && pos < n; pos = mkc_session_pos(m->s)) {
    int T = n - pos < m->g->t_max ? n - pos : m->g->t_max;
    rc = feed(m, hist + pos, T, next);
  }
  return rc;
}

int mkc_draft_confident(float p_min, float lp, const int *ids, const float *lps) {
  if (p_min <= 0) return 1;
  double sum = 0;
  for (int i = 0; i < MKC_DRAFT_P_MIN_TOP; i++)
    if (ids[i] >= 0) sum += exp((double)lps[i]);
  return sum > 0 && exp((double)lp) / sum >= p_min;
}

/* Whether the last step's choice is likely enough (mkc_draft_confident, the log-probabilities
 * from the kernel). */
static int confident(model_drafter *m) {
  if (m->p_min <= 0) return 1;
  float lp, lps[MKC_DRAFT_P_MIN_TOP];
  int ids[MKC_DRAFT_P_MIN_TOP];
  return mkc_session_logprobs(m->s, 0, &lp, ids, lps) == 0 &&
         mkc_draft_confident(m->p_min, lp, ids, lps);
}

static int model_propose(mkc_drafter *d, const int *hist, int n, int k, int *out) {
  model_drafter *m = (model_drafter *)d;
  m->n_hist = n;
  m->n_drafted = 0;
  if (n < 1) return 0;
  if (k > MKC_T_CAP - 1) k = MKC_T_CAP - 1; /* no kernel step verifies more */
  int rc = catch_up(m, hist, n, &out[0]);
  if (rc < 0) return -1;
  int got = rc == 0 && confident(m);
  /* The draft's own choices, one step each; the last is proposed, not fed. */
  while (got > 0 && got < k && (rc = feed(m, &out[got - 1], 1, &out[got])) == 0 && confident(m))
    got++;
  if (rc < 0) return -1;
  m->n_drafted = got;
  memcpy(m->drafts, out, (size_t)got * sizeof *out);
  return got;
}

/* The cache held the history and drafts 1..n_drafted-1; the target kept
 * n_accepted of them and now holds n_hist + n_accepted tokens. Fewer kept:
 * the rest are forgotten. All kept: the last draft, never fed, goes in now. */
static int model_accepted(mkc_drafter *d, int n_accepted) {
  model_drafter *m = (model_drafter *)d;
  int want = m->n_hist + n_accepted, pos = mkc_session_pos(m->s);
  if (m->n_drafted == 0) return 0;
  m->n_drafted = 0;
  if (want < pos) return mkc_session_rewind(m->s, want);
  if (want == pos + 1 && pos >= m->n_hist) {
    int next;
    return feed(m, &m->drafts[pos - m->n_hist], 1, &next) < 0 ? -1 : 0;
  }
  return 0;
}

static mkc_session *model_session(mkc_drafter *d) { return ((model_drafter *)d)->s; }

static void model_close(mkc_drafter *d) {
  model_drafter *m = (model_drafter *)d;
  mkc_session_close(m->s);
  free(m->held);
  free(m);
}

static const mkc_drafter_ops MODEL = {.propose = model_propose,
                                      .accepted = model_accepted,
                                      .session = model_session,
                                      .close = model_close};

int mkc_drafter_model_p_min(mkc_drafter *d, float p_min) {
  if (!d || d->ops != &MODEL || !(p_min > 0 && p_min <= 1)) {
    fprintf(stderr,
            "mkc: error: --draft-p-min %g: a floor in (0, 1] on the confidence of a draft "
            "model's or self-speculation's choices (other draft sources have none)\n",
            p_min);
    return -1;
  }
  model_drafter *m = (model_drafter *)d;
  /* the draft's greedy steps (a model drafter's session samples nothing), with the top 10 */
  mkc_sampling o = {.top_p = 1.0f, .repeat_penalty = 1.0f, .logprobs = MKC_DRAFT_P_MIN_TOP};
  if (mkc_session_set_sampling(m->s, &o) != 0) return -1;
  m->p_min = p_min;
  return 0;
}

mkc_drafter *mkc_drafter_model(mkc_session *s, const mkc_graph *g, const char *name) {
  model_drafter *m = calloc(1, sizeof *m);
  int *held = malloc((size_t)g->max_ctx * sizeof *held);
  if (!m || !held) {
    fprintf(stderr, "mkc: error: out of memory opening the drafter (%s)\n", name);
    free(m);
    free(held);
    mkc_session_close(s);
    return NULL;
  }
  m->base.ops = &MODEL;
  snprintf(m->base.name, sizeof m->base.name, "%s", name);
  m->s = s;
  m->g = g;
  m->held = held;
  return &m->base;
}
