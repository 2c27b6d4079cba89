/* See slot_file.h. */
#include "slot_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kv_rows.h"
#include "exec/kv_file.h"
#include "util/files.h"

int mkc_slot_file_save(mkc_slots *p, int s, uint64_t model_id, const char *path, size_t *written,
                       char *why, size_t cap) {
  *written = 0;
  snprintf(why, cap, "the copy or the write failed (the log says why)");
  size_t bytes;
  void *rows = mkc_slots_read_rows(p, s, &bytes);
  if (!rows) return -1;
  int n = mkc_slots_pos(p, s);
  int rc = mkc_kv_file_write(path, model_id, NULL, 0, mkc_slots_tokens(p, s), n, rows, bytes);
  free(rows);
  if (rc != 0) return -1;
  *written = mkc_kv_file_bytes(0, n, bytes);
  why[0] = '\0';
  return n;
}

int mkc_slot_file_restore(mkc_slots *p, int s, uint64_t model_id, const char *path,
                          size_t *bytes_read, char *why, size_t cap) {
  *bytes_read = 0;
  if (mkc_slots_clear(p, s) != 0) {
    snprintf(why, cap, "the slot could not be cleared (the log says why)");
    return -1;
  }
  size_t n;
  void *data = mkc_read_file(path, &n);
  if (!data) {
    snprintf(why, cap, "%s", strerror(errno));
    return -1;
  }
  const mkc_graph *g = mkc_slots_graph(p);
  mkc_kv_file f;
  int rc = -1, *tokens = NULL;
  if (mkc_kv_file_parse(data, n, &f, why, cap) != 0) {
    /* why says it */
  } else if (f.model_id != model_id) {
    snprintf(why, cap, "it was written for another model or kernel");
  } else if (f.n_rings != 0) {
    snprintf(why, cap, "it holds only the last rows of %d sliding window(s), not every position",
             f.n_rings);
  } else if (f.n_tokens > g->max_ctx) {
    snprintf(why, cap, "its %d tokens do not fit the context of %d", f.n_tokens, g->max_ctx);
  } else if (!(tokens = mkc_kv_file_tokens(&f))) {
    snprintf(why, cap, "out of memory");
  } else {
    int bad = -1;
    for (int i = 0; i < f.n_tokens && bad < 0; i++)
      if (tokens[i] < 0 || tokens[i] >= g->vocab) bad = i;
    if (bad >= 0)
      snprintf(why, cap, "its token %d (position %d) is not in the vocabulary of %d", tokens[bad],
               bad, g->vocab);
    else if (f.n_bytes != mkc_kv_store_bytes(g, f.n_tokens))
      snprintf(why, cap, "its %zu bytes of rows are not this kernel's %zu for %d positions",
               f.n_bytes, mkc_kv_store_bytes(g, f.n_tokens), f.n_tokens);
    else if (mkc_slots_write_rows(p, s, tokens, f.n_tokens, f.rows, f.n_bytes) != 0)
      snprintf(why, cap, "its rows could not be written to the slot (the log says why)");
    else
      rc = f.n_tokens;
  }
  if (rc >= 0) *bytes_read = n;
  free(tokens);
  free(data);
  return rc;
}
