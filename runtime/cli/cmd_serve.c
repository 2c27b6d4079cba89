/* mkc serve: the model behind an OpenAI-style HTTP API, as llama-server and
 * ollama offer it: the command, its routes and the one-at-a-time decode.
 * One session answers one request at a time, in the order they arrive; a
 * request whose tokens begin as the previous one's did (the same
 * conversation, a turn longer) feeds only what is new, the rest staying in
 * the KV cache. With --parallel N the requests go to a slot kernel instead
 * (serve_slots.c); the connections are serve_loop.c's. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "draft_source.h"
#include "exec/decode.h"
#include "interrupt.h"
#include "json_format.h"
#include "loaded.h"
#include "exec/embed.h"
#include "serve/api.h"
#include "serve/embed_api.h"
#include "serve/http.h"
#include "run_batch.h"
#include "serve.h"
#include "serve_answer.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"
#include "util/version.h"

static const char USAGE[] =
    "usage: mkc serve -m MODEL [--host ADDR] [--port N] [options]\n"
    "       mkc serve --preset P --random-weights SEED [options]\n"
    "\n"
    "Answers HTTP requests as OpenAI's API does, one at a time (or N at once\n"
    "with --parallel N):\n"
    "  POST /v1/chat/completions  messages in the model's chat template\n"
    "  POST /v1/completions       a prompt: text, or token ids ([1, 2, 3]; the only\n"
    "                             form with --preset, whose answers are ids), or a\n"
    "                             list of them (each prompt's answers in turn)\n"
    "  POST /completion           llama-server's own (also /completions): a prompt\n"
    "                             (or a list), n_predict, n_probs, n_cmpl, its\n"
    "                             answer's fields\n"
    "  POST /infill               llama-server's fill-in-the-middle: input_prefix,\n"
    "                             input_suffix, input_extra, prompt (a model with FIM\n"
    "                             tokens: Qwen2.5-Coder, StarCoder, CodeLlama, ...);\n"
    "                             a completion's suffix (OpenAI's, ollama's) too\n"
    "  POST /v1/messages          Anthropic's Messages API: system, messages of text\n"
    "                             blocks, max_tokens, stop_sequences; named events\n"
    "                             when streamed; the key also as x-api-key\n"
    "  POST /v1/responses         OpenAI's Responses API: instructions, input (a\n"
    "                             string, or message, function_call,\n"
    "                             function_call_output and reasoning items),\n"
    "                             function tools, text.format, max_output_tokens;\n"
    "                             its output items, named events when streamed;\n"
    "                             nothing stored (no previous_response_id)\n"
    "  POST /v1/responses/input_tokens, /v1/chat/completions/input_tokens and\n"
    "  /v1/messages/count_tokens  the prompt's token count\n"
    "  POST /v1/embeddings        texts (or token ids) -> vectors (mkc embed's)\n"
    "  GET  /v1/models, /health; POST /tokenize, /detokenize, /apply-template and\n"
    "  GET /props, /metrics (llama-server's; Prometheus's format), /lora-adapters\n"
    "  (the --lora adapters; POST: their scales are fixed)\n"
    "  GET /slots                 llama-server's: each slot's state and request\n"
    "  POST /slots/0?action=save|restore|erase  llama-server's slot files\n"
    "                             (--slot-save-path)\n"
    "and ollama's API: POST /api/chat, /api/generate, /api/embed, /api/embeddings,\n"
    "/api/show; GET /api/tags, /api/ps, /api/version\n"
    "Requests take max_tokens, n (OpenAI's choices, 1..16: choice i drawn with\n"
    "seed + i, one after another), temperature, top_p, top_k, min_p, seed, stop,\n"
    "presence_penalty, frequency_penalty, repeat_penalty, repeat_last_n, llama.cpp's\n"
    "other samplers' fields (typical_p, mirostat, dry_multiplier, xtc_probability,\n"
    "...: run's flags' names with _; samplers as llama-server takes it), logprobs\n"
    "(with the chat's top_logprobs; a stream's chunks list\n"
    "their tokens') and stream\n"
    "(server-sent events; stream_options.include_usage ends them with the\n"
    "usage); response_format json_object or json_schema (ollama's format, \"json\"\n"
    "or a schema) constrains the answer to JSON, as run --format does (with\n"
    "--parallel too); logit_bias ({\"TOKEN_ID\": -100..100}) is added to the\n"
    "logits in the kernel, greedy or sampled. A chat's tools (the\n"
    "qwen2.5, qwen3, llama3.1 and gpt-oss templates') come back as tool_calls;\n"
    "tool_choice is auto or none (a forced call is refused). A field not given\n"
    "is this command's option (the same defaults as run: greedy unless --temp).\n"
    "A request that shares its first tokens with the one before feeds only the\n"
    "rest (--parallel: the full KV pages of any earlier prompt's start). Ctrl-C\n"
    "(or SIGTERM) stops.\n"
    "  -m, --model MODEL      GGUF file, Hugging Face folder, or a model's file name\n"
    "                         in the model directory (~/.cache/mkc/models)\n"
    "  --host ADDR            the address to listen on (default 127.0.0.1)\n"
    "  -a, --alias NAME       the model's name in the API (/v1/models, answers'\n"
    "                         model, ollama's tags; default: the model file's name)\n"
    "  --slot-save-path DIR   llama-server's slot files: POST /slots/N?action=save\n"
    "                         or restore ({\"filename\": NAME}, a file in DIR) writes\n"
    "                         or reads the KV rows slot N holds for the next request\n"
    "                         (--parallel: its last one's; a later prompt shares\n"
    "                         their full pages); action=erase forgets them. A slot\n"
    "                         still decoding is acted on when its request ends\n"
    "  --no-slots             GET /slots refused (501), as llama-server's flag asks\n"
    "  -to, --timeout N       seconds a request may take to arrive whole, and a\n"
    "                         client to read an answer's next bytes (default 30)\n"
    "  --reasoning-format F   auto or deepseek (the default: a reasoning model's\n"
    "                         thoughts in reasoning_content), or none (left in the\n"
    "                         reply); a chat request's reasoning_format overrides it\n"
    "  --spm-infill           fill-in-the-middle prompts suffix first (<suf> suffix\n"
    "                         <pre> prefix <mid>), for models trained so\n"
    "                         (llama-server's)\n"
    "  --port N               the port (default 8080; 0: any free one, printed)\n"
    "  --api-key KEY          every request but GET /health and / must carry\n"
    "                         Authorization: Bearer KEY (else 401)\n"
    "  --pooling P            embeddings: mean, cls or last (default: the model's\n"
    "                         pooling_type, else last; see mkc embed --help)\n"
    "  --api-key-file FILE    the keys, one a line (the command line shows a key to\n"
    "                         other users of this machine; a file need not)\n"
    "  --chat-template NAME   the template's family when the model's is unknown\n"
    "                         (chatml, llama3, ...), or a template's text that mkc\n"
    "                         recognises; --chat-template-file FILE: from a file\n"
    "  --reasoning-effort LEVEL  gpt-oss's: low, medium (its default) or high, for\n"
    "                         requests that give none (reasoning_effort, think)\n"
    "  --reasoning-budget N   0: qwen3 answers without reasoning unless a request\n"
    "                         asks for it (think,\n"
    "                         chat_template_kwargs.enable_thinking)\n"
    "  -np, --parallel N      decode up to N requests together on a slot kernel\n"
    "                         (2..64; default: one at a time on the plain\n"
    "                         kernel); more wait in line. Drafts by prompt lookup,\n"
    "                         or -md / --draft-layers on a slot kernel of their own\n"
    "                         (--draft-max K each, --draft-p-min P; with\n"
    "                         --draft-adaptive each slot's depth its own, by its\n"
    "                         acceptance alone); --kv-pages N\n"
    "                         sizes the shared KV pool. Embedding requests take\n"
    "                         slots too\n"
    "  -n, --n-predict N      a request's token limit when it gives no max_tokens\n"
    "                         (default -1: until the end or a full context)\n"
    "  --context-shift        answers go on past a full context, as run's do\n"
    "                         (llama-server's; a request's n_keep says what the\n"
    "                         shift keeps, its n_discard how much it drops: 0,\n"
    "                         half the rest); ollama's requests shift unless they\n"
    "                         say \"shift\": false (num_keep, default 4); with no\n"
    "                         token limit an answer ends at 10 contexts (ollama's\n"
    "                         bound); ollama's num_ctx below the server's context\n"
    "                         is the request's (its prompt, cut and shift)\n"
    "  --temp T, -s/--seed S, --top-k N, --top-p P, --min-p P, --repeat-penalty R,\n"
    "  --repeat-last-n N, --presence-penalty P, --frequency-penalty F,\n"
    "  -l/--logit-bias ID+B (a request's logit_bias replaces them), --typical P,\n"
    "  --top-nsigma N, --xtc-probability P, --xtc-threshold T, --dynatemp-range R,\n"
    "  --dynatemp-exp E, --mirostat 1|2, --mirostat-ent TAU, --mirostat-lr ETA,\n"
    "  --dry-multiplier M, --dry-base B, --dry-allowed-length N,\n"
    "  --dry-penalty-last-n N, --dry-sequence-breaker TEXT, --samplers LIST,\n"
    "  --sampling-seq S (requests' fields of the same names, llama-server's and\n"
    "  ollama's, override them), --draft-max K, --draft-min K, --draft-adaptive,\n"
    "  --draft-layers L, -md/--model-draft FILE, --rounds R, -c/--ctx N,\n"
    "  --kv-dtype T, --backend B, -ngl N, -t/--threads N, --dequant, --ubatch N, and\n"
    "  llama.cpp's flags taken with a note (-fa, -b, --mlock, ...): as for run\n";

/* An error answer in the request's API's shape. */
static void refuse(const mkc_api_req *r, int fd, int status, const char *msg) {
  mkc_respond_error_for(r, fd, status, msg);
}

/* Decodes one choice of a completion or chat request on the session and
 * answers it (the last choice: the whole answer, or its stream's end). The
 * session's cache is kept for the next. */
static int complete_choice(mkc_server *sv, mkc_serve_job *j) {
  const mkc_api_req *r = &j->r;
  int fd = j->fd, n_prompt = j->n_prompt, n_gen = j->n_gen, *prompt = j->prompt;
  if (mkc_session_set_sampling(sv->m->s, &j->opt) != 0) {
    refuse(r, fd, 400, "the sampling options were refused (the server's log says why)");
    return 0;
  }
  mkc_answer *g = &j->g;
  int *out = malloc((size_t)(n_gen + 1) * sizeof *out);
  int *held = realloc(sv->held, (size_t)(n_prompt + n_gen + 1) * sizeof *held);
  if (held) sv->held = held;
  if (!out || !held) {
    free(out);
    refuse(r, fd, 500, "out of memory");
    return 0;
  }
  /* the tokens the session holds that begin this prompt stay; at least the last is fed */
  int cached = 0;
  while (cached < sv->n_valid && cached < n_prompt - 1 && held[cached] == prompt[cached]) cached++;
  mkc_constraint *doc = j->host ? mkc_serve_job_json(sv, j, 0) : NULL;
  if (j->host && !doc) {
    free(out);
    refuse(r, fd, 500,
           "the host's choice (JSON, a grammar or a sampler the kernel lacks) could "
           "not be set up (the server's log says why)");
    return 0;
  }
  if (r->stream) mkc_answer_stream_start(g);
  mkc_decode_opts d = {.draft_max = sv->c->draft_max,
                       .adaptive = sv->c->draft_adaptive,
                       .draft_min = sv->c->draft_min,
                       .drafter = sv->drafter,
                       .rounds = sv->c->rounds,
                       .draft_layers = sv->draft_layers,
                       .stop_ids = sv->eog,
                       .n_stop_ids = sv->n_eog,
                       .on_token = mkc_answer_on_token,
                       .on_logprobs = mkc_answer_on_logprobs,
                       .ctx = g,
                       .interrupted = &mkc_interrupted,
                       .constraint = doc,
                       .shift = j->shift,
                       .n_keep = j->n_keep,
                       .n_discard = j->n_discard,
                       .max_ctx = j->ctx};
  mkc_decode_stats st;
  int rc =
      g->gone ? 0
              : mkc_decode_more(sv->m->s, &sv->m->g, prompt, n_prompt, cached, n_gen, &d, out, &st);
  if (g->gone) memset(&st, 0, sizeof st);
  /* what the session holds now: the prompt as far as it got, then the answer but its last token */
  memcpy(held, prompt, (size_t)n_prompt * sizeof *held);
  memcpy(held + n_prompt, out, (size_t)(rc == 0 ? st.generated : 0) * sizeof *held);
  int pos = mkc_session_pos(sv->m->s);
  sv->n_held = n_prompt + (rc == 0 ? st.generated : 0);
  /* (a shift left the cache holding a shortened history: the next request starts over) */
  sv->n_valid = rc != 0 || g->gone || st.shifts ? 0
                : pos < n_prompt                ? pos
                                                : sv->n_held - (st.generated > 0);
  g->complete = rc == 0 ? st.complete : 0;
  if (rc == 0) mkc_answer_flush(g);
  g->context = held, g->n_context = sv->n_held;
  int interrupted = mkc_interrupted;
  if (interrupted) g->more = 0; /* the server stops: the choices so far are the answer */
  if (rc != 0) {
    if (!r->stream)
      refuse(r, fd, 500, "decoding failed (the server's log says why)");
    else
      mkc_answer_stream_error(g, "decoding failed (the server's log says why)");
  } else {
    mkc_serve_job_answer(j, &st, n_prompt - st.fed);
  }
  if (rc == 0) {
    mkc_serve_job_done(
        sv, j, &st, n_prompt - st.fed,
        mkc_serve_stopped(g, interrupted, st.ctx_full || (!j->shift && n_gen == j->room)));
    mkc_serve_slot_record(sv, 0, j, n_prompt - st.fed, st.generated);
  }
  free(out);
  return rc != 0 || interrupted ? MKC_SERVE_STOP : MKC_SERVE_DONE;
}

/* Decodes a completion or chat request on the session and answers it, one
 * choice after another (OpenAI's n, its list of prompts): one request at a
 * time. */
static int complete(mkc_server *sv, mkc_serve_job *j) {
  int rc = complete_choice(sv, j);
  while (rc == MKC_SERVE_DONE && j->g.more && !j->g.gone) {
    if (mkc_serve_job_next_choice(sv, j) != 0) {
      fprintf(stderr, "mkc: error: out of memory for the next choice\n");
      break;
    }
    rc = complete_choice(sv, j);
  }
  return rc;
}

/* A completion or chat request: refused, decoded now, or (--parallel) queued
 * on the slots, the job then owning the connection. */
static int generate(mkc_server *sv, int fd, mkc_api_req *r, const char *path, const char *cors) {
  char why[400];
  mkc_serve_job *j = malloc(sizeof *j);
  if (!j) {
    refuse(r, fd, 500, "out of memory");
    mkc_api_req_free(r);
    return MKC_SERVE_DONE;
  }
  int status = mkc_serve_job_open(sv, j, r, fd, path, why, sizeof why);
  if (status) {
    refuse(&j->r, fd, status, why);
    mkc_serve_job_close(j);
    free(j);
    return MKC_SERVE_DONE;
  }
  snprintf(j->cors, sizeof j->cors, "%s", cors);
  if (sv->sched) return mkc_serve_slots_add(sv, j) == 0 ? MKC_SERVE_KEPT : MKC_SERVE_DONE;
  int rc = complete(sv, j);
  mkc_serve_job_close(j);
  free(j);
  return rc;
}

/* ---- the connection ---- */

static int list_models(mkc_server *sv, int fd) {
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
static void tokens(mkc_server *sv, int fd, const mkc_http_req *req, int detokenize) {
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

/* GET /metrics: the counts in Prometheus's text format, as llama-server's
 * --metrics gives its own; with --parallel, the requests decoding and those
 * waiting for a slot. */
static void metrics(const mkc_server *sv, int fd) {
  const mkc_serve_counts *n = &sv->counts;
  int running = 0, waiting = 0;
  for (const mkc_serve_job *j = sv->jobs; j; j = j->next) j->q.t_start > 0 ? running++ : waiting++;
  const struct {
    const char *name, *type, *help;
    double v;
  } M[] = {
      {"requests_total", "counter", "Generation requests answered.", (double)n->requests},
      {"prompt_tokens_total", "counter", "Prompt tokens the kernel processed.",
       (double)n->prompt_tokens},
      {"prompt_tokens_cached_total", "counter", "Prompt tokens the KV cache held already.",
       (double)n->cached_tokens},
      {"prompt_seconds_total", "counter", "Seconds spent on prompts.", n->prompt_seconds},
      {"tokens_predicted_total", "counter", "Tokens generated.", (double)n->generated},
      {"tokens_predicted_seconds_total", "counter", "Seconds spent generating.", n->gen_seconds},
      {"draft_tokens_total", "counter", "Draft tokens offered to the kernel.", (double)n->drafted},
      {"draft_tokens_accepted_total", "counter", "Draft tokens the kernel accepted.",
       (double)n->accepted},
      {"requests_processing", "gauge", "Requests decoding now.", running},
      {"requests_deferred", "gauge", "Requests waiting for a slot.", waiting},
  };
  char buf[4096];
  size_t len = 0;
  for (size_t k = 0; k < sizeof M / sizeof *M && len < sizeof buf; k++)
    len += (size_t)snprintf(buf + len, sizeof buf - len,
                            "# HELP mkc_%s %s\n# TYPE mkc_%s %s\nmkc_%s %.17g\n", M[k].name,
                            M[k].help, M[k].name, M[k].type, M[k].name, M[k].v);
  mkc_http_respond(fd, 200, "text/plain; version=0.0.4; charset=utf-8", buf,
                   len < sizeof buf ? len : sizeof buf - 1);
}

/* ollama's answer to a generate with no prompt: the model is loaded. */
static void ollama_loaded(const mkc_server *sv, int fd) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model", sv->name);
  cJSON_AddStringToObject(o, "response", "");
  cJSON_AddBoolToObject(o, "done", 1);
  cJSON_AddStringToObject(o, "done_reason", "load");
  mkc_respond_json(fd, 200, o);
}

/* ollama's tags (the models it has: this one), show (what it is) and version. */
static void ollama_info(const mkc_server *sv, int fd, const char *what) {
  const char *arch =
      sv->c->model_path && sv->m->file.desc.arch[0] ? sv->m->file.desc.arch : "llama";
  cJSON *o = cJSON_CreateObject(), *details = cJSON_CreateObject();
  cJSON_AddStringToObject(details, "format", sv->c->model_path ? "gguf" : "preset");
  cJSON_AddStringToObject(details, "family", arch);
  cJSON_AddItemToObject(details, "families", cJSON_CreateStringArray(&arch, 1));
  if (strcmp(what, "version") == 0) {
    cJSON_AddStringToObject(o, "version", MKC_VERSION);
    cJSON_Delete(details);
  } else if (strcmp(what, "tags") == 0 || strcmp(what, "ps") == 0) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "models"), m);
    cJSON_AddStringToObject(m, "name", sv->name);
    cJSON_AddStringToObject(m, "model", sv->name);
    cJSON_AddItemToObject(m, "details", details);
    if (what[0] == 'p') { /* ps: what is loaded, its bytes (weights and KV) and where */
      double bytes = (double)sv->m->g.weight_elems * 2 + (double)sv->m->g.kv_bytes;
      const char *backend =
          sv->slots ? mkc_slots_describe(sv->slots) : mkc_session_backend(sv->m->s);
      cJSON_AddNumberToObject(m, "size", bytes);
      cJSON_AddNumberToObject(m, "size_vram", strncmp(backend, "cuda", 4) == 0 ? bytes : 0);
      cJSON_AddNumberToObject(m, "context_length", sv->m->g.max_ctx);
      cJSON_AddStringToObject(m, "expires_at", "9999-12-31T23:59:59Z"); /* loaded until it stops */
    }
  } else {
    char key[96];
    cJSON *info = cJSON_AddObjectToObject(o, "model_info");
    cJSON_AddStringToObject(info, "general.architecture", arch);
    snprintf(key, sizeof key, "%s.context_length", arch);
    cJSON_AddNumberToObject(info, key, sv->m->g.max_ctx);
    cJSON_AddItemToObject(o, "details", details);
    cJSON_AddStringToObject(o, "template", sv->family >= 0 ? mkc_chat_family_name(sv->family) : "");
    /* ollama's: what requests the model takes */
    cJSON *can = cJSON_AddArrayToObject(o, "capabilities");
    cJSON_AddItemToArray(can, cJSON_CreateString("completion"));
    if (sv->tools) cJSON_AddItemToArray(can, cJSON_CreateString("tools"));
    if (sv->family >= 0 && mkc_chat_reasons(sv->family))
      cJSON_AddItemToArray(can, cJSON_CreateString("thinking"));
  }
  mkc_respond_json(fd, 200, o);
}

int mkc_serve_route(mkc_server *sv, int fd, const mkc_http_req *req) {
  char why[512];
  sv->requests++;
  int rc = 0, post = strcmp(req->method, "POST") == 0, get = strcmp(req->method, "GET") == 0;
  const char *p = req->path;
  /* A browser's page may call the server when it comes from this machine; a
   * page from elsewhere is refused before anything runs (as ollama does). */
  if (req->origin[0] && !mkc_http_local_origin(req->origin)) {
    snprintf(why, sizeof why,
             "the origin %s is not this machine's: a page elsewhere may not use the model",
             req->origin);
    mkc_respond_error(fd, 403, why);
    return MKC_SERVE_DONE;
  }
  int preflight = strcmp(req->method, "OPTIONS") == 0; /* a browser's, before its request */
  /* with keys, every request but the liveness checks and a browser's preflight carries one */
  int open_path = strcmp(p, "/health") == 0 || strcmp(p, "/v1/health") == 0 || strcmp(p, "/") == 0;
  if (sv->n_keys && !preflight && !open_path &&
      !mkc_http_bearer_ok(req, (const char *const *)sv->keys, sv->n_keys)) {
    mkc_http_extra_headers("WWW-Authenticate: Bearer\r\n");
    if (strncmp(p, "/api/", 5) == 0)
      mkc_respond_ollama_error(fd, 401, "unauthorized: send Authorization: Bearer KEY");
    else if (strncmp(p, "/v1/messages", 12) == 0 && (!p[12] || p[12] == '/'))
      mkc_respond_anthropic_error(fd, 401, "invalid x-api-key: send x-api-key: KEY");
    else
      mkc_respond_error(fd, 401, "Invalid API Key: send Authorization: Bearer KEY");
    mkc_http_extra_headers(NULL);
    fprintf(stderr, "mkc: refused %s %s: %s\n", req->method, p,
            req->auth || req->api_key ? "a key that is not the server's" : "no API key");
    return MKC_SERVE_DONE;
  }
  char cors[MKC_SERVE_CORS_MAX];
  snprintf(cors, sizeof cors, "%s%s%s%s", req->origin[0] ? "Access-Control-Allow-Origin: " : "",
           req->origin, req->origin[0] ? "\r\nVary: Origin\r\n" : "",
           preflight ? "Access-Control-Allow-Methods: GET, POST, OPTIONS\r\n"
                       "Access-Control-Allow-Headers: Content-Type, Authorization, x-api-key, "
                       "anthropic-version\r\n"
                       "Access-Control-Max-Age: 600\r\n"
                     : "");
  mkc_http_extra_headers(cors); /* until this answer is written: reset below */
  int chat = strcmp(p, "/v1/chat/completions") == 0 || strcmp(p, "/chat/completions") == 0;
  int completion = strcmp(p, "/v1/completions") == 0;
  /* llama-server's own endpoint (its /completions is that too; /v1/completions is OpenAI's) */
  int native = strcmp(p, "/completion") == 0 || strcmp(p, "/completions") == 0;
  int infill = strcmp(p, "/infill") == 0; /* llama-server's fill-in-the-middle */
  if (preflight) {
    mkc_http_respond(fd, 204, "text/plain", "", 0);
  } else if (chat || completion || native || infill) {
    mkc_api_req r;
    int parsed = infill   ? mkc_api_parse_infill(req->body, req->body_len, &r, why, sizeof why)
                 : native ? mkc_api_parse_native(req->body, req->body_len, &r, why, sizeof why)
                          : mkc_api_parse(req->body, req->body_len, chat, &r, why, sizeof why);
    if (!post)
      mkc_respond_error(fd, 405, "use POST");
    else if (parsed != 0)
      mkc_respond_error(fd, 400, why);
    else
      rc = generate(sv, fd, &r, p, cors);
  } else if (strcmp(p, "/v1/messages") == 0) { /* Anthropic's Messages API */
    mkc_api_req r;
    if (!post)
      mkc_respond_anthropic_error(fd, 405, "use POST");
    else if (mkc_api_parse_anthropic(req->body, req->body_len, &r, why, sizeof why) != 0)
      mkc_respond_anthropic_error(fd, 400, why);
    else
      rc = generate(sv, fd, &r, p, cors);
  } else if (strcmp(p, "/v1/messages/count_tokens") == 0) {
    post ? mkc_serve_count_tokens(sv, fd, req, MKC_COUNT_ANTHROPIC)
         : mkc_respond_anthropic_error(fd, 405, "use POST");
  } else if (strcmp(p, "/v1/responses") == 0 || strcmp(p, "/responses") == 0) {
    mkc_api_req r; /* OpenAI's Responses API, read as its chat request */
    if (!post)
      mkc_respond_error(fd, 405, "use POST");
    else if (mkc_api_parse_responses(req->body, req->body_len, 0, 0, &r, why, sizeof why) != 0)
      mkc_respond_error(fd, 400, why);
    else
      rc = generate(sv, fd, &r, p, cors);
  } else if ((!strncmp(p, "/v1/responses/", 14) || !strncmp(p, "/responses/", 11)) &&
             !strstr(p, "/input_tokens")) { /* a stored response's: retrieve, delete, cancel */
    mkc_respond_error(fd, 404,
                      "mkc stores no responses (store is not followed): each answer is "
                      "given once, to its request");
  } else if (!strcmp(p, "/v1/responses/input_tokens") || !strcmp(p, "/responses/input_tokens") ||
             !strcmp(p, "/v1/chat/completions/input_tokens") ||
             !strcmp(p, "/chat/completions/input_tokens")) { /* llama-server's counts */
    post ? mkc_serve_count_tokens(sv, fd, req,
                                  strstr(p, "chat") ? MKC_COUNT_CHAT : MKC_COUNT_RESPONSES)
         : mkc_respond_error(fd, 405, "use POST");
  } else if (strcmp(p, "/api/chat") == 0 || strcmp(p, "/api/generate") == 0) {
    mkc_api_req r;
    int is_chat = p[5] == 'c';
    if (!post)
      mkc_respond_ollama_error(fd, 405, "use POST");
    else if (mkc_api_parse_ollama(req->body, req->body_len, is_chat, &r, why, sizeof why) != 0)
      mkc_respond_ollama_error(fd, 400, why);
    else {
      if (!is_chat && !*r.prompt && !r.n_context) { /* ollama's way to load a model: it is */
        ollama_loaded(sv, fd);
        mkc_api_req_free(&r);
      } else {
        rc = generate(sv, fd, &r, p, cors);
      }
    }
  } else if (strcmp(p, "/api/tags") == 0 || strcmp(p, "/api/show") == 0 ||
             strcmp(p, "/api/version") == 0 || strcmp(p, "/api/ps") == 0) {
    if ((p[5] == 's') != post) /* show is a POST, the others GETs */
      mkc_respond_ollama_error(fd, 405, post ? "use GET" : "use POST");
    else
      ollama_info(sv, fd, p + 5);
  } else if (strcmp(p, "/api/embed") == 0 || strcmp(p, "/api/embeddings") == 0 ||
             strcmp(p, "/v1/embeddings") == 0 || strcmp(p, "/embeddings") == 0) {
    int kind = p[1] != 'a'       ? MKC_EMBED_OPENAI
               : strlen(p) == 10 ? MKC_EMBED_OLLAMA
                                 : MKC_EMBED_LEGACY;
    if (!post)
      kind == MKC_EMBED_OPENAI ? mkc_respond_error(fd, 405, "use POST")
                               : mkc_respond_ollama_error(fd, 405, "use POST");
    else
      rc = mkc_serve_embed(sv, fd, req, kind);
  } else if (strcmp(p, "/slots") == 0 && sv->c->no_slots) {
    mkc_respond_error(fd, 501,
                      "This server does not support slots endpoint. Start it without `--no-slots`");
  } else if (strcmp(p, "/slots") == 0) {
    mkc_serve_slot_list(sv, fd, req);
  } else if (strncmp(p, "/slots/", 7) == 0) {
    rc = mkc_serve_slot_action(sv, fd, req, cors);
  } else if (strcmp(p, "/props") == 0) {
    get ? mkc_serve_props(sv, fd) : mkc_respond_error(fd, 405, "use GET");
  } else if (strcmp(p, "/apply-template") == 0) {
    post ? mkc_serve_apply_template(sv, fd, req) : mkc_respond_error(fd, 405, "use POST");
  } else if (strcmp(p, "/tokenize") == 0 || strcmp(p, "/detokenize") == 0) {
    post ? tokens(sv, fd, req, p[1] == 'd') : mkc_respond_error(fd, 405, "use POST");
  } else if (strcmp(p, "/") == 0) {
    static const char running[] = "mkc is running";
    get ? mkc_http_respond(fd, 200, "text/plain; charset=utf-8", running, sizeof running - 1)
        : mkc_respond_error(fd, 405, "use GET");
  } else if (strcmp(p, "/v1/models") == 0 || strcmp(p, "/models") == 0) {
    get ? list_models(sv, fd) : mkc_respond_error(fd, 405, "use GET");
  } else if (strcmp(p, "/metrics") == 0) {
    get ? metrics(sv, fd) : mkc_respond_error(fd, 405, "use GET");
  } else if (strcmp(p, "/lora-adapters") == 0) {
    mkc_serve_lora_adapters(sv, fd, req);
  } else if (strcmp(p, "/health") == 0 || strcmp(p, "/v1/health") == 0) {
    static const char ok[] = "{\"status\":\"ok\"}";
    get ? mkc_http_respond(fd, 200, "application/json", ok, sizeof ok - 1)
        : mkc_respond_error(fd, 405, "use GET");
  } else {
    snprintf(
        why, sizeof why,
        "no %.100s here: POST /v1/chat/completions, /v1/completions, /completion, /infill, "
        "/v1/responses, /v1/messages or /v1/embeddings, GET "
        "/v1/models, /health, /metrics or /props, POST /tokenize, /detokenize, "
        "/apply-template or /slots/0?action=..., GET /slots; ollama's /api/chat, "
        "/api/generate, /api/embed, /api/embeddings, /api/tags, /api/ps, /api/show, /api/version",
        p);
    mkc_respond_error(fd, 404, why);
  }
  mkc_http_extra_headers(NULL);
  return rc;
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
  if (c->slot_save_path && mkc_serve_slot_dir_check(c->slot_save_path) != 0) return 2;
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

/* The keys a request may carry: --api-key's, then --api-key-file's lines
 * (blank ones skipped). 0, or -1 after a message. */
static int read_keys(const mkc_cli *c, mkc_server *sv) {
  char *text = NULL;
  if (c->api_key_file && !(text = mkc_read_file(c->api_key_file, NULL))) {
    fprintf(stderr, "mkc: error: --api-key-file: cannot read %s\n", c->api_key_file);
    return -1;
  }
  int cap = 1 + (c->api_key != NULL);
  for (const char *q = text; q && *q; q++) cap += *q == '\n';
  sv->keys = calloc((size_t)cap, sizeof *sv->keys);
  int rc = sv->keys ? 0 : -1;
  if (rc == 0 && c->api_key && !*c->api_key) {
    fprintf(stderr, "mkc: error: --api-key: an empty key\n");
    rc = -1;
  }
  if (rc == 0 && c->api_key && !(sv->keys[sv->n_keys++] = strdup(c->api_key))) rc = -1;
  for (char *line = text, *next; rc == 0 && line && *line; line = next) {
    next = line + strcspn(line, "\n");
    if (*next) *next++ = '\0';
    line[strcspn(line, "\r")] = '\0';
    if (*line && !(sv->keys[sv->n_keys++] = strdup(line))) rc = -1;
  }
  if (rc == 0 && c->api_key_file && sv->n_keys == (c->api_key != NULL)) {
    fprintf(stderr, "mkc: error: --api-key-file: no key in %s\n", c->api_key_file);
    rc = -1;
  }
  free(text);
  return rc;
}

/* --parallel N: the slot kernel's flags, and what it cannot do. */
static int parallel_flags(mkc_cli *c) {
  if (!c->slots) return 0;
  const char *no = c->rounds > 1 ? "--rounds" : c->draft_head ? "--draft-head" : NULL;
  if (no)
    return mkc_cli_usage_error_in("serve",
                                  "serve: --parallel drafts by prompt lookup, -md or "
                                  "--draft-layers (--draft-max K): not with %s",
                                  no);
  return mkc_slot_kernel_flags(c, c->slots, "serve --parallel");
}

/* The session, or with --parallel the slot pool and its scheduler. 0 or -1. */
static int start(mkc_cli *c, mkc_server *sv, mkc_draft_source *ds) {
  mkc_loaded_model *m = sv->m;
  if (!c->slots) {
    if (mkc_loaded_start(c, m) != 0 || (!sv->draft_layers && mkc_draft_source_start(c, m, ds) != 0))
      return -1;
    sv->drafter = ds->drafter;
    return 0;
  }
  mkc_batch_opts o = {.drafts = c->draft_max,
                      .adaptive = c->draft_adaptive,
                      .draft_min = c->draft_min,
                      .stops = sv->eog,
                      .n_stops = sv->n_eog};
  if (mkc_loaded_weights(c, m) != 0 ||
      !(sv->slots = mkc_slots_open(mkc_loaded_backend(c), &m->g, &m->src, &m->w, c->blocks)) ||
      mkc_draft_source_start_slots(c, m, ds, mkc_loaded_backend(c)) != 0)
    return -1;
  o.drafter = ds->pool;
  return (sv->sched = mkc_sched_open(sv->slots, &o)) ? 0 : -1;
}

int mkc_cmd_serve(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE, .port = 8080};
  int rc = mkc_cli_parse(
      argc, argv, 2,
      "-m --graph --preset --random-weights -n --temp --seed --draft-max "
      "--draft-min --draft-adaptive --ctx --backend --blocks --kv-dtype "
      "--dequant --ubatch --chat-template --reasoning-effort --reasoning-budget "
      "--top-k --top-p --min-p "
      "--repeat-penalty --repeat-last-n --presence-penalty --frequency-penalty "
      "--draft-layers -md --rounds --host --port --slots --kv-pages --api-key "
      "--api-key-file --pooling -l --context-shift --no-context-shift --alias "
      "--slot-save-path --spm-infill --no-slots --reasoning-format --timeout" MKC_CLI_MORE_FLAGS,
      0, &c);
  if (rc == MKC_CLI_HELP) return 0;
  if (rc || (rc = check_flags(&c)) || (rc = mkc_cli_shift_check(&c, "serve"))) return rc;
  int drafts = c.draft_max; /* --parallel: per slot (the kernel's own may be more) */
  if ((rc = parallel_flags(&c))) return rc;
  mkc_server sv = {.c = &c, .family = -1, .fixed_seed = c.have_sample_seed};
  if (c.pooling && (sv.pooling = mkc_pooling_parse(c.pooling)) < 0)
    return mkc_cli_usage_error("serve: --pooling: expected mean, cls or last, got '%s'", c.pooling);
  unsigned long long seed;
  if ((rc = mkc_cli_sampling(&c, &sv.base, &seed)) ||
      (rc = mkc_cli_sampling_more(&c, &sv.base_more)))
    return rc;
  mkc_loaded_model m;
  mkc_draft_source ds = {0};
  int fd = -1, port = 0;
  rc = 1;
  sv.m = &m;
  sv.draft_layers = mkc_draft_layers_in_kernel(&c);
  if (mkc_loaded_plan(&c, &m) != 0 || (!sv.draft_layers && mkc_draft_source_plan(&c, &m, &ds) != 0))
    goto done;
  char name[256];
  sv.name = c.alias ? c.alias : model_name(&c, &m, name, sizeof name);
  if (m.file.tok && (c.chat_template || m.file.chat_template)) {
    sv.family = c.chat_template
                    ? mkc_chat_family_for(c.model_path, m.file.chat_template, c.chat_template)
                    : mkc_chat_detect(m.file.chat_template);
    if (c.chat_template && sv.family < 0) goto done;
    sv.tools = mkc_chat_tools_for(sv.family, c.chat_template ? NULL : m.file.chat_template);
  }
  mkc_chat_opts opts = {.reasoning_effort = c.reasoning_effort, .no_reasoning = c.no_reasoning};
  char why[256];
  int refused = mkc_chat_check_opts(sv.family, &opts, why, sizeof why);
  if (refused == MKC_CHAT_OPT_EFFORT)
    fprintf(stderr, "mkc: error: --reasoning-effort %s: %s\n", c.reasoning_effort, why);
  else if (refused)
    fprintf(stderr, "mkc: error: --reasoning-budget 0: %s\n", why);
  if (refused) goto done;
  if (m.file.tok && sv.family < 0)
    fprintf(stderr,
            "mkc: warning: %s's chat template is %s: /v1/chat/completions is refused (give "
            "--chat-template NAME)\n",
            sv.name, m.file.chat_template ? "not one mkc knows" : "missing");
  if (read_keys(&c, &sv) != 0) goto done;
  if ((fd = listen_on(c.host ? c.host : "127.0.0.1", c.port, &port)) < 0) goto done;
  c.draft_max = drafts;
  /* generation ends at the tokenizer's end-of-generation tokens, in both modes */
  if (m.file.tok && !(sv.eog = mkc_tokenizer_eog_all(m.file.tok, &sv.n_eog)) && sv.n_eog < 0)
    goto done;
  if (start(&c, &sv, &ds) != 0) goto done;
  if (c.slot_save_path) sv.cache_id = mkc_loaded_cache_id(&c, &m);
  mkc_interrupt_install_term();
  char how[96] = "";
  if (c.slots) snprintf(how, sizeof how, ", %d requests at once", c.slots);
  fprintf(stderr, "mkc: serving %s (%s backend, context %d%s%s%s) on http://%s:%d; Ctrl-C stops\n",
          sv.name, sv.slots ? mkc_slots_describe(sv.slots) : mkc_session_backend(m.s), m.g.max_ctx,
          how, sv.family >= 0 ? ", chat template " : "",
          sv.family >= 0 ? mkc_chat_family_name(sv.family) : "", c.host ? c.host : "127.0.0.1",
          port);
  if (mkc_serve_loop(&sv, fd) != 0) goto done;
  if (sv.sched)
    fprintf(stderr, "mkc: stopped serving after %ld requests; at most %d decoded together\n",
            sv.requests, mkc_sched_stats(sv.sched)->most_busy);
  else
    fprintf(stderr, "mkc: stopped serving after %ld requests\n", sv.requests);
  rc = 0;
done:
  if (fd >= 0) close(fd);
  free(sv.held);
  free(sv.eog);
  mkc_serve_slot_records_free(&sv);
  mkc_constraint_close(sv.json);
  for (int k = 0; k < sv.n_keys; k++) free(sv.keys[k]);
  free(sv.keys);
  mkc_sched_close(sv.sched);
  mkc_slots_close(sv.slots);
  mkc_draft_source_close(&ds);
  mkc_loaded_close(&m);
  return rc;
}
