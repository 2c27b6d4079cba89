/* Constrained output (constrain.h). The tokens are kept sorted by their
 * text, so finding every token that may come next walks the vocabulary as a
 * trie: a token's bytes are read on from the state its common prefix with
 * the token before it reached, and a byte the JSON refuses rules out every
 * token after it that shares that prefix. */
#include "constrain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_chain.h"
#include "sampler_ref.h"
#include "util/gbnf.h"
#include "util/json_accept.h"
#include "util/json_schema.h"
#include "util/rng.h"

/* A candidate: a token (i) and its penalized logit (l), in the oracle's order
 * (sample_chain.h's). */
typedef mkc_cand cand;

/* The vocabulary sorted, and the scratch of a step: one per model, shared by its documents
 * (mkc_constraint_share; the host chooses for one document at a time). */
typedef struct vocab {
  int n;          /* tokens */
  char *bytes;    /* their texts back to back */
  uint32_t *off;  /* [n + 1] */
  uint8_t *plain; /* [n] 1: a token the answer's text may hold */
  int n_sorted;   /* the plain tokens with text, in the order of their texts */
  int *order;     /* [n_sorted] their ids */
  uint32_t *lcp;  /* [n_sorted] bytes in common with the token before in that order */
  /* Inside a string most tokens are its text whatever came before (`inner`: taken inside a
   * string and leaving no escape or character under way); those are allowed there without a
   * walk, and only the others are walked (in the same order) */
  uint8_t *inner; /* [n] */
  int n_rest;
  int *rest_order; /* [n_rest] */
  uint32_t *rest_lcp;
  mkc_json_acc *states; /* [longest + 1]: the states along the walk's current token */
  /* per step, sized to the logits */
  int cap;
  uint8_t *allowed;
  int *ids, *index; /* the allowed ids ascending; an id's place among them (-1: none) */
  cand *cands;      /* the allowed tokens, then those the chain can keep */
  float *kept;      /* their logits */
  double *pen, *probs;
} vocab;

#define MASKS_KEPT 8

struct mkc_constraint {
  vocab *v;
  int owns;         /* the first, opened over the vocabulary: frees it */
  mkc_json_acc now; /* after the answer so far */
  uint64_t rng;     /* the draws' state */
  /* a grammar's document (else JSON): its reading (level 0: the answer so far), the tokens
   * that end the answer where the grammar may, and whether one did */
  mkc_gbnf_run *run;
  int end_ids[MKC_GRAMMAR_ENDS], n_end, ended;
  /* the masks of the grammar's last states: a state met again (inside a string, every letter
   * leads back to it) has the same tokens allowed */
  struct kept_mask {
    unsigned long long state;
    uint8_t *allowed; /* NULL: free */
    int n, count;
    unsigned used; /* when last used, for the one to drop */
  } masks[MASKS_KEPT];
  unsigned clock;
  int free_doc; /* every token of the vocabulary allowed, never whole */
  /* samplers the kernel lacks (sample_chain.h), and mirostat's state: mu now, and mu_next
   * after token chose, the last choice (-1: none) */
  mkc_sampling_more more;
  int more_on, chose;
  double mu, mu_next;
};

/* The messages' name for what chooses: a format's constraint, or the host's samplers alone. */
static const char *chooser(const mkc_constraint *c) {
  return c->free_doc ? "sampling on the host" : "constrained output";
}

static void no_memory(void) { fputs("mkc: error: constrained output: out of memory\n", stderr); }

static int overflowed(void) {
  fprintf(stderr,
          "mkc: error: constrained output: the grammar reads the answer in over %d ways at once, "
          "or enters rules over %d deep before a character (or memory ran out)\n",
          MKC_GBNF_STACKS_MAX, MKC_GBNF_DEPTH_MAX);
  return -1;
}

static void forget_masks(mkc_constraint *c) {
  for (int i = 0; i < MASKS_KEPT; i++) {
    free(c->masks[i].allowed);
    c->masks[i] = (struct kept_mask){0};
  }
}

typedef struct text_ref {
  const char *p;
  uint32_t n;
  int id;
} text_ref;

/* The bytes two texts begin with alike. */
static uint32_t common(const text_ref *x, const text_ref *y) {
  uint32_t l = 0;
  while (l < x->n && l < y->n && x->p[l] == y->p[l]) l++;
  return l;
}

static int by_text(const void *a, const void *b) {
  const text_ref *x = a, *y = b;
  int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
  if (c) return c;
  return x->n != y->n ? (x->n < y->n ? -1 : 1) : (x->id > y->id) - (x->id < y->id);
}

mkc_constraint *mkc_constraint_open(const mkc_vocab_text *t) {
  mkc_constraint *c = calloc(1, sizeof *c);
  vocab *v = c ? c->v = calloc(1, sizeof *v) : NULL;
  size_t total = t->n > 0 ? t->off[t->n] : 0;
  text_ref *refs = malloc(((size_t)t->n + 1) * sizeof *refs);
  if (c) c->owns = 1;
  if (!v || !refs || !(v->bytes = malloc(total + 1)) ||
      !(v->off = malloc(((size_t)t->n + 1) * sizeof *v->off)) ||
      !(v->plain = calloc((size_t)t->n + 1, 1)) ||
      !(v->order = malloc(((size_t)t->n + 1) * sizeof *v->order)) ||
      !(v->lcp = malloc(((size_t)t->n + 1) * sizeof *v->lcp)) ||
      !(v->inner = calloc((size_t)t->n + 1, 1)) ||
      !(v->rest_order = malloc(((size_t)t->n + 1) * sizeof *v->rest_order)) ||
      !(v->rest_lcp = malloc(((size_t)t->n + 1) * sizeof *v->rest_lcp))) {
    no_memory();
    free(refs);
    mkc_constraint_close(c);
    return NULL;
  }
  v->n = t->n;
  memcpy(v->bytes, t->bytes, total);
  memcpy(v->off, t->off, ((size_t)t->n + 1) * sizeof *v->off);
  uint32_t longest = 0;
  for (int i = 0; i < t->n; i++) {
    uint32_t n = t->off[i + 1] - t->off[i];
    if (n == 0 || (t->plain && !t->plain[i])) continue;
    refs[v->n_sorted++] = (text_ref){v->bytes + v->off[i], n, i};
    v->plain[i] = 1;
    if (n > longest) longest = n;
  }
  qsort(refs, (size_t)v->n_sorted, sizeof *refs, by_text);
  mkc_json_acc in_string;
  mkc_json_acc_init(&in_string, 0);
  mkc_json_acc_byte(&in_string, '"');
  for (int k = 0, last = -1; k < v->n_sorted; k++) {
    v->order[k] = refs[k].id;
    v->lcp[k] = k > 0 ? common(&refs[k], &refs[k - 1]) : 0;
    /* a string's text (a quote would end the string: then not in one) */
    mkc_json_acc a = in_string;
    if (mkc_json_acc_text(&a, refs[k].p, refs[k].n) == 0 && mkc_json_acc_in_string(&a)) {
      v->inner[refs[k].id] = 1;
      continue;
    }
    v->rest_order[v->n_rest] = refs[k].id;
    v->rest_lcp[v->n_rest++] = last >= 0 ? common(&refs[k], &refs[last]) : 0;
    last = k;
  }
  free(refs);
  if (!(v->states = malloc(((size_t)longest + 1) * sizeof *v->states))) {
    no_memory();
    mkc_constraint_close(c);
    return NULL;
  }
  mkc_constraint_start(c, 1, 0);
  return c;
}

mkc_constraint *mkc_constraint_share(mkc_constraint *base) {
  mkc_constraint *c = malloc(sizeof *c);
  if (!c) {
    no_memory();
    return NULL;
  }
  *c = (mkc_constraint){.v = base->v};
  mkc_constraint_start(c, 1, 0);
  return c;
}

void mkc_constraint_close(mkc_constraint *c) {
  if (!c) return;
  vocab *v = c->owns ? c->v : NULL;
  if (v) {
    free(v->bytes), free(v->off), free(v->plain), free(v->order), free(v->lcp), free(v->inner);
    free(v->rest_order), free(v->rest_lcp), free(v->states);
    free(v->allowed), free(v->ids), free(v->index), free(v->kept), free(v->pen), free(v->probs);
    free(v->cands);
    free(v);
  }
  mkc_gbnf_run_close(c->run);
  forget_masks(c);
  free(c);
}

void mkc_constraint_start(mkc_constraint *c, int object_only, uint64_t seed) {
  mkc_json_acc_init(&c->now, object_only);
  c->rng = seed;
  c->free_doc = c->more_on = 0;
  c->chose = -1;
  mkc_gbnf_run_close(c->run);
  c->run = NULL;
  forget_masks(c);
}

void mkc_constraint_start_schema(mkc_constraint *c, const mkc_schema *schema, uint64_t seed) {
  mkc_constraint_start(c, 0, seed);
  mkc_json_acc_init_schema(&c->now, schema);
}

int mkc_constraint_start_grammar(mkc_constraint *c, const mkc_gbnf *g, const int *end_ids,
                                 int n_end, uint64_t seed) {
  mkc_constraint_start(c, 0, seed);
  if (!(c->run = mkc_gbnf_run_open(g))) return overflowed();
  c->n_end = n_end < MKC_GRAMMAR_ENDS ? n_end : MKC_GRAMMAR_ENDS;
  if (c->n_end > 0) memcpy(c->end_ids, end_ids, (size_t)c->n_end * sizeof *end_ids);
  c->ended = 0;
  return 0;
}

void mkc_constraint_start_free(mkc_constraint *c, uint64_t seed) {
  mkc_constraint_start(c, 0, seed);
  c->free_doc = 1;
}

void mkc_constraint_set_more(mkc_constraint *c, const mkc_sampling_more *m) {
  c->more = *m;
  c->more_on = mkc_sampling_more_on(m);
  c->mu = 2.0 * m->mirostat_tau;
  c->chose = -1;
}

static int is_end(const mkc_constraint *c, int id) {
  for (int i = 0; i < c->n_end; i++)
    if (c->end_ids[i] == id) return 1;
  return 0;
}

/* Level j + 1 of the walk from level j and byte b (a grammar keeps its levels itself). */
static int step(const mkc_constraint *c, uint32_t j, unsigned char b) {
  if (c->run) return mkc_gbnf_run_byte(c->run, (int)j, b);
  vocab *v = c->v;
  v->states[j + 1] = v->states[j];
  return mkc_json_acc_byte(&v->states[j + 1], b);
}

/* Token id's text read from the answer so far: the level after it, or -1
 * when the JSON or the grammar refuses it or the token is not plain text. */
static long read_token(const mkc_constraint *c, int id) {
  const vocab *v = c->v;
  if (id < 0 || id >= v->n || !v->plain[id]) return -1;
  v->states[0] = c->now;
  uint32_t n = v->off[id + 1] - v->off[id];
  for (uint32_t j = 0; j < n; j++)
    if (step(c, j, (unsigned char)v->bytes[v->off[id] + j]) != 0) return -1;
  return n;
}

int mkc_constraint_allowed(const mkc_constraint *c, int id) {
  if (c->free_doc) return id >= 0 && id < c->v->n;
  if (c->run && is_end(c, id)) return mkc_gbnf_run_can_end(c->run, 0);
  return read_token(c, id) >= 0;
}

/* The tokens of order[0..n) (sorted by text, lcp their bytes in common with
 * the one before) that may come next, marked in allowed; their count. */
static int walk(mkc_constraint *c, const int *order, const uint32_t *lcp, int n_order,
                uint8_t *allowed, int n_logits) {
  vocab *v = c->v;
  v->states[0] = c->now;
  /* states[0..have] hold the states after the previous token's first bytes;
   * refused >= 0: its byte at that index was refused */
  uint32_t have = 0;
  long refused = -1;
  int count = 0;
  for (int k = 0; k < n_order; k++) {
    uint32_t l = lcp[k];
    if (refused >= 0 && l > (uint32_t)refused) continue; /* it begins with the refused bytes */
    refused = -1;
    if (have > l) have = l;
    int id = order[k];
    const char *p = v->bytes + v->off[id];
    uint32_t n = v->off[id + 1] - v->off[id], j = have;
    for (; j < n; j++)
      if (step(c, j, (unsigned char)p[j]) != 0) break;
    have = j;
    if (j < n)
      refused = j;
    else if (id < n_logits)
      allowed[id] = 1, count++;
  }
  return count;
}

/* The grammar's mask: a kept one when its state was met lately, else walked (and kept). */
static int grammar_mask(mkc_constraint *c, uint8_t *allowed, int n_logits) {
  const vocab *v = c->v;
  unsigned long long state = mkc_gbnf_run_state(c->run, 0);
  struct kept_mask *k = &c->masks[0];
  for (int i = 0; i < MASKS_KEPT; i++) {
    struct kept_mask *m = &c->masks[i];
    if (m->allowed && m->state == state && m->n == n_logits) {
      memcpy(allowed, m->allowed, (size_t)n_logits);
      m->used = ++c->clock;
      return m->count;
    }
    if (!m->allowed || (k->allowed && m->used < k->used)) k = m; /* free, or the oldest */
  }
  int count = walk(c, v->order, v->lcp, v->n_sorted, allowed, n_logits);
  for (int i = 0; i < c->n_end && mkc_gbnf_run_can_end(c->run, 0); i++)
    if (c->end_ids[i] >= 0 && c->end_ids[i] < n_logits && !allowed[c->end_ids[i]])
      allowed[c->end_ids[i]] = 1, count++;
  if (mkc_gbnf_run_overflowed(c->run)) return count; /* cut short: not kept */
  if (k->allowed && k->n != n_logits) {
    free(k->allowed);
    k->allowed = NULL;
  }
  if (!k->allowed) k->allowed = malloc((size_t)n_logits);
  if (k->allowed) {
    memcpy(k->allowed, allowed, (size_t)n_logits);
    *k = (struct kept_mask){state, k->allowed, n_logits, count, ++c->clock};
  }
  return count;
}

int mkc_constraint_mask(mkc_constraint *c, uint8_t *allowed, int n_logits) {
  const vocab *v = c->v;
  memset(allowed, 0, (size_t)n_logits);
  if (c->free_doc) {
    int n = n_logits < v->n ? n_logits : v->n;
    memset(allowed, 1, (size_t)n);
    return n;
  }
  if (c->run) return grammar_mask(c, allowed, n_logits);
  if (!mkc_json_acc_in_string(&c->now))
    return walk(c, v->order, v->lcp, v->n_sorted, allowed, n_logits);
  int count = 0, n = n_logits < v->n ? n_logits : v->n;
  for (int i = 0; i < n; i++) count += allowed[i] = v->inner[i];
  return count + walk(c, v->rest_order, v->rest_lcp, v->n_rest, allowed, n_logits);
}

static int grow(vocab *v, int n) {
  if (n <= v->cap) return 0;
  free(v->allowed), free(v->ids), free(v->index), free(v->kept), free(v->pen), free(v->probs);
  free(v->cands);
  v->allowed = malloc((size_t)n);
  v->ids = malloc((size_t)n * sizeof *v->ids);
  v->index = malloc((size_t)n * sizeof *v->index);
  v->kept = malloc((size_t)n * sizeof *v->kept);
  v->pen = malloc((size_t)n * sizeof *v->pen);
  v->probs = malloc((size_t)n * sizeof *v->probs);
  v->cands = malloc((size_t)n * sizeof *v->cands);
  v->cap = v->allowed && v->ids && v->index && v->kept && v->pen && v->probs && v->cands ? n : 0;
  if (!v->cap) no_memory();
  return v->cap ? 0 : -1;
}

static int by_id(const void *a, const void *b) {
  const cand *x = a, *y = b;
  return (x->i > y->i) - (x->i < y->i);
}

/* Greedy without the whole mask: the few best tokens by penalized logit,
 * found in one pass and tried in order; the first the JSON takes is the
 * constrained argmax. -1 when none is (the caller then masks). */
static int greedy_first(const mkc_constraint *c, const double *pen, int n_logits) {
  enum { TRY = 8 };
  cand best[TRY];
  int n = 0;
  for (int i = 0; i < n_logits; i++) {
    cand x = {pen[i], i};
    if (n == TRY && !mkc_cand_before(&x, &best[TRY - 1])) continue;
    int k = n < TRY ? n++ : TRY - 1;
    for (; k > 0 && mkc_cand_before(&x, &best[k - 1]); k--) best[k] = best[k - 1];
    best[k] = x;
  }
  for (int k = 0; k < n; k++)
    if (best[k].l != -INFINITY && mkc_constraint_allowed(c, best[k].i)) return best[k].i;
  return -1;
}

/* The top n of lp[0..m) (ids[] their tokens, ascending) into out_ids,
 * out_lps: higher first, ties by lower id; -1 past m. */
static void top_n(const double *lp, const int *ids, int m, int n, int *out_ids, float *out_lps) {
  double best[MKC_LOGPROBS_MAX];
  int filled = 0;
  for (int k = 0; k < n; k++) out_ids[k] = -1, out_lps[k] = -INFINITY;
  for (int i = 0; i < m; i++) {
    if (filled == n && !(lp[i] > best[n - 1])) continue;
    int k = filled < n ? filled++ : n - 1;
    for (; k > 0 && lp[i] > best[k - 1]; k--) /* an equal one before has the lower id */
      best[k] = best[k - 1], out_ids[k] = out_ids[k - 1], out_lps[k] = out_lps[k - 1];
    best[k] = lp[i], out_ids[k] = ids[i], out_lps[k] = (float)lp[i];
  }
}

/* u in [0, 1): 53 random bits of the document's draws */
static double uniform(mkc_constraint *c) {
  return (double)(mkc_splitmix64(&c->rng) >> 11) * 0x1p-53;
}

/* The candidate drawn from probs[0..m) by inverse CDF at u * (1 - probs[skip]), skipping
 * candidate skip (-1: none); the last with mass when rounding left u past the sum. */
static int draw(const double *probs, int m, int skip, double u) {
  double cum = 0, target = u * (1 - (skip >= 0 ? probs[skip] : 0));
  for (int i = 0; i < m; i++)
    if (i != skip && probs[i] > 0 && target < (cum += probs[i])) return i;
  for (int i = m - 1; i >= 0; i--)
    if (i != skip && probs[i] > 0) return i;
  return skip;
}

/* The mask's count (its messages said), the tokens allowed into v->allowed; -1 when none is. */
static int allowed_tokens(mkc_constraint *c, int n_logits) {
  int m = mkc_constraint_mask(c, c->v->allowed, n_logits);
  if (c->run && mkc_gbnf_run_overflowed(c->run)) return overflowed();
  if (m == 0)
    fprintf(stderr,
            "mkc: error: constrained output: no token of the vocabulary continues the "
            "%s here\n",
            c->run ? "grammar" : "JSON");
  return m > 0 ? m : -1;
}

/* The speculative verdict on draft (-1: a plain draw) over probs[0..m) of tokens ids[]: the
 * draft with its probability, else a draw from the rest renormalized. -1 when nothing has
 * probability (every allowed token banned). */
static int verdict(mkc_constraint *c, const double *probs, const int *ids, int m, int draft) {
  if (draft < 0) return draw(probs, m, -1, uniform(c));
  int at = -1; /* the draft among the candidates (a truncation may have cut it: probability 0) */
  for (int i = 0; i < m && at < 0; i++)
    if (ids[i] == draft) at = i;
  double p = at >= 0 ? probs[at] : 0;
  return uniform(c) < p ? at : draw(probs, m, at, uniform(c));
}

/* choose() through the whole chain of sample_chain.h, every allowed token a candidate. */
static int choose_more(mkc_constraint *c, const float *logits, int n_logits, const int *window,
                       int n_window, const mkc_sampling *o, int draft, int *id, float *lp, int *ids,
                       float *lps) {
  vocab *v = c->v;
  const mkc_sampling_more *more = &c->more;
  mkc_token_texts texts = {v->n, v->bytes, v->off};
  if (more->mirostat) { /* llama.cpp's mirostat chain has no penalties, DRY's neither */
    for (int i = 0; i < n_logits; i++) v->pen[i] = logits[i];
  } else {
    mkc_sampler_ref_penalize(logits, n_logits, window, n_window, o, v->pen);
    mkc_dry_penalize(more, &texts, window, n_window, v->pen, n_logits);
  }
  int m = allowed_tokens(c, n_logits);
  if (m < 0) return -1;
  m = 0; /* compacted in place: ids ascend, so pen[m] is read before it is written */
  for (int i = 0; i < n_logits; i++)
    if (v->allowed[i]) v->ids[m] = i, v->pen[m++] = v->pen[i];
  double u_xtc = more->xtc_probability > 0 ? uniform(c) : 1;
  int pick = -1;
  if (mkc_chain_probs(o, more, v->pen, m, v->n, c->mu, u_xtc, v->probs) > 0)
    pick = verdict(c, v->probs, v->ids, m, draft);
  if (pick < 0) {
    fprintf(stderr, "mkc: error: %s: no allowed token has a probability above 0\n", chooser(c));
    return -1;
  }
  if (more->mirostat) c->mu_next = mkc_mirostat_update(more, c->mu, v->probs[pick]);
  c->chose = v->ids[pick];
  if (o->logprobs > 0) { /* log-softmax of the candidates at the temperature, no truncation */
    double temp = o->temp > 0 ? o->temp : 1, top = -INFINITY, sum = 0;
    for (int i = 0; i < m; i++) top = fmax(top, v->pen[i]);
    for (int i = 0; i < m; i++) sum += exp((v->pen[i] - top) / temp);
    for (int i = 0; i < m; i++) v->probs[i] = (v->pen[i] - top) / temp - log(sum);
    *lp = (float)v->probs[pick];
    top_n(v->probs, v->ids, m, o->logprobs, ids, lps);
  }
  *id = v->ids[pick];
  return 0;
}

/* mkc_constraint_choose, and with draft >= 0 under sampling, speculative sampling's verdict on
 * it: the draft with its probability, else a draw from the rest renormalized. */
static int choose(mkc_constraint *c, const float *logits, int n_logits, const int *window,
                  int n_window, const mkc_sampling *o_in, int draft, int *id, float *lp, int *ids,
                  float *lps) {
  vocab *v = c->v;
  if (grow(v, n_logits) != 0) return -1;
  for (int i = 0; i < n_window; i++)
    if (window[i] < 0 || window[i] >= n_logits) {
      fprintf(stderr, "mkc: error: %s: token %d is outside the vocabulary\n", chooser(c),
              window[i]);
      return -1;
    }
  mkc_sampling o = *o_in;
  if (!(o.repeat_penalty > 0)) o.repeat_penalty = 1; /* zeroed options: off */
  if (c->more_on)
    return choose_more(c, logits, n_logits, window, n_window, &o, draft, id, lp, ids, lps);
  int greedy = o.temp <= 0, whole = o.logprobs > 0; /* log-probabilities: over every allowed */
  mkc_sampler_ref_penalize(logits, n_logits, window, n_window, &o, v->pen);
  if (greedy && !whole && (*id = greedy_first(c, v->pen, n_logits)) >= 0) return 0;
  int m = allowed_tokens(c, n_logits);
  if (m < 0) return -1;
  /* the allowed tokens; without log-probabilities only those the chain can keep: the best
   * (greedy) or the top-k, found in one pass rather than the oracle's sort of them all */
  m = 0;
  for (int i = 0; i < n_logits; i++)
    if (v->allowed[i]) v->cands[m++] = (cand){v->pen[i], i};
  if (!whole && greedy) {
    int best = 0;
    for (int i = 1; i < m; i++)
      if (mkc_cand_before(&v->cands[i], &v->cands[best])) best = i;
    *id = v->cands[best].i;
    return 0;
  }
  if (!whole && o.top_k > 0 && o.top_k < m) {
    mkc_cand_first_k(v->cands, m, o.top_k);
    m = o.top_k;
    qsort(v->cands, (size_t)m, sizeof *v->cands, by_id);
  }
  /* renumbered; the window's counted span too (cut to its last repeat_last_n first, so
   * dropping the others moves nothing) */
  for (int i = 0; i < n_window; i++) v->index[window[i]] = -1;
  for (int i = 0; i < m; i++) {
    v->ids[i] = v->cands[i].i;
    v->kept[i] = logits[v->ids[i]];
    v->index[v->ids[i]] = i;
  }
  /* repeat_last_n <= MKC_HIST_CAP (mkc_sampling_check; the oracle refuses more) */
  int span = n_window < o.repeat_last_n ? n_window : o.repeat_last_n, n_span = 0;
  int spanned[MKC_HIST_CAP];
  if (span > MKC_HIST_CAP) span = MKC_HIST_CAP;
  for (int i = n_window - span; i < n_window; i++)
    if (v->index[window[i]] >= 0) spanned[n_span++] = v->index[window[i]];
  int rc = mkc_sampler_ref_probs(v->kept, m, spanned, n_span, &o, v->probs);
  int pick = rc == 0 ? verdict(c, v->probs, v->ids, m, draft) : -1;
  if (rc == 0 && o.logprobs > 0 &&
      (rc = mkc_sampler_ref_logprobs(v->kept, m, spanned, n_span, &o, v->pen)) == 0) {
    *lp = (float)v->pen[pick];
    top_n(v->pen, v->ids, m, o.logprobs, ids, lps);
  }
  if (rc != 0) return -1;
  if (pick < 0) { /* every allowed token's probability is 0 (-inf logits, a ban on each) */
    fprintf(stderr, "mkc: error: constrained output: no allowed token has a probability above 0\n");
    return -1;
  }
  *id = v->ids[pick];
  return 0;
}

int mkc_constraint_choose(mkc_constraint *c, const float *logits, int n_logits, const int *window,
                          int n_window, const mkc_sampling *o, int *id, float *lp, int *ids,
                          float *lps) {
  return choose(c, logits, n_logits, window, n_window, o, -1, id, lp, ids, lps);
}

int mkc_constraint_verify(mkc_constraint *c, const float *logits, int n_logits, const int *window,
                          int n_window, const mkc_sampling *o, int draft, int *id, float *lp,
                          int *ids, float *lps) {
  if (!logits) {
    fprintf(stderr, "mkc: error: %s: the step kept no logits\n", chooser(c));
    return -1;
  }
  if (choose(c, logits, n_logits, window, n_window, o, draft, id, lp, ids, lps) != 0) return -1;
  return mkc_constraint_accept(c, *id);
}

int mkc_constraint_next(mkc_constraint *c, const float *logits, int n_logits, const int *window,
                        int n_window, const mkc_sampling *o, int *id, float *lp, int *ids,
                        float *lps) {
  if (!logits) {
    fprintf(stderr, "mkc: error: %s: the step kept no logits\n", chooser(c));
    return -1;
  }
  if (mkc_constraint_choose(c, logits, n_logits, window, n_window, o, id, lp, ids, lps) != 0)
    return -1;
  return mkc_constraint_accept(c, *id);
}

int mkc_constraint_accept(mkc_constraint *c, int id) {
  if (c->chose >= 0 && c->chose == id) c->mu = c->mu_next;
  c->chose = -1;
  if (c->free_doc) return id >= 0 && id < c->v->n ? 0 : -1;
  if (c->run && is_end(c, id)) {
    if (!mkc_gbnf_run_can_end(c->run, 0)) return -1;
    c->ended = 1;
    return 0;
  }
  long n = read_token(c, id);
  if (c->run && mkc_gbnf_run_overflowed(c->run)) return overflowed();
  if (n < 0) return -1;
  if (c->run)
    mkc_gbnf_run_commit(c->run, (int)n);
  else
    c->now = c->v->states[n];
  return 0;
}

int mkc_constraint_done(const mkc_constraint *c) {
  if (c->free_doc) return 0;
  if (c->run)
    return 2 *
           (c->ended || (mkc_gbnf_run_can_end(c->run, 0) && !mkc_gbnf_run_can_go_on(c->run, 0)));
  return mkc_json_acc_done(&c->now);
}
