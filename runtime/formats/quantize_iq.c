/* Encoders for the grid types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S; IQ1_S
 * and IQ1_M below), for `mkc init` and the tests: a group of 8 (IQ1, IQ2) or
 * 4 (IQ3) elements is one entry of the format's grid (templates/iq_grids.cuh)
 * times a sub-block's step, with a sign per element (IQ1: plus a delta).
 *
 * Each sub-block's step starts at its largest |x| over the grid's largest
 * value. The block's d (f16) is the largest step over the top of the 4-bit
 * scale, rounded up, so every step is reachable. Each sub-block then tries the
 * scale nearest its step and the ones either side, and keeps the one whose
 * groups, each on its nearest grid entry, leave the least squared error.
 * Where the format's signs come from a 7-bit index (the eighth bit makes the
 * count of minus signs even), an odd group gives its smallest |x| the wrong
 * sign, and the grid entry is chosen for that. The nearest entry is exact: a
 * branch-and-bound walk of the grid as a tree (0.13 to 0.41 s per million
 * weights on a 2-core VM, where trying every entry took 1 to 6 s).
 *
 * Each element's squared error counts times its weight w (an importance
 * matrix's, from quantize_fit.c; all 1 from mkc_quantize): the entries are
 * the nearest by weighted distance, and the element an odd group flips is the
 * one of least w x^2. */
#include "quantize_iq.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "dequant.h"

#define MKC_TABLE static const
#define MKC_IQ_ALL 1
#include "iq_grids.cuh"

/* The grid as a tree: from the root, element j's level picks the child at depth j; a node at
 * depth elems is an entry (its index in child[0]). */
typedef struct grid_node {
  short child[8]; /* by level; -1: no entry has these levels */
} grid_node;

typedef struct iq_kind {
  const void *grid; /* entries of 8 bytes (elems 8) or 4 (elems 4) */
  int entries, elems;
  const uint8_t *levels; /* the values a grid byte takes, ascending */
  int n_levels;
  int sub;          /* elements a scale covers */
  int parity;       /* signs by a 7-bit index: an even count of minus signs */
  float unit, lift; /* step = d * unit * (lift + scale), scale 0..15 */
  grid_node *tree;  /* at most entries * elems + 1 nodes */
  int n_nodes;
} iq_kind;

static const uint8_t IQ2_LEVELS[] = {0x08, 0x19, 0x2b};
static const uint8_t IQ3XXS_LEVELS[] = {0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3e};
static const uint8_t IQ3S_LEVELS[] = {1, 3, 5, 7, 9, 11, 13, 15};
static const uint8_t IQ1_LEVELS[] = {0, 1, 2}; /* -1, 0, 1, plus 1 */

static grid_node tree_iq2xxs[256 * 8 + 1], tree_iq2xs[512 * 8 + 1], tree_iq2s[1024 * 8 + 1],
    tree_iq3xxs[256 * 4 + 1], tree_iq3s[512 * 4 + 1], tree_iq1s[2048 * 8 + 1];

static iq_kind KINDS[] = {
    {mkc_iq2xxs_grid, 256, 8, IQ2_LEVELS, 3, 32, 1, 0.25f, 0.5f, tree_iq2xxs, 0},
    {mkc_iq2xs_grid, 512, 8, IQ2_LEVELS, 3, 16, 1, 0.25f, 0.5f, tree_iq2xs, 0},
    {mkc_iq2s_grid, 1024, 8, IQ2_LEVELS, 3, 16, 0, 0.25f, 0.5f, tree_iq2s, 0},
    {mkc_iq3xxs_grid, 256, 4, IQ3XXS_LEVELS, 8, 32, 1, 0.5f, 0.5f, tree_iq3xxs, 0},
    /* IQ3_S: d (1 + 2 scale) = d * 2 * (0.5 + scale) */
    {mkc_iq3s_grid, 512, 4, IQ3S_LEVELS, 8, 32, 0, 2.0f, 0.5f, tree_iq3s, 0},
    /* IQ1_S, IQ1_M: only the grid and its tree (encode_iq1 has its own scales and deltas) */
    {mkc_iq1s_grid, 2048, 8, IQ1_LEVELS, 3, 0, 0, 0.0f, 0.0f, tree_iq1s, 0},
};
enum { K_IQ2_XXS, K_IQ2_XS, K_IQ2_S, K_IQ3_XXS, K_IQ3_S, K_IQ1 };

static unsigned grid_byte(const iq_kind *k, int entry, int j) {
  return k->elems == 8 ? (unsigned)(((const uint64_t *)k->grid)[entry] >> 8 * j & 0xff)
                       : ((const uint32_t *)k->grid)[entry] >> 8 * j & 0xff;
}

static int level_of(const iq_kind *k, unsigned v) {
  for (int l = 0; l < k->n_levels; l++)
    if (k->levels[l] == v) return l;
  return 0; /* unreachable: every grid byte is a level */
}

static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
  for (size_t t = 0; t < sizeof KINDS / sizeof *KINDS; t++) {
    iq_kind *k = &KINDS[t];
    k->n_nodes = 1;
    memset(k->tree, 0xff, sizeof k->tree[0]); /* the root: no children yet */
    for (int e = 0; e < k->entries; e++) {
      int node = 0;
      for (int j = 0; j < k->elems; j++) {
        short *c = &k->tree[node].child[level_of(k, grid_byte(k, e, j))];
        if (*c < 0) {
          *c = (short)k->n_nodes;
          memset(&k->tree[k->n_nodes++], 0xff, sizeof k->tree[0]);
        }
        node = *c;
      }
      k->tree[node].child[0] = (short)e;
    }
  }
}

/* A search for the entry nearest some targets: each element's squared distance to each
 * level, the least of those from element j on (a bound on what is left), the best so far. */
typedef struct entry_search {
  const iq_kind *k;
  float dist[8][8], rest[9], best;
  int order[8][8]; /* each element's levels, nearest first */
  int entry;
} entry_search;

static void search_from(entry_search *s, int node, int j, float partial) {
  if (partial + s->rest[j] >= s->best) return;
  if (j == s->k->elems) {
    s->best = partial, s->entry = s->k->tree[node].child[0];
    return;
  }
  for (int i = 0; i < s->k->n_levels; i++) {
    int l = s->order[j][i], c = s->k->tree[node].child[l];
    if (c >= 0) search_from(s, c, j + 1, partial + s->dist[j][l]);
  }
}

/* The entry nearest t (elems targets, in steps; w their weights), exactly: a walk of the grid's
 * tree, nearest levels first, that leaves a branch once what it has plus the least the rest can add
 * is no better than the best entry found. *err: its squared error. */
static int nearest_entry(const iq_kind *k, const float *t, const float *w, float *err) {
  entry_search s = {.k = k, .best = INFINITY, .entry = 0};
  s.rest[k->elems] = 0;
  for (int j = k->elems - 1; j >= 0; j--) {
    float least = INFINITY;
    for (int l = 0; l < k->n_levels; l++) {
      float d = t[j] - (float)k->levels[l];
      s.dist[j][l] = w[j] * d * d, least = fminf(least, s.dist[j][l]);
      int at = l; /* insertion sort by distance */
      while (at > 0 && s.dist[j][s.order[j][at - 1]] > s.dist[j][l]) {
        s.order[j][at] = s.order[j][at - 1];
        at--;
      }
      s.order[j][at] = l;
    }
    s.rest[j] = s.rest[j + 1] + least;
  }
  search_from(&s, 0, 0, 0.0f);
  *err = s.best;
  return s.entry;
}

/* 256 weights of 1, for a block without weights. */
static const float *all_ones(float ones[256]) {
  for (int i = 0; i < 256; i++) ones[i] = 1;
  return ones;
}

/* The block's d as f16: the least (but 65504 at most) whose top step, d * top, reaches
 * max_step, so the largest scale covers every sub-block. */
static uint16_t d_reaching(float max_step, float top) {
  uint16_t dh = mkc_float_to_f16(max_step / top);
  if (mkc_f16_to_float(dh) * top < max_step && dh < 0x7bff) dh++;
  return dh;
}

/* A sub-block's step (k->sub magnitudes m, weights w) refitted from step0, the one that puts
 * its largest at the grid's top: twice, each group on its nearest entry for the step, then the
 * least-squares step for those entries; step0 if that leaves more error. */
static float fitted_step(const iq_kind *k, const float *m, const float *w, float step0) {
  float best = step0, best_err = INFINITY, st = step0;
  for (int pass = 0; pass < 3 && st > 0; pass++) {
    double smg = 0, sgg = 0, smm = 0;
    for (int e = 0; e < k->sub / k->elems; e++) {
      float t[8], err;
      const float *me = m + k->elems * e, *we = w + k->elems * e;
      for (int j = 0; j < k->elems; j++) t[j] = me[j] / st;
      int idx = nearest_entry(k, t, we, &err);
      for (int j = 0; j < k->elems; j++) {
        double g = grid_byte(k, idx, j);
        smg += we[j] * me[j] * g, sgg += we[j] * g * g, smm += (double)we[j] * me[j] * me[j];
      }
    }
    float err = (float)(smm - 2 * st * smg + (double)st * st * sgg); /* at st, the step tried */
    if (err < best_err) best_err = err, best = st;
    if (!(sgg > 0) || !(smg > 0)) break;
    st = (float)(smg / sgg);
  }
  return best;
}

/* A 256-element block's codes: per group of 8 its signs (bit j: element j
 * negative), per entry (8 or 4 elements) its index, per sub-block its 4-bit
 * scale; returns d as f16 bits. */
static uint16_t encode(const iq_kind *k, const float *x, const float *w, int signs[32],
                       int index[64], int scale[16]) {
  pthread_once(&tables_once, build_tables);
  float ones[256];
  if (!w) w = all_ones(ones);
  int top = k->levels[k->n_levels - 1], n_sub = 256 / k->sub;
  float mag[256];
  for (int g = 0; g < 32; g++) {
    int s = 0, smallest = 8 * g;
    for (int j = 0; j < 8; j++) {
      int i = 8 * g + j;
      if (x[i] < 0) s |= 1 << j;
      if (w[i] * x[i] * x[i] < w[smallest] * x[smallest] * x[smallest]) smallest = i;
      mag[i] = fabsf(x[i]);
    }
    if (k->parity && __builtin_popcount((unsigned)s) % 2) { /* the smallest takes the wrong sign */
      s ^= 1 << (smallest - 8 * g);
      mag[smallest] = -mag[smallest];
    }
    signs[g] = s;
  }
  float step[16], max_step = 0;
  for (int b = 0; b < n_sub; b++) {
    float amax = 0;
    for (int i = 0; i < k->sub; i++) amax = fmaxf(amax, mag[k->sub * b + i]);
    step[b] = fitted_step(k, mag + k->sub * b, w + k->sub * b, amax / (float)top);
    max_step = fmaxf(max_step, step[b]);
  }
  uint16_t dh = d_reaching(max_step, k->unit * (k->lift + 15.0f));
  float d = mkc_f16_to_float(dh);
  for (int b = 0; b < n_sub; b++) {
    int guess = d > 0 ? (int)lroundf(step[b] / (d * k->unit) - k->lift) : 0;
    guess = guess < 0 ? 0 : guess > 15 ? 15 : guess; /* so some scale is always tried */
    float best_err = INFINITY;
    scale[b] = 0;
    for (int sc = guess - 2; sc <= guess + 2; sc++) {
      if (sc < 0 || sc > 15) continue;
      float db = d * k->unit * (k->lift + (float)sc), err = 0;
      int idx[8];
      for (int e = 0; e < k->sub / k->elems; e++) {
        float t[8], entry_err;
        const float *m = mag + k->sub * b + k->elems * e;
        for (int j = 0; j < k->elems; j++) t[j] = db > 0 ? m[j] / db : 0;
        idx[e] = nearest_entry(k, t, w + k->sub * b + k->elems * e, &entry_err);
        err += entry_err * db * db;
      }
      if (err < best_err) {
        best_err = err, scale[b] = sc;
        for (int e = 0; e < k->sub / k->elems; e++) index[(k->sub * b) / k->elems + e] = idx[e];
      }
    }
  }
  return dh;
}

static void put16(uint8_t *p, unsigned v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v) {
  put16(p, v & 0xffff);
  put16(p + 2, v >> 16);
}

/* The 7-bit index of a group's signs (their eighth is implied). */
static uint32_t sign_index(int s) { return (uint32_t)s & 127; }

void mkc_quantize_iq2_xxs(const float *x, const float *w, uint8_t *b) {
  int signs[32], index[64], scale[16];
  put16(b, encode(&KINDS[K_IQ2_XXS], x, w, signs, index, scale));
  for (int s = 0; s < 8; s++) {
    uint32_t aux = (uint32_t)scale[s] << 28;
    for (int l = 0; l < 4; l++) {
      b[2 + 8 * s + l] = (uint8_t)index[4 * s + l];
      aux |= sign_index(signs[4 * s + l]) << 7 * l;
    }
    put32(b + 2 + 8 * s + 4, aux);
  }
}

void mkc_quantize_iq2_xs(const float *x, const float *w, uint8_t *b) {
  int signs[32], index[64], scale[16];
  put16(b, encode(&KINDS[K_IQ2_XS], x, w, signs, index, scale));
  for (int g = 0; g < 32; g++) put16(b + 2 + 2 * g, (unsigned)index[g] | sign_index(signs[g]) << 9);
  for (int j = 0; j < 8; j++) b[66 + j] = (uint8_t)(scale[2 * j] | scale[2 * j + 1] << 4);
}

void mkc_quantize_iq2_s(const float *x, const float *w, uint8_t *b) {
  int signs[32], index[64], scale[16];
  put16(b, encode(&KINDS[K_IQ2_S], x, w, signs, index, scale));
  memset(b + 66, 0, 8);
  for (int g = 0; g < 32; g++) {
    b[2 + g] = (uint8_t)index[g];
    b[34 + g] = (uint8_t)signs[g];
    b[66 + g / 4] |= (uint8_t)((index[g] >> 8) << 2 * (g % 4));
  }
  for (int j = 0; j < 8; j++) b[74 + j] = (uint8_t)(scale[2 * j] | scale[2 * j + 1] << 4);
}

void mkc_quantize_iq3_xxs(const float *x, const float *w, uint8_t *b) {
  int signs[32], index[64], scale[16];
  put16(b, encode(&KINDS[K_IQ3_XXS], x, w, signs, index, scale));
  for (int i = 0; i < 64; i++) b[2 + i] = (uint8_t)index[i];
  for (int s = 0; s < 8; s++) {
    uint32_t aux = (uint32_t)scale[s] << 28;
    for (int l = 0; l < 4; l++) aux |= sign_index(signs[4 * s + l]) << 7 * l;
    put32(b + 66 + 4 * s, aux);
  }
}

void mkc_quantize_iq3_s(const float *x, const float *w, uint8_t *b) {
  int signs[32], index[64], scale[16];
  put16(b, encode(&KINDS[K_IQ3_S], x, w, signs, index, scale));
  memset(b + 66, 0, 8);
  for (int i = 0; i < 64; i++) {
    b[2 + i] = (uint8_t)index[i];
    b[66 + i / 8] |= (uint8_t)((index[i] >> 8) << i % 8);
  }
  for (int g = 0; g < 32; g++) b[74 + g] = (uint8_t)signs[g];
  for (int j = 0; j < 4; j++) b[106 + j] = (uint8_t)(scale[2 * j] | scale[2 * j + 1] << 4);
}

/* IQ1_S and IQ1_M: a group of 8 is an entry of the grid -1, 0, 1 plus a delta of +-1/8,
 * times the step d (2 scale + 1) of its scale group (per_scale elements, scale 0..7).
 * The delta's sign is per per_delta elements. Each scale group starts at its largest |x|
 * over 1.125 and tries the scale nearest that and the two beside it; each delta group
 * takes the sign whose nearest entries leave the least squared error. Returns d (f16). */
static uint16_t encode_iq1(const float *x, const float *w, int per_scale, int per_delta,
                           int scale[16], int negative[32], int index[32]) {
  pthread_once(&tables_once, build_tables);
  float ones[256];
  if (!w) w = all_ones(ones);
  const iq_kind *k = &KINDS[K_IQ1];
  int n_scale = 256 / per_scale, groups = per_delta / 8;
  float step[16], max_step = 0;
  for (int b = 0; b < n_scale; b++) {
    float amax = 0;
    for (int i = 0; i < per_scale; i++) amax = fmaxf(amax, fabsf(x[per_scale * b + i]));
    step[b] = amax / 1.125f;
    max_step = fmaxf(max_step, step[b]);
  }
  uint16_t dh = d_reaching(max_step, 15.0f); /* d (2 * 7 + 1) */
  float d = mkc_f16_to_float(dh);
  for (int b = 0; b < n_scale; b++) {
    int guess = d > 0 ? (int)lroundf((step[b] / d - 1.0f) / 2.0f) : 0;
    guess = guess < 0 ? 0 : guess > 7 ? 7 : guess; /* so some scale is always tried */
    float best_err = INFINITY;
    scale[b] = 0;
    for (int sc = guess - 2; sc <= guess + 2; sc++) {
      if (sc < 0 || sc > 7) continue;
      float dl = d * (float)(2 * sc + 1), err = 0;
      int idx[4], neg[4];
      int first = per_scale * b; /* each delta group of the scale group (per_delta <= per_scale) */
      for (int g0 = first; g0 < first + per_scale; g0 += per_delta) {
        float best_group = INFINITY;
        for (int sign = 0; sign < 2; sign++) {
          float delta = sign ? -0.125f : 0.125f, group_err = 0;
          int gi[4];
          for (int e = 0; e < groups; e++) {
            float t[8], entry_err;
            for (int j = 0; j < 8; j++) t[j] = (dl > 0 ? x[g0 + 8 * e + j] / dl : 0) + 1 - delta;
            gi[e] = nearest_entry(k, t, w + g0 + 8 * e, &entry_err);
            group_err += entry_err;
          }
          if (group_err < best_group) {
            best_group = group_err;
            for (int e = 0; e < groups; e++) idx[(g0 - first) / 8 + e] = gi[e];
            for (int e = 0; e < groups; e++) neg[(g0 - first) / 8 + e] = sign;
          }
        }
        err += best_group * dl * dl;
      }
      if (err < best_err) {
        best_err = err, scale[b] = sc;
        for (int e = 0; e < per_scale / 8; e++) {
          index[per_scale * b / 8 + e] = idx[e];
          negative[per_scale * b / 8 + e] = neg[e];
        }
      }
    }
  }
  return dh;
}

void mkc_quantize_iq1_s(const float *x, const float *w, uint8_t *b) {
  int scale[16], negative[32], index[32];
  put16(b, encode_iq1(x, w, 32, 32, scale, negative, index));
  for (int s = 0; s < 8; s++) {
    unsigned h = (unsigned)scale[s] << 12 | (unsigned)negative[4 * s] << 15;
    for (int l = 0; l < 4; l++) {
      b[2 + 4 * s + l] = (uint8_t)index[4 * s + l];
      h |= (unsigned)(index[4 * s + l] >> 8) << 3 * l;
    }
    put16(b + 34 + 2 * s, h);
  }
}

void mkc_quantize_iq1_m(const float *x, const float *w, uint8_t *b) {
  int scale[16], negative[32], index[32];
  uint16_t dh = encode_iq1(x, w, 16, 8, scale, negative, index);
  memset(b + 32, 0, 16);
  for (int g = 0; g < 32; g++) {
    b[g] = (uint8_t)index[g];
    b[32 + g / 2] |= (uint8_t)((index[g] >> 8 | negative[g] << 3) << 4 * (g % 2));
  }
  for (int w = 0; w < 4; w++) {
    unsigned v = (unsigned)(dh >> 4 * w & 0xf) << 12;
    for (int j = 0; j < 4; j++) v |= (unsigned)scale[4 * w + j] << 3 * j;
    put16(b + 48 + 2 * w, v);
  }
}
