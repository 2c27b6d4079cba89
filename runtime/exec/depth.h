/* The draft depth chosen by measurement (issue 15): how many drafts the next
 * step offers, following the acceptance rate as zerfoo's speculative
 * generator does: one more when more than 80 % of a window of drafts was
 * accepted, one fewer below 40 %, within [min, max]. At 0 drafts nothing is
 * measured, so every PROBE_STEPS steps one draft is tried again. */
#ifndef MKC_DEPTH_H
#define MKC_DEPTH_H

#define MKC_DEPTH_WINDOW 8       /* drafts judged together */
#define MKC_DEPTH_RAISE 0.8      /* accepted share above which the depth grows */
#define MKC_DEPTH_LOWER 0.4      /* ... below which it shrinks */
#define MKC_DEPTH_PROBE_STEPS 16 /* steps at depth 0 before one draft is tried */

typedef struct mkc_depth {
  int k, min, max;
  int drafted, accepted; /* in the current window */
  int idle_steps;        /* steps run at depth 0 */
  int lowest, highest;   /* the depths used, for the stats */
} mkc_depth;

/* Starts at max (speculation is cheap to verify; the window corrects it). */
void mkc_depth_init(mkc_depth *d, int min, int max);

/* The depth for the next step. */
int mkc_depth_next(mkc_depth *d);

/* After a step that offered `drafted` drafts and had `accepted` accepted. */
void mkc_depth_update(mkc_depth *d, int drafted, int accepted);

#endif
