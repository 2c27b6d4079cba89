/* mkc serve's parts: the server (cmd_serve.c), a generation request made
 * ready to decode (serve_job.c), the connections (serve_loop.c) and, with
 * --parallel, the requests decoded together on a slot kernel
 * (serve_slots.c). */
#ifndef MKC_SERVE_H
#define MKC_SERVE_H

#include "cli.h"
#include "draft_source.h"
#include "exec/batch.h"
#include "exec/constrain.h"
#include "loaded.h"
#include "serve/api.h"
#include "serve/http.h"
#include "serve_answer.h"

#define MKC_SERVE_MAX_BODY (8u << 20)
#define MKC_SERVE_CORS_MAX 512
#define MKC_SERVE_CLOSING_MAX 64

typedef struct mkc_serve_job mkc_serve_job;
typedef struct mkc_slot_wait mkc_slot_wait;

/* A slot's last answered request, for GET /slots (id 0: none yet). */
typedef struct mkc_slot_last {
  long id;
  int n_prompt, n_cached, n_decoded, n_predict, stream;
  mkc_sampling opt;
  int *prompt; /* its tokens, made text when asked for */
  char *generated;
} mkc_slot_last;

/* What the server has done, for GET /metrics: the answered generation
 * requests, their prompt tokens fed and taken from the cache, the tokens
 * generated, drafts offered and accepted, and the seconds of each part. */
typedef struct mkc_serve_counts {
  long requests, prompt_tokens, cached_tokens, generated, drafted, accepted;
  double prompt_seconds, gen_seconds;
} mkc_serve_counts;

typedef struct mkc_server {
  const mkc_cli *c;
  mkc_loaded_model *m;
  mkc_drafter *drafter;
  int draft_layers;            /* in the kernel (--rounds with --draft-layers) */
  int family;                  /* the chat template's, or -1: chat requests refused */
  int tools;                   /* the template's tools are mkc's (mkc_chat_tools_for) */
  const char *name;            /* the model's, as /v1/models lists it */
  mkc_sampling base;           /* the command's sampling options */
  mkc_sampling_more base_more; /* and its samplers the kernel lacks */
  int fixed_seed;              /* --seed given: every request without a seed uses it */
  int pooling;                 /* --pooling: enum mkc_pooling (UNSET: the model's) */
  int *eog, n_eog;             /* the tokenizer's end-of-generation tokens, all of them */
  long requests;
  mkc_serve_counts counts;
  uint64_t cache_id; /* --slot-save-path: the model's id in slot files (mkc_loaded_cache_id) */
  /* a slot's last request's figures and texts, for GET /slots: the plain server's one slot's,
   * or with --parallel each slot's (lasts: [slots]) */
  mkc_slot_last last, *lasts;
  char **keys; /* --api-key, --api-key-file: a request needs one of them (n_keys > 0) */
  int n_keys;
  /* one request at a time: the tokens the session has read, in order */
  int *held;
  int n_held, n_valid;
  /* requests with format json: the vocabulary sorted for the constraint (the first such
   * request opens it) */
  mkc_constraint *json;
  /* answered connections still draining what their clients send (serve_loop.c) */
  struct {
    int fd;
    double until;
  } closing[MKC_SERVE_CLOSING_MAX];
  int n_closing;
  /* --parallel: the slot pool, its scheduler, and the requests on it (a list) */
  mkc_slots *slots;
  mkc_sched *sched;
  mkc_serve_job *jobs;
  mkc_slot_wait *waits; /* slot actions waiting for their slot's request to end */
} mkc_server;

/* A completion or chat request, from its parse to its answer's end. */
struct mkc_serve_job {
  mkc_api_req r;
  int fd;
  char path[32];                 /* the endpoint, for the log */
  char cors[MKC_SERVE_CORS_MAX]; /* the connection's headers (mkc_http_extra_headers) */
  int *prompt, n_prompt;         /* its tokens */
  int dropped;                   /* the chat's messages left out to fit the context */
  int n_gen, room;               /* tokens to generate; room: what the context leaves */
  int ctx;                       /* its context (ollama's num_ctx, at most the server's) */
  int shift, n_keep, n_discard;  /* a context shift past room: n_keep kept, n_discard dropped */
  mkc_sampling opt;
  unsigned long long seed0; /* its first choice's seed (OpenAI's n: choice i draws with + i) */
  mkc_sampling_more more;   /* the samplers the kernel lacks */
  int host;                 /* the host chooses its tokens: JSON, a grammar, or more */
  mkc_answer g;
  /* --parallel: its sequence, its tokens given to the answer, and ollama's
   * context (prompt then answer) */
  mkc_batch_seq q;
  /* its answers' figures so far (mkc_serve_job_choice_done): the decode's, and the prompts'
   * tokens and those the cache held (each prompt counted once, at its first choice) */
  mkc_decode_stats sum;
  int prompt_total, cached_total;
  /* OpenAI's list of prompts: each one's tokens (prompt is one of them) */
  int **prompts, *n_prompts, n_lists;
  long id;  /* the server's request number when it came (GET /slots's id_task) */
  int slot; /* --parallel: the slot decoding it, -1 before one does */
  int delivered;
  int *context;
  mkc_serve_job *next;
};

/* POST /api/embed, /api/embeddings, /v1/embeddings (kind: enum mkc_embed_kind;
 * serve_embed.c): MKC_SERVE_DONE. */
int mkc_serve_embed(mkc_server *sv, int fd, const mkc_http_req *req, int kind);

/* The route's outcome: the connection is done (answered), a job now owns
 * it (--parallel), or the server must stop (a backend failure, Ctrl-C). */
enum { MKC_SERVE_DONE = 0, MKC_SERVE_KEPT = 1, MKC_SERVE_STOP = -1 };

/* Answers the whole request req (mkc_http_parse'd) on fd. */
int mkc_serve_route(mkc_server *sv, int fd, const mkc_http_req *req);

/* Makes a parsed request (moved into j) ready: its prompt, sampling, token
 * budget and answer. 0, or the HTTP status refusing it with why filled;
 * either way mkc_serve_job_close frees what j holds. */
int mkc_serve_job_open(mkc_server *sv, mkc_serve_job *j, mkc_api_req *r, int fd, const char *path,
                       char *why, size_t cap);
void mkc_serve_job_close(mkc_serve_job *j);
/* The request's next choice (OpenAI's n, its list of prompts), after its last was answered: a
 * new answer, for the next prompt when the last one's choices are done, and the sampler's seed
 * the first's + the choice's place among its prompt's. 0, or -1 when out of memory. */
int mkc_serve_job_next_choice(mkc_server *sv, mkc_serve_job *j);
/* A choice decoded: its figures (st, its prompt tokens the cache held: cached) added to the
 * request's (j->sum, cached_total; the prompt's only at its first choice: a later one feeds only
 * the prompt's last token, or shares its pages), then its answer sent (a stream's end, or the
 * whole answer after the last choice). OpenAI's answers count the request's tokens so far;
 * llama-server's own, an object for each choice, count the choice's. */
void mkc_serve_job_answer(mkc_serve_job *j, const mkc_decode_stats *st, int cached);
/* j's JSON document (r.json_format): over the server's sorted vocabulary (the
 * first such request opens it), started on j's schema and seed; own: a
 * document of its own (--parallel, mkc_constraint_share), else the server's
 * one. NULL after a message. */
mkc_constraint *mkc_serve_job_json(mkc_server *sv, const mkc_serve_job *j, int own);
/* A chat request's messages in the model's template, as the prompt's text (malloc'd), or
 * NULL with the 400 message in why. */
char *mkc_serve_chat_text(const mkc_server *sv, const mkc_api_req *r, char *why, size_t cap);
/* llama-server's POST /slots/N?action=save|restore|erase (serve_slot_file.c): the
 * session's (--parallel: the pool's slot N's) tokens and KV rows to or from
 * --slot-save-path's FILENAME, or forgotten. MKC_SERVE_DONE, or MKC_SERVE_KEPT: the
 * slot is decoding, and the action waits for its request to end (mkc_serve_slot_waits),
 * answered then with the connection's headers (cors, mkc_http_extra_headers). */
int mkc_serve_slot_action(mkc_server *sv, int fd, const mkc_http_req *req, const char *cors);
/* --parallel: the waiting slot actions whose slot no longer decodes, done and answered. */
void mkc_serve_slot_waits(mkc_server *sv);
/* llama-server's GET /slots (serve_slot_list.c): each slot's context and whether it is busy,
 * with its request's figures, options and texts (the last one's on the plain server);
 * ?fail_on_no_slot=1: 503 when every slot is busy. */
void mkc_serve_slot_list(mkc_server *sv, int fd, const mkc_http_req *req);
/* The record of a request answered in slot s (the plain server's: 0), for GET /slots. */
void mkc_serve_slot_record(mkc_server *sv, int s, const mkc_serve_job *j, int cached,
                           int n_decoded);
/* Frees the records (the plain server's and --parallel's). */
void mkc_serve_slot_records_free(mkc_server *sv);
/* 0 when dir is a directory, else -1 after a message. */
int mkc_serve_slot_dir_check(const char *dir);
/* llama-server's GET /props (serve_props.c): the server's defaults, context, slots, the
 * model's template and special tokens. */
void mkc_serve_props(const mkc_server *sv, int fd);
/* llama-server's POST /apply-template: a chat request's messages in the template, unrun. */
void mkc_serve_apply_template(const mkc_server *sv, int fd, const mkc_http_req *req);
/* The prompt's tokens (malloc'd, *n of them) a request r would be given (its Anthropic
 * thinking settled first, as mkc_serve_job_open does), or NULL with the 400 message (out of
 * memory: a message naming it) in why. */
int *mkc_serve_prompt(const mkc_server *sv, mkc_api_req *r, int *n, char *why, size_t cap);
/* Anthropic's POST /v1/messages/count_tokens (api MKC_COUNT_ANTHROPIC), llama-server's POST
 * /v1/responses/input_tokens and /v1/chat/completions/input_tokens: {"input_tokens"} of the
 * prompt a request of the same messages, system and tools would be given (however long it
 * is); OpenAI's with "object": "response.input_tokens", as llama-server answers. */
enum { MKC_COUNT_ANTHROPIC, MKC_COUNT_RESPONSES, MKC_COUNT_CHAT };
/* llama-server's GET /lora-adapters: the --lora adapters (id, path, scale, task_name,
 * prompt_prefix); POST: the scales in effect asked again is a success, others are refused
 * (mkc merges adapters at load). */
void mkc_serve_lora_adapters(mkc_server *sv, int fd, const mkc_http_req *req);
/* Why a list of llama-server's {"id", "scale"} (POST /lora-adapters, a request's "lora") asks
 * scales other than m's adapters' (one left out asks 0), or a list of another shape; NULL when
 * it asks the scales in effect. */
const char *mkc_serve_lora_asked(const mkc_loaded_model *m, const struct cJSON *list);
void mkc_serve_count_tokens(mkc_server *sv, int fd, const mkc_http_req *req, int api);
/* An answered request: counted (sv->counts) and logged; why: why it stopped. */
void mkc_serve_job_done(mkc_server *sv, const mkc_serve_job *j, const mkc_decode_stats *st,
                        int cached, const char *why);
/* Why generation ended, for the log (full: it reached its room). */
const char *mkc_serve_stopped(const mkc_answer *g, int interrupted, int full);

/* --parallel: j joins the slot scheduler (its stream opened). 0, or -1
 * when it could not (j answered 500 and closed). */
int mkc_serve_slots_add(mkc_server *sv, mkc_serve_job *j);
/* One step of every request on the slots: their new tokens to their
 * answers, the finished ones answered and closed. 0, or -1 when the
 * backend failed (every request then ended). */
int mkc_serve_slots_step(mkc_server *sv);
/* Ends every request with what it has (Ctrl-C), answered and closed. */
void mkc_serve_slots_end_all(mkc_server *sv, const char *why);

/* Accepts and reads connections on listen_fd, routing each request, until
 * Ctrl-C or a failure. 0, or -1 after a message. */
int mkc_serve_loop(mkc_server *sv, int listen_fd);
/* Closes a connection after its answer. What the client still sends (a body
 * refused before it was read) is drained first, for up to 200 ms, since
 * closing on unread bytes resets the connection and can lose the answer;
 * the loop does that draining between its other work, blocking nothing. */
void mkc_serve_close(mkc_server *sv, int fd);

#endif
