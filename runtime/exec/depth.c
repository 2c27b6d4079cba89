/* See depth.h. */
#include "depth.h"

static void used(mkc_depth *d, int k) {
  if (k < d->lowest) d->lowest = k;
  if (k > d->highest) d->highest = k;
}

void mkc_depth_init(mkc_depth *d, int min, int max) {
  if (min < 0) min = 0;
  if (max < min) max = min;
  int k = min > 1 ? min : max < 1 ? max : 1;
  *d = (mkc_depth){.k = k, .min = min, .max = max, .lowest = k, .highest = k};
}

int mkc_depth_next(mkc_depth *d) {
  if (d->k == 0 && d->max > 0 && d->idle_steps >= MKC_DEPTH_PROBE_STEPS) {
    d->idle_steps = 0;
    used(d, 1);
    return 1; /* a probe: its result may raise the depth again */
  }
  used(d, d->k);
  return d->k;
}

void mkc_depth_update(mkc_depth *d, int drafted, int accepted) {
  if (drafted == 0) {
    if (d->k == 0) d->idle_steps++;
    return;
  }
  d->drafted += drafted;
  d->accepted += accepted;
  if (d->drafted < MKC_DEPTH_WINDOW && d->k > 0) return;
  double rate = (double)d->accepted / d->drafted;
  if (rate > MKC_DEPTH_RAISE && d->k < d->max)
    d->k++;
  else if (rate < MKC_DEPTH_LOWER && d->k > d->min)
    d->k--;
  d->drafted = d->accepted = 0;
}

void mkc_gate_init(mkc_gate *g) { *g = (mkc_gate){0}; }

int mkc_gate_open(mkc_gate *g) {
  if (g->plain_left == 0) return 1;
  g->plain_left--;
  return 0;
}

/* The window against t1: plain rounds next when speculation's tokens per
 * second fall short of a plain step's. */
static void judge(mkc_gate *g) {
  if (g->tokens * g->t1 < g->seconds) {
    g->plain_left = MKC_GATE_PLAIN << (g->streak < MKC_GATE_BACKOFF ? g->streak : MKC_GATE_BACKOFF);
    g->streak++;
    g->fallbacks++;
  } else {
    g->streak = 0;
  }
  g->rounds = g->tokens = 0;
  g->seconds = 0;
}

void mkc_gate_update(mkc_gate *g, int drafted, int tokens, double draft_s, double target_s) {
  if (drafted == 0) {
    g->t1 = g->t1 > 0 ? 0.75 * g->t1 + 0.25 * target_s : target_s;
    if (g->rounds >= MKC_GATE_WINDOW) judge(g); /* the window waited for this measurement */
    return;
  }
  g->rounds++;
  g->tokens += tokens;
  g->seconds += draft_s + target_s;
  if (g->rounds < MKC_GATE_WINDOW) return;
  if (g->t1 > 0)
    judge(g);
  else
    g->plain_left = 1; /* measure a plain step, then judge */
}

int mkc_adaptive_next(mkc_depth *d, mkc_gate *g, int *gated) {
  *gated = !mkc_gate_open(g);
  return *gated ? 0 : mkc_depth_next(d);
}

void mkc_adaptive_update(mkc_depth *d, mkc_gate *g, int gated, int drafted, int accepted,
                         int tokens, double draft_s, double target_s) {
  if (!gated) mkc_depth_update(d, drafted, accepted);
  mkc_gate_update(g, drafted, tokens, draft_s, target_s);
}
