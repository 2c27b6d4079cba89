/* See tool_calls.h. */
#include "tool_calls.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "util/buf.h"
#include "util/json_text.h"

#define CLOSE "</tool_call>"

/* s[0..n) as one JSON object, whitespace around it aside (cJSON's, freed
 * by the caller); NULL when it is anything else. */
static cJSON *whole_object(const char *s, size_t n) {
  const char *end = NULL;
  cJSON *o = cJSON_ParseWithLengthOpts(s, n, &end, 0);
  while (o && end < s + n && mkc_json_space(*end)) end++;
  if (o && (end != s + n || !cJSON_IsObject(o))) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* One call's JSON, s[0..n), its arguments named args_name: 1 with *call
 * filled, 0 when not a call, -1 when out of memory. */
static int read_call(const char *s, size_t n, const char *args_name, mkc_tool_call *call) {
  cJSON *o = whole_object(s, n);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name"),
              *args = cJSON_GetObjectItemCaseSensitive(o, args_name);
  int ok = o && cJSON_IsString(name) && *name->valuestring && cJSON_IsObject(args);
  const char *at;
  size_t len;
  if (ok && mkc_json_at(s, n, args_name, &at, &len)) {
    call->name = strdup(name->valuestring);
    call->arguments = mkc_json_compact(at, len); /* the model's numbers, digit for digit */
    if (!call->name || !call->arguments) ok = -1;
  } else {
    ok = 0;
  }
  cJSON_Delete(o);
  return ok;
}

/* Llama 3.1's: the reply is the call ("parameters", or "arguments" as some
 * fine-tunes write it). */
static int read_llama3(const char *text, size_t n, mkc_tool_calls *out) {
  while (n && mkc_json_space(*text)) text++, n--;
  while (n && mkc_json_space(text[n - 1])) n--;
  if (!n || *text != '{') return 0;
  if (!(out->calls = calloc(1, sizeof *out->calls)) || !(out->content = strdup(""))) {
    mkc_tool_calls_free(out);
    return -1;
  }
  out->n = 1;
  int got = read_call(text, n, "parameters", out->calls);
  if (got == 0) got = read_call(text, n, "arguments", out->calls);
  if (got <= 0) mkc_tool_calls_free(out);
  return got;
}

int mkc_tool_calls_read(int format, const char *text, size_t n, mkc_tool_calls *out) {
  memset(out, 0, sizeof *out);
  if (format == MKC_TOOLS_LLAMA3) return read_llama3(text, n, out);
  if (format != MKC_TOOLS_QWEN) return 0;
  size_t open = strlen(MKC_TOOL_CALL_OPEN), close = strlen(CLOSE);
  const char *at = text, *end = text + n;
  mkc_buf content = {0}; /* the text outside the blocks, joined as it stands */
  int rc = 0;
  for (;;) {
    const char *o = memmem(at, (size_t)(end - at), MKC_TOOL_CALL_OPEN, open);
    if (!o) break;
    const char *body = o + open, *c = memmem(body, (size_t)(end - body), CLOSE, close);
    if (!c) goto not_calls; /* cut off, or not a block */
    mkc_tool_call *grown = realloc(out->calls, (size_t)(out->n + 1) * sizeof *grown);
    if (!grown) goto oom;
    out->calls = grown;
    out->calls[out->n] = (mkc_tool_call){0};
    int got = read_call(body, (size_t)(c - body), "arguments", &out->calls[out->n]);
    out->n++; /* freed with the rest whatever came of it */
    if (got < 0) goto oom;
    if (got == 0) goto not_calls;
    mkc_buf_put_n(&content, at, (size_t)(o - at));
    at = c + close;
  }
  if (out->n == 0) return 0;
  mkc_buf_put_n(&content, at, (size_t)(end - at));
  if (content.oom) goto oom;
  /* its end trimmed: the newlines before and between the blocks are the format's (its start is
   * kept, as a stream has sent it) */
  while (content.n > 0 && mkc_json_space(content.s[content.n - 1])) content.n--;
  if (content.s) content.s[content.n] = '\0';
  out->content = content.s ? content.s : strdup("");
  if (!out->content) goto oom;
  return 1;
oom:
  rc = -1;
not_calls:
  free(content.s);
  mkc_tool_calls_free(out);
  return rc;
}

int mkc_tool_calls_harmony(const char *recipient, const char *args, size_t n, const char *content,
                           mkc_tool_calls *out) {
  memset(out, 0, sizeof *out);
  const char *prefix = "functions.", *name = recipient + strlen(prefix);
  if (strncmp(recipient, prefix, strlen(prefix)) != 0 || !*name) return 0;
  cJSON *o = whole_object(args, n);
  if (!o) return 0;
  out->calls = calloc(1, sizeof *out->calls);
  if (out->calls) {
    out->n = 1;
    out->calls[0].name = strdup(name);
    out->calls[0].arguments = mkc_json_compact(args, n);
  }
  out->content = strdup(content ? content : "");
  cJSON_Delete(o);
  if (!out->calls || !out->calls[0].name || !out->calls[0].arguments || !out->content) {
    mkc_tool_calls_free(out);
    return -1;
  }
  return 1;
}

void mkc_tool_calls_free(mkc_tool_calls *c) {
  for (int i = 0; i < c->n; i++) {
    free(c->calls[i].name);
    free(c->calls[i].arguments);
  }
  free(c->calls);
  free(c->content);
  memset(c, 0, sizeof *c);
}
