/* Drafts for a slot scheduler from a draft pool (draft_slots.h). */
#include "draft_slots.h"

#include <stdio.h>
#include <stdlib.h>

#include "exec/draft.h"

struct mkc_slot_drafter {
  mkc_slots *p;
  const mkc_graph *g;
  int slots, share; /* the pool's slots, and a slot's inputs in a step they all take part in */
  float p_min;      /* > 0: a choice less likely than it among the top 10 ends a slot's draft */
  long steps;
  char name[256];
};

mkc_slot_drafter *mkc_slot_drafter_open(mkc_slots *pool, const char *name) {
  const mkc_graph *g = mkc_slots_graph(pool);
  const char *no = g->kv_pages > 0 ? "its slots share a pool of KV pages (whole caches rewind)"
                   : g->t_max < 2  ? "its steps take one input a slot"
                                   : NULL;
  for (int i = 0; !no && i < g->n_nodes; i++)
    if (g->nodes[i].op == MKC_OP_RECURRENT)
      no = "it has recurrent layers, whose state a rejected draft cannot be rewound in";
  mkc_slot_drafter *d = no ? NULL : calloc(1, sizeof *d);
  if (!d) {
    if (no)
      fprintf(stderr, "mkc: error: %s cannot draft for the slots: %s\n", name, no);
    else
      fprintf(stderr, "mkc: error: out of memory opening the drafter (%s)\n", name);
    mkc_slots_close(pool);
    return NULL;
  }
  d->p = pool;
  d->g = g;
  d->slots = g->slots;
  d->share = g->step_rows / g->slots < g->t_max ? g->step_rows / g->slots : g->t_max;
  if (d->share < 1) d->share = 1;
  snprintf(d->name, sizeof d->name, "%s", name);
  return d;
}

void mkc_slot_drafter_close(mkc_slot_drafter *d) {
  if (!d) return;
  mkc_slots_close(d->p);
  free(d);
}

const char *mkc_slot_drafter_name(const mkc_slot_drafter *d) { return d->name; }

int mkc_slot_drafter_p_min(mkc_slot_drafter *d, float p_min) {
  if (!(p_min > 0 && p_min <= 1)) {
    fprintf(stderr, "mkc: error: --draft-p-min must be in (0, 1], got %g\n", p_min);
    return -1;
  }
  /* each draft slot's kernel computes its choice's log-probability and the top 10's */
  mkc_sampling o = {.top_p = 1, .repeat_penalty = 1, .logprobs = MKC_DRAFT_P_MIN_TOP};
  for (int s = 0; s < d->slots; s++)
    if (mkc_slots_set_sampling(d->p, s, &o) != 0) return -1;
  d->p_min = p_min;
  return 0;
}

/* Whether slot s's last choice is likely enough (mkc_draft_confident, a session drafter's rule). */
static int confident(mkc_slot_drafter *d, int s) {
  if (d->p_min <= 0) return 1;
  float lp, lps[MKC_DRAFT_P_MIN_TOP];
  int ids[MKC_DRAFT_P_MIN_TOP];
  return mkc_slots_logprobs(d->p, s, 0, &lp, ids, lps) == 0 &&
         mkc_draft_confident(d->p_min, lp, ids, lps);
}

long mkc_slot_drafter_steps(const mkc_slot_drafter *d) { return d->steps; }

/* Slot s's cache made to hold no more than what it shares with hist[0..n-1): the rest is
 * forgotten, by a rewind within a step's inputs (a window's ring keeps those rows), else by
 * clearing the slot. */
static int keep_shared(mkc_slot_drafter *d, int s, const int *hist, int n) {
  int pos = mkc_slots_pos(d->p, s), same = 0;
  const int *held = mkc_slots_tokens(d->p, s); /* what the slot's cache holds */
  while (same < pos && same < n - 1 && held[same] == hist[same]) same++;
  if (same == pos) return 0;
  return pos - same < d->g->t_max ? mkc_slots_rewind(d->p, s, same) : mkc_slots_clear(d->p, s);
}

/* One step of the pool: slot s takes in[s][0..n[s]) (n 0: it sits out), all known; ok[s]: its
 * step was taken and its choice after its last input, choice[s], is likely enough to propose
 * (--draft-p-min). 0, or -1 after a message. */
static int step(mkc_slot_drafter *d, const int *const *in, const int *n, int *ok, int *choice) {
  for (int s = 0; s < d->slots; s++)
    if (mkc_slots_set_inputs(d->p, s, in[s], n[s], n[s] > 0 ? n[s] - 1 : 0) != 0) return -1;
  if (mkc_slots_step(d->p) != 0) return -1;
  d->steps++;
  for (int s = 0; s < d->slots; s++) {
    mkc_step_result r;
    ok[s] = 0;
    if (n[s] == 0 || !mkc_slots_result(d->p, s, &r) || r.status != MKC_STATUS_OK || r.n_out < 1)
      continue;
    ok[s] = confident(d, s);
    choice[s] = r.out[0];
  }
  return 0;
}

int mkc_slot_drafter_propose(mkc_slot_drafter *d, mkc_slot_draft *req, int n_req) {
  int slots = n_req < d->slots ? n_req : d->slots, cap = d->g->t_max - 1;
  if (cap > MKC_T_CAP - 1) cap = MKC_T_CAP - 1;
  int n[MKC_SLOTS_CAP] = {0}, ok[MKC_SLOTS_CAP], choice[MKC_SLOTS_CAP];
  const int *in[MKC_SLOTS_CAP] = {0};
  for (int s = 0; s < n_req; s++) {
    req[s].got = 0;
    if (s >= slots || req[s].n < 1) req[s].want = 0;
    if (req[s].want > cap) req[s].want = cap;
    if (req[s].want > 0 && keep_shared(d, s, req[s].hist, req[s].n) != 0) return -1;
  }
  /* a history past a slot's share of a step goes in first with its slot alone, in chunks; the
   * chunk that ends it gives the first draft */
  for (int s = 0; s < slots; s++) {
    mkc_slot_draft *q = &req[s];
    while (q->want > 0 && q->got == 0 && q->n - mkc_slots_pos(d->p, s) > d->share) {
      int pos = mkc_slots_pos(d->p, s), left = q->n - pos;
      n[s] = mkc_slots_prompt_inputs(d->p, left);
      in[s] = q->hist + pos;
      int rc = step(d, in, n, ok, choice);
      n[s] = 0;
      if (rc != 0) return -1;
      if (!ok[s])
        q->want = 0; /* refused, or not likely enough: no drafts for it now */
      else if (mkc_slots_pos(d->p, s) == q->n)
        q->drafts[q->got++] = choice[s];
    }
  }
  /* then every slot together: the rest of its history (the choice after it the first draft),
   * then one step a draft, the last one proposed without being fed */
  for (;;) {
    int any = 0;
    for (int s = 0; s < slots; s++) {
      mkc_slot_draft *q = &req[s];
      n[s] = 0;
      if (q->want <= 0 || q->got >= q->want) continue;
      if (q->got == 0) {
        int pos = mkc_slots_pos(d->p, s);
        if (q->n - pos < 1) { /* nothing left to feed: keep_shared leaves one at least */
          q->want = 0;
          continue;
        }
        n[s] = q->n - pos;
        in[s] = q->hist + pos;
      } else {
        n[s] = 1;
        in[s] = &q->drafts[q->got - 1];
      }
      any = 1;
    }
    if (!any) return 0;
    if (step(d, in, n, ok, choice) != 0) return -1;
    for (int s = 0; s < slots; s++) {
      if (n[s] == 0) continue;
      if (ok[s])
        req[s].drafts[req[s].got++] = choice[s];
      else
        req[s].want = req[s].got; /* refused, or not likely enough: the drafts so far */
    }
  }
}
