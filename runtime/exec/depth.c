/* See depth.h. */
#include "depth.h"

static void used(mkc_depth *d, int k) {
  if (k < d->lowest) d->lowest = k;
  if (k > d->highest) d->highest = k;
}

void mkc_depth_init(mkc_depth *d, int min, int max) {
  if (min < 0) min = 0;
  if (max < min) max = min;
  *d = (mkc_depth){.k = max, .min = min, .max = max, .lowest = max, .highest = max};
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
