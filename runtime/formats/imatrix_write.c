/* Writes importance matrices in llama-imatrix's two formats (imatrix.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "imatrix.h"
#include "util/buf.h"
#include "util/files.h"

static int write_gguf(const char *path, const mkc_imatrix_sums *s, const char *const *datasets,
                      size_t n_datasets, int chunks, int chunk_size) {
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  float *values = NULL;
  size_t total = 0;
  for (size_t i = 0; i < s->n; i++) total += ((size_t)s->cols[i] + 1) * (size_t)s->mats[i];
  int rc = -1;
  if (!w || !(values = malloc((total ? total : 1) * sizeof *values))) {
    mkc_error_in(path, "out of memory");
    goto done;
  }
  if (mkc_gguf_set_str(w, "general.type", "imatrix") ||
      mkc_gguf_set_arr(w, "imatrix.datasets", MKC_GGUF_STRING, datasets, n_datasets) ||
      mkc_gguf_set_u32(w, "imatrix.chunk_count", (uint32_t)chunks) ||
      mkc_gguf_set_u32(w, "imatrix.chunk_size", (uint32_t)chunk_size))
    goto done;
  float *v = values;
  for (size_t i = 0; i < s->n; i++) {
    char name[600];
    size_t vals = (size_t)s->cols[i] * (size_t)s->mats[i];
    int64_t ne_sums[2] = {s->cols[i], s->mats[i]}, ne_count[2] = {1, s->mats[i]};
    for (size_t c = 0; c < vals; c++) v[c] = (float)s->sums[i][c];
    for (int m = 0; m < s->mats[i]; m++) v[vals + (size_t)m] = (float)s->counts[i][m];
    snprintf(name, sizeof name, "%s.in_sum2", s->names[i]);
    int dims = s->mats[i] > 1 ? 2 : 1; /* as ggml writes a [cols][1]: one dimension */
    if (mkc_gguf_add_tensor(w, name, MKC_GGML_F32, dims, ne_sums, v)) goto done;
    snprintf(name, sizeof name, "%s.counts", s->names[i]);
    if (mkc_gguf_add_tensor(w, name, MKC_GGML_F32, dims, ne_count, v + vals)) goto done;
    v += vals + (size_t)s->mats[i];
  }
  rc = mkc_gguf_write(w, path);
done:
  mkc_gguf_writer_free(w);
  free(values);
  return rc;
}

static void put_i32(mkc_buf *b, int32_t v) {
  uint32_t u = (uint32_t)v;
  char le[4] = {(char)u, (char)(u >> 8), (char)(u >> 16), (char)(u >> 24)};
  mkc_buf_put_n(b, le, 4);
}

static int write_dat(const char *path, const mkc_imatrix_sums *s, const char *dataset, int chunks,
                     int chunk_size) {
  mkc_buf b = {0};
  put_i32(&b, (int32_t)s->n);
  for (size_t i = 0; i < s->n; i++) {
    /* llama-imatrix's: each slice's mean square times the calls, a call a chunk started by the
     * slice that met the most inputs; a slice that met none (an expert never chosen) holds the
     * calls, as if each square were 1 */
    long most = 0;
    for (int m = 0; m < s->mats[i]; m++)
      if (s->counts[i][m] > most) most = s->counts[i][m];
    int32_t calls = (int32_t)((most + chunk_size - 1) / chunk_size);
    put_i32(&b, (int32_t)strlen(s->names[i]));
    mkc_buf_put_n(&b, s->names[i], strlen(s->names[i]));
    put_i32(&b, calls);
    put_i32(&b, s->cols[i] * s->mats[i]);
    for (int c = 0; c < s->cols[i] * s->mats[i]; c++) {
      long count = s->counts[i][c / s->cols[i]];
      float v = count ? (float)(s->sums[i][c] / (double)count * calls) : (float)calls;
      char le[4];
      memcpy(le, &v, 4); /* little-endian, as this host's */
      mkc_buf_put_n(&b, le, 4);
    }
  }
  put_i32(&b, chunks);
  put_i32(&b, (int32_t)strlen(dataset));
  mkc_buf_put_n(&b, dataset, strlen(dataset));
  if (b.oom) {
    free(b.s);
    return mkc_error_in(path, "out of memory");
  }
  const void *parts[1] = {b.s};
  size_t sizes[1] = {b.n};
  int rc = mkc_write_atomic(path, parts, sizes, 1);
  free(b.s);
  return rc;
}

int mkc_imatrix_write(const char *path, const mkc_imatrix_sums *s, int legacy,
                      const mkc_imatrix_meta *m) {
  return legacy ? write_dat(path, s, m->dat_dataset ? m->dat_dataset : "", m->chunks, m->chunk_size)
                : write_gguf(path, s, m->datasets, m->n_datasets, m->chunks, m->chunk_size);
}
