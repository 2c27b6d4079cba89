/* llama-imatrix's --show-statistics report (imatrix_stats.h). Its numbers are floats summed
 * in its order, so that a table printed here reads digit for digit as llama-imatrix's. That
 * holds where neither build fuses a multiply and an add (gcc with -std=c11 does not; a clang
 * or aarch64 build of either side may differ in a last digit). */
#include "imatrix_stats.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One matrix's figures, over the means of its columns (each expert's slice's that saw inputs). */
typedef struct tensor_stats {
  const char *name;
  char *layer, *tensor; /* the name's layer ("-": none) and short name (owned) */
  int blk;              /* the layer as a number, -1 for none */
  float *values;        /* the sums as llama-imatrix loads them (owned) */
  size_t n_values;
  float total, mean, max, min, stddev, active, entropy, zd, cossim;
  int elements;
} tensor_stats;

/* std::stoi's reading of a layer: leading white space, a sign, digits; -1 where there are no
 * digits or the number is out of int's range (stoi throws, and llama-imatrix takes -1). */
static int layer_number(const char *s) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  return end == s || errno || v < INT_MIN || v > INT_MAX ? -1 : (int)v;
}

/* llama-imatrix's reading of a name (its process_tensor_name): the fields between dots, a
 * trailing empty one dropped (as getline drops it); the field after the first "blk" is the
 * layer, the one before the first "weight" past the start the tensor ("blk.0.attn_k.weight": 0,
 * attn_k; "output.weight": -, output); an empty layer is "-", an empty tensor the whole name.
 * 0, or -1 when out of memory. */
static int split_name(tensor_stats *t) {
  const char *name = t->name, *layer = NULL, *tensor = NULL;
  size_t layer_len = 0, tensor_len = 0, i = 0;
  const char *prev = NULL;
  size_t prev_len = 0;
  int after_blk = 0;
  for (const char *p = name; *p;) { /* field i: [p, p + len) */
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    if (after_blk && !layer) layer = p, layer_len = len;
    after_blk = !layer && len == 3 && memcmp(p, "blk", 3) == 0;
    if (!tensor && i > 0 && len == 6 && memcmp(p, "weight", 6) == 0)
      tensor = prev, tensor_len = prev_len;
    prev = p, prev_len = len, i++;
    if (!dot) break;
    p = dot + 1;
  }
  t->layer = layer && layer_len ? strndup(layer, layer_len) : strdup("-");
  t->tensor = tensor && tensor_len ? strndup(tensor, tensor_len) : strdup(name);
  if (!t->layer || !t->tensor) return -1;
  t->blk = layer && layer_len ? layer_number(t->layer) : -1;
  return 0;
}

/* The figures of entry e (its values and per-slice counts as llama-imatrix loads them). 1 when
 * computed, 0 when no slice saw an input (reported, and left out as llama-imatrix leaves it),
 * -1 when out of memory. */
static int compute(tensor_stats *t, const mkc_imatrix_entry *e, int legacy, int chunk_size) {
  size_t mats = e->mats ? e->mats : 1, row = e->n / mats, n = 0;
  /* its load adds each value to 0.0f (so -0 reads as +0); a .dat's means times the calls are
   * times the chunk size too: sums again */
  if (!(t->values = malloc((e->n ? e->n : 1) * sizeof *t->values))) return -1;
  t->n_values = e->n;
  for (size_t j = 0; j < e->n; j++)
    t->values[j] = 0.0f + (legacy ? e->sums[j] * (float)chunk_size : e->sums[j]);
  float *act = malloc((e->n ? e->n : 1) * sizeof *act);
  if (!act) return -1;
  for (size_t i = 0; i < mats; i++) {
    /* the counts as its loader rounds them (std::lround; a .dat's calls times the chunk
     * size, in whole numbers) */
    float c = legacy ? e->counts[0] : e->counts[i];
    int64_t count = c < 0x1p63f ? llroundf(c) : INT64_MAX;
    if (legacy)
      count =
          count > INT64_MAX / (chunk_size > 0 ? chunk_size : 1) ? INT64_MAX : count * chunk_size;
    if (count == 0) continue;
    for (size_t j = 0; j < row; j++) act[n++] = t->values[i * row + j] / (float)count;
  }
  if (!n) {
    fprintf(stderr, "mkc: imatrix: %s: no inputs in any slice: no statistics\n", t->name);
    free(act);
    return 0;
  }
  float total = 0, sq = 0, max = act[0], min = act[0];
  for (size_t j = 0; j < n; j++) {
    total += act[j], sq += act[j] * act[j];
    if (act[j] > max) max = act[j];
    if (act[j] < min) min = act[j];
  }
  float mean = total / (float)n, var = sq / (float)n - mean * mean;
  float dev = sqrtf(var > 0.0f ? var : 0.0f), entropy = 0;
  size_t inactive = 0, above = 0;
  for (size_t j = 0; j < n; j++) inactive += fabsf(act[j]) <= 1e-5f;
  if (total > 0)
    for (size_t j = 0; j < n; j++) {
      float p = act[j] / total;
      if (p > 0) entropy -= p * log2f(p);
    }
  if (dev > 0.0f)
    for (size_t j = 0; j < n; j++) above += (act[j] - mean) / dev > 1;
  t->total = total, t->mean = mean, t->max = max, t->min = min, t->stddev = dev;
  t->elements = (int)n;
  t->active = 1 - (float)inactive / (float)n;
  t->entropy = entropy;
  t->zd = (float)above / (float)t->elements;
  free(act);
  return 1;
}

static float dot(const float *a, const float *b, size_t n) {
  float s = 0;
  for (size_t j = 0; j < n; j++) s += a[j] * b[j];
  return s;
}

/* Each matrix's cosine with the same matrix one layer before (its first "blk.N." is N - 1's):
 * 0 where there is none. The dot product runs over this matrix's values, the magnitudes over
 * each one's, as llama-imatrix's; where the layer before has fewer values (which it would read
 * past) it is 0 too. */
static void cosines(tensor_stats *ts, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const char *b, *digits = NULL, *after = NULL; /* the first match of blk\.(\d+)\. */
    for (b = strstr(ts[i].name, "blk."); b; b = strstr(b + 1, "blk.")) {
      for (digits = after = b + 4; isdigit((unsigned char)*after);) after++;
      if (after > digits && *after == '.') break;
    }
    if (!b) continue; /* no layer: 0 */
    char *prev;
    if (asprintf(&prev, "%.*s%ld%s", (int)(digits - ts[i].name), ts[i].name,
                 strtol(digits, NULL, 10) - 1, after) < 0)
      continue;
    for (size_t k = 0; k < n; k++)
      if (strcmp(ts[k].name, prev) == 0) {
        if (ts[k].n_values >= ts[i].n_values) {
          float d = dot(ts[i].values, ts[k].values, ts[i].n_values);
          float cur = sqrtf(dot(ts[i].values, ts[i].values, ts[i].n_values));
          float was = sqrtf(dot(ts[k].values, ts[k].values, ts[k].n_values));
          ts[i].cossim = d / (cur * was);
        }
        break;
      }
    free(prev);
  }
}

/* By short name, then the larger sum first (llama-imatrix's order). */
static int by_tensor(const void *pa, const void *pb) {
  const tensor_stats *a = pa, *b = pb;
  int c = strcmp(a->tensor, b->tensor);
  return c ? c : (a->total > b->total ? -1 : a->total < b->total ? 1 : 0);
}

/* The per-layer sums, weighted by each matrix's columns. */
typedef struct layer_sums {
  int blk, elements;
  float bias, zd, cossim;
} layer_sums;

static int by_blk(const void *pa, const void *pb) {
  const layer_sums *a = pa, *b = pb;
  return (a->blk > b->blk) - (a->blk < b->blk);
}

static void print_report(const tensor_stats *ts, size_t n, layer_sums *ls, const char *path,
                         FILE *out) {
  fprintf(out, "\nComputing statistics for %s (%d tensors)\n", path, (int)n);
  fprintf(out, "\n%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", " Layer", "       Tensor",
          "          Σ(Act²)", "  Min", "            Max", "           μ", "   σ", " % Active", "N",
          "   Entropy", "E (norm)", "ZD", "  CosSim");
  for (int i = 0; i < 169; i++) fputc('=', out);
  fputc('\n', out);
  size_t n_layers = 0;
  for (size_t i = 0; i < n; i++) {
    const tensor_stats *t = &ts[i];
    float norm = t->elements > 0 ? (float)(100.0f * (t->entropy / log2((double)t->elements))) : 0;
    fprintf(out,
            "%5s\t%-20s\t%10.2f\t%8.4f\t%11.4f\t%6.2f\t%6.2f\t%8.2f%%\t%6d\t%10.4f\t%6.2f%%\t%10."
            "2f%%\t%8.4f\n",
            t->layer, t->tensor, t->total, t->min, t->max, t->mean, t->stddev, t->active * 100.0f,
            t->elements, t->entropy, norm, 100.0f * t->zd, t->cossim);
    size_t k = 0;
    while (k < n_layers && ls[k].blk != t->blk) k++;
    if (k == n_layers) ls[n_layers++] = (layer_sums){.blk = t->blk};
    ls[k].bias += t->elements * t->total;
    ls[k].zd += t->elements * t->zd;
    ls[k].cossim += t->elements * t->cossim;
    ls[k].elements += t->elements;
  }
  qsort(ls, n_layers, sizeof *ls, by_blk);
  int layers = 0;
  for (size_t k = 0; k < n_layers; k++) layers += ls[k].blk >= 0;
  fprintf(out, "\nComputing weighted average statistics per layer (%d layers)\n", layers);
  fprintf(out, "\n%s\t%s\t%s\t%s\n", "  Layer", "     μΣ(Act²)", "      μZD", "μCosSim");
  fprintf(out, "================================================\n");
  for (size_t k = 0; k < n_layers; k++)
    if (ls[k].elements && ls[k].blk >= 0)
      fprintf(out, "%5d\t%14.2f\t%10.4f%%\t%6.4f\n", ls[k].blk, ls[k].bias / ls[k].elements,
              100.0f * (ls[k].zd / ls[k].elements), ls[k].cossim / ls[k].elements);
  fprintf(out, "\n");
}

int mkc_imatrix_show_statistics(const mkc_imatrix *im, const char *path, int chunk_size,
                                FILE *out) {
  tensor_stats *ts = calloc(im->n ? im->n : 1, sizeof *ts);
  layer_sums *ls = calloc(im->n ? im->n : 1, sizeof *ls);
  size_t n = 0;
  int rc = -1;
  if (!ts || !ls) goto oom;
  for (size_t i = 0; i < im->n; i++) {
    tensor_stats *t = &ts[n];
    t->name = im->entries[i].name;
    int got = compute(t, &im->entries[i], im->legacy, chunk_size);
    if (got > 0) got = split_name(t) == 0 ? 1 : -1;
    if (got > 0) {
      n++;
      continue;
    }
    free(t->values), free(t->layer), free(t->tensor);
    *t = (tensor_stats){0};
    if (got < 0) goto oom;
  }
  if (!n) {
    fprintf(stderr, "mkc: error: imatrix: %s: no matrix saw an input: no statistics\n", path);
    goto done;
  }
  cosines(ts, n);
  qsort(ts, n, sizeof *ts, by_tensor);
  print_report(ts, n, ls, path, out);
  rc = 0;
  goto done;
oom:
  fprintf(stderr, "mkc: error: imatrix: out of memory\n");
done:
  for (size_t i = 0; ts && i < n; i++) free(ts[i].values), free(ts[i].layer), free(ts[i].tensor);
  free(ts);
  free(ls);
  return rc;
}
