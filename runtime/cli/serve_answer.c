/* See serve_answer.h. */
#include "serve_answer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/reasoning.h"
#include "serve/http.h"
#include "util/json_text.h"

const char *mkc_answer_finish(const mkc_answer *g) {
  return g->calls.n ? "tool_calls" : g->eog || g->hit_stop || g->complete ? "stop" : "length";
}

int mkc_respond_json(int fd, int status, cJSON *o) {
  char *s = cJSON_PrintUnformatted(o);
  int rc = s ? mkc_http_respond(fd, status, "application/json", s, strlen(s)) : -1;
  free(s);
  cJSON_Delete(o);
  return rc;
}

void mkc_respond_ollama_error(int fd, int status, const char *msg) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "error", msg);
  mkc_respond_json(fd, status, o);
}

const char *mkc_error_type(int status) {
  return status == 401   ? "authentication_error"
         : status == 403 ? "permission_error"
         : status == 404 ? "not_found_error"
         : status == 501 ? "not_supported_error" /* llama-server's */
         : status == 503 ? "unavailable_error"   /* llama-server's */
         : status >= 500 ? "server_error"
                         : "invalid_request_error";
}

void mkc_respond_error(int fd, int status, const char *msg) {
  char *s = mkc_api_error_json(msg, mkc_error_type(status));
  if (s) mkc_http_respond(fd, status, "application/json", s, strlen(s));
  free(s);
}

/* s[0..n) after *buf's *len bytes, NUL-terminated, *cap grown as needed; -1 when out of memory. */
static int append_to(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    size_t grown = (*len + n + 1) * 2;
    char *t = realloc(*buf, grown);
    if (!t) return -1;
    *buf = t, *cap = grown;
  }
  memcpy(*buf + *len, s, n);
  *len += n;
  (*buf)[*len] = '\0';
  return 0;
}

static int append(mkc_answer *g, const char *s, size_t n) {
  return append_to(&g->text, &g->len, &g->cap, s, n);
}

/* Where the text first holds a stop string, searching from `from`: cuts
 * the text there and says so. */
static int cut_at_stop(mkc_answer *g, size_t from) {
  size_t best = g->len + 1;
  for (int k = 0; k < g->r->n_stop; k++) {
    const char *hit = strstr(g->text + from, g->r->stop[k]);
    if (hit && (size_t)(hit - g->text) < best) best = (size_t)(hit - g->text), g->stop_k = k;
  }
  if (best > g->len) return 0;
  g->len = best;
  g->text[best] = '\0';
  return 1;
}

/* The longest end of the text that begins s: held back from the stream
 * until the next piece says whether it is s. */
static size_t hold_for(const mkc_answer *g, const char *s, size_t hold) {
  size_t n = strlen(s);
  for (size_t h = n - 1 < g->len ? n - 1 : g->len; h > hold; h--)
    if (memcmp(g->text + g->len - h, s, h) == 0) return h;
  return hold;
}

/* What the stream holds back: the end of the text that may begin a stop
 * string; with Qwen's tools, all from the first <tool_call> on (or the end
 * that may begin one) and the whitespace before it, which a reply that goes
 * on to call ends without; with Llama 3.1's, a reply that opens with "{"
 * (it may be a call), and the whitespace a reply opens with. */
static size_t held_back(const mkc_answer *g) {
  size_t hold = 0;
  for (int k = 0; k < g->r->n_stop; k++) hold = hold_for(g, g->r->stop[k], hold);
  if (g->tools == MKC_TOOLS_LLAMA3) {
    size_t lead = 0;
    while (lead < g->len && mkc_json_space(g->text[lead])) lead++;
    return lead == g->len || g->text[lead] == '{' ? g->len : hold;
  }
  if (g->tools != MKC_TOOLS_QWEN) return hold;
  /* from what was sent on: a tag never begins before it (the stream holds a tag's start back) */
  const char *call = strstr(g->text + g->sent, MKC_TOOL_CALL_OPEN);
  if (call) hold = g->len - (size_t)(call - g->text);
  hold = hold_for(g, MKC_TOOL_CALL_OPEN, hold);
  while (hold < g->len && mkc_json_space(g->text[g->len - hold - 1])) hold++;
  return hold;
}

/* An answer's envelope (id, object, created, model) with its one choice in
 * *choice; object: the chat's kind, else text_completion. */
static cJSON *envelope(const mkc_answer *g, const char *chat_object, cJSON **choice) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", g->id);
  cJSON_AddStringToObject(o, "object", g->r->chat ? chat_object : "text_completion");
  cJSON_AddNumberToObject(o, "created", (double)g->created);
  cJSON_AddStringToObject(o, "model", g->model);
  *choice = cJSON_CreateObject();
  cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), *choice);
  cJSON_AddNumberToObject(*choice, "index", g->index);
  return o;
}

/* An ollama object: model, created_at (RFC 3339, UTC), the message (chat)
 * or response (generate) holding text[0..n), thinking[0..n_thinking) when
 * thinking is not NULL, and done. */
static cJSON *ollama_object(const mkc_answer *g, const char *text, size_t n, const char *thinking,
                            size_t n_thinking, int done) {
  cJSON *o = cJSON_CreateObject();
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[64];
  size_t w = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(when + w, sizeof when - w, ".%06ldZ", ts.tv_nsec / 1000);
  cJSON_AddStringToObject(o, "model", g->model);
  cJSON_AddStringToObject(o, "created_at", when);
  if (g->r->chat) {
    cJSON *msg = cJSON_AddObjectToObject(o, "message");
    cJSON_AddStringToObject(msg, "role", "assistant");
    cJSON_AddItemToObject(msg, "content", mkc_json_text(text, text ? n : 0));
    if (thinking) cJSON_AddItemToObject(msg, "thinking", mkc_json_text(thinking, n_thinking));
  } else {
    cJSON_AddItemToObject(o, "response", mkc_json_text(text, text ? n : 0));
    if (thinking) cJSON_AddItemToObject(o, "thinking", mkc_json_text(thinking, n_thinking));
  }
  cJSON_AddBoolToObject(o, "done", done);
  return o;
}

/* llama-server's own endpoint's object (/completion): content text[0..n), whether it is the
 * last (stop), the tokens so far. */
static cJSON *native_object(const mkc_answer *g, const char *text, size_t n, int stop) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "index", g->index);
  cJSON_AddItemToObject(o, "content", mkc_json_text(text, text ? n : 0));
  cJSON_AddItemToObject(o, "tokens",
                        stop ? cJSON_CreateIntArray(g->ids, g->n_ids) : cJSON_CreateArray());
  cJSON_AddNumberToObject(o, "id_slot", g->id_slot);
  cJSON_AddBoolToObject(o, "stop", stop);
  cJSON_AddNumberToObject(o, "tokens_predicted", g->n_ids);
  return o;
}

static cJSON *completion_probabilities(const mkc_answer *g, int from, int to);
static cJSON *logprobs_json(const mkc_answer *g, int from, int to);

/* Its last object's fields: the model, the counts, why it stopped (stop_type eos, word or
 * limit, and the stop string), the times as llama-server names them. */
static void native_done(const mkc_answer *g, cJSON *o, int n_prompt, int cached,
                        const mkc_decode_stats *st) {
  cJSON_AddStringToObject(o, "model", g->model);
  cJSON_AddNumberToObject(o, "tokens_evaluated", n_prompt);
  cJSON_AddStringToObject(o, "prompt", g->r->prompt ? g->r->prompt : "");
  cJSON_AddBoolToObject(o, "has_new_line", g->text && memchr(g->text, '\n', g->len) != NULL);
  cJSON_AddBoolToObject(o, "truncated", st->shifts > 0); /* llama-server's, for a shift */
  cJSON_AddStringToObject(o, "stop_type",
                          g->hit_stop             ? "word"
                          : g->eog || g->complete ? "eos"
                                                  : "limit");
  cJSON_AddStringToObject(o, "stopping_word", g->hit_stop ? g->r->stop[g->stop_k] : "");
  cJSON_AddNumberToObject(o, "tokens_cached", cached);
  cJSON *t = cJSON_AddObjectToObject(o, "timings");
  double gen_s = st->seconds - st->prompt_seconds, p_ms = 1e3 * st->prompt_seconds;
  cJSON_AddNumberToObject(t, "prompt_n", st->fed);
  cJSON_AddNumberToObject(t, "prompt_ms", p_ms);
  cJSON_AddNumberToObject(t, "prompt_per_token_ms", st->fed > 0 ? p_ms / st->fed : 0);
  cJSON_AddNumberToObject(t, "prompt_per_second", p_ms > 0 ? 1e3 * st->fed / p_ms : 0);
  cJSON_AddNumberToObject(t, "predicted_n", st->generated);
  cJSON_AddNumberToObject(t, "predicted_ms", 1e3 * gen_s);
  cJSON_AddNumberToObject(t, "predicted_per_token_ms",
                          st->generated > 0 ? 1e3 * gen_s / st->generated : 0);
  cJSON_AddNumberToObject(t, "predicted_per_second",
                          st->generated > 1 && gen_s > 0 ? st->generated / gen_s : 0);
  cJSON_AddNumberToObject(t, "draft_n", (double)st->drafted);
  cJSON_AddNumberToObject(t, "draft_n_accepted", (double)st->accepted);
  if (g->top_n >= 0)
    cJSON_AddItemToObject(o, "completion_probabilities", completion_probabilities(g, 0, g->n_ids));
}

/* Whole nanoseconds, as ollama counts time. */
static double nanoseconds(double s) { return (double)(long long)(s * 1e9 + 0.5); }

/* ollama's last object: why it ended, the counts and times in nanoseconds,
 * and generate's context. */
static void ollama_done(const mkc_answer *g, cJSON *o, const mkc_decode_stats *st) {
  cJSON_AddStringToObject(o, "done_reason",
                          g->calls.n ? "stop" : mkc_answer_finish(g)); /* ollama's */
  cJSON_AddNumberToObject(o, "total_duration", nanoseconds(st->seconds));
  cJSON_AddNumberToObject(o, "load_duration", 0);
  cJSON_AddNumberToObject(o, "prompt_eval_count", st->fed);
  cJSON_AddNumberToObject(o, "prompt_eval_duration", nanoseconds(st->prompt_seconds));
  cJSON_AddNumberToObject(o, "eval_count", g->n_ids);
  cJSON_AddNumberToObject(o, "eval_duration", nanoseconds(st->seconds - st->prompt_seconds));
  if (!g->r->chat && g->context)
    cJSON_AddItemToObject(o, "context", cJSON_CreateIntArray(g->context, g->n_context));
}

/* Sends o (freed) as one event (OpenAI's, llama-server's own) or one line (ollama's). */
static int send_object(mkc_answer *g, cJSON *o) {
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  int rc = !s ? -1 : g->r->ollama ? mkc_http_line(g->fd, s) : mkc_http_event(g->fd, s);
  free(s);
  return rc;
}

/* One chunk of the stream: text (NULL: the chat's role opening), finish (NULL while going
 * on), and with log-probabilities those of the tokens listed up to lp_to (from g->lp_sent). */
static int chunk(mkc_answer *g, const char *text, size_t n, const char *finish, int lp_to) {
  if (g->r->anthropic) return text ? mkc_anthropic_delta(g, 0, text, n) : 0; /* its end: apart */
  if (g->r->responses) return text ? mkc_responses_delta(g, 0, text, n) : 0;
  int from = g->lp_sent, listed = g->top_n >= 0 && lp_to > from;
  if (listed) g->lp_sent = lp_to;
  if (g->r->ollama) {
    cJSON *o = ollama_object(g, text, n, NULL, 0, 0);
    if (listed) cJSON_AddItemToObject(o, "logprobs", completion_probabilities(g, from, lp_to));
    return send_object(g, o);
  }
  if (g->r->native) {
    cJSON *o = native_object(g, text, n, 0);
    if (listed)
      cJSON_AddItemToObject(o, "completion_probabilities",
                            completion_probabilities(g, from, lp_to));
    return send_object(g, o);
  }
  cJSON *choice, *o = envelope(g, "chat.completion.chunk", &choice);
  if (listed)
    cJSON_AddItemToObject(choice, "logprobs", logprobs_json(g, from, lp_to));
  else if (g->top_n >= 0)
    cJSON_AddNullToObject(choice, "logprobs");
  if (g->r->chat) {
    cJSON *delta = cJSON_AddObjectToObject(choice, "delta");
    if (!text && !finish) cJSON_AddStringToObject(delta, "role", "assistant");
    if (text) cJSON_AddItemToObject(delta, "content", mkc_json_text(text, n));
  } else {
    cJSON_AddItemToObject(choice, "text", mkc_json_text(text, text ? n : 0));
  }
  if (finish)
    cJSON_AddStringToObject(choice, "finish_reason", mkc_answer_finish(g));
  else
    cJSON_AddNullToObject(choice, "finish_reason");
  if (g->r->include_usage) cJSON_AddNullToObject(o, "usage"); /* the last chunk has it */
  return send_object(g, o);
}

/* One chunk of the stream's reasoning: OpenAI's delta.reasoning_content
 * (llama-server's and DeepSeek's name), ollama's thinking. */
static int reasoning_chunk(mkc_answer *g, const char *text, size_t n) {
  if (g->r->ollama) return send_object(g, ollama_object(g, "", 0, text, n, 0));
  if (g->r->anthropic) return mkc_anthropic_delta(g, 1, text, n);
  if (g->r->responses) return mkc_responses_delta(g, 1, text, n);
  cJSON *choice, *o = envelope(g, "chat.completion.chunk", &choice); /* a chat's: reasoning.h */
  cJSON_AddItemToObject(cJSON_AddObjectToObject(choice, "delta"), "reasoning_content",
                        mkc_json_text(text, n));
  cJSON_AddNullToObject(choice, "finish_reason");
  if (g->r->include_usage) cJSON_AddNullToObject(o, "usage");
  return send_object(g, o);
}

/* OpenAI's usage: the prompt's tokens (cached: those the cache held) and the answer's. */
static cJSON *usage_json(const mkc_answer *g, int n_prompt, int cached) {
  cJSON *usage = cJSON_CreateObject();
  cJSON_AddNumberToObject(usage, "prompt_tokens", n_prompt);
  cJSON_AddNumberToObject(usage, "completion_tokens", g->earlier_tokens + g->n_ids);
  cJSON_AddNumberToObject(usage, "total_tokens", n_prompt + g->earlier_tokens + g->n_ids);
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(usage, "prompt_tokens_details"), "cached_tokens",
                          cached);
  return usage;
}

/* Streams what of the text can no longer turn out to be a stop string, with the tokens whose
 * text that completes. */
static void stream_out(mkc_answer *g, int all) {
  if (!g->r->stream || g->gone) return;
  size_t safe = all ? g->len : g->len - held_back(g);
  if (safe <= g->sent) return;
  int to = g->lp_sent;
  while (g->ends && to < g->n_ids && g->ends[to] <= safe) to++;
  if (chunk(g, g->text + g->sent, safe - g->sent, NULL, to) != 0) g->gone = 1;
  g->sent = safe;
}

/* Whether *text[0..*n), token id's, is the reply's (*text, *n past the
 * whitespace that opens a part): a split answer's reasoning goes to its own
 * text (and stream), a harmony call's arguments to theirs when the request
 * offered tools (else they are reply), its headers and tags nowhere. */
static int reply_part(mkc_answer *g, int id, const char **at, size_t *len) {
  if (!g->split) return 1;
  int part = mkc_reasoning_push(&g->rs, id, at, len);
  if (part == MKC_PART_CALL && g->tools == MKC_TOOLS_HARMONY) {
    if (append_to(&g->call, &g->call_len, &g->call_cap, *at, *len) != 0) g->gone = 1;
    return 0;
  }
  if (part != MKC_PART_REASONING) return part == MKC_PART_REPLY || part == MKC_PART_CALL;
  if (append_to(&g->reasoning, &g->reasoning_len, &g->reasoning_cap, *at, *len) != 0) {
    g->gone = 1; /* out of memory: the answer ends, as when a write fails */
    return 0;
  }
  if (g->r->stream && !g->gone && *len > 0 && reasoning_chunk(g, *at, *len) != 0) g->gone = 1;
  return 0;
}

void mkc_answer_on_logprobs(void *ctx, int id, float lp, const int *ids, const float *lps, int n) {
  mkc_answer *g = ctx;
  g->next_lp = lp;
  for (int i = 0; i < g->top_n && i < n; i++) g->next_ids[i] = ids[i], g->next_lps[i] = lps[i];
}

int mkc_answer_on_token(void *ctx, int id) {
  mkc_answer *g = ctx;
  if (g->tok && mkc_tokenizer_is_eog(g->tok, id)) {
    g->eog = 1;
    return 1;
  }
  if (g->top_n >= 0) {
    g->lp[g->n_ids] = g->next_lp;
    memcpy(g->top_ids + (size_t)g->n_ids * MKC_LOGPROBS_MAX, g->next_ids, sizeof g->next_ids);
    memcpy(g->top_lps + (size_t)g->n_ids * MKC_LOGPROBS_MAX, g->next_lps, sizeof g->next_lps);
  }
  g->ids[g->n_ids++] = id;
  if (g->ends) g->ends[g->n_ids - 1] = g->len; /* a part not the reply's adds no text */
  char buf[MKC_DETOK_MAX];
  size_t n = g->tok ? mkc_detok_push(&g->detok, id, buf, sizeof buf)
                    : (size_t)snprintf(buf, sizeof buf, g->n_ids > 1 ? " %d" : "%d", id);
  const char *piece = buf;
  if (!reply_part(g, id, &piece, &n)) return g->gone;
  /* a stop string may begin in the pieces before this one */
  size_t back = g->max_stop ? g->max_stop - 1 : 0, from = g->len > back ? g->len - back : 0;
  if (append(g, piece, n) != 0) return 1;
  if (g->ends) g->ends[g->n_ids - 1] = g->len;
  g->hit_stop = cut_at_stop(g, from);
  stream_out(g, 0);
  /* a whole answer writes nothing until its end: the client's hang-up is seen here */
  if (!g->r->stream && mkc_http_peer_gone(g->fd)) g->gone = 1;
  return g->hit_stop || g->gone;
}

/* A token's text (control tokens spelled out), or its id where there is no
 * tokenizer; malloc'd. */
static char *token_text(const mkc_answer *g, int id) {
  if (g->tok) {
    char *s = mkc_tokenizer_decode(g->tok, &id, 1, 1);
    return s ? s : strdup("");
  }
  char buf[16];
  snprintf(buf, sizeof buf, "%d", id);
  return strdup(buf);
}

/* {"token", "logprob", "bytes", "id"} as the chat API lists a token. */
static cJSON *chat_token(const mkc_answer *g, int id, float lp) {
  cJSON *o = cJSON_CreateObject();
  char *t = token_text(g, id);
  cJSON_AddStringToObject(o, "token", t ? t : "");
  cJSON_AddNumberToObject(o, "logprob", lp);
  cJSON *bytes = cJSON_AddArrayToObject(o, "bytes");
  for (const unsigned char *b = (const unsigned char *)t; b && *b; b++)
    cJSON_AddItemToArray(bytes, cJSON_CreateNumber(*b));
  cJSON_AddNumberToObject(o, "id", id);
  free(t);
  return o;
}

/* choices[0].logprobs of the answer's tokens [from, to): the chat API's list of tokens, each
 * with its top ones; the completions API's parallel lists (tokens, token_logprobs,
 * top_logprobs as {text: logprob}). */
static cJSON *logprobs_json(const mkc_answer *g, int from, int to) {
  cJSON *o = cJSON_CreateObject();
  if (g->r->chat) {
    cJSON *content = cJSON_AddArrayToObject(o, "content");
    for (int k = from; k < to; k++) {
      cJSON *t = chat_token(g, g->ids[k], g->lp[k]),
            *top = cJSON_AddArrayToObject(t, "top_logprobs");
      for (int i = 0; i < g->top_n; i++) {
        int id = g->top_ids[(size_t)k * MKC_LOGPROBS_MAX + i];
        if (id >= 0)
          cJSON_AddItemToArray(top,
                               chat_token(g, id, g->top_lps[(size_t)k * MKC_LOGPROBS_MAX + i]));
      }
      cJSON_AddItemToArray(content, t);
    }
    return o;
  }
  cJSON *tokens = cJSON_AddArrayToObject(o, "tokens"),
        *lps = cJSON_AddArrayToObject(o, "token_logprobs"),
        *tops = cJSON_AddArrayToObject(o, "top_logprobs");
  for (int k = from; k < to; k++) {
    char *t = token_text(g, g->ids[k]);
    cJSON_AddItemToArray(tokens, cJSON_CreateString(t ? t : ""));
    free(t);
    cJSON_AddItemToArray(lps, cJSON_CreateNumber(g->lp[k]));
    cJSON *top = cJSON_CreateObject();
    for (int i = 0; i < g->top_n; i++) {
      int id = g->top_ids[(size_t)k * MKC_LOGPROBS_MAX + i];
      if (id < 0) continue;
      char *tt = token_text(g, id);
      if (tt && !cJSON_GetObjectItemCaseSensitive(top, tt)) /* the likelier of two alike */
        cJSON_AddNumberToObject(top, tt, g->top_lps[(size_t)k * MKC_LOGPROBS_MAX + i]);
      free(tt);
    }
    cJSON_AddItemToArray(tops, top);
  }
  return o;
}

/* llama-server's completion_probabilities of tokens [from, to): per token {"id", "token",
 * "logprob", "bytes", "top_logprobs": [the same for each of the top ones]}. */
static cJSON *completion_probabilities(const mkc_answer *g, int from, int to) {
  cJSON *list = cJSON_CreateArray();
  for (int k = from; k < to; k++) {
    cJSON *t = chat_token(g, g->ids[k], g->lp[k]), *top = cJSON_AddArrayToObject(t, "top_logprobs");
    for (int i = 0; i < g->top_n; i++) {
      int id = g->top_ids[(size_t)k * MKC_LOGPROBS_MAX + i];
      if (id >= 0)
        cJSON_AddItemToArray(top, chat_token(g, id, g->top_lps[(size_t)k * MKC_LOGPROBS_MAX + i]));
    }
    cJSON_AddItemToArray(list, t);
  }
  return list;
}

/* The reply's calls: OpenAI's [{"id", "type": "function", "function":
 * {"name", "arguments": text}}] (in a stream each with its "index"), or
 * ollama's [{"function": {"name", "arguments": object}}]. */
static cJSON *calls_json(const mkc_answer *g, int stream) {
  cJSON *list = cJSON_CreateArray();
  for (int k = 0; k < g->calls.n; k++) {
    const mkc_tool_call *c = &g->calls.calls[k];
    cJSON *o = cJSON_CreateObject(), *f;
    cJSON_AddItemToArray(list, o);
    if (g->r->ollama) {
      f = cJSON_AddObjectToObject(o, "function");
      cJSON_AddStringToObject(f, "name", c->name);
      cJSON_AddItemToObject(f, "arguments", cJSON_Parse(c->arguments));
      continue;
    }
    char id[64];
    snprintf(id, sizeof id, "call_%s_%d", g->id, k); /* unique to the server's run */
    if (stream) cJSON_AddNumberToObject(o, "index", k);
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "type", "function");
    f = cJSON_AddObjectToObject(o, "function");
    cJSON_AddStringToObject(f, "name", c->name);
    cJSON_AddStringToObject(f, "arguments", c->arguments);
  }
  return list;
}

/* The whole answer of a request not streamed. */
int mkc_answer_respond(mkc_answer *g, int n_prompt, int cached, const mkc_decode_stats *st) {
  const char *thought = g->split ? (g->reasoning ? g->reasoning : "") : NULL;
  /* with calls, the reply is the text around them */
  const char *reply = g->calls.n ? g->calls.content : g->text;
  size_t reply_len = g->calls.n ? strlen(reply) : g->text ? g->len : 0;
  if (g->r->anthropic)
    return mkc_respond_json(g->fd, 200,
                            mkc_anthropic_message(g, reply, reply_len, n_prompt, cached));
  if (g->r->responses)
    return mkc_respond_json(g->fd, 200,
                            mkc_responses_object(g, reply, reply_len, n_prompt, cached));
  if (g->r->ollama) {
    cJSON *o = ollama_object(g, reply, reply_len, thought, g->reasoning_len, 1);
    if (g->calls.n)
      cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(o, "message"), "tool_calls",
                            calls_json(g, 0));
    ollama_done(g, o, st);
    if (g->top_n >= 0) /* ollama's list: llama-server's completion_probabilities */
      cJSON_AddItemToObject(o, "logprobs", completion_probabilities(g, 0, g->n_ids));
    return mkc_respond_json(g->fd, 200, o);
  }
  if (g->r->native) { /* more than one answer: a list of them, as llama-server gives */
    cJSON *o = native_object(g, g->text, g->text ? g->len : 0, 1);
    native_done(g, o, n_prompt, cached, st);
    if (!g->more && !g->choices) return mkc_respond_json(g->fd, 200, o);
    if (!g->choices) g->choices = cJSON_CreateArray();
    cJSON_AddItemToArray(g->choices, o);
    if (g->more) return 0;
    cJSON *all = g->choices;
    g->choices = NULL;
    return mkc_respond_json(g->fd, 200, all);
  }
  cJSON *choice, *o = envelope(g, "chat.completion", &choice);
  if (g->r->chat) {
    cJSON *msg = cJSON_AddObjectToObject(choice, "message");
    cJSON_AddStringToObject(msg, "role", "assistant");
    if (g->calls.n && !reply_len) /* OpenAI's: a reply that only calls has no content */
      cJSON_AddNullToObject(msg, "content");
    else
      cJSON_AddItemToObject(msg, "content", mkc_json_text(reply, reply_len));
    if (thought)
      cJSON_AddItemToObject(msg, "reasoning_content", mkc_json_text(thought, g->reasoning_len));
    if (g->calls.n) cJSON_AddItemToObject(msg, "tool_calls", calls_json(g, 0));
  } else if (g->echo) {
    size_t e = strlen(g->echo);
    char *both = malloc(e + g->len + 1);
    if (both) {
      memcpy(both, g->echo, e);
      memcpy(both + e, g->text, g->len);
    }
    cJSON_AddItemToObject(choice, "text", mkc_json_text(both, both ? e + g->len : 0));
    free(both);
  } else {
    cJSON_AddItemToObject(choice, "text", mkc_json_text(g->text, g->text ? g->len : 0));
  }
  cJSON_AddItemToObject(choice, "tokens", cJSON_CreateIntArray(g->ids, g->n_ids));
  if (g->top_n >= 0)
    cJSON_AddItemToObject(choice, "logprobs", logprobs_json(g, 0, g->n_ids));
  else
    cJSON_AddNullToObject(choice, "logprobs");
  cJSON_AddStringToObject(choice, "finish_reason", mkc_answer_finish(g));
  cJSON *all = cJSON_GetObjectItemCaseSensitive(o, "choices");
  if (g->more) { /* kept for the last choice's answer */
    if (!g->choices) g->choices = cJSON_CreateArray();
    cJSON_AddItemToArray(g->choices, cJSON_DetachItemFromArray(all, 0));
    cJSON_Delete(o);
    return 0;
  }
  if (g->choices) { /* the earlier choices first */
    cJSON_DetachItemFromArray(all, 0);
    while (cJSON_GetArraySize(g->choices) > 0)
      cJSON_AddItemToArray(all, cJSON_DetachItemFromArray(g->choices, 0));
    cJSON_AddItemToArray(all, choice);
  }
  cJSON_AddItemToObject(o, "usage", usage_json(g, n_prompt, cached));
  cJSON *t = cJSON_AddObjectToObject(o, "timings"); /* llama-server's names */
  double gen_s = st->seconds - st->prompt_seconds;
  cJSON_AddNumberToObject(t, "prompt_n", st->fed);
  cJSON_AddNumberToObject(t, "prompt_ms", 1e3 * st->prompt_seconds);
  cJSON_AddNumberToObject(t, "predicted_n", st->generated);
  cJSON_AddNumberToObject(t, "predicted_ms", 1e3 * gen_s);
  cJSON_AddNumberToObject(t, "predicted_per_second",
                          st->generated > 1 && gen_s > 0 ? st->generated / gen_s : 0);
  cJSON_AddNumberToObject(t, "draft_n", (double)st->drafted);
  cJSON_AddNumberToObject(t, "draft_n_accepted", (double)st->accepted);
  return mkc_respond_json(g->fd, 200, o);
}

int mkc_answer_open(mkc_answer *g, const mkc_api_req *r, int fd, const mkc_tokenizer *tok,
                    const char *model, long number, int n_gen) {
  *g = (mkc_answer){.r = r,
                    .fd = fd,
                    .tok = tok,
                    .model = model,
                    .created = (long)time(NULL),
                    .top_n = r->top_logprobs};
  if (r->responses) /* its items' ids are kind_ID: resp_, msg_, rs_, fc_ */
    snprintf(g->id, sizeof g->id, "%ld", number);
  else
    snprintf(g->id, sizeof g->id, "%s-%ld", r->chat ? "chatcmpl" : "cmpl", number);
  g->more = mkc_api_answers(r) > 1;
  if (tok) mkc_detok_init(&g->detok, tok, 0);
  for (int k = 0; k < r->n_stop; k++)
    if (strlen(r->stop[k]) > g->max_stop) g->max_stop = strlen(r->stop[k]);
  g->ids = malloc((size_t)(n_gen + 1) * sizeof *g->ids);
  if (g->top_n >= 0) {
    g->lp = malloc((size_t)(n_gen + 1) * sizeof *g->lp);
    g->top_ids = malloc((size_t)(n_gen + 1) * MKC_LOGPROBS_MAX * sizeof *g->top_ids);
    g->top_lps = malloc((size_t)(n_gen + 1) * MKC_LOGPROBS_MAX * sizeof *g->top_lps);
    if (r->stream) g->ends = malloc((size_t)(n_gen + 1) * sizeof *g->ends);
  }
  if (!g->ids || append(g, "", 0) != 0 ||
      (g->top_n >= 0 && (!g->lp || !g->top_ids || !g->top_lps || (r->stream && !g->ends)))) {
    mkc_answer_close(g);
    return -1;
  }
  return 0;
}

int mkc_answer_stream_start(mkc_answer *g) {
  if (g->r->ollama)
    g->gone = mkc_http_stream_start(g->fd, "application/x-ndjson") != 0;
  else if (g->gone || (g->index == 0 && mkc_http_stream_start(g->fd, "text/event-stream") != 0) ||
           (g->r->anthropic   ? mkc_anthropic_stream_start(g)
            : g->r->responses ? mkc_responses_stream_start(g)
                              : g->r->chat && chunk(g, NULL, 0, NULL, 0)) ||
           (g->echo && chunk(g, g->echo, strlen(g->echo), NULL, 0))) /* the prompt first */
    g->gone = 1;
  return g->gone ? -1 : 0;
}

/* The reply's calls, when it made any: only the first with
 * parallel_tool_calls false. */
static void read_calls(mkc_answer *g) {
  if (g->tools == MKC_TOOLS_HARMONY && g->call_len) {
    /* gpt-oss's call is its own message; one that is not a function's JSON call is reply */
    if (mkc_tool_calls_harmony(g->rs.h.recipient, g->call, g->call_len, g->text, &g->calls) <= 0)
      append(g, g->call, g->call_len);
    return;
  }
  if (!g->tools || mkc_tool_calls_read(g->tools, g->text, g->len, &g->calls) <= 0) return;
  for (int k = 1; g->r->one_call && k < g->calls.n; k++) {
    free(g->calls.calls[k].name), free(g->calls.calls[k].arguments);
    g->calls.calls[k] = (mkc_tool_call){0};
  }
  if (g->r->one_call) g->calls.n = 1;
}

void mkc_answer_flush(mkc_answer *g) {
  if (g->tok && !g->hit_stop) {
    char tail[MKC_DETOK_MAX];
    size_t back = g->max_stop ? g->max_stop - 1 : 0, from = g->len > back ? g->len - back : 0;
    size_t n = mkc_detok_flush(&g->detok, tail, sizeof tail);
    const char *piece = tail;
    if (reply_part(g, -1, &piece, &n) && append(g, piece, n) == 0)
      g->hit_stop = cut_at_stop(g, from);
  }
  read_calls(g);
}

int mkc_answer_reasoning_apart(const mkc_api_req *r, int server_format) {
  int fmt = r->reasoning_format ? r->reasoning_format - 1 : server_format;
  if (r->ollama) return r->chat || !r->raw;
  return r->chat && (r->anthropic || r->responses || fmt != MKC_REASONING_NONE);
}

void mkc_answer_reasoning(mkc_answer *g, int family) {
  g->family = family;
  g->split = g->tok && mkc_reasoning_init(&g->rs, family, g->tok) == 0;
}

void mkc_answer_tools(mkc_answer *g, int family) {
  g->tools = g->r->n_tools > 0 ? mkc_chat_tools(family) : MKC_TOOLS_NONE;
}

/* A stream's calls: the reply's text not yet sent (the text before the
 * first block, which the stream held back), then the calls in one chunk
 * (OpenAI's delta.tool_calls, ollama's message.tool_calls). */
static void stream_calls(mkc_answer *g) {
  const char *content = g->calls.content;
  size_t n = strlen(content), sent = g->sent < n ? g->sent : n;
  /* what was sent is the content's start (the text before the first block, trimmed at its end
   * here): the rest of it goes now */
  if (!g->gone && n > sent && memcmp(g->text, content, sent) == 0 &&
      chunk(g, content + sent, n - sent, NULL, g->lp_sent) != 0)
    g->gone = 1;
  g->sent = g->len;
  if (g->gone) return;
  if (g->r->anthropic || g->r->responses) {
    if ((g->r->anthropic ? mkc_anthropic_calls : mkc_responses_calls)(g) != 0) g->gone = 1;
    return;
  }
  cJSON *o;
  if (g->r->ollama) {
    o = ollama_object(g, "", 0, NULL, 0, 0);
    cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(o, "message"), "tool_calls",
                          calls_json(g, 0));
  } else {
    cJSON *choice;
    o = envelope(g, "chat.completion.chunk", &choice);
    cJSON_AddItemToObject(cJSON_AddObjectToObject(choice, "delta"), "tool_calls", calls_json(g, 1));
    cJSON_AddNullToObject(choice, "finish_reason");
    if (g->r->include_usage) cJSON_AddNullToObject(o, "usage");
  }
  if (send_object(g, o) != 0) g->gone = 1;
}

void mkc_answer_stream_end(mkc_answer *g, int n_prompt, int cached, const mkc_decode_stats *st) {
  if (g->calls.n)
    stream_calls(g);
  else
    stream_out(g, 1);
  if (g->r->anthropic) {
    if (!g->gone) mkc_anthropic_stream_end(g, cached);
    return;
  }
  if (g->r->responses) { /* no [DONE]: response.completed is the last event */
    if (!g->gone) mkc_responses_stream_end(g, n_prompt, cached);
    return;
  }
  if (g->r->ollama) {
    cJSON *o = ollama_object(g, NULL, 0, NULL, 0, 1);
    ollama_done(g, o, st);
    if (g->top_n >= 0 && g->lp_sent < g->n_ids) /* the tokens not listed yet */
      cJSON_AddItemToObject(o, "logprobs", completion_probabilities(g, g->lp_sent, g->n_ids));
    if (!g->gone && send_object(g, o) != 0) g->gone = 1;
    return;
  }
  if (g->r->native) { /* the last event: stop true, the counts; no [DONE] */
    cJSON *o = native_object(g, "", 0, 1);
    native_done(g, o, n_prompt, cached, st);
    if (g->top_n >= 0) /* in a stream, the tokens not listed yet */
      cJSON_ReplaceItemInObject(o, "completion_probabilities",
                                completion_probabilities(g, g->lp_sent, g->n_ids));
    if (!g->gone && send_object(g, o) != 0) g->gone = 1;
    return;
  }
  /* the last chunk: the tokens not listed yet (a stop string's, ...) */
  if (!g->gone && chunk(g, NULL, 0, mkc_answer_finish(g), g->n_ids) != 0) g->gone = 1;
  if (g->more) return;                   /* the next choice's chunks follow */
  if (!g->gone && g->r->include_usage) { /* stream_options.include_usage: choices empty */
    cJSON *choice, *o = envelope(g, "chat.completion.chunk", &choice);
    cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
    cJSON_AddItemToObject(o, "usage", usage_json(g, n_prompt, cached));
    if (send_object(g, o) != 0) g->gone = 1;
  }
  if (!g->gone && mkc_http_event(g->fd, "[DONE]") != 0) g->gone = 1;
}

void mkc_answer_stream_error(mkc_answer *g, const char *msg) {
  if (g->gone) return;
  if (g->r->responses) {
    mkc_responses_stream_error(g, msg);
    return;
  }
  cJSON *o = cJSON_CreateObject(), *e;
  if (g->r->ollama) { /* ollama's stream: a line with the error, as its whole answers have */
    cJSON_AddStringToObject(o, "error", msg);
    send_object(g, o);
    return;
  }
  if (g->r->anthropic) /* Anthropic's error event: {"type": "error", "error": {...}} */
    cJSON_AddStringToObject(o, "type", "error");
  e = cJSON_AddObjectToObject(o, "error");
  cJSON_AddStringToObject(e, "type", g->r->anthropic ? "api_error" : "server_error");
  cJSON_AddStringToObject(e, "message", msg);
  if (!g->r->anthropic) cJSON_AddNumberToObject(e, "code", 500);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (s) g->r->anthropic ? mkc_http_named_event(g->fd, "error", s) : mkc_http_event(g->fd, s);
  free(s);
}

int mkc_answer_next_choice(mkc_answer *g, int n_gen) {
  mkc_answer was = *g;
  g->choices = NULL, g->echo = NULL; /* kept below */
  mkc_answer_close(g);
  int rc = mkc_answer_open(g, was.r, was.fd, was.tok, was.model, 0, n_gen);
  if (rc == 0) {
    memcpy(g->id, was.id, sizeof g->id);
    g->created = was.created;
    g->index = was.index + 1;
    g->more = g->index + 1 < mkc_api_answers(was.r);
    g->earlier_tokens = was.earlier_tokens + was.n_ids;
    g->gone = was.gone;
    g->n_prompt = was.n_prompt;
    g->tools = was.tools;
    if (was.split) mkc_answer_reasoning(g, was.family);
  }
  g->choices = was.choices, g->echo = was.echo;
  return rc;
}

void mkc_answer_close(mkc_answer *g) {
  cJSON_Delete(g->choices), cJSON_Delete(g->items);
  g->choices = NULL, g->items = NULL;
  free(g->item_text);
  g->item_text = NULL;
  mkc_tool_calls_free(&g->calls);
  free(g->call);
  g->call = NULL;
  free(g->ids), free(g->text), free(g->lp), free(g->top_ids), free(g->top_lps), free(g->reasoning);
  free(g->ends), free(g->echo);
  g->echo = NULL;
  g->ids = NULL, g->text = NULL, g->lp = NULL, g->top_ids = NULL, g->top_lps = NULL;
  g->ends = NULL;
  g->reasoning = NULL;
}
