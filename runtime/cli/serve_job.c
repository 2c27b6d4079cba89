/* A generation request made ready to decode (serve.h): its prompt's tokens
 * (the chat template, ollama's system and context), its sampler, its token
 * budget, and the answer that will carry it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "backend/logit_bias.h"
#include "exec/slots.h"
#include "json_format.h"
#include "model/chat_fit.h"
#include "model/infill.h"
#include "serve.h"
#include "tokenizer/tokenizer.h"
#include "util/buf.h"

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

/* The template's options for r: the reasoning effort (the request's, else
 * --reasoning-effort), and reasoning on or off (ollama's think,
 * chat_template_kwargs.enable_thinking; else --reasoning-budget), checked
 * against the template. 0, or -1 with the 400 message. */
static int chat_opts(const mkc_server *sv, const mkc_api_req *r, mkc_chat_opts *o, char *why,
                     size_t cap) {
  const char *name = mkc_chat_family_name(sv->family),
             *think = r->ollama ? "think" : "chat_template_kwargs.enable_thinking";
  int reasons = mkc_chat_reasons(sv->family), tool_msgs = 0;
  for (int i = 0; i < r->n_msgs; i++)
    tool_msgs |= r->msgs[i].n_calls || !strcmp(r->msgs[i].role, "tool");
  if ((r->n_tools || tool_msgs) && mkc_chat_tools(sv->family) && !sv->tools) {
    snprintf(why, cap,
             "tools: this model's chat template (of the %s family) calls tools in another format "
             "than the one mkc writes for %s (--chat-template %s makes the server write that one)",
             name, name, name);
    return -1;
  }
  if (r->think == 1 && !reasons) {
    snprintf(why, cap, "%s: the %s chat template does not reason", think, name);
    return -1;
  }
  *o = (mkc_chat_opts){
      .reasoning_effort = r->reasoning_effort ? r->reasoning_effort : sv->c->reasoning_effort,
      .no_reasoning = reasons && (r->think == 0 || (r->think < 0 && sv->c->no_reasoning)),
      .tools = r->tools,
      .n_tools = r->n_tools};
  char w[256];
  int refused = mkc_chat_check_opts(sv->family, o, w, sizeof w);
  if (refused == MKC_CHAT_OPT_EFFORT)
    snprintf(why, cap, "%s '%s': %s", r->ollama ? "think" : "reasoning_effort", o->reasoning_effort,
             w);
  else if (refused == MKC_CHAT_OPT_NO_REASONING)
    snprintf(why, cap, "%s: false: %s", think, w);
  else if (refused)
    snprintf(why, cap, "tools: %s", w);
  return refused ? -1 : 0;
}

/* Message i of r as its client names it: "messages[k]" (Anthropic's: the index it sent, or its
 * "system" field). */
typedef struct msg_label {
  char s[32];
} msg_label;
static msg_label msg_name(const mkc_api_req *r, int i) {
  msg_label l;
  if (i < 0) /* the list as a whole */
    snprintf(l.s, sizeof l.s, "messages");
  else if (r->origin && r->origin[i] < 0)
    snprintf(l.s, sizeof l.s, "system");
  else
    snprintf(l.s, sizeof l.s, "messages[%d]", r->origin ? r->origin[i] : i);
  return l;
}

char *mkc_serve_chat_text(const mkc_server *sv, const mkc_api_req *r, char *why, size_t cap) {
  if (sv->family < 0) {
    snprintf(why, cap,
             "%s's chat template is not one mkc knows: start the server with --chat-template "
             "NAME (%s)",
             sv->name, mkc_chat_family_names());
    return NULL;
  }
  /* the order the template takes, ending with the user's message or a tool's result */
  int bad;
  char w[320];
  if (mkc_chat_check(sv->family, r->msgs, r->n_msgs, &bad, w, sizeof w) != 0) {
    snprintf(why, cap, "%s: %s", msg_name(r, bad).s, w);
    return NULL;
  }
  /* the last: the user's, a tool's result, or the start of the answer (a prefill) */
  const mkc_chat_msg *last = &r->msgs[r->n_msgs - 1];
  int prefill = !strcmp(last->role, "assistant"), at = r->n_msgs - 1;
  if (!prefill && strcmp(last->role, "user") != 0 && strcmp(last->role, "tool") != 0) {
    snprintf(why, cap,
             "messages: the last message must be the user's%s, or the assistant's start "
             "of its answer",
             mkc_chat_tools(sv->family) ? ", a tool's result" : "");
    return NULL;
  }
  if (prefill && (last->n_calls || last->reasoning)) {
    snprintf(why, cap,
             "%s: an assistant's message last is the start of its answer, which it "
             "goes on from: it cannot hold %s",
             msg_name(r, at).s, last->n_calls ? "tool calls" : "reasoning");
    return NULL;
  }
  mkc_chat_opts o;
  if (chat_opts(sv, r, &o, why, cap) != 0) return NULL;
  if (prefill && mkc_chat_reasons(sv->family) && !o.no_reasoning) {
    /* the model would reason after the start of its answer (llama-server refuses it too) */
    snprintf(why, cap,
             "%s: the start of an answer cannot be given while the model reasons first "
             "(%s)",
             msg_name(r, at).s,
             sv->family != MKC_CHAT_QWEN3 ? "its template cannot turn reasoning off"
             : r->ollama                  ? "\"think\": false turns it off"
             : r->anthropic               ? "\"thinking\": {\"type\": \"disabled\"} turns it off"
                            : "chat_template_kwargs.enable_thinking false turns it off");
    return NULL;
  }
  char *text = mkc_chat_render_prompt(sv->family, r->msgs, r->n_msgs, &o);
  if (!text)
    snprintf(why, cap, "messages: the %s template cannot render them (the server's log says why)",
             mkc_chat_family_name(sv->family));
  return text;
}

/* The request's context: ollama's num_ctx where it is smaller than the server's. */
static int ctx_of(const mkc_server *sv, const mkc_api_req *r) {
  int server = sv->m->g.max_ctx;
  return r->num_ctx > 0 && r->num_ctx < server ? r->num_ctx : server;
}

/* ollama's truncate, for a chat longer than the context: its oldest turns left out until the
 * prompt leaves room for the answer (the request's token limit, at most half the context; else a
 * quarter). 0 with *text and *ids (*n_ids of them) those of the kept messages and *dropped how
 * many were left out, or -1 with the 400 message. */
static int fit_chat(const mkc_server *sv, const mkc_api_req *r, char **text, int **ids, int *n_ids,
                    int *dropped, char *why, size_t cap) {
  int ctx = ctx_of(sv, r);
  int reserve = mkc_chat_fit_reserve(ctx, r->max_tokens >= 0 ? r->max_tokens
                                          : sv->c->have_n    ? sv->c->n_gen
                                                             : -1);
  mkc_chat_opts o;
  mkc_chat_fit f;
  if (chat_opts(sv, r, &o, why, cap) != 0) return -1;
  if (mkc_chat_fit_into(sv->family, r->msgs, r->n_msgs, &o, sv->m->file.tok, ctx - reserve, &f) !=
      0) {
    snprintf(why, cap,
             "messages: the chat could not be cut to fit the context (the server's "
             "log says why)");
    return -1;
  }
  if (f.n_tokens > ctx) {
    snprintf(why, cap,
             "the prompt is %d tokens but the context holds %d, and its last turn alone (with "
             "the system's messages) is %d (start the server with a larger --ctx)",
             *n_ids, ctx, f.n_tokens);
    free(f.text);
    return -1;
  }
  int *kept = NULL;
  int n_kept = mkc_tokenizer_encode(sv->m->file.tok, f.text, strlen(f.text),
                                    mkc_tokenizer_add_bos(sv->m->file.tok), 1, &kept);
  if (n_kept < 0) {
    free(f.text);
    snprintf(why, cap, "the prompt could not be tokenized (the server's log says why)");
    return -1;
  }
  free(*text), free(*ids);
  *text = f.text, *ids = kept, *n_ids = n_kept, *dropped = f.dropped;
  return 0;
}

/* /infill's prompt (model/infill.h). llama-server shares its batch (2048) between the prefix
 * and the suffix and keeps room for twice its -n; mkc's batch is at most half the context, and
 * the room is the answer's limit (at most half the context) or else a quarter of the context,
 * as a cut chat leaves it, so that the prompt always leaves the answer room. A suffix (infill 2)
 * cuts nothing: the prompt is refused when it does not fit, as any prompt is. */
static int *infill_prompt(const mkc_server *sv, const mkc_api_req *r, int *n, char *why,
                          size_t cap) {
  int ctx = ctx_of(sv, r);
  int limit = r->max_tokens >= 0 ? r->max_tokens : sv->c->have_n ? sv->c->n_gen : -1;
  mkc_infill in = {.prefix = r->input_prefix,
                   .suffix = r->input_suffix,
                   .prompt = r->infill == 1 ? r->prompt : NULL,
                   .extra_names = r->extra_names,
                   .extra_texts = r->extra_texts,
                   .n_extra = r->n_extra,
                   .n_batch = r->infill == 1 ? (ctx / 2 < 2048 ? ctx / 2 : 2048) : 4 * ctx,
                   .n_predict = mkc_chat_fit_reserve(ctx, limit),
                   .n_ctx = ctx,
                   .spm = sv->c->spm_infill};
  int *ids = NULL;
  if ((*n = mkc_infill_prompt(sv->m->file.tok, &in, &ids)) < 0) {
    snprintf(why, cap, "the infill prompt could not be made (the server's log says why)");
    return NULL;
  }
  return ids;
}

/* The prompt's tokens for the request, or NULL with the 400 message; *dropped: the messages
 * left out to fit the context (fit_chat). */
static int *prompt_of(const mkc_server *sv, const mkc_api_req *r, int *n, int *dropped, char *why,
                      size_t cap) {
  const mkc_tokenizer *tok = sv->m->file.tok;
  const int vocab = sv->m->g.vocab;
  *n = 0;
  if ((r->reasoning_effort || r->think >= 0) &&
      !(r->chat || (r->ollama && !r->raw && sv->family >= 0))) {
    snprintf(why, cap, "%s: the prompt is not put in a chat template%s",
             r->ollama ? "think" : "reasoning_effort", r->ollama ? "" : " (a chat request's is)");
    return NULL;
  }
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
  if (r->infill) return infill_prompt(sv, r, n, why, cap);
  char *text = NULL;
  if (r->chat) {
    if (!(text = mkc_serve_chat_text(sv, r, why, cap))) return NULL;
  } else if (r->ollama && !r->raw && sv->family >= 0) {
    /* ollama's generate: the prompt as the user's turn in the template, after a system turn */
    mkc_chat_msg msgs[2] = {{.role = "system", .content = r->system},
                            {.role = "user", .content = r->prompt}};
    mkc_chat_opts o;
    if (chat_opts(sv, r, &o, why, cap) != 0) return NULL;
    text = mkc_chat_render_with(sv->family, msgs + !r->system, 1 + !!r->system, 1, &o);
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
  if (n_text > ctx_of(sv, r) && r->chat && r->ollama && r->truncate &&
      fit_chat(sv, r, &text, &ids, &n_text, dropped, why, cap) != 0) {
    free(text), free(ids);
    return NULL;
  }
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

/* Whether a request for JSON output cannot have it here: why, then 1. */
static int json_format_refused(const mkc_server *sv, const mkc_api_req *r, char *why, size_t cap) {
  const char *field = r->grammar ? "grammar" : r->ollama ? "format" : "response_format";
  const char *what = r->grammar ? "output by a grammar" : "JSON output";
  int templated = r->chat || (r->ollama && !r->raw);
  int reasons =
      templated &&
      mkc_json_format_reasons(sv->family, r->think == 0 || (r->think < 0 && sv->c->no_reasoning));
  if (!sv->m->file.tok)
    snprintf(why, cap, "%s: %s needs a model with a tokenizer (this one answers ids)", field, what);
  else if (r->n_tools)
    snprintf(why, cap, "%s: %s and tools together are not offered", field, what);
  else if (reasons)
    snprintf(why, cap, "%s: this model reasons before it answers, and its reasoning is not %s%s",
             field, r->grammar ? "the grammar's" : "JSON",
             sv->family != MKC_CHAT_QWEN3 ? "" /* only qwen3's template can turn it off */
             : r->ollama                  ? " (\"think\": false turns it off)"
                         : " (chat_template_kwargs.enable_thinking false turns it off)");
  else
    return 0;
  return 1;
}

/* A seed for a request that gives none: the command's --seed, else a new one. */
static void draw_seed(const mkc_server *sv, mkc_sampling *o) {
  if (sv->fixed_seed) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long s = ((unsigned long long)ts.tv_sec * 1000000007ull) ^
                         (unsigned long long)ts.tv_nsec ^ ((unsigned long long)sv->requests << 40);
  o->seed_lo = (unsigned)s;
  o->seed_hi = (unsigned)(s >> 32);
}

/* Anthropic's thinking, now that the template is known: reasoning turned on or off where the
 * template can turn it so (qwen3's); where it cannot, and a budget (mkc has none), named on the
 * log line. Enabled on a model that does not reason is named too. */
static void anthropic_thinking(const mkc_server *sv, mkc_api_req *r) {
  if (r->thinking < 0) return;
  int reasons = mkc_chat_reasons(sv->family);
  mkc_chat_opts off = {.no_reasoning = 1};
  char w[256];
  int can_off = reasons && mkc_chat_check_opts(sv->family, &off, w, sizeof w) == 0;
  if (can_off) r->think = r->thinking;
  int followed = r->thinking ? reasons : !reasons || can_off;
  const char *what = !followed ? "thinking" : r->thinking_budget ? "thinking.budget_tokens" : NULL;
  if (what) mkc_api_note_unfollowed(r, what);
}

int *mkc_serve_prompt(const mkc_server *sv, mkc_api_req *r, int *n, char *why, size_t cap) {
  int dropped = 0;
  if (r->anthropic) anthropic_thinking(sv, r);
  return prompt_of(sv, r, n, &dropped, why, cap);
}

/* OpenAI's echo: the prompt's text as given, or the token ids' text as the model reads them
 * (control tokens shown); without a tokenizer the ids as answers spell them, and a space before
 * the answer's. malloc'd, or NULL when out of memory. */
static char *echo_text(const mkc_server *sv, const mkc_api_req *r, const int *ids, int n) {
  if (r->prompt) return strdup(r->prompt);
  if (sv->m->file.tok) return mkc_tokenizer_decode(sv->m->file.tok, ids, n, 1);
  mkc_buf b = {0};
  char piece[16];
  for (int i = 0; i < n; i++)
    mkc_buf_put_n(&b, piece, (size_t)snprintf(piece, sizeof piece, "%d ", ids[i]));
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s ? b.s : strdup("");
}

/* Whether the answer shifts the context as it fills it, and what a shift keeps: ollama's
 * requests unless "shift": false (num_keep, default 4, counted from the prompt's start, as
 * ollama counts); the others as the server's --context-shift says (n_keep, default 0, and the
 * BOS, as llama-server keeps it); on the slots (--parallel) too. */
static void shift_plan(const mkc_server *sv, mkc_serve_job *j) {
  mkc_api_req *r = &j->r;
  j->shift = r->shift ? r->shift > 0 : r->ollama || sv->c->context_shift;
  int keep = r->have_keep ? r->n_keep : r->ollama ? 4 : 0;
  j->n_discard = r->n_discard;
  j->n_keep = mkc_shift_keep(keep, r->ollama ? -1 : mkc_tokenizer_added_bos(sv->m->file.tok),
                             j->prompt, j->n_prompt);
}

/* The answer's room in the context and its token budget, for the prompt now: as the request's
 * max_tokens, the server's -n and a context shift say. */
static void plan_budget(const mkc_server *sv, mkc_serve_job *j) {
  const mkc_api_req *r = &j->r;
  int max_ctx = j->ctx = ctx_of(sv, r);
  j->room = max_ctx - j->n_prompt + 1;
  int limit = r->max_tokens >= 0 ? r->max_tokens : sv->c->have_n ? sv->c->n_gen : -1;
  shift_plan(sv, j);
  /* shifted with no limit: ollama's bound on a runaway answer, 10 contexts */
  j->n_gen = j->shift                       ? (limit < 0 ? 10 * max_ctx : limit)
             : limit < 0 || limit > j->room ? j->room
                                            : limit;
}

/* A list's prompts (OpenAI's): each one's tokens, checked to fit the context, the first's
 * (j->prompt) among them. 0, or the status refusing the request with why. */
static int other_prompts(const mkc_server *sv, mkc_serve_job *j, char *why, size_t cap) {
  mkc_api_req *r = &j->r;
  int n = r->n_prompts, max_ctx = ctx_of(sv, r), status = 0;
  j->prompts = calloc((size_t)n, sizeof *j->prompts);
  j->n_prompts = calloc((size_t)n, sizeof *j->n_prompts);
  if (!j->prompts || !j->n_prompts) {
    snprintf(why, cap, "out of memory");
    return 500;
  }
  j->n_lists = n;
  j->prompts[0] = j->prompt, j->n_prompts[0] = j->n_prompt;
  for (int k = 1; k < n && !status; k++) {
    int dropped;
    snprintf(why, cap, "out of memory");
    if (mkc_api_select_prompt(r, k) != 0 ||
        !(j->prompts[k] = prompt_of(sv, r, &j->n_prompts[k], &dropped, why, cap))) {
      status = strstr(why, "memory") ? 500 : 400;
    } else if (j->n_prompts[k] > max_ctx) {
      snprintf(why, cap,
               "prompt[%d] is %d tokens but the context holds %d (start the server "
               "with a larger --ctx)",
               k, j->n_prompts[k], max_ctx);
      status = 400;
    }
    if (!status) j->prompt_total += j->n_prompts[k];
  }
  if (!status && mkc_api_select_prompt(r, 0) != 0) {
    snprintf(why, cap, "out of memory");
    status = 500;
  }
  return status;
}

int mkc_serve_job_open(mkc_server *sv, mkc_serve_job *j, mkc_api_req *r, int fd, const char *path,
                       char *why, size_t cap) {
  memset(j, 0, sizeof *j);
  j->r = *r;
  memset(r, 0, sizeof *r); /* the job owns it now */
  r = &j->r;
  j->fd = fd;
  j->id = sv->requests;
  snprintf(j->path, sizeof j->path, "%s", path);
  if (r->anthropic) anthropic_thinking(sv, r);
  if (!sv->m->file.tok && r->n_stop) {
    snprintf(why, cap, "stop: strings need a model with a tokenizer (this one answers ids)");
    return 400;
  }
  char missing[64];
  if (r->infill && sv->m->file.tok &&
      mkc_infill_missing(sv->m->file.tok, missing, sizeof missing)) {
    if (r->infill == 2) {
      snprintf(why, cap,
               "suffix: this model lacks fill-in-the-middle markers (%s), so it cannot complete "
               "between a prompt and a suffix",
               missing);
      return 400;
    }
    snprintf(why, cap,
             "Infill is not supported by this model: it lacks fill-in-the-middle markers: %s",
             missing);
    return 501; /* llama-server's status for it */
  }
  /* llama-server's per-request adapters: only the scales in effect (mkc merges at load) */
  const cJSON *lora = cJSON_GetObjectItemCaseSensitive(r->root, "lora");
  const char *fault = lora && !cJSON_IsNull(lora) ? mkc_serve_lora_asked(sv->m, lora) : NULL;
  if (fault) {
    snprintf(why, cap, "lora: %s", fault);
    return 400;
  }
  if (!(j->prompt = prompt_of(sv, r, &j->n_prompt, &j->dropped, why, cap)))
    return strstr(why, "memory") ? 500 : 400;
  int max_ctx = ctx_of(sv, r);
  if (r->num_ctx > sv->m->g.max_ctx) mkc_api_note_unfollowed(r, "num_ctx"); /* it has less */
  if (j->n_prompt > max_ctx) {
    if (max_ctx < sv->m->g.max_ctx)
      snprintf(why, cap, "the prompt is %d tokens but the request's num_ctx is %d", j->n_prompt,
               max_ctx);
    else
      snprintf(why, cap,
               "the prompt is %d tokens but the context holds %d (start the server with a "
               "larger --ctx)",
               j->n_prompt, max_ctx);
    return 400;
  }
  if (r->top_logprobs >= 0 && sv->c->rounds > 1) { /* --parallel refuses --rounds */
    snprintf(why, cap, "%s",
             "logprobs: not on a server started with --rounds (a launch of rounds keeps only its "
             "last round's)");
    return 400;
  }
  if (r->json_format && json_format_refused(sv, r, why, cap)) return 400;
  j->opt = mkc_api_sampling(r, sv->base);
  /* the kernel computes them when asked for at least one (the token's own comes with it) */
  j->opt.logprobs = r->top_logprobs > 0 ? r->top_logprobs : r->top_logprobs == 0 ? 1 : 0;
  if (!r->have_seed) draw_seed(sv, &j->opt);
  j->seed0 = (unsigned long long)j->opt.seed_hi << 32 | j->opt.seed_lo;
  for (int k = 0; r->ignore_eos && k < sv->n_eog; k++) /* as llama-server: the tokens banned */
    if (mkc_bias_add(j->opt.bias_id, j->opt.bias, &j->opt.n_bias, sv->eog[k], -INFINITY) < 0) {
      snprintf(why, cap, "ignore_eos: the logit biases are full (%d tokens)", MKC_BIAS_CAP);
      return 400;
    }
  int last_bias = j->opt.n_bias > 0 ? j->opt.bias_id[j->opt.n_bias - 1] : -1;
  if (last_bias >= sv->m->g.vocab) {
    snprintf(why, cap, "logit_bias: token %d is outside the vocabulary (0..%d)", last_bias,
             sv->m->g.vocab - 1);
    return 400;
  }
  if (mkc_sampling_check(&j->opt) != 0) {
    snprintf(why, cap, "the sampling options were refused (the server's log says why)");
    return 400;
  }
  j->more = mkc_api_sampling_more(r, sv->base_more);
  if (r->have_samplers) mkc_samplers_apply(r->samplers, &j->opt, &j->more);
  char more_why[160];
  if (mkc_sampling_more_check(&j->more, more_why, sizeof more_why) != 0) {
    snprintf(why, cap, "%s", more_why);
    return 400;
  }
  j->host = r->json_format || mkc_sampling_more_on(&j->more);
  if (j->host && !sv->m->file.tok && (r->more_set >> MKC_SAMPLING_MORE_OPTIONS & 1)) {
    snprintf(why, cap,
             "dry_sequence_breakers: matched on the tokens' texts, they need a model with a "
             "tokenizer (this one answers ids)");
    return 400;
  }
  plan_budget(sv, j);
  j->prompt_total = j->n_prompt;
  if (r->n_prompts > 1) { /* the list's other prompts, each checked now */
    int status = other_prompts(sv, j, why, cap);
    if (status) return status;
  }
  if (mkc_answer_open(&j->g, r, fd, sv->m->file.tok, sv->name, sv->requests, j->n_gen) != 0) {
    snprintf(why, cap, "out of memory");
    return 500;
  }
  j->g.n_prompt = j->n_prompt;
  if (r->echo && !(j->g.echo = echo_text(sv, r, j->prompt, j->n_prompt))) {
    snprintf(why, cap, "out of memory");
    return 500;
  }
  /* a prompt in a template whose models reason first: the reasoning apart */
  if (mkc_answer_reasoning_apart(r, sv->c->reasoning_format))
    mkc_answer_reasoning(&j->g, sv->family);
  mkc_answer_tools(&j->g, sv->family);
  return 0;
}

void mkc_serve_job_answer(mkc_serve_job *j, const mkc_decode_stats *st, int cached) {
  mkc_decode_stats *sum = &j->sum;
  int per = j->r.n_choices > 1 ? j->r.n_choices : 1, first = j->g.index % per == 0;
  if (j->g.index == 0) {
    *sum = *st;
  } else {
    sum->generated += st->generated;
    sum->drafted += st->drafted;
    sum->accepted += st->accepted;
    sum->seconds += st->seconds;
    sum->shifts += st->shifts;
    if (first) sum->fed += st->fed, sum->prompt_seconds += st->prompt_seconds;
  }
  if (first) j->cached_total += cached;
  int own = j->r.native; /* llama-server's objects count their own choice */
  int n_prompt = own ? j->n_prompt : j->prompt_total, n_cached = own ? cached : j->cached_total;
  const mkc_decode_stats *figures = own ? st : sum;
  if (j->r.stream)
    mkc_answer_stream_end(&j->g, n_prompt, n_cached, figures);
  else
    mkc_answer_respond(&j->g, n_prompt, n_cached, figures);
}

int mkc_serve_job_next_choice(mkc_server *sv, mkc_serve_job *j) {
  int next = j->g.index + 1, per = j->r.n_choices > 1 ? j->r.n_choices : 1;
  int k = next / per, new_prompt = next % per == 0;
  if (new_prompt) { /* the next prompt of the list: its tokens, its budget */
    if (mkc_api_select_prompt(&j->r, k) != 0) return -1;
    j->prompt = j->prompts[k], j->n_prompt = j->n_prompts[k];
    plan_budget(sv, j);
  }
  if (mkc_answer_next_choice(&j->g, j->n_gen) != 0) return -1;
  j->g.n_prompt = j->n_prompt;
  if (new_prompt && j->r.echo) {
    free(j->g.echo);
    if (!(j->g.echo = echo_text(sv, &j->r, j->prompt, j->n_prompt))) return -1;
  }
  unsigned long long s = j->seed0 + (unsigned long long)(next % per);
  j->opt.seed_lo = (unsigned)s;
  j->opt.seed_hi = (unsigned)(s >> 32);
  return 0;
}

void mkc_serve_job_close(mkc_serve_job *j) {
  if (j->g.ids || j->g.text) mkc_answer_close(&j->g);
  mkc_batch_free(&j->q, 1);
  mkc_constraint_close(j->q.constraint);
  j->q.constraint = NULL;
  if (j->prompts) { /* a list's: the prompt is one of them */
    for (int k = 0; k < j->n_lists; k++) free(j->prompts[k]);
    j->prompt = NULL;
  }
  free(j->prompts), free(j->n_prompts);
  j->prompts = NULL, j->n_prompts = NULL;
  free(j->prompt), free(j->context);
  j->prompt = j->context = NULL;
  mkc_api_req_free(&j->r);
}

mkc_constraint *mkc_serve_job_json(mkc_server *sv, const mkc_serve_job *j, int own) {
  if (!sv->json && !(sv->json = mkc_host_choice_open(sv->m->file.tok, sv->m->g.vocab))) return NULL;
  mkc_constraint *doc = own ? mkc_constraint_share(sv->json) : sv->json;
  mkc_format_rules rules = {
      .schema = j->r.schema, .grammar = j->r.grammar, .json = j->r.json_format, .more = j->more};
  if (doc &&
      mkc_json_format_start(doc, &rules, sv->m->file.tok,
                            (unsigned long long)j->opt.seed_hi << 32 | j->opt.seed_lo) != 0) {
    if (own) mkc_constraint_close(doc);
    return NULL;
  }
  return doc;
}

const char *mkc_serve_stopped(const mkc_answer *g, int interrupted, int full) {
  return g->gone       ? "the client went away"
         : interrupted ? "interrupted (Ctrl-C)"
         : g->eog      ? "end of generation"
         : g->hit_stop ? "a stop string"
         : g->complete
             ? (g->complete == 2 ? "the grammar allows nothing more" : "the JSON is whole")
         : full ? "context full"
                : "max_tokens reached";
}

void mkc_serve_job_done(mkc_server *sv, const mkc_serve_job *j, const mkc_decode_stats *st,
                        int cached, const char *why) {
  double gen_s = st->seconds - st->prompt_seconds;
  char cut[160] = "";
  if (j->dropped)
    snprintf(cut, sizeof cut, "; the %d oldest messages left out to fit the context", j->dropped);
  if (st->shifts) {
    size_t at = strlen(cut);
    snprintf(cut + at, sizeof cut - at, "; context shifted %d times (%d tokens fed again)",
             st->shifts, st->shift_fed);
  }
  mkc_serve_counts *n = &sv->counts;
  n->requests += j->g.index == 0; /* OpenAI's n: a request, however many choices */
  n->prompt_tokens += st->fed;
  n->cached_tokens += cached;
  n->generated += j->g.n_ids;
  n->drafted += st->drafted;
  n->accepted += st->accepted;
  n->prompt_seconds += st->prompt_seconds;
  n->gen_seconds += gen_s > 0 ? gen_s : 0;
  fprintf(stderr,
          "mkc: POST %s: prompt %d tokens (%d cached) in %.3f s; generated %d tokens in %.3f s "
          "(%.1f tok/s); drafted %ld, accepted %ld; stopped: %s%s%s%s\n",
          j->path, j->n_prompt, cached, st->prompt_seconds, j->g.n_ids, gen_s,
          st->generated > 1 && gen_s > 0 ? st->generated / gen_s : 0.0, st->drafted, st->accepted,
          why, j->r.unfollowed[0] ? "; options not followed: " : "", j->r.unfollowed, cut);
}
