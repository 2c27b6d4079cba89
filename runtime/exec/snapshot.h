/* KV snapshots: a copy of a session's cache rows for positions [from, to),
 * kept in the backend's own memory (device memory on the cuda backend,
 * copied device to device on the session's stream; host memory on the cpu
 * backend; the reference executor's doubles on the ref backend), with the
 * tokens of positions [0, to): the prefix the rows continue, then their own.
 *
 * Restoring writes rows back and moves the position counter, so a session
 * can go down one branch of a conversation and come back to an earlier one
 * without recomputing it: rollback stays a move of the counter plus a
 * device copy of the rows the other branch overwrote. A snapshot belongs to
 * its session: free it before the session closes. */
#ifndef MKC_SNAPSHOT_H
#define MKC_SNAPSHOT_H

#include <stddef.h>

#include "session.h"

typedef struct mkc_kv_snap mkc_kv_snap; /* one snapshot */

/* What mkc_kv_restore returns besides 0 (done) and -1 (the backend failed):
 * the restore was refused, with a message saying why; nothing changed. */
#define MKC_KV_REFUSED 1

/* The rows of positions [from, pos) of s, pos its position counter now
 * (from == pos: an empty snapshot). NULL + message when from is outside
 * [0, pos] or the copy failed. */
mkc_kv_snap *mkc_kv_snapshot(mkc_session *s, int from);

/* Writes the snapshot's rows of positions [from, target) back into its
 * session and moves the counter to target: the next step's inputs[0] is the
 * token at target. Refused (MKC_KV_REFUSED, after a message, nothing
 * changed) when the snapshot is another session's, target lies outside
 * [from, to] (past the snapshot's end, or before its first row), target lies
 * past the session's counter (a restore goes back; but a snapshot from
 * position 0 brings every row, so it may go forward), the session's tokens of
 * positions [0, from) are not those the snapshot continues, or a sliding
 * window's rows before target are neither in the snapshot nor still in the
 * session's ring (a ring keeps window + t_max rows, and a snapshot what its
 * ring held: snapshots taken every few steps and merged hold them all).
 * 0 when done; -1 when the backend failed. */
int mkc_kv_restore(mkc_session *s, const mkc_kv_snap *snap, int target);

/* a followed by b: a new snapshot of [a's from, b's to). NULL + message,
 * refused, unless both are one session's, b starts where a ends, and b's
 * tokens continue a's. a and b stay as they were. */
mkc_kv_snap *mkc_kv_merge(const mkc_kv_snap *a, const mkc_kv_snap *b);

/* snap cut at position at (from <= at <= to) into two new snapshots,
 * [from, at) and [at, to). 0, or -1 after a message (refused, or the copy
 * failed), *first and *second NULL. snap stays as it was. */
int mkc_kv_split(const mkc_kv_snap *snap, int at, mkc_kv_snap **first, mkc_kv_snap **second);

void mkc_kv_snapshot_free(mkc_kv_snap *snap); /* NULL: nothing */

/* A snapshot of positions [0, to) of s from the host: tokens[0..to) and the
 * rows as mkc_kv_snapshot_read gave them (a saved prompt's, kv_file.h), and
 * for each of s's sliding windows the first position its rows hold
 * (held_from[ring], mkc_kv_snapshot_held; NULL without windows). NULL +
 * message when bytes is not what the backend's store of `to` rows holds
 * (another model's or backend's layout), a ring's first position is not one
 * a ring of its rows could hold at `to`, or the copy failed. */
mkc_kv_snap *mkc_kv_snapshot_import(mkc_session *s, int to, const int *tokens, const void *rows,
                                    size_t bytes, const int *held_from);
/* The first position whose rows the snapshot holds of its session's sliding window `ring`
 * (0 .. the session's windows - 1). */
int mkc_kv_snapshot_held(const mkc_kv_snap *snap, int ring);
/* Whether restoring snap to target would be refused for a sliding window's rows it lacks
 * (mkc_kv_restore's check, without its message). */
int mkc_kv_snapshot_lacks(const mkc_kv_snap *snap, int target);

int mkc_kv_snapshot_from(const mkc_kv_snap *snap);
int mkc_kv_snapshot_to(const mkc_kv_snap *snap);
/* The tokens of positions [0, to). */
const int *mkc_kv_snapshot_tokens(const mkc_kv_snap *snap);

/* A host copy of the snapshot's rows as its backend stores them (malloc'd,
 * *bytes of them; backend/kv_rows.h gives the kernels' layout): tests
 * compare snapshots byte by byte. NULL + message on failure. */
void *mkc_kv_snapshot_read(const mkc_kv_snap *snap, size_t *bytes);

#endif
