/* llama-server's slot files (serve.h): POST /slots/N?action=save|restore|erase
 * with --slot-save-path DIR. The plain server decodes one sequence at a
 * time, so it has one slot, 0: what the session holds for the next request.
 * A save writes those tokens' KV rows to DIR/FILENAME (exec/kv_file.h's
 * format, --prompt-cache's); a restore reads such a file into the session,
 * so that the next request beginning with its tokens feeds only the rest; an
 * erase forgets what the session holds.
 *
 * With --parallel N the slots are the pool's, 0..N-1 (exec/slot_file.h): a
 * slot keeps its last request's tokens until another request takes it, so a
 * save writes those; a restore puts a file's rows in the slot, and a later
 * request beginning with its tokens shares their full pages, whichever slot
 * it runs in; an erase forgets the slot's tokens, its pages no longer shared.
 * An action on a slot still decoding waits for its request to end, as
 * llama-server defers it. The answers are llama-server's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "serve.h"
#include "exec/batch.h"
#include "exec/kv_file.h"
#include "exec/slot_file.h"
#include "util/clock.h"
#include "serve/file_name.h"

/* The request's "filename", checked, into name; NULL after the answer refusing it. */
static const char *filename(int fd, const mkc_http_req *req, char *name, size_t cap) {
  cJSON *o = cJSON_ParseWithLength(req->body, req->body_len);
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "filename");
  const char *got = cJSON_IsString(f) ? f->valuestring : NULL;
  const char *msg = !cJSON_IsObject(o)       ? "the body is not a JSON object"
                    : !got                   ? "filename: a string is required"
                    : !mkc_file_name_ok(got) ? "Invalid filename"
                    : strlen(got) >= cap     ? "Invalid filename"
                                             : NULL;
  if (!msg) snprintf(name, cap, "%s", got);
  cJSON_Delete(o);
  if (msg) mkc_respond_error(fd, 400, msg);
  return msg ? NULL : name;
}

/* A save's or restore's answer, llama-server's fields: n tokens, bytes of the file, the
 * milliseconds since t0. */
static void respond(int fd, int slot, const char *name, int saved, int n, size_t bytes, double t0) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id_slot", slot);
  cJSON_AddStringToObject(o, "filename", name);
  cJSON_AddNumberToObject(o, saved ? "n_saved" : "n_restored", n);
  cJSON_AddNumberToObject(o, saved ? "n_written" : "n_read", (double)bytes);
  cJSON *t = cJSON_AddObjectToObject(o, "timings");
  cJSON_AddNumberToObject(t, saved ? "save_ms" : "restore_ms", (mkc_seconds() - t0) * 1e3);
  mkc_respond_json(fd, 200, o);
}

enum { SAVE, RESTORE, ERASE };

/* A save or restore of slot s: the session's (slot 0), or with --parallel the pool's slot s. */
static void file_action(mkc_server *sv, int fd, int s, int save, const char *name,
                        const char *path) {
  double t0 = mkc_seconds();
  size_t bytes;
  int *tokens = NULL, n;
  char why[256], msg[320];
  if (sv->slots)
    n = save ? mkc_slot_file_save(sv->slots, s, sv->cache_id, path, &bytes, why, sizeof why)
             : mkc_slot_file_restore(sv->slots, s, sv->cache_id, path, &bytes, why, sizeof why);
  else if (save)
    n = mkc_kv_write(sv->m->s, sv->n_valid, sv->cache_id, path, &bytes, why, sizeof why);
  else /* a failed read may have changed the rows: the session holds nothing unless it worked */
    n = mkc_kv_read(sv->m->s, sv->cache_id, path, &tokens, &bytes, why, sizeof why);
  if (!sv->slots && !save) {
    sv->n_held = sv->n_valid = n > 0 ? n : 0;
    if (n >= 0) free(sv->held), sv->held = tokens;
  }
  if (n < 0) {
    snprintf(msg, sizeof msg, "Unable to %s slot: %s", save ? "save" : "restore", why);
    fprintf(stderr, "mkc: slot %d: not %s %s: %s\n", s, save ? "saved to" : "restored from", path,
            why);
    mkc_respond_error(fd, save ? 500 : 400, msg);
    return;
  }
  if (save)
    fprintf(stderr, "mkc: slot %d: %d tokens saved to %s (%zu bytes)\n", s, n, path, bytes);
  else
    fprintf(stderr, "mkc: slot %d: %d tokens restored from %s\n", s, n, path);
  respond(fd, s, name, save, n, bytes, t0);
}

/* An erase's answer. */
static void respond_erased(int fd, int slot, int n) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id_slot", slot);
  cJSON_AddNumberToObject(o, "n_erased", n);
  mkc_respond_json(fd, 200, o);
}

/* Does a checked action on slot s and answers it. */
static void act(mkc_server *sv, int fd, int s, int what, const char *name, const char *path) {
  if (what == ERASE) {
    int n = sv->slots ? mkc_slots_pos(sv->slots, s) : sv->n_valid;
    if (sv->slots && mkc_slots_forget(sv->slots, s) != 0) {
      mkc_respond_error(fd, 500, "Unable to erase slot (the server's log says why)");
      return;
    }
    if (!sv->slots) sv->n_held = sv->n_valid = 0;
    fprintf(stderr, "mkc: slot %d: %d tokens erased\n", s, n);
    respond_erased(fd, s, n);
  } else {
    file_action(sv, fd, s, what == SAVE, name, path);
  }
}

/* An action waiting for its slot's request to end (--parallel). */
struct mkc_slot_wait {
  int fd, slot, what;
  char name[256], path[4400];
  char cors[MKC_SERVE_CORS_MAX]; /* the connection's headers (mkc_http_extra_headers) */
  mkc_slot_wait *next;
};

/* Whether the pool's slot s is decoding a request. */
static int decoding(const mkc_server *sv, int s) {
  const mkc_batch_seq *q = sv->sched ? mkc_sched_in_slot(sv->sched, s) : NULL;
  return q && q->stopped == MKC_BATCH_RUNNING;
}

void mkc_serve_slot_waits(mkc_server *sv) {
  for (mkc_slot_wait **at = &sv->waits; *at;) {
    mkc_slot_wait *w = *at;
    if (decoding(sv, w->slot)) {
      at = &w->next;
      continue;
    }
    mkc_http_extra_headers(w->cors);
    act(sv, w->fd, w->slot, w->what, w->name, w->path);
    mkc_http_extra_headers(NULL);
    mkc_serve_close(sv, w->fd);
    *at = w->next;
    free(w);
  }
}

/* Slot N of the path /slots/N: 0..slots - 1, else -1. */
static int slot_of(const mkc_server *sv, const char *path) {
  const char *id = path + 7; /* past "/slots/" */
  int n = sv->slots ? mkc_slots_count(sv->slots) : 1;
  if (!*id || strlen(id) > 3 || strspn(id, "0123456789") != strlen(id)) return -1;
  int s = atoi(id);
  return s < n ? s : -1;
}

int mkc_serve_slot_action(mkc_server *sv, int fd, const mkc_http_req *req, const char *cors) {
  char action[16], name[256], path[4400];
  if (strcmp(req->method, "POST") != 0) {
    mkc_respond_error(fd, 405, "use POST");
    return MKC_SERVE_DONE;
  }
  if (!sv->c->slot_save_path) {
    mkc_respond_error(fd, 501,
                      "This server does not support slots action. Start it with "
                      "`--slot-save-path`");
    return MKC_SERVE_DONE;
  }
  int s = slot_of(sv, req->path);
  if (s < 0) {
    mkc_respond_error(fd, 400, "Invalid slot ID");
    return MKC_SERVE_DONE;
  }
  int has = mkc_http_query(req, "action", action, sizeof action);
  int what = has != 1                         ? -1
             : strcmp(action, "save") == 0    ? SAVE
             : strcmp(action, "restore") == 0 ? RESTORE
             : strcmp(action, "erase") == 0   ? ERASE
                                              : -1;
  if (what < 0) {
    mkc_respond_error(fd, 400, "Invalid action");
    return MKC_SERVE_DONE;
  }
  name[0] = path[0] = '\0';
  if (what != ERASE) {
    if (!filename(fd, req, name, sizeof name)) return MKC_SERVE_DONE;
    const char *dir = sv->c->slot_save_path;
    size_t len = strlen(dir);
    snprintf(path, sizeof path, "%s%s%s", dir, len && dir[len - 1] == '/' ? "" : "/", name);
  }
  if (!decoding(sv, s)) {
    act(sv, fd, s, what, name, path);
    return MKC_SERVE_DONE;
  }
  mkc_slot_wait *w = calloc(1, sizeof *w), **end = &sv->waits;
  if (!w) {
    mkc_respond_error(fd, 500, "out of memory");
    return MKC_SERVE_DONE;
  }
  *w = (mkc_slot_wait){.fd = fd, .slot = s, .what = what};
  snprintf(w->name, sizeof w->name, "%s", name);
  snprintf(w->path, sizeof w->path, "%s", path);
  snprintf(w->cors, sizeof w->cors, "%s", cors);
  while (*end) end = &(*end)->next; /* in the order they came */
  *end = w;
  fprintf(stderr, "mkc: slot %d: the %s waits for its request to end\n", s, action);
  return MKC_SERVE_KEPT;
}

int mkc_serve_slot_dir_check(const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
  fprintf(stderr, "mkc: error: --slot-save-path %s: not a directory\n", dir);
  return -1;
}
