/* Reads importance matrices (imatrix.h), both formats, checking every length
 * against the bytes there are. */
#include "imatrix.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "util/files.h"

static int by_name(const void *a, const void *b) {
  return strcmp(((const mkc_imatrix_entry *)a)->name, ((const mkc_imatrix_entry *)b)->name);
}

/* Sorts the entries and refuses a name twice. */
static int finish(mkc_imatrix *im, const char *what) {
  if (!im->n) return mkc_error_in(what, "no importance matrix entries");
  qsort(im->entries, im->n, sizeof *im->entries, by_name);
  for (size_t i = 1; i < im->n; i++)
    if (strcmp(im->entries[i - 1].name, im->entries[i].name) == 0)
      return mkc_error_in(what, "'%s' appears twice", im->entries[i].name);
  return 0;
}

/* Little-endian i32 at *at, if 4 bytes are left. */
static int take_i32(const uint8_t *p, size_t size, size_t *at, int32_t *v) {
  if (size - *at < 4) return -1;
  uint32_t u = (uint32_t)p[*at] | (uint32_t)p[*at + 1] << 8 | (uint32_t)p[*at + 2] << 16 |
               (uint32_t)p[*at + 3] << 24;
  memcpy(v, &u, 4);
  *at += 4;
  return 0;
}

static int parse_legacy(const uint8_t *p, size_t size, const char *what, mkc_imatrix *im) {
  size_t at = 0;
  int32_t n_entries;
  if (take_i32(p, size, &at, &n_entries) || n_entries < 1)
    return mkc_error_in(what, "not an importance matrix (neither GGUF nor llama-imatrix's .dat)");
  if ((size_t)n_entries > size / 12) /* each entry takes 12 bytes at least */
    return mkc_error_in(what,
                        "not an importance matrix (neither GGUF nor llama-imatrix's .dat): %d "
                        "entries cannot fit in %zu bytes",
                        n_entries, size);
  im->legacy = 1;
  im->entries = calloc((size_t)n_entries, sizeof *im->entries);
  if (!im->entries) return mkc_error_in(what, "out of memory");
  for (int32_t i = 0; i < n_entries; i++) {
    int32_t len, calls, n;
    if (take_i32(p, size, &at, &len) || len < 1 || (size_t)len > size - at)
      return mkc_error_in(what, "entry %d: its name is cut short", i + 1);
    mkc_imatrix_entry *e = &im->entries[im->n++];
    if (!(e->name = malloc((size_t)len + 1))) return mkc_error_in(what, "out of memory");
    memcpy(e->name, p + at, (size_t)len);
    e->name[len] = 0;
    at += (size_t)len;
    if (strlen(e->name) != (size_t)len)
      return mkc_error_in(what, "entry %d: a NUL inside its name", i + 1);
    if (take_i32(p, size, &at, &calls) || take_i32(p, size, &at, &n) || n < 1 ||
        (size_t)n > (size - at) / 4)
      return mkc_error_in(what, "%s: its values are cut short", e->name);
    if (!(e->values = malloc((size_t)n * sizeof *e->values)) ||
        !(e->sums = malloc((size_t)n * sizeof *e->sums)) ||
        !(e->counts = malloc(sizeof *e->counts)))
      return mkc_error_in(what, "out of memory");
    e->n = (size_t)n, e->mats = 1;
    memcpy(e->sums, p + at, (size_t)n * 4); /* little-endian floats, as this host's */
    at += (size_t)n * 4;
    e->counts[0] = calls < 0 ? 0 : (float)calls;
    for (int32_t k = 0; k < n; k++) {
      if (!isfinite(e->sums[k]) || e->sums[k] < 0)
        return mkc_error_in(what, "%s: value %d is %g: not a mean square", e->name, k,
                            (double)e->sums[k]);
      e->values[k] = calls > 0 ? e->sums[k] / (float)calls : e->sums[k];
    }
  }
  int32_t chunks, len;
  if (at < size) { /* optional: chunks, then the dataset's name */
    if (take_i32(p, size, &at, &chunks) || chunks < 0)
      return mkc_error_in(what, "the chunk count after the entries is cut short or negative");
    im->chunks = chunks;
    if (at < size) {
      if (take_i32(p, size, &at, &len) || len < 0 || (size_t)len != size - at)
        return mkc_error_in(what, "the dataset's name after the entries is cut short");
      if (len > 0 && (!(im->dataset = strndup((const char *)p + at, (size_t)len)) ||
                      !(im->datasets = malloc(sizeof *im->datasets)) ||
                      !(im->datasets[im->n_datasets++] = strdup(im->dataset))))
        return mkc_error_in(what, "out of memory");
    }
  }
  return finish(im, what);
}

/* NAME.in_sum2 and NAME.counts into one entry of means. */
static int gguf_entry(const mkc_gguf *f, const mkc_gguf_tensor *sums, const char *what,
                      mkc_imatrix_entry *e) {
  size_t base = strlen(sums->name) - strlen(".in_sum2");
  char counts_name[600];
  snprintf(counts_name, sizeof counts_name, "%.*s.counts", (int)base, sums->name);
  const mkc_gguf_tensor *counts = mkc_gguf_find_tensor(f, counts_name);
  if (!counts) return mkc_error_in(what, "%s has no %s", sums->name, counts_name);
  if (sums->type != MKC_GGML_F32 || counts->type != MKC_GGML_F32)
    return mkc_error_in(what, "%s and %s must be F32", sums->name, counts->name);
  if (!sums->n_elems) /* a matrix of no columns */
    return mkc_error_in(what, "%s holds no sums", sums->name);
  if (!counts->n_elems || sums->n_elems % counts->n_elems)
    return mkc_error_in(what, "%s: %llu counts do not divide %llu sums", sums->name,
                        (unsigned long long)counts->n_elems, (unsigned long long)sums->n_elems);
  if (!(e->name = strndup(sums->name, base)) ||
      !(e->values = malloc((size_t)sums->n_elems * sizeof *e->values)) ||
      !(e->sums = malloc((size_t)sums->n_elems * sizeof *e->sums)) ||
      !(e->counts = malloc((size_t)counts->n_elems * sizeof *e->counts)))
    return mkc_error_in(what, "out of memory");
  e->n = (size_t)sums->n_elems, e->mats = (size_t)counts->n_elems;
  size_t cols = e->n / e->mats;
  for (size_t j = 0; j < e->mats; j++) {
    float count, sum;
    memcpy(&count, counts->data + 4 * j, 4);
    if (!isfinite(count) || count < 0)
      return mkc_error_in(what, "%s: count %zu is %g", counts->name, j, (double)count);
    e->counts[j] = count;
    for (size_t i = 0; i < cols; i++) {
      memcpy(&sum, sums->data + 4 * (j * cols + i), 4);
      if (!isfinite(sum) || sum < 0)
        return mkc_error_in(what, "%s: sum %zu is %g: not a sum of squares", sums->name,
                            j * cols + i, (double)sum);
      e->sums[j * cols + i] = sum;
      e->values[j * cols + i] = count > 0 ? sum / count : 1;
      if (!isfinite(e->values[j * cols + i])) /* a huge sum over a tiny count */
        return mkc_error_in(what, "%s: sum %zu over count %g is past float's range", sums->name,
                            j * cols + i, (double)count);
    }
  }
  return 0;
}

static int parse_gguf(const void *data, size_t size, const char *what, mkc_imatrix *im) {
  mkc_gguf *f = mkc_gguf_open_memory(data, size, what);
  if (!f) return -1;
  int rc = -1;
  const mkc_gguf_kv *sets;
  uint32_t chunks, chunk_size;
  if (mkc_gguf_get_arr(f, "imatrix.datasets", MKC_GGUF_STRING, &sets) != 1 ||
      mkc_gguf_get_u32(f, "imatrix.chunk_count", &chunks) != 1 ||
      mkc_gguf_get_u32(f, "imatrix.chunk_size", &chunk_size) != 1) {
    mkc_error_in(what, "no imatrix.datasets, imatrix.chunk_count and imatrix.chunk_size: "
                       "not llama-imatrix's GGUF");
    goto done;
  }
  im->chunks = chunks > INT32_MAX ? INT32_MAX : (int)chunks;
  im->chunk_size = chunk_size > INT32_MAX ? INT32_MAX : (int)chunk_size;
  if (sets->n && !(im->dataset = strndup(sets->strs[0].s, (size_t)sets->strs[0].len))) {
    mkc_error_in(what, "out of memory");
    goto done;
  }
  if (sets->n && !(im->datasets = calloc((size_t)sets->n, sizeof *im->datasets))) {
    mkc_error_in(what, "out of memory");
    goto done;
  }
  for (uint64_t i = 0; i < sets->n; i++)
    if (!(im->datasets[im->n_datasets++] = strndup(sets->strs[i].s, (size_t)sets->strs[i].len))) {
      mkc_error_in(what, "out of memory");
      goto done;
    }
  if (!(im->entries = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *im->entries))) {
    mkc_error_in(what, "out of memory");
    goto done;
  }
  size_t sums = 0, counts = 0, suffix = strlen(".in_sum2");
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    const mkc_gguf_tensor *t = &f->tensors[i];
    size_t len = strlen(t->name);
    if (len > strlen(".counts") && strcmp(t->name + len - 7, ".counts") == 0) counts++;
    if (len <= suffix || strcmp(t->name + len - suffix, ".in_sum2") != 0) continue;
    sums++;
    if (gguf_entry(f, t, what, &im->entries[im->n++])) goto done;
  }
  if (counts != sums) {
    mkc_error_in(what, "%zu .counts tensors for %zu .in_sum2: some counts have no sums", counts,
                 sums);
    goto done;
  }
  rc = finish(im, what);
done:
  mkc_gguf_close(f);
  return rc;
}

int mkc_imatrix_parse(const void *data, size_t size, const char *name, mkc_imatrix *im) {
  memset(im, 0, sizeof *im);
  int rc = size >= 4 && memcmp(data, "GGUF", 4) == 0 ? parse_gguf(data, size, name, im)
                                                     : parse_legacy(data, size, name, im);
  if (rc) mkc_imatrix_free(im);
  return rc;
}

int mkc_imatrix_load(const char *path, mkc_imatrix *im) {
  size_t size;
  void *data = mkc_read_file(path, &size);
  if (!data) {
    memset(im, 0, sizeof *im);
    return mkc_error_in(path, "%s", strerror(errno));
  }
  int rc = mkc_imatrix_parse(data, size, path, im);
  free(data);
  return rc;
}

static void free_entry(mkc_imatrix_entry *e) {
  free(e->name), free(e->values), free(e->sums), free(e->counts);
}

void mkc_imatrix_free(mkc_imatrix *im) {
  for (size_t i = 0; i < im->n; i++) free_entry(&im->entries[i]);
  free(im->entries);
  free(im->dataset);
  for (size_t i = 0; i < im->n_datasets; i++) free(im->datasets[i]);
  free(im->datasets);
  memset(im, 0, sizeof *im);
}

const mkc_imatrix_entry *mkc_imatrix_find(const mkc_imatrix *im, const char *name) {
  mkc_imatrix_entry key = {.name = (char *)name};
  return im->n ? bsearch(&key, im->entries, im->n, sizeof key, by_name) : NULL;
}

void mkc_imatrix_filter(mkc_imatrix *im, const char *const *names, int n, int keep) {
  size_t kept = 0;
  for (size_t i = 0; i < im->n; i++) {
    int match = 0;
    for (int k = 0; k < n && !match; k++) match = strstr(im->entries[i].name, names[k]) != NULL;
    if (match == keep)
      im->entries[kept++] = im->entries[i];
    else
      free_entry(&im->entries[i]);
  }
  im->n = kept;
}
