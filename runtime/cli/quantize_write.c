/* mkc quantize's output: each tensor read and encoded a slab of rows at a time as the file is
 * written, the metadata copied with llama-quantize's changes, and --keep-split's files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/dequant.h"
#include "formats/quantize.h"
#include "quantize_cmd.h"

static const char *type_name(uint32_t t) { return mkc_ggml_type(t)->name; }

/* The writer's metadata: IN's, with general.file_type and general.quantization_version set and
 * a split file's keys left out (and an earlier importance matrix's, where imatrix_metadata
 * writes this one's). */
static int copy_metadata(const mkc_gguf *f, int ftype, int new_imatrix, const char *arch,
                         int blocks, mkc_gguf_writer *w) {
  int have_ft = 0, have_qv = 0;
  char block_count[200];
  snprintf(block_count, sizeof block_count, "%s.block_count", arch);
  for (uint64_t k = 0; k < f->n_kv; k++) {
    const mkc_gguf_kv *kv = &f->kv[k];
    int rc;
    if (strncmp(kv->key, "split.", 6) == 0) continue;
    if (new_imatrix && strncmp(kv->key, "quantize.imatrix.", 17) == 0) continue;
    if (blocks >= 0 && strcmp(kv->key, block_count) == 0)
      rc = mkc_gguf_set_u32(w, kv->key, (uint32_t)blocks); /* --prune-layers */
    else if (strcmp(kv->key, "general.file_type") == 0)
      have_ft = 1, rc = mkc_gguf_set_u32(w, kv->key, (uint32_t)ftype);
    else if (strcmp(kv->key, "general.quantization_version") == 0)
      have_qv = 1, rc = mkc_gguf_set_u32(w, kv->key, 2);
    else
      rc = mkc_gguf_copy_kv(f, kv, w);
    if (rc) return -1;
  }
  if (!have_qv && mkc_gguf_set_u32(w, "general.quantization_version", 2)) return -1;
  if (!have_ft && mkc_gguf_set_u32(w, "general.file_type", (uint32_t)ftype)) return -1;
  return 0;
}

uint64_t mkc_quantize_imatrix_size(const mkc_gguf_tensor *t) {
  return t->ne[1] > 0 ? t->n_elems / (uint64_t)t->ne[1] : 0;
}

/* The importance matrix's values for tensor t (NULL: none, said on stderr as llama-quantize
 * says it; or a size imatrix_fits let pass: token_embd's). */
static const float *importance(const quantize_options *o, const mkc_gguf_tensor *t, uint32_t type) {
  if (!o->imatrix || type == t->type || !mkc_quantize_has_fit(type)) return NULL;
  const mkc_imatrix_entry *e = mkc_imatrix_find(&o->im, t->name);
  if (e && e->n == mkc_quantize_imatrix_size(t)) return e->values;
  fprintf(stderr, "mkc: quantize: %s: %s; unweighted\n", t->name,
          e ? "the importance matrix's entry is not its size" : "no importance matrix entry");
  return NULL;
}

/* A slab of rows of a tensor read as floats (mkc_gguf_read_tensor's read: guarded). */
typedef struct slab {
  const mkc_gguf_tensor *t;
  const uint8_t *src;
  size_t n;
  float *x;
} slab;
static int read_slab(void *ctx) {
  const slab *s = ctx;
  if (mkc_dequant_f32(s->t->type, s->src, s->n, s->x) == 0) return 0;
  fprintf(stderr, "mkc: error: quantize: %s: mkc cannot read %s\n", s->t->name,
          type_name(s->t->type));
  return -1;
}

/* Tensor t's bytes in type (its own: copied as they are) at out, its size: read and encoded a
 * slab of rows at a time, each slab's floats and bytes within --max-buffer-size (llama-quantize's
 * limit; at least a row). 0, or -1 after a message. */
static int encode(const quantize_options *o, const mkc_gguf *f, const mkc_gguf_tensor *t,
                  uint32_t type, uint64_t bytes, uint8_t *out) {
  if (type == t->type) return mkc_gguf_copy_tensor(f, t, out);
  if (!t->n_elems) return 0; /* no rows, or no columns */
  const float *imp = importance(o, t, type);
  /* a slice a expert: each its own part of the importance matrix */
  size_t cols = (size_t)t->ne[0], rows = (size_t)t->ne[1],
         slices = (size_t)t->n_elems / cols / rows;
  size_t src_row = (size_t)t->n_bytes / slices / rows, dst_row = (size_t)bytes / slices / rows;
  size_t per_row = src_row + dst_row + cols * sizeof(float);
  size_t slab_rows = o->max_buffer / per_row < rows ? o->max_buffer / per_row : rows;
  if (slab_rows < 1) slab_rows = 1;
  float *x = malloc(slab_rows * cols * sizeof *x);
  if (!x) {
    fprintf(stderr, "mkc: error: quantize: %s: out of memory for %zu rows\n", t->name, slab_rows);
    return -1;
  }
  int rc = 0;
  for (size_t e = 0; e < slices && !rc; e++)
    for (size_t r = 0; r < rows && !rc; r += slab_rows) {
      size_t nr = rows - r < slab_rows ? rows - r : slab_rows, row = e * rows + r;
      slab sl = {t, t->data + row * src_row, nr * cols, x};
      if ((rc = mkc_gguf_read_tensor(f, t, read_slab, &sl)) != 0)
        break; /* said: unreadable, or truncated or changed while reading */
      if ((rc = mkc_quantize_fit(type, x, nr, cols, imp ? imp + e * cols : NULL,
                                 out + row * dst_row, o->threads)) != 0)
        fprintf(stderr, "mkc: error: quantize: %s: mkc cannot write %s\n", t->name,
                type_name(type));
    }
  free(x);
  return rc;
}

void mkc_quantize_report(const quantize_plan *p, uint64_t k) {
  const mkc_gguf_tensor *t = &p->f->tensors[p->order[k]];
  const char *to = type_name(p->types[k]);
  if (p->fell[k] != MKC_QUANT_NO_TYPE)
    fprintf(stderr, "mkc: quantize: %s: %lld columns are not whole blocks of %s; %s instead\n",
            p->names[k], (long long)t->ne[0], type_name(p->fell[k]), to);
  char shape[80];
  int n = snprintf(shape, sizeof shape, "%lld", (long long)t->ne[0]);
  for (uint32_t d = 1; d < t->n_dims && n < (int)sizeof shape; d++)
    n += snprintf(shape + n, sizeof shape - (size_t)n, ", %lld", (long long)t->ne[d]);
  fprintf(stderr, "[%4llu/%4llu] %-36s [%s] %s -> %s, %.3f -> %.3f MiB\n",
          (unsigned long long)k + 1, (unsigned long long)p->n, p->names[k], shape,
          type_name(t->type), to, t->n_bytes / 1048576.0, p->bytes[k] / 1048576.0);
}

/* One output file's tensors: plan entries first .. first + n - 1. */
typedef struct out_file {
  const quantize_plan *p;
  uint64_t first;
} out_file;

/* The writer's fill (mkc_gguf_set_fill): tensor k of a file encoded as the file is written, one
 * at a time, so the output is never all in memory. */
static int fill(void *ctx, size_t k, void *out) {
  const out_file *of = ctx;
  const quantize_plan *p = of->p;
  k += of->first;
  const mkc_gguf_tensor *t = &p->f->tensors[p->order[k]];
  if (encode(p->o, p->f, t, p->types[k], p->bytes[k], out) != 0) return -1;
  mkc_quantize_report(p, k);
  return 0;
}

/* llama-quantize's record of the importance matrix in the output's metadata. */
static int imatrix_metadata(const quantize_options *o, mkc_gguf_writer *w) {
  if (!o->im.n) return 0;
  uint32_t entries = (uint32_t)o->im.n, chunks = (uint32_t)o->im.chunks;
  if (mkc_gguf_set_str(w, "quantize.imatrix.file", o->imatrix) ||
      (o->im.dataset && mkc_gguf_set_str(w, "quantize.imatrix.dataset", o->im.dataset)) ||
      mkc_gguf_set_u32(w, "quantize.imatrix.entries_count", entries) ||
      (chunks && mkc_gguf_set_u32(w, "quantize.imatrix.chunks_count", chunks)))
    return -1;
  return 0;
}

int mkc_quantize_write(const quantize_plan *p, const char *arch, int ftype, int blocks) {
  const quantize_options *o = p->o;
  const mkc_gguf *f = p->f;
  /* as llama-quantize: through the last file that keeps a tensor (--prune-layers may empty some) */
  uint32_t files =
      o->keep_split && f->n_split > 1 && p->n ? f->tensors[p->order[p->n - 1]].shard + 1 : 1;
  uint64_t k = 0;
  for (uint32_t s = 0; s < files; s++) {
    mkc_gguf_writer *w = mkc_gguf_writer_new();
    out_file of = {p, k};
    int bad = !w;
    if (!bad && s == 0)
      bad =
          copy_metadata(f, ftype, o->im.n > 0, arch, blocks, w) != 0 || imatrix_metadata(o, w) != 0;
    if (!bad && files > 1) {
      uint16_t no = (uint16_t)s, count = (uint16_t)files;
      int32_t listed = (int32_t)p->n;
      bad = mkc_gguf_set(w, "split.no", MKC_GGUF_UINT16, &no) != 0 ||
            mkc_gguf_set(w, "split.count", MKC_GGUF_UINT16, &count) != 0 ||
            mkc_gguf_set(w, "split.tensors.count", MKC_GGUF_INT32, &listed) != 0;
    }
    for (; !bad && k < p->n && (files == 1 || f->tensors[p->order[k]].shard == s); k++) {
      const mkc_gguf_tensor *t = &f->tensors[p->order[k]];
      bad = mkc_gguf_add_deferred(w, p->names[k], p->types[k], t->n_dims, t->ne) != 0;
    }
    char path[4300];
    if (o->keep_split)
      snprintf(path, sizeof path, "%s-%05u-of-%05u.gguf", o->out, s + 1, files);
    else
      snprintf(path, sizeof path, "%s", o->out);
    if (!bad) mkc_gguf_set_fill(w, fill, &of);
    bad = bad || mkc_gguf_write(w, path) != 0;
    if (!w) fprintf(stderr, "mkc: error: quantize: out of memory\n");
    mkc_gguf_writer_free(w);
    if (bad) return -1;
  }
  return 0;
}
