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
  uint64_t tokens = get_le(p + 16, 4), rings = get_le(p + 20, 4), bytes = get_le(p + 24, 8);
  if (rings > 1024 || tokens > (1u << 24) || bytes > n ||
      n - HEADER != rings * 4 + tokens * 4 + bytes) {
    snprintf(why, cap,
             "%zu bytes, not the %llu windows, %llu tokens and %llu bytes of rows its header says",
             n, (unsigned long long)rings, (unsigned long long)tokens, (unsigned long long)bytes);
    return -1;
  }
  f->model_id = get_le(p + 8, 8);
  f->n_tokens = (int)tokens;
  f->n_rings = (int)rings;
  f->held_from = p + HEADER;
  f->tokens = p + HEADER + rings * 4;
  f->rows = f->tokens + tokens * 4;
  f->n_bytes = (size_t)bytes;
  return 0;
}

size_t mkc_kv_file_bytes(int n_rings, int n, size_t rows) {
  return HEADER + (size_t)(n_rings + n) * 4 + rows;
}

int mkc_kv_file_write(const char *path, uint64_t model_id, const int *held_from, int n_rings,
                      const int *tokens, int n, const void *rows, size_t bytes) {
  unsigned char head[HEADER] = {0}, *words = malloc((size_t)(n_rings + n) * 4 + 1);
  if (!words) {
    fprintf(stderr, "mkc: error: out of memory\n");
    return -1;
  }
  memcpy(head, MAGIC, sizeof MAGIC);
  put_le(head + 8, model_id, 8);
  put_le(head + 16, (uint64_t)n, 4);
  put_le(head + 20, (uint64_t)n_rings, 4);
  put_le(head + 24, bytes, 8);
  for (int r = 0; r < n_rings; r++) put_le(words + 4 * (size_t)r, (uint32_t)held_from[r], 4);
  for (int i = 0; i < n; i++) put_le(words + 4 * (size_t)(n_rings + i), (uint32_t)tokens[i], 4);
  const void *parts[] = {head, words, rows};
  const size_t sizes[] = {HEADER, (size_t)(n_rings + n) * 4, bytes};
  int rc = mkc_write_atomic(path, parts, sizes, 3);
  free(words);
  return rc;
}

int mkc_kv_write(mkc_session *s, int n, uint64_t model_id, const char *path, size_t *written,
                 char *why, size_t cap) {
  *written = 0;
  snprintf(why, cap, "the copy or the write failed (the log says why)");
  mkc_kv_snap *all = mkc_kv_snapshot(s, 0), *first = NULL, *rest = NULL;
  if (!all) return -1;
  if (n > mkc_kv_snapshot_to(all)) n = mkc_kv_snapshot_to(all);
  if (n < 0) n = 0;
  if (n < mkc_kv_snapshot_to(all) && mkc_kv_split(all, n, &first, &rest) != 0) {
    mkc_kv_snapshot_free(all);
    return -1;
  }
  const mkc_kv_snap *kept = first ? first : all;
  size_t bytes;
  int held[s->n_rings > 0 ? s->n_rings : 1];
  for (int r = 0; r < s->n_rings; r++) held[r] = mkc_kv_snapshot_held(kept, r);
  void *rows = mkc_kv_snapshot_read(kept, &bytes);
  int rc = rows ? mkc_kv_file_write(path, model_id, held, s->n_rings, mkc_kv_snapshot_tokens(kept),
                                    n, rows, bytes)
                : -1;
  if (rc == 0) *written = mkc_kv_file_bytes(s->n_rings, n, bytes), why[0] = 0;
  free(rows);
  mkc_kv_snapshot_free(rest);
  mkc_kv_snapshot_free(first);
  mkc_kv_snapshot_free(all);
  return rc == 0 ? n : -1;
}

int mkc_kv_save(mkc_session *s, int n, uint64_t model_id, const char *path) {
  char why[200];
  size_t written;
  return mkc_kv_write(s, n, model_id, path, &written, why, sizeof why) < 0 ? -1 : 0;
}

int *mkc_kv_file_tokens(const mkc_kv_file *f) {
  int *tokens = malloc((size_t)(f->n_tokens + 1) * sizeof *tokens);
  for (int i = 0; tokens && i < f->n_tokens; i++)
    tokens[i] = (int)(int32_t)(uint32_t)get_le(f->tokens + 4 * (size_t)i, 4);
  return tokens;
}

/* f's rows as a snapshot of s, the kernels' token history (the penalties
 * index their counts by it; it ends a cpu or cuda store) rewritten to
 * hist[0..n_hist) and 0 after, so that a crafted file cannot send it out of
 * the vocabulary. NULL after a message (not this session's rows: another
 * layout, other sliding windows), or with *oom set. */
static mkc_kv_snap *import_rows(mkc_session *s, const mkc_kv_file *f, const int *tokens,
                                const int *hist, int n_hist, int *oom) {
  *oom = 0;
  if (f->n_rings != s->n_rings) {
    fprintf(stderr, "mkc: error: KV rows of %d sliding windows for a model with %d\n", f->n_rings,
            s->n_rings);
    return NULL;
  }
  unsigned char *rows = malloc(f->n_bytes ? f->n_bytes : 1);
  int held[f->n_rings > 0 ? f->n_rings : 1];
  for (int r = 0; r < f->n_rings; r++)
    held[r] = (int)(int32_t)(uint32_t)get_le(f->held_from + 4 * (size_t)r, 4);
  *oom = !rows;
  if (!rows) return NULL;
  memcpy(rows, f->rows, f->n_bytes);
  if (strcmp(mkc_session_backend(s), "ref") != 0 &&
      f->n_bytes == mkc_kv_store_bytes(s->g, f->n_tokens))
    for (int i = 0; i < f->n_tokens; i++) {
      int32_t id = i < n_hist ? hist[i] : 0;
      memcpy(rows + f->n_bytes - (size_t)(f->n_tokens - i) * sizeof id, &id, sizeof id);
    }
  mkc_kv_snap *snap = mkc_kv_snapshot_import(s, f->n_tokens, tokens, rows, f->n_bytes, held);
  free(rows);
  return snap;
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
    int *tokens = mkc_kv_file_tokens(&f), same = 0, oom = !tokens;
    while (tokens && same < f.n_tokens && same < n_prompt - 1 && tokens[same] == prompt[same])
      same++;
    /* the prompt's tokens in the history, not the file's */
    mkc_kv_snap *snap = tokens ? import_rows(s, &f, tokens, prompt, same, &oom) : NULL;
    if (oom)
      fprintf(stderr, "mkc: error: out of memory\n");
    else if (!snap)
      fprintf(stderr,
              "mkc: warning: --prompt-cache %s: its rows are not this session's (see "
              "above): not used\n",
              path);
    /* a sliding window kept only its last rows: the prompt may need older ones */
    if (snap && same > 0 && mkc_kv_snapshot_lacks(snap, same)) {
      fprintf(stderr,
              "mkc: warning: --prompt-cache %s: the prompt shares its first %d tokens, but a "
              "sliding window's rows for them are older than the file's last ones: not used\n",
              path, same);
      same = 0;
    }
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

int mkc_kv_read(mkc_session *s, uint64_t model_id, const char *path, int **tokens_out,
                size_t *bytes_read, char *why, size_t cap) {
  *tokens_out = NULL;
  *bytes_read = 0;
  size_t n;
  void *data = mkc_read_file(path, &n);
  if (!data) {
    snprintf(why, cap, "%s", strerror(errno));
    return -1;
  }
  mkc_kv_file f;
  int rc = -1, *tokens = NULL, oom = 0, bad = -1;
  if (mkc_kv_file_parse(data, n, &f, why, cap) != 0) {
    /* why says it */
  } else if (f.model_id != model_id) {
    snprintf(why, cap, "it was written for another model or kernel");
  } else if (!(tokens = mkc_kv_file_tokens(&f))) {
    oom = 1;
  } else {
    for (int i = 0; i < f.n_tokens && bad < 0; i++)
      if (tokens[i] < 0 || tokens[i] >= s->g->vocab) bad = i;
    if (bad >= 0) {
      snprintf(why, cap, "its token %d (position %d) is not in the vocabulary of %d", tokens[bad],
               bad, s->g->vocab);
    } else {
      /* every token is the model's: the history is the file's own */
      mkc_kv_snap *snap = import_rows(s, &f, tokens, tokens, f.n_tokens, &oom);
      if (snap && mkc_kv_restore(s, snap, f.n_tokens) == 0)
        rc = f.n_tokens;
      else if (!oom)
        snprintf(why, cap, "its rows are not this session's, or do not fit it (the log says why)");
      mkc_kv_snapshot_free(snap);
    }
  }
  if (oom) snprintf(why, cap, "out of memory");
  if (rc >= 0) {
    *tokens_out = tokens;
    *bytes_read = n;
  } else {
    free(tokens);
  }
  free(data);
  return rc;
}
