/* LoRA adapters merged into the weights at load (lora.h). */
#include "lora.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/files.h"
#include "util/mapped.h"
#include "util/parts.h"
#include "util/text.h"

static const char SUFFIX_A[] = ".lora_a", SUFFIX_B[] = ".lora_b";

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* The pair's other tensor: name's base with the other suffix. */
static const mkc_gguf_tensor *partner(const mkc_gguf *f, const char *name, const char *other) {
  char buf[512];
  size_t base = strlen(name) - strlen(SUFFIX_A), k = strlen(other);
  if (base + k >= sizeof buf) return NULL;
  memcpy(buf, name, base);
  memcpy(buf + base, other, k + 1);
  return mkc_gguf_find_tensor(f, buf);
}

static int check_str(const mkc_gguf *f, const char *key, const char *want, const char *what) {
  const char *v = NULL;
  int got = mkc_gguf_get_str(f, key, &v);
  if (got < 0) return -1;
  if (got == 0 || strcmp(v, want) != 0)
    return mkc_error_in(f->path, "%s: %s is '%s', not '%s'", what, key, got ? mkc_shown(v) : "",
                        want);
  return 0;
}

int mkc_lora_check(const mkc_gguf *f, const char *arch, double *alpha_out) {
  const char *path = f->path;
  int rc = check_str(f, "general.type", "adapter", "not an adapter") ||
           check_str(f, "adapter.type", "lora", "not a LoRA adapter") ||
           check_str(f, "general.architecture", arch, "an adapter of another model");
  if (!rc && mkc_gguf_find(f, "adapter.alora_invocation_tokens"))
    rc = mkc_error_in(path, "an activated LoRA (adapter.alora_invocation_tokens): mkc merges "
                            "adapters into the weights, for every token; not followed");
  double alpha = 0;
  if (!rc && mkc_gguf_get_float(f, "adapter.lora.alpha", &alpha) < 0) rc = -1;
  for (uint64_t i = 0; !rc && i < f->n_tensors; i++) {
    const mkc_gguf_tensor *t = &f->tensors[i];
    int a = ends_with(t->name, SUFFIX_A), b = ends_with(t->name, SUFFIX_B);
    if (!a && !b && ends_with(t->name, "_norm.weight")) {
      fprintf(stderr,
              "mkc: warning: %s: tensor '%s' (a norm vector) is left out, as llama.cpp "
              "leaves it\n",
              path, mkc_shown(t->name));
      continue;
    }
    const mkc_gguf_tensor *other = a || b ? partner(f, t->name, a ? SUFFIX_B : SUFFIX_A) : NULL;
    const char *fault = !a && !b ? "not a .lora_a or .lora_b tensor"
                        : !other ? "the other tensor of its pair is missing"
                        : t->n_dims != 2 || t->ne[0] < 1 || t->ne[1] < 1 ? "not a matrix"
                        : !mkc_ggml_type(t->type)->readable ? "of a type mkc does not read"
                        : ends_with(t->name, "token_embd.weight.lora_a") ||
                                ends_with(t->name, "token_embd.weight.lora_b")
                            ? "the token embedding's adapter is not followed (mkc merges adapters "
                              "of the matrices of products)"
                        : a && t->ne[1] != other->ne[0] ? "lora_a's rank is not lora_b's (an "
                                                          "adapter of llama.cpp's old finetune?)"
                                                        : NULL;
    if (fault) rc = mkc_error_in(path, "tensor '%s': %s", mkc_shown(t->name), fault);
  }
  *alpha_out = alpha;
  return rc ? -1 : 0;
}

int mkc_lora_open(const char *path, float scale, const mkc_model_desc *d, mkc_lora *l) {
  memset(l, 0, sizeof *l);
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return mkc_lora_open_peft(path, scale, d, l);
  const char *arch = d->arch;
  mkc_gguf *f = mkc_gguf_open(path);
  double alpha;
  if (!f || mkc_lora_check(f, arch, &alpha) != 0) {
    if (f) mkc_gguf_close(f);
    return -1;
  }
  *l = (mkc_lora){.f = f, .scale = scale, .alpha = alpha, .path = f->path};
  mkc_mapped_test_pause("MKC_TEST_PAUSE_BEFORE_ADAPTER"); /* tensors are read at the merge */
  return 0;
}

int mkc_lora_adapts(const mkc_lora *l, const char *name) {
  for (int k = 0; k < l->n_pairs; k++)
    if (!strcmp(l->pairs[k].name, name)) return 1;
  if (!l->f) return 0;
  char buf[512];
  if (strlen(name) + sizeof SUFFIX_A > sizeof buf) return 0;
  snprintf(buf, sizeof buf, "%s%s", name, SUFFIX_A);
  return mkc_gguf_find_tensor(l->f, buf) != NULL;
}

/* Tensor t of the adapter as floats (malloc'd; NULL after a message). */
static float *read_f32(const mkc_lora *l, const mkc_gguf_tensor *t) {
  unsigned char *raw = malloc(t->n_bytes ? t->n_bytes : 1);
  float *out = malloc((size_t)t->n_elems * sizeof *out);
  if (!raw || !out) {
    mkc_error_in(l->f->path, "tensor '%s': out of memory", mkc_shown(t->name));
  } else if (mkc_gguf_copy_tensor(l->f, t, raw) == 0) {
    mkc_dequant_f32(t->type, raw, (size_t)t->n_elems, out);
    free(raw);
    return out;
  }
  free(raw);
  free(out);
  return NULL;
}

/* W's rows [from, to) += s * B A, for one pair: W [rows][cols] bf16, A [r][cols], B [rows][r];
 * row: cols floats of room. Each row's sum is the same whichever thread works it out. */
typedef struct merge_job {
  mkc_tensor *w;
  const float *a, *b;
  int r, from, to;
  float s;
  float *row;
} merge_job;

static void *merge_rows(void *arg) {
  const merge_job *j = arg;
  mkc_tensor *w = j->w;
  for (int o = j->from; o < j->to; o++) {
    memset(j->row, 0, (size_t)w->cols * sizeof *j->row);
    for (int k = 0; k < j->r; k++) {
      float bk = j->b[(size_t)o * j->r + k];
      const float *ak = j->a + (size_t)k * w->cols;
      for (int i = 0; i < w->cols; i++) j->row[i] += bk * ak[i];
    }
    uint16_t *wo = w->data + (size_t)o * w->cols;
    for (int i = 0; i < w->cols; i++)
      wo[i] = mkc_float_to_bf16(mkc_bf16_to_float(wo[i]) + j->s * j->row[i]);
  }
  return NULL;
}

#define MERGE_THREADS 16

/* W += s * B A, its rows shared among the cores (up to MERGE_THREADS; rows * cols * r
 * multiply-adds, a minute of one core for a 7B model's at rank 16). 0, or -1 when out of
 * memory. */
static int merge(mkc_tensor *w, const float *a, const float *b, int r, float s) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int n = cores < 1 ? 1 : cores > MERGE_THREADS ? MERGE_THREADS : (int)cores;
  if (n > w->rows / 16) n = w->rows / 16 > 0 ? w->rows / 16 : 1; /* a small matrix: one */
  merge_job jobs[MERGE_THREADS];
  float *rows = malloc((size_t)n * w->cols * sizeof *rows);
  if (!rows) return -1;
  for (int t = 0; t < n; t++)
    jobs[t] = (merge_job){w,
                          a,
                          b,
                          r,
                          (int)((long)w->rows * t / n),
                          (int)((long)w->rows * (t + 1) / n),
                          s,
                          rows + (size_t)t * w->cols};
  mkc_run_parts(merge_rows, jobs, sizeof *jobs, n);
  free(rows);
  return 0;
}

/* The base weight called name (name_len bytes) in w, checked to take a delta of B's rows and
 * A's columns; NULL after a message naming src. */
static mkc_tensor *base_of(const char *src, mkc_weights *w, const char *name, size_t name_len,
                           int rows, int cols) {
  mkc_tensor *t = NULL;
  for (int k = 0; k < w->n && !t; k++)
    if (strlen(w->t[k].name) == name_len && !strncmp(w->t[k].name, name, name_len)) t = &w->t[k];
  if (!t)
    return mkc_error_in(src,
                        "LoRA tensor '%.*s' does not exist in the base model (maybe the wrong "
                        "base model?)",
                        (int)name_len, mkc_shown(name)),
           NULL;
  if (cols != t->cols || rows != t->rows || !t->data)
    return mkc_error_in(src,
                        "LoRA tensor '%s': a delta of [%d, %d] does not fit the model's [%d, %d]%s "
                        "(maybe the wrong base model?)",
                        t->name, rows, cols, t->rows, t->cols, t->data ? "" : " kept in blocks"),
           NULL;
  return t;
}

int mkc_lora_apply(const mkc_lora *l, mkc_weights *w) {
  const mkc_gguf *f = l->f;
  int merged = 0, rank = 0, pairs = l->n_pairs;
  float s = 0;
  double t0 = mkc_seconds();
  /* pass 0 checks every pair against the model; pass 1 merges (r multiply-adds a weight, on one
   * core: a big model's take a while, so the note comes first) */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1)
      fprintf(stderr, "mkc: %s: merging the LoRA into %d matrices...\n", l->path, pairs);
    for (int k = 0; k < l->n_pairs; k++) { /* a PEFT folder's, read at open */
      const mkc_lora_pair *p = &l->pairs[k];
      mkc_tensor *t = base_of(l->path, w, p->name, strlen(p->name), p->rows, p->cols);
      if (!t) return -1;
      if (pass == 1 && merge(t, p->a, p->b, p->rank, p->s) != 0)
        return mkc_error_in(l->path, "out of memory merging '%s'", t->name);
      merged += pass, rank = p->rank, s = p->s;
    }
    for (uint64_t i = 0; f && i < f->n_tensors; i++) {
      const mkc_gguf_tensor *a = &f->tensors[i];
      if (!ends_with(a->name, SUFFIX_A)) continue;
      const mkc_gguf_tensor *b = partner(f, a->name, SUFFIX_B);
      mkc_tensor *t = base_of(f->path, w, a->name, strlen(a->name) - strlen(SUFFIX_A),
                              (int)b->ne[1], (int)a->ne[0]);
      if (!t) return -1;
      pairs += !pass;
      if (!pass) continue;
      rank = (int)a->ne[1];
      s = l->alpha != 0 ? (float)(l->scale * l->alpha / rank) : l->scale; /* llama.cpp's */
      float *fa = read_f32(l, a), *fb = fa ? read_f32(l, b) : NULL;
      int rc = fb ? merge(t, fa, fb, rank, s) : -1;
      free(fa);
      free(fb);
      if (rc != 0) return fb ? mkc_error_in(f->path, "out of memory merging '%s'", t->name) : -1;
      merged++;
    }
  }
  fprintf(stderr,
          "mkc: %s: LoRA merged into %d matrices (rank %d, scale %g: %g x alpha %g / %s%d) in %.1f "
          "s\n",
          l->path, merged, rank, s, l->scale, l->alpha, l->rslora ? "sqrt " : "", rank,
          mkc_seconds() - t0);
  return 0;
}

void mkc_lora_close(mkc_lora *l) {
  if (l->f) mkc_gguf_close(l->f);
  for (int k = 0; k < l->n_pairs; k++)
    free(l->pairs[k].name), free(l->pairs[k].a), free(l->pairs[k].b);
  free(l->pairs);
  memset(l, 0, sizeof *l);
}
