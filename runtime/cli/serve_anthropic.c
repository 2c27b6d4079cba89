/* Anthropic's Messages API (POST /v1/messages): its answer, its stream of named events, and
 * its errors, for the answers serve_answer.c builds (serve_answer.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "serve_answer.h"
#include "serve/http.h"

void mkc_respond_anthropic_error(int fd, int status, const char *msg) {
  const char *type = status == 413   ? "request_too_large"
                     : status >= 500 ? "api_error"
                                     : mkc_error_type(status);
  cJSON *o = cJSON_CreateObject(), *e;
  cJSON_AddStringToObject(o, "type", "error");
  e = cJSON_AddObjectToObject(o, "error");
  cJSON_AddStringToObject(e, "type", type);
  cJSON_AddStringToObject(e, "message", msg);
  mkc_respond_json(fd, status, o);
}

void mkc_respond_error_for(const mkc_api_req *r, int fd, int status, const char *msg) {
  (r->anthropic ? mkc_respond_anthropic_error
   : r->ollama  ? mkc_respond_ollama_error
                : mkc_respond_error)(fd, status, msg);
}

/* tool_use (the reply calls), end_turn (the end of generation), stop_sequence, or
 * max_tokens. */
static const char *stop_reason(const mkc_answer *g) {
  return g->calls.n              ? "tool_use"
         : g->hit_stop           ? "stop_sequence"
         : g->eog || g->complete ? "end_turn"
                                 : "max_tokens";
}

static void add_stop(const mkc_answer *g, cJSON *o) {
  const char *why = stop_reason(g);
  cJSON_AddStringToObject(o, "stop_reason", why);
  if (!strcmp(why, "stop_sequence"))
    cJSON_AddStringToObject(o, "stop_sequence", g->r->stop[g->stop_k]);
  else
    cJSON_AddNullToObject(o, "stop_sequence");
}

/* Anthropic's usage: input_tokens are the prompt's tokens not read from the cache. */
static cJSON *usage(int input, int output, int cached) {
  cJSON *u = cJSON_CreateObject();
  cJSON_AddNumberToObject(u, "input_tokens", input - cached);
  cJSON_AddNumberToObject(u, "cache_read_input_tokens", cached);
  cJSON_AddNumberToObject(u, "output_tokens", output);
  return u;
}

/* The message's head: id, type, role, model; content as given. */
static cJSON *message(const mkc_answer *g, cJSON *content) {
  cJSON *o = cJSON_CreateObject();
  char id[64];
  snprintf(id, sizeof id, "msg_%s", g->id);
  cJSON_AddStringToObject(o, "id", id);
  cJSON_AddStringToObject(o, "type", "message");
  cJSON_AddStringToObject(o, "role", "assistant");
  cJSON_AddStringToObject(o, "model", g->model);
  cJSON_AddItemToObject(o, "content", content);
  return o;
}

/* A content block: text, or the reasoning as a thinking block (its signature empty: mkc
 * signs nothing; a thinking block given back in an assistant message is its reasoning, as
 * the template writes it). */
static cJSON *block(int thinking, const char *text, size_t n) {
  cJSON *b = cJSON_CreateObject();
  cJSON_AddStringToObject(b, "type", thinking ? "thinking" : "text");
  cJSON_AddItemToObject(b, thinking ? "thinking" : "text", mkc_json_text(text, n));
  if (thinking) cJSON_AddStringToObject(b, "signature", "");
  return b;
}

/* Call k as a tool_use block: its input the arguments (in a stream's content_block_start,
 * empty: they follow as input_json_delta). The id is unique to the server's run. */
static cJSON *tool_use(const mkc_answer *g, int k, int empty) {
  const mkc_tool_call *c = &g->calls.calls[k];
  cJSON *b = cJSON_CreateObject();
  char id[80];
  snprintf(id, sizeof id, "toolu_%s_%d", g->id, k);
  cJSON_AddStringToObject(b, "type", "tool_use");
  cJSON_AddStringToObject(b, "id", id);
  cJSON_AddStringToObject(b, "name", c->name);
  cJSON *input = empty ? NULL : cJSON_Parse(c->arguments);
  cJSON_AddItemToObject(b, "input", input ? input : cJSON_CreateObject());
  return b;
}

cJSON *mkc_anthropic_message(const mkc_answer *g, const char *reply, size_t n, int n_prompt,
                             int cached) {
  cJSON *content = cJSON_CreateArray();
  if (g->split && g->reasoning_len)
    cJSON_AddItemToArray(content, block(1, g->reasoning, g->reasoning_len));
  if (!g->calls.n || (reply && n)) /* a reply that only calls has no text block */
    cJSON_AddItemToArray(content, block(0, reply ? reply : "", reply ? n : 0));
  for (int k = 0; k < g->calls.n; k++) cJSON_AddItemToArray(content, tool_use(g, k, 0));
  cJSON *o = message(g, content);
  add_stop(g, o);
  cJSON_AddItemToObject(o, "usage", usage(n_prompt, g->n_ids, cached));
  return o;
}

int mkc_answer_send_typed(mkc_answer *g, cJSON *o) {
  char *s = cJSON_PrintUnformatted(o);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
  int rc = s && cJSON_IsString(type) ? mkc_http_named_event(g->fd, type->valuestring, s) : -1;
  free(s);
  cJSON_Delete(o);
  if (rc) g->gone = 1;
  return rc;
}

static int send(mkc_answer *g, cJSON *o) { return mkc_answer_send_typed(g, o); }

int mkc_anthropic_stream_start(mkc_answer *g) {
  g->block = -1;
  cJSON *o = cJSON_CreateObject(), *m = message(g, cJSON_CreateArray());
  cJSON_AddStringToObject(o, "type", "message_start");
  cJSON_AddNullToObject(m, "stop_reason");
  cJSON_AddNullToObject(m, "stop_sequence");
  cJSON_AddItemToObject(m, "usage", usage(g->n_prompt, 0, 0));
  cJSON_AddItemToObject(o, "message", m);
  return send(g, o);
}

static int close_block(mkc_answer *g) {
  if (g->block < 0) return 0;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "content_block_stop");
  cJSON_AddNumberToObject(o, "index", g->block);
  g->block = -1;
  return send(g, o);
}

/* The block for a delta of the reasoning (thinking) or the reply: the open one when it is of
 * that kind, else a new one after the open one is closed. */
/* content_block (taken) as the next block, the open one closed first. */
static int start_block(mkc_answer *g, cJSON *content_block, int thinking) {
  if (close_block(g) != 0) {
    cJSON_Delete(content_block);
    return -1;
  }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "content_block_start");
  cJSON_AddNumberToObject(o, "index", g->blocks);
  cJSON_AddItemToObject(o, "content_block", content_block);
  g->block = g->blocks++;
  g->block_thinking = thinking;
  return send(g, o);
}

static int open_block(mkc_answer *g, int thinking) {
  if (g->block >= 0 && g->block_thinking == thinking) return 0;
  return start_block(g, block(thinking, "", 0), thinking);
}

int mkc_anthropic_delta(mkc_answer *g, int thinking, const char *text, size_t n) {
  if (open_block(g, thinking) != 0) return -1;
  cJSON *o = cJSON_CreateObject(), *d;
  cJSON_AddStringToObject(o, "type", "content_block_delta");
  cJSON_AddNumberToObject(o, "index", g->block);
  d = cJSON_AddObjectToObject(o, "delta");
  cJSON_AddStringToObject(d, "type", thinking ? "thinking_delta" : "text_delta");
  cJSON_AddItemToObject(d, thinking ? "thinking" : "text", mkc_json_text(text, n));
  return send(g, o);
}

int mkc_anthropic_calls(mkc_answer *g) {
  for (int k = 0; k < g->calls.n; k++) {
    if (start_block(g, tool_use(g, k, 1), 0) != 0) return -1;
    cJSON *o = cJSON_CreateObject(), *d;
    cJSON_AddStringToObject(o, "type", "content_block_delta");
    cJSON_AddNumberToObject(o, "index", g->block);
    d = cJSON_AddObjectToObject(o, "delta");
    cJSON_AddStringToObject(d, "type", "input_json_delta");
    cJSON_AddStringToObject(d, "partial_json", g->calls.calls[k].arguments);
    if (send(g, o) != 0) return -1;
  }
  return close_block(g);
}

int mkc_anthropic_stream_end(mkc_answer *g, int cached) {
  /* a reply with no text still has its text block, unless it calls */
  if (!g->gone && !g->calls.n && (g->blocks == 0 || g->block_thinking) && open_block(g, 0) != 0)
    return -1;
  if (g->gone || close_block(g) != 0) return -1;
  cJSON *o = cJSON_CreateObject(), *d;
  cJSON_AddStringToObject(o, "type", "message_delta");
  d = cJSON_AddObjectToObject(o, "delta");
  add_stop(g, d);
  cJSON_AddItemToObject(o, "usage", usage(g->n_prompt, g->n_ids, cached));
  if (send(g, o) != 0) return -1;
  o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "message_stop");
  return send(g, o);
}
