/* Fused matrices as the parts the graph names (gguf.h: mkc_gguf_split_rows, mkc_gguf_unfuse). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "fused.h"
#include "codegen/model_desc.h"
#include "util/files.h"
#include "util/text.h"

int mkc_gguf_split_rows(mkc_gguf *f, const char *name, int n, const char *const *names,
                        const int64_t *rows) {
  const mkc_gguf_tensor *t = mkc_gguf_find_tensor(f, name);
  if (!t) return 1;
  if (n < 1 || n > 8) return mkc_error_in(f->path, "splitting '%s' in %d", mkc_shown(name), n);
  int64_t total = 0;
  for (int k = 0; k < n; k++) total += rows[k];
  /* named as one of its parts (phi3's ffn_up) but not the parts' rows: that part alone */
  for (int k = 0; k < n; k++)
    if (strcmp(names[k], name) == 0 && !(t->n_dims == 2 && t->ne[1] == total)) return 1;
  if (t->n_dims != 2 || total < 1 || t->ne[1] != total || t->n_bytes % (uint64_t)t->ne[1] != 0)
    return mkc_error_in(f->path,
                        "tensor '%s' [%" PRId64 ", %" PRId64 "]: expected %d fused matrices of "
                        "%" PRId64 " rows in all",
                        mkc_shown(name), t->ne[1], t->ne[0], n, total);
  for (int k = 0; k < n; k++)
    if (strcmp(names[k], name) != 0 && mkc_gguf_find_tensor(f, names[k]))
      return mkc_error_in(f->path, "tensor '%s' is there both fused (in '%s') and on its own",
                          names[k], mkc_shown(name));
  uint64_t kept = f->n_tensors - 1, row_bytes = t->n_bytes / (uint64_t)t->ne[1];
  size_t count = (size_t)kept + (size_t)n;
  mkc_gguf_tensor *tensors = calloc(count, sizeof *tensors);
  mkc_gguf_tensor **by_name = malloc(count * sizeof *by_name);
  char **part_names = calloc((size_t)n, sizeof *part_names);
  int ok = tensors && by_name && part_names;
  for (int k = 0; ok && k < n; k++) ok = (part_names[k] = strdup(names[k])) != NULL;
  if (!ok) {
    for (int k = 0; part_names && k < n; k++) free(part_names[k]);
    free(part_names);
    free(tensors);
    free(by_name);
    return mkc_error_in(f->path, "out of memory splitting '%s'", mkc_shown(name));
  }
  uint64_t j = 0, off = 0;
  for (uint64_t i = 0; i < f->n_tensors; i++)
    if (&f->tensors[i] != t) tensors[j++] = f->tensors[i];
  for (int k = 0; k < n; k++) {
    mkc_gguf_tensor *p = &tensors[j++];
    *p = *t;
    p->name = part_names[k];
    p->ne[1] = rows[k];
    p->n_elems = (uint64_t)t->ne[0] * (uint64_t)rows[k];
    p->n_bytes = row_bytes * (uint64_t)rows[k];
    p->offset = t->offset + off;
    p->data = t->data + off;
    off += p->n_bytes;
  }
  free(t->name);
  free(part_names);
  mkc_gguf_take_tensors(f, tensors, by_name, j);
  return 0;
}

/* mkc_gguf_split_rows as fused.h's mkc_split_fn. */
static int split_gguf(void *f, const char *name, int n, const char *const *names,
                      const int64_t *rows) {
  return mkc_gguf_split_rows(f, name, n, names, rows);
}

/* phi3 files fuse each layer's Q, K and V (attn_qkv) and its MLP's gate and
 * up projections (ffn_up, the gate's rows first): split into the tensors the
 * graph names, as llama.cpp's phi3 reads them (a file may keep them apart). */
int mkc_gguf_unfuse(mkc_gguf *f, const mkc_model_desc *d) {
  return mkc_unfuse(d, 0, split_gguf, f);
}
