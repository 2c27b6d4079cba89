/* Split models: llama.cpp's gguf-split (and llama-quantize --keep-split) cut a model into files
 * PREFIX-00001-of-0000N.gguf .. PREFIX-0000N-of-0000N.gguf, each with split.no (0-based),
 * split.count and split.tensors.count; the first holds the metadata, every file some tensors.
 * Opening the first opens the rest and lists their tensors with its own. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf.h"
#include "util/files.h"
#include "util/text.h"

/* A split key's value: 1 found, 0 absent, -1 after a message. */
static int split_key(const mkc_gguf *f, const char *key, int64_t *v) {
  int rc = mkc_gguf_get_int(f, key, v);
  if (rc == 1 && (*v < 0 || *v > 65535))
    return mkc_error_in(f->path, "%s is %" PRId64 ", not a shard number (0..65535)", key, *v);
  return rc;
}

/* The PREFIX of path, a file named PREFIX-NNNNN-of-MMMMM.gguf for shard no (0-based) of count,
 * into prefix; 0, or -1 when path is not named so. */
static int split_prefix(const char *path, int no, int count, char *prefix, size_t size) {
  char tail[40];
  snprintf(tail, sizeof tail, "-%05d-of-%05d.gguf", no + 1, count);
  size_t n = strlen(path), t = strlen(tail);
  if (n <= t || strcmp(path + n - t, tail) != 0 || n - t >= size) return -1;
  memcpy(prefix, path, n - t);
  prefix[n - t] = 0;
  return 0;
}

/* f's tensors followed by each shard's, by_name rebuilt; names are copied. -1 after a message (a
 * name in two files, no memory). */
static int gather(mkc_gguf *f) {
  uint64_t total = f->n_tensors;
  for (uint32_t k = 0; k + 1 < f->n_split; k++) total += f->shards[k]->n_tensors;
  mkc_gguf_tensor *all = calloc(total ? total : 1, sizeof *all);
  mkc_gguf_tensor **by_name = malloc((total ? total : 1) * sizeof *by_name);
  if (!all || !by_name) {
    free(all);
    free(by_name);
    return mkc_error_in(f->path, "out of memory for the tensors of %u files", f->n_split);
  }
  memcpy(all, f->tensors, f->n_tensors * sizeof *all);
  uint64_t n = f->n_tensors;
  for (uint32_t k = 0; k + 1 < f->n_split; k++)
    for (uint64_t i = 0; i < f->shards[k]->n_tensors; i++) {
      all[n] = f->shards[k]->tensors[i];
      all[n].shard = k + 1;
      if (!(all[n].name = strdup(all[n].name))) {
        for (uint64_t j = f->n_tensors; j < n; j++) free(all[j].name);
        free(all);
        free(by_name);
        return mkc_error_in(f->path, "out of memory for the tensors of %u files", f->n_split);
      }
      n++;
    }
  mkc_gguf_take_tensors(f, all, by_name, n);
  for (uint64_t i = 1; i < n; i++)
    if (strcmp(by_name[i - 1]->name, by_name[i]->name) == 0)
      return mkc_error_in(f->path, "tensor '%s' is in two files of the split model (%s and %s)",
                          mkc_shown(by_name[i]->name), mkc_gguf_tensor_path(f, by_name[i - 1]),
                          mkc_gguf_tensor_path(f, by_name[i]));
  return 0;
}

int mkc_gguf_open_shards(mkc_gguf *f) {
  int64_t count = 1, no = 0, listed = 0;
  int rc = split_key(f, "split.count", &count);
  if (rc <= 0 || count <= 1) return rc < 0 ? -1 : 0;
  if ((rc = split_key(f, "split.no", &no)) != 1)
    return rc < 0
               ? -1
               : mkc_error_in(f->path, "split.count is %" PRId64 " but split.no is missing", count);
  char prefix[4096];
  int named = split_prefix(f->path, (int)no, (int)count, prefix, sizeof prefix) == 0;
  if (no != 0) {
    if (named)
      return mkc_error_in(f->path,
                          "this is file %" PRId64 " of %" PRId64 " of a split model: open the "
                          "first, %s-00001-of-%05d.gguf",
                          no + 1, count, prefix, (int)count);
    return mkc_error_in(f->path,
                        "this is file %" PRId64 " of %" PRId64 " of a split model: open the first",
                        no + 1, count);
  }
  if (!named)
    return mkc_error_in(f->path,
                        "the first of %" PRId64 " files of a split model, but not named "
                        "PREFIX-00001-of-%05d.gguf (as llama.cpp's gguf-split names them), so "
                        "the others cannot be found",
                        count, (int)count);
  f->shards = calloc((size_t)count - 1, sizeof *f->shards);
  if (!f->shards) return mkc_error_in(f->path, "out of memory for %" PRId64 " files", count);
  f->n_split = (uint32_t)count; /* shards not opened stay NULL, which close skips */
  for (int64_t k = 1; k < count; k++) {
    char path[4200];
    snprintf(path, sizeof path, "%s-%05d-of-%05d.gguf", prefix, (int)k + 1, (int)count);
    if (access(path, R_OK) != 0)
      return mkc_error_in(f->path, "file %" PRId64 " of %" PRId64 " of this split model, %s: %s",
                          k + 1, count, path, strerror(errno));
    mkc_gguf *s = mkc_gguf_open_one(path); /* its own message */
    if (!s) return -1;
    f->shards[k - 1] = s;
    int64_t s_no = -1, s_count = -1;
    int rc_no = split_key(s, "split.no", &s_no), rc_count = split_key(s, "split.count", &s_count);
    if (rc_no < 0 || rc_count < 0) return -1; /* said */
    if (rc_no == 0 || rc_count == 0 || s_no != k || s_count != count) {
      return mkc_error_in(path,
                          "expected file %" PRId64 " of %" PRId64 " of a split model (split.no "
                          "%" PRId64 ", split.count %" PRId64 "), found split.no %" PRId64
                          ", split.count %" PRId64,
                          k + 1, count, k, count, s_no, s_count);
    }
  }
  if (gather(f) != 0) return -1;
  if (mkc_gguf_get_int(f, "split.tensors.count", &listed) == 1 && listed != (int64_t)f->n_tensors)
    return mkc_error_in(f->path,
                        "split.tensors.count is %" PRId64 ", but the %" PRId64
                        " files hold %" PRIu64 " tensors",
                        listed, count, f->n_tensors);
  return 0;
}

/* The file that holds tensor t. */
static const mkc_gguf *holder(const mkc_gguf *f, const mkc_gguf_tensor *t) {
  return t->shard ? f->shards[t->shard - 1] : f;
}

int mkc_gguf_read_tensor(const mkc_gguf *f, const mkc_gguf_tensor *t, int (*read)(void *ctx),
                         void *ctx) {
  return mkc_mapped_read(&holder(f, t)->map, holder(f, t)->path, read, ctx);
}

int mkc_gguf_copy_tensor(const mkc_gguf *f, const mkc_gguf_tensor *t, void *dst) {
  return mkc_mapped_copy(&holder(f, t)->map, holder(f, t)->path, dst, t->data, (size_t)t->n_bytes);
}

const char *mkc_gguf_tensor_path(const mkc_gguf *f, const mkc_gguf_tensor *t) {
  return holder(f, t)->path;
}
