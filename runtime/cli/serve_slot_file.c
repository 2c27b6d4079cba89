/* llama-server's slot files (serve.h): POST /slots/0?action=save|restore|erase
 * with --slot-save-path DIR. The server decodes one sequence at a time, so it
 * has one slot, 0: what the session holds for the next request. A save
 * writes those tokens' KV rows to DIR/FILENAME (exec/kv_file.h's format,
 * --prompt-cache's); a restore reads such a file into the session, so that
 * the next request beginning with its tokens feeds only the rest; an erase
 * forgets what the session holds. The answers are llama-server's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "serve.h"
#include "exec/kv_file.h"
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
static void respond(int fd, const char *name, int saved, int n, size_t bytes, double t0) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id_slot", 0);
  cJSON_AddStringToObject(o, "filename", name);
  cJSON_AddNumberToObject(o, saved ? "n_saved" : "n_restored", n);
  cJSON_AddNumberToObject(o, saved ? "n_written" : "n_read", (double)bytes);
  cJSON *t = cJSON_AddObjectToObject(o, "timings");
  cJSON_AddNumberToObject(t, saved ? "save_ms" : "restore_ms", (mkc_seconds() - t0) * 1e3);
  mkc_respond_json(fd, 200, o);
}

static void save(mkc_server *sv, int fd, const char *name, const char *path) {
  double t0 = mkc_seconds();
  size_t written;
  char why[256], msg[320];
  int n = mkc_kv_write(sv->m->s, sv->n_valid, sv->cache_id, path, &written, why, sizeof why);
  if (n < 0) {
    snprintf(msg, sizeof msg, "Unable to save slot: %s", why);
    fprintf(stderr, "mkc: slot 0: not saved to %s: %s\n", path, why);
    mkc_respond_error(fd, 500, msg);
    return;
  }
  fprintf(stderr, "mkc: slot 0: %d tokens saved to %s (%zu bytes)\n", n, path, written);
  respond(fd, name, 1, n, written, t0);
}

static void restore(mkc_server *sv, int fd, const char *name, const char *path) {
  double t0 = mkc_seconds();
  size_t read;
  int *tokens;
  char why[256], msg[320];
  int n = mkc_kv_read(sv->m->s, sv->cache_id, path, &tokens, &read, why, sizeof why);
  sv->n_held = sv->n_valid = 0; /* a failed read may have changed the rows; a good one is below */
  if (n < 0) {
    snprintf(msg, sizeof msg, "Unable to restore slot: %s", why);
    fprintf(stderr, "mkc: slot 0: not restored from %s: %s\n", path, why);
    mkc_respond_error(fd, 400, msg);
    return;
  }
  free(sv->held);
  sv->held = tokens;
  sv->n_held = sv->n_valid = n;
  fprintf(stderr, "mkc: slot 0: %d tokens restored from %s\n", n, path);
  respond(fd, name, 0, n, read, t0);
}

void mkc_serve_slot_action(mkc_server *sv, int fd, const mkc_http_req *req) {
  char action[16], name[256], path[4400];
  if (strcmp(req->method, "POST") != 0) {
    mkc_respond_error(fd, 405, "use POST");
    return;
  }
  if (!sv->c->slot_save_path) {
    mkc_respond_error(fd, 501,
                      "This server does not support slots action. Start it with "
                      "`--slot-save-path`");
    return;
  }
  if (strcmp(req->path, "/slots/0") != 0) { /* the one slot */
    mkc_respond_error(fd, 400, "Invalid slot ID");
    return;
  }
  int has = mkc_http_query(req, "action", action, sizeof action);
  int what = has != 1                         ? -1
             : strcmp(action, "save") == 0    ? 0
             : strcmp(action, "restore") == 0 ? 1
             : strcmp(action, "erase") == 0   ? 2
                                              : -1;
  if (what < 0) {
    mkc_respond_error(fd, 400, "Invalid action");
    return;
  }
  if (what == 2) {
    int n = sv->n_valid;
    sv->n_held = sv->n_valid = 0;
    fprintf(stderr, "mkc: slot 0: %d tokens erased\n", n);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id_slot", 0);
    cJSON_AddNumberToObject(o, "n_erased", n);
    mkc_respond_json(fd, 200, o);
    return;
  }
  if (!filename(fd, req, name, sizeof name)) return;
  const char *dir = sv->c->slot_save_path;
  size_t len = strlen(dir);
  snprintf(path, sizeof path, "%s%s%s", dir, len && dir[len - 1] == '/' ? "" : "/", name);
  what == 0 ? save(sv, fd, name, path) : restore(sv, fd, name, path);
}

int mkc_serve_slot_dir_check(const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
  fprintf(stderr, "mkc: error: --slot-save-path %s: not a directory\n", dir);
  return -1;
}
