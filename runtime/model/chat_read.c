/* See chat_template.h: a model's chat template text, from GGUF metadata or
 * from a Hugging Face folder, where transformers keeps it in
 * chat_template.jinja (newer) or in tokenizer_config.json (a string, or
 * named templates of which "default" is the chat one). */
#include "chat_template.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/files.h"

static int copy(const char *s, const char *where, char **out) {
  *out = strdup(s);
  return *out ? 0 : mkc_error_in(where, "out of memory");
}

int mkc_chat_template_gguf(const mkc_gguf *f, char **out) {
  const char *s;
  *out = NULL;
  int rc = mkc_gguf_get_str(f, "tokenizer.chat_template", &s);
  return rc <= 0 ? rc : copy(s, f->path, out);
}

static const char *json_kind(const cJSON *v) {
  return cJSON_IsNumber(v)   ? "a number"
         : cJSON_IsBool(v)   ? "a boolean"
         : cJSON_IsObject(v) ? "an object"
         : cJSON_IsArray(v)  ? "a list"
                             : "a string";
}

/* The "default" entry of a list of {name, template}. */
static int from_list(const cJSON *list, const char *name, char **out) {
  const cJSON *item;
  int i = 0;
  cJSON_ArrayForEach(item, list) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(item, "name");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(item, "template");
    if (!cJSON_IsString(n) || !cJSON_IsString(t))
      return mkc_error_in(name,
                          "chat_template[%d]: Expected {\"name\": string, \"template\": string}, "
                          "Actual %s",
                          i, json_kind(item));
    if (strcmp(n->valuestring, "default") == 0) return copy(t->valuestring, name, out);
    i++;
  }
  return mkc_error_in(name, "chat_template lists %d templates and none is named \"default\"", i);
}

/* Parsed as tokenizer/from_json.c parses the same file for the tokenizer:
 * deliberately alike, each layer reading what it needs from it. */
int mkc_chat_template_from_config(const char *json, size_t n, const char *name, char **out) {
  *out = NULL;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(json, n, &end, 0);
  if (!root || !cJSON_IsObject(root)) {
    mkc_error_in(name, "not a JSON object (%s at byte %zu)", root ? "a value" : "a syntax error",
                 root || !end ? (size_t)0 : (size_t)(end - json));
    cJSON_Delete(root);
    return -1;
  }
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
  int rc = 0;
  if (cJSON_IsString(t))
    rc = copy(t->valuestring, name, out);
  else if (cJSON_IsArray(t))
    rc = from_list(t, name, out);
  else if (t && !cJSON_IsNull(t))
    rc = mkc_error_in(name,
                      "chat_template: Expected a string or a list of {name, template}, Actual %s",
                      json_kind(t));
  cJSON_Delete(root);
  return rc;
}

int mkc_chat_template_hf(const char *dir, char **out) {
  char path[4200];
  size_t n;
  *out = NULL;
  snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
  char *text = mkc_read_file(path, &n);
  if (text) {
    *out = text;
    return 0;
  }
  if (errno != ENOENT) return mkc_error_in(path, "cannot read: %s", strerror(errno));
  snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  text = mkc_read_file(path, &n);
  if (!text) return errno == ENOENT ? 0 : mkc_error_in(path, "cannot read: %s", strerror(errno));
  int rc = mkc_chat_template_from_config(text, n, path, out);
  free(text);
  return rc;
}
