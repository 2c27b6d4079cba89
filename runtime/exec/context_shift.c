/* Context shift (mkc_decode_opts.shift): generation past a full context.
 * llama.cpp shifts the cache in place: it drops the rows after n_keep and
 * moves the later ones back, re-rotating their keys to the new positions.
 * mkc's kernel has no pass that re-rotates keys, and the kept rows' values
 * were computed while the dropped tokens were still in view, so a shifted
 * cache would not be any decode's. Here the kept history after n_keep is fed
 * again instead: the cache keeps its first n_keep rows (the same tokens at
 * the same positions) and the rest is one prompt, tiled, per shift of about
 * half the context. What follows a shift is then exactly a fresh decode of
 * the shortened history (tested token for token). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "util/clock.h"

/* A later span's counts added to the whole's. */
static void add_span(mkc_decode_stats *t, const mkc_decode_stats *p) {
  t->steps += p->steps;
  t->launches += p->launches;
  t->gen_steps += p->gen_steps;
  t->drafted += p->drafted;
  t->accepted += p->accepted;
  t->rounds += p->rounds;
  t->mismatches += p->mismatches;
  t->all_accepted += p->all_accepted;
  t->fallbacks += p->fallbacks;
  t->draft_steps += p->draft_steps;
  t->draft_seconds += p->draft_seconds;
  t->shift_fed += p->fed;
  t->shift_steps += p->steps - p->gen_steps;
  if (p->depth_lo < t->depth_lo) t->depth_lo = p->depth_lo;
  if (p->depth_hi > t->depth_hi) t->depth_hi = p->depth_hi;
  for (int T = 0; T <= MKC_T_CAP; T++) {
    t->step_count[T] += p->step_count[T];
    t->step_seconds[T] += p->step_seconds[T];
  }
}

int mkc_shift_discard(int cached, int n_keep, int n_discard, int *keep) {
  *keep = n_keep < 0 ? 0 : n_keep;
  if (*keep > cached - 2) *keep = cached - 2; /* at least one token dropped */
  if (*keep < 0) return 0;
  int left = cached - *keep, discard = n_discard > 0 ? n_discard : left / 2;
  return discard < left - 1 ? discard : left - 1; /* llama-server's clamp */
}

int mkc_shift_keep(int keep, int bos, const int *prompt, int n_prompt) {
  if (keep < 0 || keep > n_prompt) return n_prompt;
  return keep + (bos >= 0 && n_prompt > 0 && prompt[0] == bos);
}

int mkc_decode_history(mkc_session *s, const mkc_graph *g, int *hist, int *n_hist_io, int n_cached,
                       int n_gen, const mkc_decode_opts *o, int *out, mkc_decode_stats *stats) {
  memset(stats, 0, sizeof *stats);
  int ctx = o->max_ctx > 0 && o->max_ctx < g->max_ctx ? o->max_ctx : g->max_ctx;
  double t0 = mkc_seconds();
  long want = n_gen < 0 ? LONG_MAX : n_gen, done = 0;
  int n_hist = *n_hist_io, rc = 0, spans = 0, early = 0; /* early: shifts before a span */
  for (;;) {
    /* a span generates at most until its cache is full: max_ctx + 1 - n_hist tokens */
    long room = ctx + 1 - n_hist, left = want - done;
    if (room >= 1 || !o->shift) { /* else a history past the context shifts first */
      int n = (int)(left < room ? left : room);
      mkc_decode_stats part;
      rc = mkc_decode_span(s, g, hist, n_hist, n_cached, n, o, hist + n_hist, &part);
      if (spans++ == 0) {
        *stats = part; /* the first span: the prompt's figures too */
        stats->shifts = early;
      } else {
        add_span(stats, &part);
      }
      stats->ctx_full = part.ctx_full;
      stats->stopped = part.stopped;
      stats->complete = part.complete;
      if (out) memcpy(out + done, hist + n_hist, (size_t)part.generated * sizeof *out);
      done += part.generated;
      n_hist += part.generated;
      if (rc != 0 || !o->shift || part.stopped || part.complete || done >= want) break;
      if (part.generated == 0 && !part.ctx_full) break; /* no span ends so; never loop on it */
    }
    /* The context is full: keep the first n_keep tokens and drop the older
     * half of the cached ones after them (llama.cpp's n_discard). The last
     * token, not cached yet, is the next span's last input. */
    int keep, discard = mkc_shift_discard(n_hist - 1, o->n_keep, o->n_discard, &keep);
    if (discard < 1) { /* a context of a token or two: nothing to drop */
      stats->ctx_full = 1;
      break;
    }
    memmove(hist + keep, hist + keep + discard, (size_t)(n_hist - keep - discard) * sizeof *hist);
    n_hist -= discard;
    n_cached = spans ? keep : n_cached < keep ? n_cached : keep;
    stats->shifts++, early += !spans;
    stats->ctx_full = 0;
  }
  *n_hist_io = n_hist;
  stats->generated = (int)(done < INT_MAX ? done : INT_MAX);
  mkc_decode_split_time(stats);
  stats->seconds = mkc_seconds() - t0;
  return rc;
}

int mkc_decode_more(mkc_session *s, const mkc_graph *g, const int *prompt, int n_prompt,
                    int n_cached, int n_gen, const mkc_decode_opts *o, int *out,
                    mkc_decode_stats *stats) {
  if (!o->shift) return mkc_decode_span(s, g, prompt, n_prompt, n_cached, n_gen, o, out, stats);
  memset(stats, 0, sizeof *stats);
  if (n_gen < 0 && out) {
    fprintf(stderr, "mkc: error: generation with no bound writes to no buffer (out NULL)\n");
    return -1;
  }
  int ctx = o->max_ctx > 0 && o->max_ctx < g->max_ctx ? o->max_ctx : g->max_ctx;
  if (n_prompt < 1 || n_prompt > ctx) { /* the span says why, or the caller's context */
    if (n_prompt > ctx && ctx < g->max_ctx) {
      fprintf(stderr, "mkc: error: a prompt of %d tokens for a context of %d\n", n_prompt, ctx);
      return -1;
    }
    return mkc_decode_span(s, g, prompt, n_prompt, n_cached, n_gen, o, out, stats);
  }
  /* The history, and each span's tokens right after it */
  int *hist = malloc(((size_t)g->max_ctx + 2) * sizeof *hist);
  if (!hist) {
    fprintf(stderr, "mkc: error: out of memory\n");
    return -1;
  }
  memcpy(hist, prompt, (size_t)n_prompt * sizeof *hist);
  int n_hist = n_prompt;
  int rc = mkc_decode_history(s, g, hist, &n_hist, n_cached, n_gen, o, out, stats);
  free(hist);
  return rc;
}
