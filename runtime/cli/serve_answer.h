/* mkc serve's answer to one completion or chat request, as it is
 * generated: the text (cut before a stop string; a stream holds back what
 * could still begin one), the tokens with their log-probabilities, and the
 * JSON that carries them, whole or as server-sent events. */
#ifndef MKC_SERVE_ANSWER_H
#define MKC_SERVE_ANSWER_H

#include <cjson/cJSON.h>

#include "exec/decode.h"
#include "model/reasoning.h"
#include "model/tool_calls.h"
#include "serve/api.h"
#include "tokenizer/tokenizer.h"

typedef struct mkc_answer {
  const mkc_api_req *r;
  int fd;
  const mkc_tokenizer *tok; /* NULL: the answer is token ids, spelled as run prints them */
  const char *model;        /* the name answers carry */
  mkc_detok detok;
  char *text;            /* what the answer says so far */
  char *echo;            /* OpenAI's echo: the prompt's text, ahead of it (malloc'd; or NULL) */
  size_t len, cap, sent; /* sent: the bytes of it streamed */
  size_t max_stop;       /* the longest stop string's bytes */
  int *ids;              /* the answer's tokens (an end-of-generation token not among them) */
  int n_ids;
  int eog, hit_stop, gone; /* ended by an end-of-generation token, a stop string; client gone */
  int stop_k;              /* the stop string it ended at (r->stop[stop_k]) */
  int complete;            /* ended with its constrained answer whole: 1 JSON, 2 a grammar's */
  /* with log-probabilities (top_n >= 0): each answer token's, and the top_n
   * most likely at its place; next_*: the kernel's for the token to come */
  int top_n;
  float *lp, *top_lps, next_lp, next_lps[MKC_LOGPROBS_MAX];
  int *top_ids, next_ids[MKC_LOGPROBS_MAX];
  /* ... and in a stream: the text's length once each token's part of it was added (a chunk
   * lists the tokens whose text it completes), and the tokens listed so far */
  size_t *ends;
  int lp_sent;
  char id[40];
  long created;
  /* OpenAI's n (r->n_choices): this answer's choice, whether another follows (its stream's
   * usage and [DONE], its whole answer's envelope wait for the last), and the earlier
   * choices: their JSON (a whole answer's) and tokens */
  int index, more;
  int id_slot; /* llama-server's: the slot decoding it (--parallel's; else 0) */
  cJSON *choices;
  int earlier_tokens;
  /* ollama's /api/generate: the tokens its last object returns as "context"
   * (the prompt and the answer, for the next request to continue); the
   * caller sets them before the answer ends */
  const int *context;
  int n_context;
  /* a model that reasons first (mkc_answer_reasoning): the answer split into
   * its reasoning, answered as reasoning_content (ollama's: thinking), and
   * its reply, the text above; gpt-oss's headers and the think tags are
   * neither */
  int split, family;
  mkc_reasoning rs;
  char *reasoning;
  size_t reasoning_len, reasoning_cap;
  /* a request with tools: the format of the reply's calls (enum
   * mkc_tool_format, mkc_answer_tools), read when it ends (tool_calls.h)
   * and answered as tool_calls; a stream holds back what may be a call
   * until then */
  int tools;
  mkc_tool_calls calls;
  char *call; /* gpt-oss's: the call message's arguments, as they came */
  size_t call_len, call_cap;
  /* Anthropic's stream (serve_anthropic.c): the prompt's tokens (its message_start's usage), the
   * content block open (-1: none) and whether it is the reasoning's, the blocks opened */
  int n_prompt;
  int block, block_thinking, blocks;
  /* OpenAI's Responses stream (serve_responses.c): the output items as the content blocks
   * above; the events' sequence number, the items done (the last event's output), and the open
   * item's text so far */
  int seq;
  cJSON *items;
  char *item_text;
  size_t item_len, item_cap;
} mkc_answer;

/* For request r on connection fd, the request's number-th, of up to n_gen
 * tokens. 0, or -1 when out of memory. */
int mkc_answer_open(mkc_answer *a, const mkc_api_req *r, int fd, const mkc_tokenizer *tok,
                    const char *model, long number, int n_gen);
void mkc_answer_close(mkc_answer *a);
/* After a choice's answer was given (mkc_answer_respond or _stream_end, with more set): the
 * same request's next choice, of up to n_gen tokens, its text empty, the earlier choices kept.
 * 0, or -1 when out of memory. */
int mkc_answer_next_choice(mkc_answer *a, int n_gen);
/* Splits the answer into reasoning and reply (reasoning.h), for a prompt in
 * the chat template of family; nothing changes for a family that does not
 * reason first, or a vocabulary without its tokens. */
void mkc_answer_reasoning(mkc_answer *a, int family);
/* Whether r's answer has its reasoning apart (mkc_answer_reasoning): a chat's and ollama's
 * generate's (not raw), unless llama-server's reasoning_format none (the request's, else
 * server_format: serve --reasoning-format) leaves it in the reply; ollama's, Anthropic's and
 * OpenAI's Responses APIs put it apart always. */
int mkc_answer_reasoning_apart(const mkc_api_req *r, int server_format);

/* Reads the reply's tool calls when the request offered tools, in the
 * format of family's template (mkc_chat_tools). */
void mkc_answer_tools(mkc_answer *g, int family);

/* The decode loop's callbacks (mkc_decode_opts.on_token, on_logprobs; ctx:
 * the answer). on_token stops generation at an end-of-generation token, a
 * stop string, or a client gone. */
int mkc_answer_on_token(void *ctx, int id);
void mkc_answer_on_logprobs(void *ctx, int id, float lp, const int *ids, const float *lps, int n);

/* After generation: the detokenizer's last bytes into the text, and the
 * reply's tool calls read from it (a request with tools). */
void mkc_answer_flush(mkc_answer *a);
/* "tool_calls" (the reply called tools), "stop" (an end-of-generation token
 * or a stop string) or "length". */
const char *mkc_answer_finish(const mkc_answer *a);

/* A stream: its head (and the chat's role chunk) before generation; after
 * it, the rest of the text, then the finish and [DONE] (OpenAI's) or the
 * last object with the counts and times (ollama's). A write that fails
 * marks the client gone (-1). cached: the prompt tokens the cache held. */
int mkc_answer_stream_start(mkc_answer *a);
void mkc_answer_stream_end(mkc_answer *a, int n_prompt, int cached, const mkc_decode_stats *st);
/* A stream that cannot go on (decoding failed): its last event says so in the API's shape
 * (OpenAI's and llama-server's data: {"error": {...}}, Anthropic's event: error, ollama's
 * {"error": ...} line), with no finish after it, so a client does not take the text so far
 * for a whole answer. */
void mkc_answer_stream_error(mkc_answer *a, const char *msg);

/* The whole answer, 200. OpenAI's: text or message, tokens, logprobs, usage,
 * llama-server's timings; ollama's: its one object with done true. 0, or -1
 * as mkc_http_write. */
int mkc_answer_respond(mkc_answer *a, int n_prompt, int cached, const mkc_decode_stats *st);

/* A JSON answer (o is freed), and an error answer with msg: OpenAI's
 * {"error": {"message", "type"}}, ollama's {"error": msg}, Anthropic's
 * {"type": "error", "error": {"type", "message"}}; mkc_respond_error_for: r's API's. */
int mkc_respond_json(int fd, int status, cJSON *o);
void mkc_respond_error(int fd, int status, const char *msg);
void mkc_respond_ollama_error(int fd, int status, const char *msg);
void mkc_respond_anthropic_error(int fd, int status, const char *msg);
void mkc_respond_error_for(const mkc_api_req *r, int fd, int status, const char *msg);
/* OpenAI's error type for an HTTP status (Anthropic's differ past 500 and at 413). */
const char *mkc_error_type(int status);

/* o (freed) as one server-sent event named as its "type" (Anthropic's and the Responses API's
 * streams): 0, or -1 with the client marked gone. */
int mkc_answer_send_typed(mkc_answer *g, cJSON *o);

/* Anthropic's Messages API's shapes (serve_anthropic.c): the whole answer; a stream's
 * message_start, a delta of its reply (thinking: of its reasoning) in the content block it
 * belongs to, and its end (the open block closed, message_delta with the stop reason and
 * usage, message_stop). The stream's return -1 when a write failed. */
cJSON *mkc_anthropic_message(const mkc_answer *g, const char *reply, size_t n, int n_prompt,
                             int cached);
int mkc_anthropic_stream_start(mkc_answer *g);
int mkc_anthropic_delta(mkc_answer *g, int thinking, const char *text, size_t n);
int mkc_anthropic_stream_end(mkc_answer *g, int cached);
/* A stream's calls: each a tool_use block, its arguments one input_json_delta. */
int mkc_anthropic_calls(mkc_answer *g);

/* OpenAI's Responses API's shapes (serve_responses.c), as Anthropic's above: the whole
 * response; a stream's response.created and response.in_progress, a delta of its reply
 * (thinking: of its reasoning) in the output item it belongs to, its calls (each a
 * function_call item), and its end (the open item done, then response.completed, or
 * response.incomplete after max_output_tokens); a stream's error event. */
cJSON *mkc_responses_object(const mkc_answer *g, const char *reply, size_t n, int n_prompt,
                            int cached);
int mkc_responses_stream_start(mkc_answer *g);
int mkc_responses_delta(mkc_answer *g, int thinking, const char *text, size_t n);
int mkc_responses_calls(mkc_answer *g);
int mkc_responses_stream_end(mkc_answer *g, int n_prompt, int cached);
void mkc_responses_stream_error(mkc_answer *g, const char *msg);

#endif
