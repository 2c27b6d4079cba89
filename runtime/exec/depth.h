/* The draft depth chosen by measurement (issue 15): how many drafts the next
 * step offers, following the acceptance rate as zerfoo's speculative
 * generator does: one more when more than 80 % of a window of drafts was
 * accepted, one fewer below 40 %, within [min, max]. It starts at one draft
 * (or min): a verify step of many inputs can cost twice a plain step (an
 * H100 at 4096 cached positions: 5 inputs, 2.27 x), so the first rounds,
 * which may all be rejected, are the cheapest ones; the window raises it.
 * At 0 drafts nothing is measured, so every PROBE_STEPS steps one draft is
 * tried again. */
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

/* Starts at 1 draft, within [min, max]. */
void mkc_depth_init(mkc_depth *d, int min, int max);

/* The depth for the next step. */
int mkc_depth_next(mkc_depth *d);

/* After a step that offered `drafted` drafts and had `accepted` accepted. */
void mkc_depth_update(mkc_depth *d, int drafted, int accepted);

/* Whether speculation pays, by measured cost (issue 15). A round with
 * drafts costs its drafting and a target step of 1 + k inputs, and yields
 * 1 + accepted tokens; a plain round costs a one-input target step, t1, and
 * yields one token. The rule: over a window of MKC_GATE_WINDOW rounds with
 * drafts, speculation pays when their tokens per second beat 1 / t1; t1 is
 * a running mean of the one-input steps of this run (the newest weighs 1/4,
 * so it follows the cost's growth with the position). When it does not
 * pay, the next MKC_GATE_PLAIN rounds decode plainly (measuring t1 again),
 * then speculation gets another window; each window in a row that does not
 * pay doubles the plain rounds after it, up to MKC_GATE_PLAIN <<
 * MKC_GATE_BACKOFF, so text where drafts never pay costs a few short
 * windows (issue 15: the controller within 3 % of plain decoding). A window
 * judged before any one-input step was measured first runs one plain round
 * to measure it. */
#define MKC_GATE_WINDOW 4  /* rounds with drafts judged together */
#define MKC_GATE_PLAIN 32  /* plain rounds after speculation did not pay */
#define MKC_GATE_BACKOFF 3 /* at most 32 << 3 = 256 of them */

typedef struct mkc_gate {
  double t1;      /* seconds of a one-input target step (running mean); 0: not measured */
  int rounds;     /* rounds with drafts in the window */
  int tokens;     /* the tokens they yielded */
  double seconds; /* what they cost: drafting and target steps */
  int plain_left; /* rounds still to decode plainly */
  int fallbacks;  /* times speculation was judged not to pay */
  int streak;     /* windows in a row that did not pay */
} mkc_gate;

void mkc_gate_init(mkc_gate *g);

/* 1: the next round may draft; 0: it decodes plainly. */
int mkc_gate_open(mkc_gate *g);

/* After a round: `drafted` drafts (0: a plain step of one input), `tokens`
 * yielded (1 + accepted), and the seconds spent drafting and in the target's
 * step. */
void mkc_gate_update(mkc_gate *g, int drafted, int tokens, double draft_s, double target_s);

/* The adaptive controller's round, as exec/decode.c runs it: the depth the
 * next round may offer (0: plain; *gated: the gate chose plain) ... */
int mkc_adaptive_next(mkc_depth *d, mkc_gate *g, int *gated);

/* ... and what came of it: `drafted` offered (after the drafter and the
 * budget cut them), `accepted`, `tokens` yielded, the seconds drafting and
 * in the target's step. */
void mkc_adaptive_update(mkc_depth *d, mkc_gate *g, int gated, int drafted, int accepted,
                         int tokens, double draft_s, double target_s);

#endif
