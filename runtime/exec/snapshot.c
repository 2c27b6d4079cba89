/* KV snapshots (see snapshot.h): the checks, then copies through the
 * backend's store functions (backend/backend.h), which know where each
 * backend keeps a position's rows. */
#include "snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_impl.h"

struct mkc_kv_snap {
  mkc_session *s;
  int from, to;
  int *tokens; /* [to]: the tokens of positions [0, to) */
  void *store; /* the backend's rows of positions [from, to), row 0 = position from */
  /* [s->n_rings]: for each sliding window's ring, the first position whose
   * rows the snapshot holds: a ring held only its last rows. */
  int *held_from;
};

/* An empty snapshot of s for [from, to) with room for its tokens; NULL +
 * message. */
static mkc_kv_snap *open_snapshot(mkc_session *s, int from, int to) {
  const mkc_backend_ops *ops = s->b->ops;
  if (!ops->store_open) {
    fprintf(stderr, "mkc: error: the %s backend keeps no KV snapshots\n", ops->name);
    return NULL;
  }
  mkc_kv_snap *snap = calloc(1, sizeof *snap);
  int *tokens = malloc((size_t)(to > 0 ? to : 1) * sizeof *tokens);
  int *held_from = calloc((size_t)(s->n_rings > 0 ? s->n_rings : 1), sizeof *held_from);
  if (!snap || !tokens || !held_from) {
    fprintf(stderr, "mkc: error: out of memory for a KV snapshot\n");
    free(snap);
    free(tokens);
    free(held_from);
    return NULL;
  }
  snap->s = s;
  snap->from = from;
  snap->to = to;
  snap->tokens = tokens;
  snap->held_from = held_from;
  snap->store = ops->store_open(s->b, to - from);
  if (!snap->store) {
    free(tokens);
    free(held_from);
    free(snap);
    return NULL;
  }
  s->n_snapshots++;
  return snap;
}

mkc_kv_snap *mkc_kv_snapshot(mkc_session *s, int from) {
  int pos = s->state.pos;
  if (from < 0 || from > pos) {
    fprintf(stderr,
            "mkc: error: cannot snapshot positions [%d, %d): the session holds positions [0, %d)\n",
            from, pos, pos);
    return NULL;
  }
  mkc_kv_snap *snap = open_snapshot(s, from, pos);
  if (!snap) return NULL;
  memcpy(snap->tokens, s->tokens, (size_t)pos * sizeof *snap->tokens);
  for (int r = 0; r < s->n_rings; r++)
    snap->held_from[r] = s->rings[r].intact_from > from ? s->rings[r].intact_from : from;
  if (s->b->ops->store_copy(s->b, snap->store, 0, NULL, from, pos - from) != 0) {
    mkc_kv_snapshot_free(snap);
    return NULL;
  }
  return snap;
}

/* The first position in [0, n) where a and b differ; -1 where none does. */
static int first_difference(const int *a, const int *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return -1;
}

int mkc_kv_snapshot_held(const mkc_kv_snap *snap, int ring) { return snap->held_from[ring]; }

/* A sliding window's rows the restore cannot bring back: the window before
 * target must lie in what the snapshot holds of its ring, or, where the
 * snapshot holds its ring's rows from its first position on, reach below it
 * into rows the session's ring still holds. Why not, or NULL. */
static const char *lost_window(const mkc_session *s, const mkc_kv_snap *snap, int target, char *why,
                               size_t size) {
  for (int r = 0; r < s->n_rings; r++) {
    const mkc_ring *ring = &s->rings[r];
    int need = mkc_ring_needs(ring, target), held = snap->held_from[r];
    if (target == 0 || need >= held || (held == snap->from && need >= ring->intact_from)) continue;
    snprintf(why, size,
             "layer %d's sliding window needs the rows of positions [%d, %d); the snapshot "
             "holds its ring's from %d, the session's ring from %d",
             ring->layer, need, target, held, ring->intact_from);
    return why;
  }
  return NULL;
}

int mkc_kv_snapshot_lacks(const mkc_kv_snap *snap, int target) {
  char why[200];
  return lost_window(snap->s, snap, target, why, sizeof why) != NULL;
}

/* Why snap cannot be restored to target in s, or NULL. */
static const char *refusal(const mkc_session *s, const mkc_kv_snap *snap, int target, char *why,
                           size_t size) {
  int pos = s->state.pos, diff;
  if (snap->s != s)
    snprintf(why, size, "the snapshot is another session's");
  else if (target > snap->to)
    snprintf(why, size, "the snapshot ends at position %d", snap->to);
  else if (target < snap->from)
    snprintf(why, size, "the snapshot's first position is %d", snap->from);
  else if (target > pos && snap->from > 0)
    snprintf(why, size, "the session is at position %d (a restore goes back)", pos);
  else if ((diff = first_difference(s->tokens, snap->tokens, snap->from)) >= 0)
    snprintf(why, size,
             "the session's token at position %d is %d, the snapshot continues a prefix with %d "
             "there",
             diff, s->tokens[diff], snap->tokens[diff]);
  else
    return lost_window(s, snap, target, why, size);
  return why;
}

int mkc_kv_restore(mkc_session *s, const mkc_kv_snap *snap, int target) {
  char why[256];
  if (refusal(s, snap, target, why, sizeof why)) {
    fprintf(stderr, "mkc: error: cannot restore the KV snapshot of [%d, %d) to position %d: %s\n",
            snap->from, snap->to, target, why);
    return MKC_KV_REFUSED;
  }
  mkc_backend *b = s->b;
  if (b->ops->store_copy(b, NULL, snap->from, snap->store, 0, target - snap->from) != 0) return -1;
  if (b->ops->rewind && b->ops->rewind(b, target) != 0) return -1;
  s->state.pos = target;
  /* Each ring now holds the restored rows (the snapshot's, of its last `rows`
   * positions) and, where they reach down to from, the session's below. */
  for (int r = 0; r < s->n_rings; r++) {
    mkc_ring *ring = &s->rings[r];
    int restored =
        target - ring->rows > snap->held_from[r] ? target - ring->rows : snap->held_from[r];
    int below = ring->intact_from < snap->from ? ring->intact_from : snap->from;
    if (restored > snap->from)
      ring->intact_from = restored;
    else
      ring->intact_from = target - ring->rows > below ? target - ring->rows : below;
  }
  memcpy(s->tokens + snap->from, snap->tokens + snap->from,
         (size_t)(target - snap->from) * sizeof *s->tokens);
  return 0;
}

mkc_kv_snap *mkc_kv_snapshot_import(mkc_session *s, int to, const int *tokens, const void *rows,
                                    size_t bytes, const int *held_from) {
  if (to < 0 || to > s->g->max_ctx) {
    fprintf(stderr, "mkc: error: %d positions of KV rows for a context of %d\n", to, s->g->max_ctx);
    return NULL;
  }
  for (int r = 0; r < s->n_rings; r++) { /* a ring at `to` holds at most its last `rows` */
    int held = held_from ? held_from[r] : -1;
    if (held < 0 || held > to || to - held > s->rings[r].rows) {
      fprintf(stderr,
              "mkc: error: layer %d's sliding window: rows from position %d of %d, which its "
              "ring of %d rows cannot hold\n",
              s->rings[r].layer, held, to, s->rings[r].rows);
      return NULL;
    }
  }
  if (!s->b->ops->store_write) {
    fprintf(stderr, "mkc: error: the %s backend takes no KV rows from the host\n", s->b->ops->name);
    return NULL;
  }
  mkc_kv_snap *snap = open_snapshot(s, 0, to);
  if (!snap) return NULL;
  memcpy(snap->tokens, tokens, (size_t)to * sizeof *tokens);
  for (int r = 0; r < s->n_rings; r++) snap->held_from[r] = held_from[r];
  if (s->b->ops->store_write(s->b, snap->store, rows, bytes) != 0) {
    mkc_kv_snapshot_free(snap);
    return NULL;
  }
  return snap;
}

mkc_kv_snap *mkc_kv_merge(const mkc_kv_snap *a, const mkc_kv_snap *b) {
  if (a->s != b->s || a->to != b->from || first_difference(a->tokens, b->tokens, a->to) >= 0) {
    fprintf(stderr, "mkc: error: cannot merge the KV snapshots of [%d, %d) and [%d, %d): %s\n",
            a->from, a->to, b->from, b->to,
            a->s != b->s       ? "they are two sessions'"
            : a->to != b->from ? "the second does not start where the first ends"
                               : "the second continues other tokens");
    return NULL;
  }
  mkc_session *s = a->s;
  mkc_kv_snap *m = open_snapshot(s, a->from, b->to);
  if (!m) return NULL;
  memcpy(m->tokens, b->tokens, (size_t)b->to * sizeof *m->tokens);
  for (int r = 0; r < s->n_rings; r++)
    m->held_from[r] = b->held_from[r] == b->from ? a->held_from[r] : b->held_from[r];
  int n_a = a->to - a->from;
  if (s->b->ops->store_copy(s->b, m->store, 0, a->store, 0, n_a) != 0 ||
      s->b->ops->store_copy(s->b, m->store, n_a, b->store, 0, b->to - b->from) != 0) {
    mkc_kv_snapshot_free(m);
    return NULL;
  }
  return m;
}

/* The rows [at, at + n) of snap, positions relative to its from, as a new
 * snapshot of [from + at, from + at + n). */
static mkc_kv_snap *part(const mkc_kv_snap *snap, int at, int n) {
  mkc_session *s = snap->s;
  mkc_kv_snap *p = open_snapshot(s, snap->from + at, snap->from + at + n);
  if (!p) return NULL;
  memcpy(p->tokens, snap->tokens, (size_t)p->to * sizeof *p->tokens);
  for (int r = 0; r < s->n_rings; r++) {
    int held = snap->held_from[r];
    p->held_from[r] = held < p->from ? p->from : held > p->to ? p->to : held;
  }
  if (s->b->ops->store_copy(s->b, p->store, 0, snap->store, at, n) != 0) {
    mkc_kv_snapshot_free(p);
    return NULL;
  }
  return p;
}

int mkc_kv_split(const mkc_kv_snap *snap, int at, mkc_kv_snap **first, mkc_kv_snap **second) {
  *first = *second = NULL;
  if (at < snap->from || at > snap->to) {
    fprintf(stderr, "mkc: error: cannot split the KV snapshot of [%d, %d) at position %d\n",
            snap->from, snap->to, at);
    return -1;
  }
  *first = part(snap, 0, at - snap->from);
  *second = *first ? part(snap, at - snap->from, snap->to - at) : NULL;
  if (*second) return 0;
  mkc_kv_snapshot_free(*first);
  *first = NULL;
  return -1;
}

void mkc_kv_snapshot_free(mkc_kv_snap *snap) {
  if (!snap) return;
  snap->s->b->ops->store_close(snap->s->b, snap->store);
  snap->s->n_snapshots--;
  free(snap->tokens);
  free(snap->held_from);
  free(snap);
}

int mkc_kv_snapshot_from(const mkc_kv_snap *snap) { return snap->from; }
int mkc_kv_snapshot_to(const mkc_kv_snap *snap) { return snap->to; }
const int *mkc_kv_snapshot_tokens(const mkc_kv_snap *snap) { return snap->tokens; }

void *mkc_kv_snapshot_read(const mkc_kv_snap *snap, size_t *bytes) {
  return snap->s->b->ops->store_read(snap->s->b, snap->store, bytes);
}
