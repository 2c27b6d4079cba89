/* mkc serve: the model behind an OpenAI-style HTTP API, as llama-server and
 * ollama offer it. One session answers one request at a time, in the order
 * they connect; a request whose tokens begin as the previous one's did
 * (the same conversation, a turn longer) feeds only what is new, the rest
 * staying in the KV cache. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "draft_source.h"
#include "exec/decode.h"
#include "interrupt.h"
#include "loaded.h"
#include "serve/api.h"
#include "serve/http.h"
#include "serve_answer.h"
#include "tokenizer/tokenizer.h"
#include "util/version.h"

static const char USAGE[] =
    "usage: mkc serve -m MODEL [--host ADDR] [--port N] [options]\n"
    "       mkc serve --preset P --random-weights SEED [options]\n"
    "\n"
    "Answers HTTP requests as OpenAI's API does, one at a time:\n"
    "  POST /v1/chat/completions  messages in the model's chat template\n"
    "  POST /v1/completions       a prompt: text, or token ids ([1, 2, 3]; the only\n"
    "                             form with --preset, whose answers are ids)\n"
    "  GET  /v1/models, /health; POST /tokenize, /detokenize (llama-server's)\n"
    "and ollama's API: POST /api/chat, /api/generate, /api/show; GET /api/tags,\n"
    "/api/version\n"
    "Requests take max_tokens, temperature, top_p, top_k, min_p, seed, stop,\n"
    "presence_penalty, frequency_penalty, repeat_penalty, repeat_last_n,\n"
    "logprobs (with the chat's top_logprobs; whole answers only) and stream\n"
    "(server-sent events); a field not given is this command's option (the\n"
    "same defaults as run: greedy unless --temp). A request that shares its\n"
    "first tokens with the one before feeds only the rest. Ctrl-C (or SIGTERM) stops.\n"
    "  -m, --model MODEL      GGUF file, Hugging Face folder, or a model's file name\n"
    "                         in the model directory (~/.cache/mkc/models)\n"
    "  --host ADDR            the address to listen on (default 127.0.0.1)\n"
    "  --port N               the port (default 8080; 0: any free one, printed)\n"
    "  --chat-template NAME   the template's family when the model's is unknown\n"
    "                         (chatml, llama3, ...)\n"
    "  -n, --n-predict N      a request's token limit when it gives no max_tokens\n"
    "                         (default -1: until the end or a full context)\n"
    "  --temp T, -s/--seed S, --top-k N, --top-p P, --min-p P, --repeat-penalty R,\n"
    "  --repeat-last-n N, --presence-penalty P, --frequency-penalty F, --draft-max K,\n"
    "  --draft-min K, --draft-adaptive, --draft-layers L, -md/--model-draft FILE,\n"
    "  --rounds R, -c/--ctx N, --kv-dtype T, --backend B, -t/--threads N, --dequant,\n"
    "  --ubatch N: as for run\n";

#define MAX_BODY (8u << 20)
#define READ_TIMEOUT_S 30

typedef struct server {
  const mkc_cli *c;
  mkc_loaded_model *m;
  mkc_drafter *drafter;
  int draft_layers;  /* in the kernel (--rounds with --draft-layers) */
  int family;        /* the chat template's, or -1: chat requests refused */
  const char *name;  /* the model's, as /v1/models lists it */
  mkc_sampling base; /* the command's sampling options */
  int fixed_seed;    /* --seed given: every request without a seed uses it */
  int *held;         /* the tokens the session has read, in order */
  int n_held, n_valid;
  long requests;
} server;

/* Why generation ended, for the log. */
static const char *stopped(const mkc_answer *g, const mkc_decode_stats *st, int interrupted,
                           int full) {
  return g->gone                ? "the client went away"
         : interrupted          ? "interrupted (Ctrl-C)"
         : g->eog               ? "end of generation"
         : g->hit_stop          ? "a stop string"
         : st->ctx_full || full ? "context full"
                                : "max_tokens reached";
}

/* Whether each of ids[0..n) (the request's `what`) is in the vocabulary: 1, or 0 with the 400
 * message naming the first that is not. */
static int in_vocab(const int *ids, int n, int vocab, const char *what, char *why, size_t cap) {
  for (int i = 0; i < n; i++)
    if (ids[i] >= vocab) {
      snprintf(why, cap, "%s[%d]: token %d is outside the vocabulary (0..%d)", what, i, ids[i],
               vocab - 1);
      return 0;
    }
  return 1;
}

/* The prompt's tokens for the request, or NULL with the 400 message. */
static int *prompt_of(const server *sv, const mkc_api_req *r, int *n, char *why, size_t cap) {
  const mkc_tokenizer *tok = sv->m->file.tok;
  const int vocab = sv->m->g.vocab;
  *n = 0;
  if (r->prompt_ids) {
    if (!in_vocab(r->prompt_ids, r->n_prompt_ids, vocab, "prompt", why, cap)) return NULL;
    int *ids = malloc((size_t)r->n_prompt_ids * sizeof *ids);
    if (!ids) {
      snprintf(why, cap, "out of memory");
      return NULL;
    }
    memcpy(ids, r->prompt_ids, (size_t)r->n_prompt_ids * sizeof *ids);
    *n = r->n_prompt_ids;
    return ids;
  }
  if (!tok) {
    snprintf(why, cap,
             r->ollama ? "%s has no tokenizer: ollama's API needs one (POST /v1/completions takes "
                         "token ids)"
                       : "%s has no tokenizer: give the prompt as token ids ([1, 2, 3])",
             sv->name);
    return NULL;
  }
  char *text = NULL;
  if (r->chat) {
    if (sv->family < 0) {
      snprintf(why, cap,
               "%s's chat template is not one mkc knows: start the server with --chat-template "
               "NAME (%s)",
               sv->name, mkc_chat_family_names());
      return NULL;
    }
    /* system first if at all, then user and assistant by turns, ending with the user */
    int first = strcmp(r->msgs[0].role, "system") == 0;
    for (int i = first; i < r->n_msgs; i++)
      if (strcmp(r->msgs[i].role, (i - first) % 2 ? "assistant" : "user") != 0) {
        snprintf(why, cap,
                 "messages[%d]: expected %s message (a system message first if any, then "
                 "user and assistant by turns)",
                 i, (i - first) % 2 ? "an assistant" : "a user");
        return NULL;
      }
    if ((r->n_msgs - first) % 2 == 0) {
      snprintf(why, cap, "messages: the last message must be the user's");
      return NULL;
    }
    text = mkc_chat_render(sv->family, r->msgs, r->n_msgs, 1);
    if (!text) {
      snprintf(why, cap, "messages: the %s template cannot render them (the server's log says why)",
               mkc_chat_family_name(sv->family));
      return NULL;
    }
  } else if (r->ollama && !r->raw && sv->family >= 0) {
    /* ollama's generate: the prompt as the user's turn in the template, after a system turn */
    mkc_chat_msg msgs[2] = {{"system", r->system}, {"user", r->prompt}};
    text = mkc_chat_render(sv->family, msgs + !r->system, 1 + !!r->system, 1);
    if (!text) {
      snprintf(why, cap, "the %s template cannot render the prompt (the server's log says why)",
               mkc_chat_family_name(sv->family));
      return NULL;
    }
  } else if (r->system && !r->raw) {
    snprintf(why, cap, "system: %s has no chat template to put it in", sv->name);
    return NULL;
  } else if (!(text = strdup(r->prompt))) {
    snprintf(why, cap, "out of memory");
    return NULL;
  }
  /* ollama's context: the tokens of an earlier answer, which this prompt continues */
  if (!in_vocab(r->context, r->n_context, vocab, "context", why, cap)) {
    free(text);
    return NULL;
  }
  int *ids = NULL;
  int n_text = mkc_tokenizer_encode(tok, text, strlen(text),
                                    !r->n_context && mkc_tokenizer_add_bos(tok), 1, &ids);
  free(text);
  *n = n_text + r->n_context;
  int *all = n_text >= 0 && *n > 0 ? malloc((size_t)*n * sizeof *all) : NULL;
  if (all && r->n_context) memcpy(all, r->context, (size_t)r->n_context * sizeof *all);
  if (all && n_text > 0) memcpy(all + r->n_context, ids, (size_t)n_text * sizeof *all);
  free(ids);
  if (!all) {
    snprintf(why, cap,
             n_text < 0 ? "the prompt could not be tokenized (the server's log says why)"
             : *n == 0  ? "the prompt is empty: at least one token is needed"
                        : "out of memory");
    return NULL;
  }
  return all;
}

/* A seed for a request that gives none: the command's --seed, else a new one. */
static void draw_seed(const server *sv, mkc_sampling *o) {
  if (sv->fixed_seed) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long s = ((unsigned long long)ts.tv_sec * 1000000007ull) ^
                         (unsigned long long)ts.tv_nsec ^ ((unsigned long long)sv->requests << 40);
  o->seed_lo = (unsigned)s;
  o->seed_hi = (unsigned)(s >> 32);
}

/* An error answer in the request's API's shape. */
static void refuse(const mkc_api_req *r, int fd, int status, const char *msg) {
  (r->ollama ? mkc_respond_ollama_error : mkc_respond_error)(fd, status, msg);
}

/* Decodes a completion or chat request and answers it: 0, or -1 when the
 * server must stop (a backend failure, Ctrl-C). */
static int complete(server *sv, int fd, const mkc_api_req *r, const char *path) {
  char why[400];
  const mkc_tokenizer *tok = sv->m->file.tok;
  if (!tok && r->n_stop) {
    refuse(r, fd, 400, "stop: strings need a model with a tokenizer (this one answers ids)");
    return 0;
  }
  int n_prompt;
  int *prompt = prompt_of(sv, r, &n_prompt, why, sizeof why);
  if (!prompt) {
    refuse(r, fd, 400, why);
    return 0;
  }
  int max_ctx = sv->m->g.max_ctx;
  if (n_prompt > max_ctx) {
    snprintf(why, sizeof why,
             "the prompt is %d tokens but the context holds %d (start the server with a larger "
             "--ctx)",
             n_prompt, max_ctx);
    free(prompt);
    refuse(r, fd, 400, why);
    return 0;
  }
  if (r->top_logprobs >= 0 && (r->stream || sv->c->rounds > 1)) {
    refuse(r, fd, 400,
           r->stream ? "logprobs come with whole answers: not with \"stream\": true"
                     : "logprobs: not on a server started with --rounds (a launch of "
                       "rounds keeps only its last round's)");
    free(prompt);
    return 0;
  }
  mkc_sampling o = mkc_api_sampling(r, sv->base);
  /* the kernel computes them when asked for at least one (the token's own comes with it) */
  o.logprobs = r->top_logprobs > 0 ? r->top_logprobs : r->top_logprobs == 0 ? 1 : 0;
  if (!r->have_seed) draw_seed(sv, &o);
  if (mkc_sampling_check(&o) != 0 || mkc_session_set_sampling(sv->m->s, &o) != 0) {
    free(prompt);
    refuse(r, fd, 400, "the sampling options were refused (the server's log says why)");
    return 0;
  }
  int room = max_ctx - n_prompt + 1;
  int limit = r->max_tokens >= 0 ? r->max_tokens : sv->c->have_n ? sv->c->n_gen : -1;
  int n_gen = limit < 0 || limit > room ? room : limit;
  mkc_answer g;
  int opened = mkc_answer_open(&g, r, fd, tok, sv->name, sv->requests, n_gen) == 0;
  int *out = malloc((size_t)(n_gen + 1) * sizeof *out);
  int *held = realloc(sv->held, (size_t)(n_prompt + n_gen + 1) * sizeof *held);
  if (held) sv->held = held;
  if (!opened || !out || !held) {
    if (opened) mkc_answer_close(&g);
    free(out), free(prompt);
    refuse(r, fd, 500, "out of memory");
    return 0;
  }
  /* the tokens the session holds that begin this prompt stay; at least the last is fed */
  int cached = 0;
  while (cached < sv->n_valid && cached < n_prompt - 1 && held[cached] == prompt[cached]) cached++;
  if (r->stream) mkc_answer_stream_start(&g);
  int eog_ids[MKC_ROUND_STOPS],
      n_eog = tok ? mkc_tokenizer_eog_ids(tok, eog_ids, MKC_ROUND_STOPS) : 0;
  if (n_eog > MKC_ROUND_STOPS) n_eog = MKC_ROUND_STOPS;
  mkc_decode_opts d = {.draft_max = sv->c->draft_max,
                       .adaptive = sv->c->draft_adaptive,
                       .draft_min = sv->c->draft_min,
                       .drafter = sv->drafter,
                       .rounds = sv->c->rounds,
                       .draft_layers = sv->draft_layers,
                       .stop_ids = eog_ids,
                       .n_stop_ids = n_eog,
                       .on_token = mkc_answer_on_token,
                       .on_logprobs = mkc_answer_on_logprobs,
                       .ctx = &g,
                       .interrupted = &mkc_interrupted};
  mkc_decode_stats st;
  int rc =
      g.gone ? 0
             : mkc_decode_more(sv->m->s, &sv->m->g, prompt, n_prompt, cached, n_gen, &d, out, &st);
  if (g.gone) memset(&st, 0, sizeof st);
  /* what the session holds now: the prompt as far as it got, then the answer but its last token */
  memcpy(held, prompt, (size_t)n_prompt * sizeof *held);
  memcpy(held + n_prompt, out, (size_t)(rc == 0 ? st.generated : 0) * sizeof *held);
  int pos = mkc_session_pos(sv->m->s);
  sv->n_held = n_prompt + (rc == 0 ? st.generated : 0);
  sv->n_valid = rc != 0 || g.gone ? 0 : pos < n_prompt ? pos : sv->n_held - (st.generated > 0);
  if (rc == 0) mkc_answer_flush(&g);
  g.context = held, g.n_context = sv->n_held;
  int interrupted = mkc_interrupted;
  if (rc != 0) {
    if (!r->stream) refuse(r, fd, 500, "decoding failed (the server's log says why)");
  } else if (r->stream) {
    mkc_answer_stream_end(&g, n_prompt, n_prompt - st.fed, &st);
  } else {
    mkc_answer_respond(&g, n_prompt, n_prompt - st.fed, &st);
  }
  if (rc == 0) {
    double gen_s = st.seconds - st.prompt_seconds;
    fprintf(stderr,
            "mkc: POST %s: prompt %d tokens (%d cached) in %.3f s; generated %d tokens in %.3f s "
            "(%.1f tok/s); drafted %ld, accepted %ld; stopped: %s\n",
            path, n_prompt, n_prompt - st.fed, st.prompt_seconds, g.n_ids, gen_s,
            st.generated > 1 && gen_s > 0 ? st.generated / gen_s : 0.0, st.drafted, st.accepted,
            stopped(&g, &st, interrupted, n_gen == room));
  }
  mkc_answer_close(&g);
  free(out), free(prompt);
  return rc != 0 || interrupted ? -1 : 0;
}

/* ---- the connection ---- */

static int list_models(server *sv, int fd) {
  cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "object", "list");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "data"), m);
  cJSON_AddStringToObject(m, "id", sv->name);
  cJSON_AddStringToObject(m, "object", "model");
  cJSON_AddNumberToObject(m, "created", 0);
  cJSON_AddStringToObject(m, "owned_by", "mkc");
  cJSON_AddNumberToObject(m, "context_length", sv->m->g.max_ctx);
  return mkc_respond_json(fd, 200, o);
}

/* llama-server's /tokenize and /detokenize, with the model's tokenizer. */
static void tokens(server *sv, int fd, const mkc_http_req *req, int detokenize) {
  char why[200];
  const mkc_tokenizer *tok = sv->m->file.tok;
  mkc_api_tokens t;
  if (!tok) {
    snprintf(why, sizeof why, "%s has no tokenizer", sv->name);
    mkc_respond_error(fd, 400, why);
    return;
  }
  if (mkc_api_parse_tokens(req->body, req->body_len, detokenize, &t, why, sizeof why) != 0) {
    mkc_respond_error(fd, 400, why);
    return;
  }
  cJSON *o = cJSON_CreateObject();
  if (detokenize) {
    char *text = mkc_tokenizer_decode(tok, t.ids, t.n_ids, 0);
    cJSON_AddStringToObject(o, "content", text ? text : "");
    free(text);
  } else {
    /* add_special: what the model's own setting adds (a BOS), as a prompt gets */
    int *ids = NULL, n = mkc_tokenizer_encode(tok, t.content, strlen(t.content),
                                              t.add_special && mkc_tokenizer_add_bos(tok),
                                              t.parse_special, &ids);
    cJSON *list = cJSON_AddArrayToObject(o, "tokens");
    for (int i = 0; i < n; i++) {
      if (!t.with_pieces) {
        cJSON_AddItemToArray(list, cJSON_CreateNumber(ids[i]));
        continue;
      }
      cJSON *p = cJSON_CreateObject();
      char *piece = mkc_tokenizer_decode(tok, &ids[i], 1, 1);
      cJSON_AddNumberToObject(p, "id", ids[i]);
      cJSON_AddStringToObject(p, "piece", piece ? piece : "");
      free(piece);
      cJSON_AddItemToArray(list, p);
    }
    free(ids);
    if (n < 0) {
      cJSON_Delete(o);
      mkc_api_tokens_free(&t);
      mkc_respond_error(fd, 400, "content: could not be tokenized (the server's log says why)");
      return;
    }
  }
  mkc_api_tokens_free(&t);
  mkc_respond_json(fd, 200, o);
}

/* ollama's answer to a generate with no prompt: the model is loaded. */
static void ollama_loaded(const server *sv, int fd) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model", sv->name);
  cJSON_AddStringToObject(o, "response", "");
  cJSON_AddBoolToObject(o, "done", 1);
  cJSON_AddStringToObject(o, "done_reason", "load");
  mkc_respond_json(fd, 200, o);
}

/* ollama's tags (the models it has: this one), show (what it is) and version. */
static void ollama_info(const server *sv, int fd, const char *what) {
  const char *arch =
      sv->c->model_path && sv->m->file.desc.arch[0] ? sv->m->file.desc.arch : "llama";
  cJSON *o = cJSON_CreateObject(), *details = cJSON_CreateObject();
  cJSON_AddStringToObject(details, "format", sv->c->model_path ? "gguf" : "preset");
  cJSON_AddStringToObject(details, "family", arch);
  cJSON_AddItemToObject(details, "families", cJSON_CreateStringArray(&arch, 1));
  if (strcmp(what, "version") == 0) {
    cJSON_AddStringToObject(o, "version", MKC_VERSION);
    cJSON_Delete(details);
  } else if (strcmp(what, "tags") == 0) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "models"), m);
    cJSON_AddStringToObject(m, "name", sv->name);
    cJSON_AddStringToObject(m, "model", sv->name);
    cJSON_AddItemToObject(m, "details", details);
  } else {
    char key[96];
    cJSON *info = cJSON_AddObjectToObject(o, "model_info");
    cJSON_AddStringToObject(info, "general.architecture", arch);
    snprintf(key, sizeof key, "%s.context_length", arch);
    cJSON_AddNumberToObject(info, key, sv->m->g.max_ctx);
    cJSON_AddItemToObject(o, "details", details);
    cJSON_AddStringToObject(o, "template", sv->family >= 0 ? mkc_chat_family_name(sv->family) : "");
  }
  mkc_respond_json(fd, 200, o);
}

/* Reads one request from fd and answers it: 0, or -1 when the server must stop. */
static int serve_one(server *sv, int fd) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap), why[400];
  mkc_http_req req;
  long got = 0;
  while (buf && (got = mkc_http_parse(buf, n, MAX_BODY, &req, why, sizeof why)) == 0) {
    if (n == cap) {
      char *b = realloc(buf, cap *= 2);
      if (!b) break;
      buf = b;
    }
    ssize_t r = recv(fd, buf + n, cap - n, 0);
    if (r < 0 && errno == EINTR && !mkc_interrupted) continue;
    if (r <= 0) { /* gone, timed out, or Ctrl-C */
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        mkc_respond_error(fd, 408, "the request did not arrive in time");
      free(buf);
      return mkc_interrupted ? -1 : 0;
    }
    n += (size_t)r;
  }
  if (!buf || got == 0) {
    free(buf);
    mkc_respond_error(fd, 500, "out of memory");
    return 0;
  }
  if (got < 0) {
    mkc_respond_error(fd, (int)-got, why);
    fprintf(stderr, "mkc: refused a request: %d %s (%s)\n", (int)-got, mkc_http_reason((int)-got),
            why);
    free(buf);
    return 0;
  }
  sv->requests++;
  int rc = 0, post = strcmp(req.method, "POST") == 0, get = strcmp(req.method, "GET") == 0;
  const char *p = req.path;
  /* A browser's page may call the server when it comes from this machine; a
   * page from elsewhere is refused before anything runs (as ollama does). */
  if (req.origin[0] && !mkc_http_local_origin(req.origin)) {
    snprintf(why, sizeof why,
             "the origin %s is not this machine's: a page elsewhere may not use the model",
             req.origin);
    mkc_respond_error(fd, 403, why);
    free(buf);
    return 0;
  }
  int preflight = strcmp(req.method, "OPTIONS") == 0; /* a browser's, before its request */
  char cors[512];
  snprintf(cors, sizeof cors, "%s%s%s%s", req.origin[0] ? "Access-Control-Allow-Origin: " : "",
           req.origin, req.origin[0] ? "\r\nVary: Origin\r\n" : "",
           preflight ? "Access-Control-Allow-Methods: GET, POST, OPTIONS\r\n"
                       "Access-Control-Allow-Headers: Content-Type, Authorization\r\n"
                       "Access-Control-Max-Age: 600\r\n"
                     : "");
  mkc_http_extra_headers(cors); /* until this answer is written: reset below */
  int chat = strcmp(p, "/v1/chat/completions") == 0 || strcmp(p, "/chat/completions") == 0;
  int completion = strcmp(p, "/v1/completions") == 0 || strcmp(p, "/completions") == 0;
  if (preflight) {
    mkc_http_respond(fd, 204, "text/plain", "", 0);
  } else if (chat || completion) {
    mkc_api_req r;
    if (!post)
      mkc_respond_error(fd, 405, "use POST");
    else if (mkc_api_parse(req.body, req.body_len, chat, &r, why, sizeof why) != 0)
      mkc_respond_error(fd, 400, why);
    else {
      rc = complete(sv, fd, &r, p);
      mkc_api_req_free(&r);
    }
  } else if (strcmp(p, "/api/chat") == 0 || strcmp(p, "/api/generate") == 0) {
    mkc_api_req r;
    int is_chat = p[5] == 'c';
    if (!post)
      mkc_respond_ollama_error(fd, 405, "use POST");
    else if (mkc_api_parse_ollama(req.body, req.body_len, is_chat, &r, why, sizeof why) != 0)
      mkc_respond_ollama_error(fd, 400, why);
    else {
      if (!is_chat && !*r.prompt && !r.n_context) /* ollama's way to load a model: it is */
        ollama_loaded(sv, fd);
      else
        rc = complete(sv, fd, &r, p);
      mkc_api_req_free(&r);
    }
  } else if (strcmp(p, "/api/tags") == 0 || strcmp(p, "/api/show") == 0 ||
             strcmp(p, "/api/version") == 0) {
    if ((p[5] == 's') != post) /* show is a POST, the others GETs */
      mkc_respond_ollama_error(fd, 405, post ? "use GET" : "use POST");
    else
      ollama_info(sv, fd, p + 5);
  } else if (strcmp(p, "/tokenize") == 0 || strcmp(p, "/detokenize") == 0) {
    post ? tokens(sv, fd, &req, p[1] == 'd') : mkc_respond_error(fd, 405, "use POST");
  } else if (strcmp(p, "/") == 0) {
    static const char running[] = "mkc is running";
    get ? mkc_http_respond(fd, 200, "text/plain; charset=utf-8", running, sizeof running - 1)
        : mkc_respond_error(fd, 405, "use GET");
  } else if (strcmp(p, "/v1/models") == 0 || strcmp(p, "/models") == 0) {
    get ? list_models(sv, fd) : mkc_respond_error(fd, 405, "use GET");
  } else if (strcmp(p, "/health") == 0) {
    static const char ok[] = "{\"status\":\"ok\"}";
    get ? mkc_http_respond(fd, 200, "application/json", ok, sizeof ok - 1)
        : mkc_respond_error(fd, 405, "use GET");
  } else {
    snprintf(why, sizeof why,
             "no %.100s here: POST /v1/chat/completions or /v1/completions, GET /v1/models or "
             "/health, POST /tokenize or /detokenize; ollama's /api/chat, /api/generate, "
             "/api/tags, /api/show, /api/version",
             p);
    mkc_respond_error(fd, 404, why);
  }
  mkc_http_extra_headers(NULL);
  free(buf);
  return rc;
}

/* Closes a connection after its answer: the client's unread bytes (a body
 * refused before it was read) are drained first, for a while, since closing
 * on them would reset the connection and could lose the answer. */
static void linger_close(int fd) {
  shutdown(fd, SHUT_WR);
  struct timeval tv = {.tv_usec = 200 * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char sink[16384];
  for (int i = 0; i < 64 && recv(fd, sink, sizeof sink, 0) > 0; i++) {
  }
  close(fd);
}

/* A listening socket on host:port, its port in *bound. -1 after a message. */
static int listen_on(const char *host, int port, int *bound) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC,
                           .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_PASSIVE},
                  *ai;
  char service[16];
  snprintf(service, sizeof service, "%d", port);
  int e = getaddrinfo(host, service, &hints, &ai);
  if (e != 0) {
    fprintf(stderr, "mkc: error: --host %s: %s\n", host, gai_strerror(e));
    return -1;
  }
  int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol), one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0) {
    fprintf(stderr, "mkc: error: listening on %s port %d: %s\n", host, port, strerror(errno));
    if (fd >= 0) close(fd);
    freeaddrinfo(ai);
    return -1;
  }
  freeaddrinfo(ai);
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  getsockname(fd, (struct sockaddr *)&sa, &len);
  *bound = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                          : ((struct sockaddr_in *)&sa)->sin_port);
  return fd;
}

static int check_flags(const mkc_cli *c) {
  int rc = mkc_cli_check_model(c, "serve");
  if (rc || (rc = mkc_draft_source_check(c, "serve"))) return rc;
  if (!c->model_path && !c->preset)
    return mkc_cli_usage_error_in("serve", "%s", "serve: -m MODEL or --preset P is required");
  if (!c->model_path && !c->have_seed)
    return mkc_cli_usage_error_in("serve", "%s",
                                  "serve: --random-weights SEED is required with --preset");
  if (c->chat_template && !c->model_path)
    return mkc_cli_usage_error_in("serve", "%s",
                                  "serve: --chat-template needs a model with a tokenizer (-m)");
  return 0;
}

/* The model's name for /v1/models: the file's or folder's base name, else the preset's. */
static const char *model_name(const mkc_cli *c, const mkc_loaded_model *m, char *buf, size_t cap) {
  if (!c->model_path) return m->g.preset;
  snprintf(buf, cap, "%s", c->model_path);
  size_t n = strlen(buf);
  while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0'; /* a folder's trailing slash */
  const char *slash = strrchr(buf, '/');
  return slash && slash[1] ? slash + 1 : buf;
}

int mkc_cmd_serve(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE, .port = 8080};
  int rc = mkc_cli_parse(argc, argv, 2,
                         "-m --graph --preset --random-weights -n --temp --seed --draft-max "
                         "--draft-min --draft-adaptive --ctx --backend --blocks --kv-dtype "
                         "--dequant --ubatch --chat-template --top-k --top-p --min-p "
                         "--repeat-penalty --repeat-last-n --presence-penalty --frequency-penalty "
                         "--draft-layers -md --rounds --host --port",
                         0, &c);
  if (rc == MKC_CLI_HELP) return 0;
  if (rc || (rc = check_flags(&c))) return rc;
  server sv = {.c = &c, .family = -1, .fixed_seed = c.have_sample_seed};
  unsigned long long seed;
  if ((rc = mkc_cli_sampling(&c, &sv.base, &seed))) return rc;
  mkc_loaded_model m;
  mkc_draft_source ds = {0};
  int fd = -1, port = 0;
  rc = 1;
  sv.m = &m;
  sv.draft_layers = mkc_draft_layers_in_kernel(&c);
  if (mkc_loaded_plan(&c, &m) != 0 || (!sv.draft_layers && mkc_draft_source_plan(&c, &m, &ds) != 0))
    goto done;
  char name[256];
  sv.name = model_name(&c, &m, name, sizeof name);
  if (m.file.tok && (c.chat_template || m.file.chat_template)) {
    sv.family = c.chat_template
                    ? mkc_chat_family_for(c.model_path, m.file.chat_template, c.chat_template)
                    : mkc_chat_detect(m.file.chat_template);
    if (c.chat_template && sv.family < 0) goto done;
  }
  if (m.file.tok && sv.family < 0)
    fprintf(stderr,
            "mkc: warning: %s's chat template is %s: /v1/chat/completions is refused (give "
            "--chat-template NAME)\n",
            sv.name, m.file.chat_template ? "not one mkc knows" : "missing");
  if ((fd = listen_on(c.host ? c.host : "127.0.0.1", c.port, &port)) < 0) goto done;
  if (mkc_loaded_start(&c, &m) != 0 ||
      (!sv.draft_layers && mkc_draft_source_start(&c, &m, &ds) != 0))
    goto done;
  sv.drafter = ds.drafter;
  mkc_interrupt_install_term();
  fprintf(stderr, "mkc: serving %s (%s backend, context %d%s%s) on http://%s:%d; Ctrl-C stops\n",
          sv.name, mkc_session_backend(m.s), m.g.max_ctx, sv.family >= 0 ? ", chat template " : "",
          sv.family >= 0 ? mkc_chat_family_name(sv.family) : "", c.host ? c.host : "127.0.0.1",
          port);
  while (!mkc_interrupted) {
    int conn = accept(fd, NULL, NULL);
    if (conn < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      fprintf(stderr, "mkc: error: accept: %s\n", strerror(errno));
      goto done;
    }
    struct timeval tv = {.tv_sec = READ_TIMEOUT_S};
    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int stop = serve_one(&sv, conn);
    linger_close(conn);
    if (stop && !mkc_interrupted) goto done; /* the backend failed */
  }
  fprintf(stderr, "mkc: stopped serving after %ld requests\n", sv.requests);
  rc = 0;
done:
  if (fd >= 0) close(fd);
  free(sv.held);
  mkc_draft_source_close(&ds);
  mkc_loaded_close(&m);
  return rc;
}
