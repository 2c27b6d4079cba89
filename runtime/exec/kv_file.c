/* See kv_file.h. */
#include "kv_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kv_rows.h"
#include "session_impl.h"
#include "snapshot.h"
#include "util/files.h"

static const char MAGIC[8] = {'M', 'K', 'C', 'K', 'V', 0, 'v', '1'};
enum { HEADER = 32 };

static uint64_t get_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void put_le(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++, v >>= 8) p[i] = (unsigned char)v;
}

int mkc_kv_file_parse(const void *data, size_t n, mkc_kv_file *f, char *why, size_t cap) {
  const unsigned char *p = data;
  memset(f, 0, sizeof *f);
  if (n < HEADER || memcmp(p, MAGIC, sizeof MAGIC) != 0) {
    snprintf(why, cap, "not a prompt cache of mkc's (no MKCKV header)");
    return -1;
  }
  uint64_t tokens = get_le(p + 16, 4), bytes = get_le(p + 24, 8);
  if (get_le(p + 20, 4) != 0 || tokens > (1u << 24) || bytes > n ||
      n - HEADER != tokens * 4 + bytes) {
    snprintf(why, cap, "%zu bytes, not the %llu tokens and %llu bytes of rows its header says", n,
             (unsigned long long)tokens, (unsigned long long)bytes);
    return -1;
  }
  f->model_id = get_le(p + 8, 8);
  f->n_tokens = (int)tokens;
  f->tokens = p + HEADER;
  f->rows = p + HEADER + tokens * 4;
  f->n_bytes = (size_t)bytes;
  return 0;
}

/* The file's bytes: header, tokens, rows, written atomically (mkc_write_atomic). */
static int write_file(const char *path, uint64_t model_id, const int *tokens, int n,
                      const void *rows, size_t bytes) {
  unsigned char head[HEADER] = {0}, *words = malloc((size_t)n * 4 + 1);
  if (!words) {
    fprintf(stderr, "mkc: error: out of memory\n");
    return -1;
  }
  memcpy(head, MAGIC, sizeof MAGIC);
  put_le(head + 8, model_id, 8);
  put_le(head + 16, (uint64_t)n, 4);
  put_le(head + 24, bytes, 8);
  for (int i = 0; i < n; i++) put_le(words + 4 * (size_t)i, (uint32_t)tokens[i], 4);
  const void *parts[] = {head, words, rows};
  const size_t sizes[] = {HEADER, (size_t)n * 4, bytes};
  int rc = mkc_write_atomic(path, parts, sizes, 3);
  free(words);
  return rc;
}

int mkc_kv_save(mkc_session *s, int n, uint64_t model_id, const char *path) {
  if (s->n_rings) { /* its rings hold the last rows only: nothing a later prompt could begin with */
    fprintf(stderr,
            "mkc: warning: --prompt-cache %s: a sliding window's cache keeps only its last "
            "rows: not saved\n",
            path);
    return 0;
  }
  mkc_kv_snap *all = mkc_kv_snapshot(s, 0), *first = NULL, *rest = NULL;
  if (!all) return -1;
  if (n > mkc_kv_snapshot_to(all)) n = mkc_kv_snapshot_to(all);
  if (n < mkc_kv_snapshot_to(all) && mkc_kv_split(all, n, &first, &rest) != 0) {
    mkc_kv_snapshot_free(all);
    return -1;
  }
  const mkc_kv_snap *kept = first ? first : all;
  size_t bytes;
  void *rows = mkc_kv_snapshot_read(kept, &bytes);
  int rc = rows ? write_file(path, model_id, mkc_kv_snapshot_tokens(kept), n, rows, bytes) : -1;
  free(rows);
  mkc_kv_snapshot_free(rest);
  mkc_kv_snapshot_free(first);
  mkc_kv_snapshot_free(all);
  return rc;
}

int mkc_kv_load(mkc_session *s, uint64_t model_id, const char *path, const int *prompt,
                int n_prompt) {
  size_t n;
  void *data = mkc_read_file(path, &n);
  if (!data) {
    if (errno != ENOENT)
      fprintf(stderr, "mkc: warning: --prompt-cache %s: %s: not used\n", path, strerror(errno));
    return 0;
  }
  mkc_kv_file f;
  char why[200];
  int rc = 0;
  if (mkc_kv_file_parse(data, n, &f, why, sizeof why) != 0) {
    fprintf(stderr, "mkc: warning: --prompt-cache %s: %s: not used\n", path, why);
  } else if (f.model_id != model_id) {
    fprintf(stderr,
            "mkc: warning: --prompt-cache %s was written for another model or kernel: "
            "not used\n",
            path);
  } else {
    int *tokens = malloc((size_t)(f.n_tokens + 1) * sizeof *tokens), same = 0;
    for (int i = 0; tokens && i < f.n_tokens; i++)
      tokens[i] = (int)(int32_t)(uint32_t)get_le(f.tokens + 4 * (size_t)i, 4);
    while (tokens && same < f.n_tokens && same < n_prompt - 1 && tokens[same] == prompt[same])
      same++;
    /* The kernels' token history (the penalties index their counts by it) ends a cpu or cuda
     * store: the prompt's tokens there, not the file's, so that a crafted file cannot send
     * them out of the vocabulary. */
    unsigned char *rows = tokens ? malloc(f.n_bytes ? f.n_bytes : 1) : NULL;
    if (rows) {
      memcpy(rows, f.rows, f.n_bytes);
      if (strcmp(mkc_session_backend(s), "ref") != 0 &&
          f.n_bytes == mkc_kv_store_bytes(s->g, f.n_tokens))
        for (int i = 0; i < f.n_tokens; i++) {
          int32_t id = i < same ? prompt[i] : 0;
          memcpy(rows + f.n_bytes - (size_t)(f.n_tokens - i) * sizeof id, &id, sizeof id);
        }
    }
    mkc_kv_snap *snap =
        rows ? mkc_kv_snapshot_import(s, f.n_tokens, tokens, rows, f.n_bytes) : NULL;
    int oom = !tokens || !rows;
    free(rows);
    if (oom)
      fprintf(stderr, "mkc: error: out of memory\n");
    else if (!snap)
      fprintf(stderr,
              "mkc: warning: --prompt-cache %s: its rows are not this session's (see "
              "above): not used\n",
              path);
    if (oom)
      rc = -1;
    else if (snap && same > 0)
      rc = mkc_kv_restore(s, snap, same) == 0 ? same : -1;
    mkc_kv_snapshot_free(snap);
    free(tokens);
  }
  free(data);
  return rc;
}
