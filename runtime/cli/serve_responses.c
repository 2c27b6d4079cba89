/* OpenAI's Responses API (POST /v1/responses): the response object, its stream of named
 * events, for the answers serve_answer.c builds (serve_answer.h). The output is a list of
 * items: the reasoning (a model that reasons first), the message with the reply's text, and a
 * function_call item per call. Nothing is stored: each response's id is the server's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "serve_answer.h"

/* An item's id: its kind's prefix and the answer's id (k >= 0: the k-th call's). */
static void id_of(const mkc_answer *g, const char *kind, int k, char *buf, size_t cap) {
  if (k >= 0)
    snprintf(buf, cap, "%s_%s_%d", kind, g->id, k);
  else
    snprintf(buf, cap, "%s_%s", kind, g->id);
}

/* OpenAI's: a response cut by max_output_tokens is incomplete. */
static int incomplete(const mkc_answer *g) { return !strcmp(mkc_answer_finish(g), "length"); }

static cJSON *text_part(const char *text, size_t n) {
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "type", "output_text");
  cJSON_AddItemToObject(p, "text", mkc_json_text(text, n));
  cJSON_AddArrayToObject(p, "annotations");
  cJSON_AddArrayToObject(p, "logprobs");
  return p;
}

/* The message item (text NULL: in progress, no content yet) or the reasoning item. */
static cJSON *text_item(const mkc_answer *g, int thinking, const char *text, size_t n) {
  cJSON *it = cJSON_CreateObject(), *content;
  char id[80];
  id_of(g, thinking ? "rs" : "msg", -1, id, sizeof id);
  cJSON_AddStringToObject(it, "id", id);
  cJSON_AddStringToObject(it, "type", thinking ? "reasoning" : "message");
  cJSON_AddStringToObject(it, "status", text ? "completed" : "in_progress");
  if (thinking) cJSON_AddArrayToObject(it, "summary");
  if (!thinking) cJSON_AddStringToObject(it, "role", "assistant");
  content = cJSON_AddArrayToObject(it, "content");
  if (text && thinking) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "reasoning_text");
    cJSON_AddItemToObject(p, "text", mkc_json_text(text, n));
    cJSON_AddItemToArray(content, p);
  } else if (text) {
    cJSON_AddItemToArray(content, text_part(text, n));
  }
  return it;
}

/* Call k's item (done: with its arguments, completed). */
static cJSON *call_item(const mkc_answer *g, int k, int done) {
  const mkc_tool_call *c = &g->calls.calls[k];
  cJSON *it = cJSON_CreateObject();
  char id[80];
  id_of(g, "fc", k, id, sizeof id);
  cJSON_AddStringToObject(it, "id", id);
  cJSON_AddStringToObject(it, "type", "function_call");
  cJSON_AddStringToObject(it, "status", done ? "completed" : "in_progress");
  id_of(g, "call", k, id, sizeof id); /* as the chat API's call ids */
  cJSON_AddStringToObject(it, "call_id", id);
  cJSON_AddStringToObject(it, "name", c->name);
  cJSON_AddStringToObject(it, "arguments", done ? c->arguments : "");
  return it;
}

/* The response object: status, and its output and usage once there (output NULL: none yet). */
static cJSON *response(const mkc_answer *g, const char *status, cJSON *output, int n_prompt,
                       int cached) {
  cJSON *o = cJSON_CreateObject();
  char id[80];
  id_of(g, "resp", -1, id, sizeof id);
  cJSON_AddStringToObject(o, "id", id);
  cJSON_AddStringToObject(o, "object", "response");
  cJSON_AddNumberToObject(o, "created_at", (double)g->created);
  cJSON_AddStringToObject(o, "status", status);
  cJSON_AddNullToObject(o, "error");
  if (!strcmp(status, "incomplete"))
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "incomplete_details"), "reason",
                            "max_output_tokens");
  else
    cJSON_AddNullToObject(o, "incomplete_details");
  cJSON_AddStringToObject(o, "model", g->model);
  cJSON_AddItemToObject(o, "output", output ? output : cJSON_CreateArray());
  cJSON_AddBoolToObject(o, "parallel_tool_calls", !g->r->one_call);
  if (!output) return o;
  cJSON *u = cJSON_AddObjectToObject(o, "usage");
  cJSON_AddNumberToObject(u, "input_tokens", n_prompt);
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "input_tokens_details"), "cached_tokens",
                          cached);
  cJSON_AddNumberToObject(u, "output_tokens", g->n_ids);
  cJSON_AddNumberToObject(u, "total_tokens", n_prompt + g->n_ids);
  return o;
}

cJSON *mkc_responses_object(const mkc_answer *g, const char *reply, size_t n, int n_prompt,
                            int cached) {
  cJSON *out = cJSON_CreateArray();
  if (g->split && g->reasoning_len)
    cJSON_AddItemToArray(out, text_item(g, 1, g->reasoning, g->reasoning_len));
  if (!g->calls.n || (reply && n)) /* a reply that only calls has no message */
    cJSON_AddItemToArray(out, text_item(g, 0, reply ? reply : "", reply ? n : 0));
  for (int k = 0; k < g->calls.n; k++) cJSON_AddItemToArray(out, call_item(g, k, 1));
  return response(g, incomplete(g) ? "incomplete" : "completed", out, n_prompt, cached);
}

/* o (freed) as the event of its "type", numbered. */
static int send(mkc_answer *g, cJSON *o) {
  cJSON_AddNumberToObject(o, "sequence_number", g->seq++);
  return mkc_answer_send_typed(g, o);
}

/* A new event of type about the open item (its id and output_index; with a content_index). */
static cJSON *event(const mkc_answer *g, const char *type, int content) {
  cJSON *o = cJSON_CreateObject();
  char id[80];
  id_of(g, g->block_thinking ? "rs" : "msg", -1, id, sizeof id);
  cJSON_AddStringToObject(o, "type", type);
  cJSON_AddStringToObject(o, "item_id", id);
  cJSON_AddNumberToObject(o, "output_index", g->block);
  if (content) cJSON_AddNumberToObject(o, "content_index", 0);
  return o;
}

/* output_item.added or .done for item (taken) at index. */
static int item_event(mkc_answer *g, const char *type, cJSON *item, int index) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", type);
  cJSON_AddNumberToObject(o, "output_index", index);
  if (!strcmp(type, "response.output_item.done"))
    cJSON_AddItemToArray(g->items, cJSON_Duplicate(item, 1)); /* the last event's output */
  cJSON_AddItemToObject(o, "item", item);
  return send(g, o);
}

static int stream_response(mkc_answer *g, const char *type, const char *status, cJSON *output,
                           int n_prompt, int cached) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", type);
  cJSON_AddItemToObject(o, "response", response(g, status, output, n_prompt, cached));
  return send(g, o);
}

int mkc_responses_stream_start(mkc_answer *g) {
  g->block = -1;
  g->seq = 0;
  if (!g->items && !(g->items = cJSON_CreateArray())) return -1;
  return stream_response(g, "response.created", "in_progress", NULL, 0, 0) ||
         stream_response(g, "response.in_progress", "in_progress", NULL, 0, 0);
}

/* The open item's text and its done events. */
static int close_item(mkc_answer *g) {
  if (g->block < 0) return 0;
  const char *text = g->item_text ? g->item_text : "";
  size_t n = g->item_len;
  int thinking = g->block_thinking, rc;
  cJSON *o = event(g, thinking ? "response.reasoning_text.done" : "response.output_text.done", 1);
  cJSON_AddItemToObject(o, "text", mkc_json_text(text, n));
  rc = send(g, o);
  if (!rc && !thinking) {
    o = event(g, "response.content_part.done", 1);
    cJSON_AddItemToObject(o, "part", text_part(text, n));
    rc = send(g, o);
  }
  if (!rc)
    rc = item_event(g, "response.output_item.done", text_item(g, thinking, text, n), g->block);
  g->block = -1;
  g->item_len = 0;
  return rc;
}

/* The item for a delta of the reasoning (thinking) or the reply: the open one when it is of
 * that kind, else a new one after the open one is done. */
static int open_item(mkc_answer *g, int thinking) {
  if (g->block >= 0 && g->block_thinking == thinking) return 0;
  if (close_item(g) != 0) return -1;
  g->block = g->blocks++;
  g->block_thinking = thinking;
  if (item_event(g, "response.output_item.added", text_item(g, thinking, NULL, 0), g->block) != 0)
    return -1;
  if (thinking) return 0;
  cJSON *o = event(g, "response.content_part.added", 1), *part = text_part("", 0);
  cJSON_DeleteItemFromObjectCaseSensitive(part, "logprobs");
  cJSON_AddItemToObject(o, "part", part);
  return send(g, o);
}

int mkc_responses_delta(mkc_answer *g, int thinking, const char *text, size_t n) {
  if (open_item(g, thinking) != 0) return -1;
  if (g->item_len + n + 1 > g->item_cap) {
    size_t cap = (g->item_len + n + 1) * 2;
    char *t = realloc(g->item_text, cap);
    if (!t) return g->gone = 1, -1;
    g->item_text = t, g->item_cap = cap;
  }
  memcpy(g->item_text + g->item_len, text, n);
  g->item_len += n;
  cJSON *o = event(g, thinking ? "response.reasoning_text.delta" : "response.output_text.delta", 1);
  cJSON_AddItemToObject(o, "delta", mkc_json_text(text, n));
  if (!thinking) cJSON_AddArrayToObject(o, "logprobs");
  return send(g, o);
}

int mkc_responses_calls(mkc_answer *g) {
  if (close_item(g) != 0) return -1;
  for (int k = 0; k < g->calls.n; k++) {
    int at = g->blocks++;
    char id[80];
    id_of(g, "fc", k, id, sizeof id);
    if (item_event(g, "response.output_item.added", call_item(g, k, 0), at) != 0) return -1;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "response.function_call_arguments.delta");
    cJSON_AddStringToObject(o, "item_id", id);
    cJSON_AddNumberToObject(o, "output_index", at);
    cJSON_AddStringToObject(o, "delta", g->calls.calls[k].arguments);
    if (send(g, o) != 0) return -1;
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "response.function_call_arguments.done");
    cJSON_AddStringToObject(o, "item_id", id);
    cJSON_AddNumberToObject(o, "output_index", at);
    cJSON_AddStringToObject(o, "name", g->calls.calls[k].name);
    cJSON_AddStringToObject(o, "arguments", g->calls.calls[k].arguments);
    if (send(g, o) != 0 || item_event(g, "response.output_item.done", call_item(g, k, 1), at) != 0)
      return -1;
  }
  return 0;
}

int mkc_responses_stream_end(mkc_answer *g, int n_prompt, int cached) {
  /* a reply with no text still has its message, unless it calls */
  if (!g->gone && !g->calls.n && (g->blocks == 0 || (g->block >= 0 && g->block_thinking)) &&
      open_item(g, 0) != 0)
    return -1;
  if (g->gone || close_item(g) != 0) return -1;
  int cut = incomplete(g);
  cJSON *output = g->items;
  g->items = NULL;
  return stream_response(g, cut ? "response.incomplete" : "response.completed",
                         cut ? "incomplete" : "completed", output, n_prompt, cached);
}

void mkc_responses_stream_error(mkc_answer *g, const char *msg) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "error");
  cJSON_AddStringToObject(o, "code", "server_error");
  cJSON_AddStringToObject(o, "message", msg);
  cJSON_AddNullToObject(o, "param");
  send(g, o);
}
