/* See api.h. */
#include "api.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_anthropic.h"
#include "api_responses.h"
#include "backend/logit_bias.h"
#include "model/reasoning.h"
#include "model/tojson.h"
#include "util/gbnf.h"
#include "util/json_schema.h"
#include "util/json_text.h"
#include "util/text.h"

/* A boolean field: 0 or 1 (dflt when absent or null), -1 with why when not a boolean. */
static int flag(const cJSON *root, const char *name, int dflt, char *why, size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
  if (!v || cJSON_IsNull(v)) return dflt;
  if (!cJSON_IsBool(v)) return mkc_refuse(why, cap, "%s: expected true or false", name);
  return cJSON_IsTrue(v);
}

/* The texts of c's blocks of type kind (their field), joined: OpenAI's content parts (kind
 * "text"; an image or audio part is refused) or, anthropic set, Anthropic's content blocks,
 * whose text and thinking blocks are taken apart (a redacted thinking block: skipped). NULL
 * with why filled; *owned set when the text was joined here. */
static const char *blocks_of(const cJSON *c, int i, const char *kind, const char *field,
                             int anthropic, char **owned, char *why, size_t cap) {
  *owned = NULL;
  if (!strcmp(kind, "text") && cJSON_IsString(c)) return c->valuestring;
  if (!cJSON_IsArray(c)) {
    mkc_refuse(why, cap, "messages[%d].content: expected a string or a list of text parts", i);
    return NULL;
  }
  size_t len = 0;
  const cJSON *part;
  cJSON_ArrayForEach(part, c) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type"),
                *text = cJSON_GetObjectItemCaseSensitive(part, field);
    const char *t = cJSON_IsString(type) ? type->valuestring : "";
    if (!strcmp(t, kind) && cJSON_IsString(text)) {
      len += strlen(text->valuestring);
      continue;
    }
    if (anthropic && strcmp(t, kind) &&
        (!strcmp(t, "text") || !strcmp(t, "thinking") || !strcmp(t, "redacted_thinking")))
      continue; /* the other kind's */
    mkc_refuse(why, cap,
               anthropic
                   ? "messages[%d].content: only text, thinking, tool_use and tool_result blocks"
                   : "messages[%d].content: only text parts ({\"type\": \"text\", \"text\": ...})",
               i);
    return NULL;
  }
  char *s = malloc(len + 1), *o = s;
  if (!s) {
    mkc_refuse(why, cap, "out of memory");
    return NULL;
  }
  cJSON_ArrayForEach(part, c) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, kind)) continue;
    const char *t = cJSON_GetObjectItemCaseSensitive(part, field)->valuestring;
    size_t n = strlen(t);
    memcpy(o, t, n);
    o += n;
  }
  *o = '\0';
  return *owned = s;
}

static const char *content_of(const cJSON *c, int i, int anthropic, char **owned, char *why,
                              size_t cap) {
  return blocks_of(c, i, "text", "text", anthropic, owned, why, cap);
}

/* The value at path in the request's body, as Python's json.dumps writes it
 * (its numbers' digits kept: util/json_text.h), else from the parsed v
 * (a key the body spells with escapes); malloc'd. */
static char *as_python(const mkc_api_req *r, const char *path, const cJSON *v) {
  const char *at;
  size_t len;
  if (r->body && mkc_json_at(r->body, r->body_len, path, &at, &len))
    return mkc_json_python(at, len, 0);
  return mkc_tojson(v);
}

/* s (malloc'd) kept until the request is freed; NULL when s is. */
static char *own(mkc_api_req *r, char *s) {
  if (s) r->owned[r->n_owned++] = s;
  return s;
}

/* An assistant message's tool_calls: OpenAI's {"id", "type": "function",
 * "function": {"name", "arguments": a JSON text}}, ollama's with the
 * arguments an object. Each call's arguments are written as the template
 * writes them (a text parsed first, as llama-server does). */
static int read_calls(const cJSON *calls, int i, mkc_api_req *r, mkc_chat_msg *m, char *why,
                      size_t cap) {
  int n = cJSON_GetArraySize(calls);
  if (!cJSON_IsArray(calls))
    return mkc_refuse(why, cap, "messages[%d].tool_calls: expected a list of calls", i);
  if (n == 0) return 0;
  mkc_chat_call *out = calloc((size_t)n, sizeof *out);
  if (!out) return mkc_refuse(why, cap, "out of memory");
  own(r, (char *)out);
  int k = 0;
  for (const cJSON *c = calls->child; c; c = c->next, k++) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "function"),
                *name = cJSON_GetObjectItemCaseSensitive(f, "name"),
                *args = cJSON_GetObjectItemCaseSensitive(f, "arguments");
    if (!cJSON_IsObject(f) || !cJSON_IsString(name) || !*name->valuestring)
      return mkc_refuse(why, cap,
                        "messages[%d].tool_calls[%d]: expected {\"function\": {\"name\", "
                        "\"arguments\"}}",
                        i, k);
    /* arguments: a JSON object's text (OpenAI's), or the object (ollama's) */
    cJSON *parsed = cJSON_IsString(args) ? cJSON_ParseWithOpts(args->valuestring, NULL, 1) : NULL;
    const cJSON *value = cJSON_IsString(args) ? parsed : args;
    int object = cJSON_IsObject(value);
    cJSON_Delete(parsed);
    if (!object)
      return mkc_refuse(
          why, cap,
          "messages[%d].tool_calls[%d].function.arguments: expected a JSON object (or "
          "its text)",
          i, k);
    char path[96];
    snprintf(path, sizeof path, "messages/%d/tool_calls/%d/function/arguments", i, k);
    char *text = cJSON_IsString(args)
                     ? mkc_json_python(args->valuestring, strlen(args->valuestring), 0)
                     : as_python(r, path, args);
    out[k] = (mkc_chat_call){name->valuestring, own(r, text)};
    if (!out[k].arguments) return mkc_refuse(why, cap, "out of memory");
  }
  m->calls = out;
  m->n_calls = n;
  return 0;
}

static int read_messages(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
  int n = cJSON_GetArraySize(msgs);
  if (!cJSON_IsArray(msgs) || n == 0)
    return mkc_refuse(why, cap, "messages: expected a non-empty list of {\"role\", \"content\"}");
  /* what is owned: per message its joined content, its calls and their arguments, and
   * (Anthropic's) its joined thinking */
  size_t n_owned = 3 * (size_t)n;
  const cJSON *m;
  cJSON_ArrayForEach(m, msgs) n_owned +=
      (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "tool_calls"));
  r->msgs = calloc((size_t)n, sizeof *r->msgs);
  r->owned = calloc(n_owned, sizeof *r->owned);
  if (!r->msgs || !r->owned) return mkc_refuse(why, cap, "out of memory");
  cJSON_ArrayForEach(m, msgs) {
    int i = r->n_msgs;
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsObject(m) || !cJSON_IsString(role))
      return mkc_refuse(why, cap, "messages[%d]: expected an object with a string \"role\"", i);
    const char *rs = role->valuestring;
    if (strcmp(rs, "developer") == 0) rs = "system"; /* OpenAI's newer name for it */
    if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") && strcmp(rs, "tool"))
      return mkc_refuse(
          why, cap, "messages[%d].role: expected system, user, assistant or tool, got \"%.40s\"", i,
          role->valuestring);
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "images")) > 0)
      return mkc_refuse(why, cap, "messages[%d].images: this model reads text only", i);
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls"),
                *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    int calling = calls && !cJSON_IsNull(calls);
    if (calling && strcmp(rs, "assistant") != 0)
      return mkc_refuse(why, cap, "messages[%d].tool_calls: only in an assistant's message", i);
    r->msgs[i].role = rs;
    if (calling && read_calls(calls, i, r, &r->msgs[i], why, cap) != 0) return -1;
    char *joined = NULL;
    /* a reply that only calls has no content (null) */
    const char *content =
        calling && (!c || cJSON_IsNull(c)) ? "" : content_of(c, i, r->anthropic, &joined, why, cap);
    own(r, joined);
    if (!content) return -1;
    r->msgs[i].content = content;
    /* Anthropic's: an assistant's thinking blocks given back, as its reasoning */
    if (r->anthropic && cJSON_IsArray(c) && !strcmp(rs, "assistant")) {
      const char *thought = blocks_of(c, i, "thinking", "thinking", 1, &joined, why, cap);
      own(r, joined);
      if (!thought) return -1;
      if (*thought) r->msgs[i].reasoning = thought;
    }
    /* an assistant's reasoning, given back: llama-server's reasoning_content, ollama's thinking */
    const char *names[] = {"reasoning_content", "thinking"};
    for (int k = 0; k < 2 && !strcmp(rs, "assistant"); k++) {
      const cJSON *thought = cJSON_GetObjectItemCaseSensitive(m, names[k]);
      if (!thought || cJSON_IsNull(thought)) continue;
      if (!cJSON_IsString(thought))
        return mkc_refuse(why, cap, "messages[%d].%s: expected a string", i, names[k]);
      r->msgs[i].reasoning = thought->valuestring;
    }
    r->n_msgs++;
  }
  return 0;
}

/* tools (OpenAI's and ollama's): [{"type": "function", "function": {"name",
 * "description", "parameters"}}], each written as the template writes it;
 * tool_choice "auto" (the default) or "none" (the tools are not offered);
 * parallel_tool_calls. */
static int read_tools(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools"),
              *choice = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
  if (!tools || cJSON_IsNull(tools)) return 0;
  int n = cJSON_GetArraySize(tools);
  if (!cJSON_IsArray(tools)) return mkc_refuse(why, cap, "tools: expected a list of functions");
  if (choice && !cJSON_IsNull(choice) &&
      !(cJSON_IsString(choice) &&
        (!strcmp(choice->valuestring, "auto") || !strcmp(choice->valuestring, "none"))))
    return mkc_refuse(
        why, cap,
        "tool_choice: \"auto\" or \"none\" (a call cannot be forced: constrained output "
        "is not offered)");
  int one = flag(root, "parallel_tool_calls", 1, why, cap);
  if (one < 0) return -1;
  r->one_call = !one;
  if (n == 0 || (cJSON_IsString(choice) && !strcmp(choice->valuestring, "none"))) return 0;
  char **grown = realloc(r->owned, (size_t)(r->n_owned + n) * sizeof *grown);
  r->tools = calloc((size_t)n, sizeof *r->tools);
  if (grown) r->owned = grown;
  if (!grown || !r->tools) return mkc_refuse(why, cap, "out of memory");
  int k = 0;
  for (const cJSON *t = tools->child; t; t = t->next, k++) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type"),
                *f = cJSON_GetObjectItemCaseSensitive(t, "function"),
                *name = cJSON_GetObjectItemCaseSensitive(f, "name");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 || !cJSON_IsObject(f) ||
        !cJSON_IsString(name) || !*name->valuestring)
      return mkc_refuse(why, cap,
                        "tools[%d]: expected {\"type\": \"function\", \"function\": {\"name\", "
                        "\"description\", \"parameters\"}}",
                        k);
    char path[32];
    snprintf(path, sizeof path, "tools/%d", k);
    if (!(r->tools[k] = own(r, as_python(r, path, t))))
      return mkc_refuse(why, cap, "out of memory");
    r->n_tools++;
  }
  return 0;
}

/* A list of token ids, each a whole number >= 0: 0 with *ids malloc'd (NULL when empty). */
int mkc_api_read_ids(const struct cJSON *a, const char *name, int **ids, int *n, char *why,
                     size_t cap) {
  *ids = NULL, *n = 0;
  if (!cJSON_IsArray(a)) return mkc_refuse(why, cap, "%s: expected a list of token ids", name);
  int count = cJSON_GetArraySize(a);
  if (count > 0 && !(*ids = malloc((size_t)count * sizeof **ids)))
    return mkc_refuse(why, cap, "out of memory");
  const cJSON *id;
  cJSON_ArrayForEach(id, a) {
    double v = cJSON_IsNumber(id) ? id->valuedouble : -1;
    if (!(v >= 0 && v < 2147483647.0 && v == floor(v)))
      return mkc_refuse(why, cap, "%s[%d]: expected a token id (a whole number >= 0)", name, *n);
    (*ids)[(*n)++] = (int)v;
  }
  return 0;
}

/* tools belong to chat requests. */
static int read_tools_where(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
  if (r->chat) return read_tools(root, r, why, cap);
  if (tools && !cJSON_IsNull(tools))
    return mkc_refuse(why, cap,
                      "tools: only in a chat request (messages), whose template offers them");
  return 0;
}

/* A completion between prompt and suffix (OpenAI's and ollama's suffix): filled in the middle
 * with the model's FIM markers, the prompt as the prefix, nothing cut (mkc_api_req.infill 2). */
static void fill_between(mkc_api_req *r, const char *prompt, const char *suffix) {
  r->infill = 2;
  r->input_prefix = prompt;
  r->input_suffix = suffix;
}

static int read_prompt(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt"),
              *suffix = cJSON_GetObjectItemCaseSensitive(root, "suffix");
  /* a list of one string (or of one list of ids) is that prompt (the OpenAI client's batch form) */
  if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 &&
      (cJSON_IsString(p->child) || cJSON_IsArray(p->child)))
    p = p->child;
  if (cJSON_IsString(suffix) && *suffix->valuestring) { /* code completion's gap */
    if (!cJSON_IsString(p))
      return mkc_refuse(why, cap, "suffix: the prompt before it must be text");
    fill_between(r, p->valuestring, suffix->valuestring);
  }
  if (cJSON_IsString(p)) {
    r->prompt = p->valuestring;
    return 0;
  }
  int count = cJSON_GetArraySize(p);
  if (cJSON_IsArray(p) && count > 1 && (cJSON_IsString(p->child) || cJSON_IsArray(p->child))) {
    if (count > MKC_API_ANSWERS)
      return mkc_refuse(why, cap, "prompt: at most %d prompts in a list", MKC_API_ANSWERS);
    int text = cJSON_IsString(p->child), k = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, p) {
      char name[32];
      snprintf(name, sizeof name, "prompt[%d]", k);
      if (text && !cJSON_IsString(item))
        return mkc_refuse(why, cap, "%s: expected a string, as prompt[0] is", name);
      if (!text && (!cJSON_IsArray(item) || cJSON_GetArraySize(item) == 0))
        return mkc_refuse(why, cap, "%s: expected a non-empty list of token ids, as prompt[0] is",
                          name);
      int *ids = NULL, n_ids;
      int rc = text ? 0 : mkc_api_read_ids(item, name, &ids, &n_ids, why, cap);
      free(ids);
      if (rc) return -1;
      k++;
    }
    r->prompts = p;
    r->n_prompts = count;
    return mkc_api_select_prompt(r, 0) == 0 ? 0 : mkc_refuse(why, cap, "out of memory");
  }
  if (!cJSON_IsArray(p) || count == 0)
    return mkc_refuse(why, cap, "prompt: expected a string or a non-empty list of token ids");
  return mkc_api_read_ids(p, "prompt", &r->prompt_ids, &r->n_prompt_ids, why, cap);
}

static int read_stop(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "stop");
  if (!s || cJSON_IsNull(s)) return 0;
  if (cJSON_IsString(s)) {
    if (!*s->valuestring) return mkc_refuse(why, cap, "stop: an empty string");
    r->stop[r->n_stop++] = s->valuestring;
    return 0;
  }
  if (!cJSON_IsArray(s) || cJSON_GetArraySize(s) > MKC_API_STOPS)
    return mkc_refuse(why, cap, "stop: expected a string or a list of up to %d strings",
                      MKC_API_STOPS);
  const cJSON *e;
  cJSON_ArrayForEach(e, s) {
    if (!cJSON_IsString(e) || !*e->valuestring)
      return mkc_refuse(why, cap, "stop[%d]: expected a non-empty string", r->n_stop);
    r->stop[r->n_stop++] = e->valuestring;
  }
  return 0;
}

/* The numeric fields: name, range, where, its bit. */
static const struct {
  const char *name;
  double lo, hi;
  int is_int;
  size_t at;
  unsigned bit;
} NUMBERS[] = {
    {"temperature", 0, 100, 0, offsetof(mkc_api_req, temperature), MKC_API_TEMPERATURE},
    {"top_p", 1e-9, 1, 0, offsetof(mkc_api_req, top_p), MKC_API_TOP_P},
    {"min_p", 0, 1, 0, offsetof(mkc_api_req, min_p), MKC_API_MIN_P},
    {"presence_penalty", -100, 100, 0, offsetof(mkc_api_req, presence_penalty), MKC_API_PRESENCE},
    {"frequency_penalty", -100, 100, 0, offsetof(mkc_api_req, frequency_penalty),
     MKC_API_FREQUENCY},
    {"repeat_penalty", 1e-9, 100, 0, offsetof(mkc_api_req, repeat_penalty), MKC_API_REPEAT},
    {"top_k", 0, 1 << 30, 1, offsetof(mkc_api_req, top_k), MKC_API_TOP_K},
    {"repeat_last_n", 0, MKC_HIST_CAP, 1, offsetof(mkc_api_req, repeat_last_n),
     MKC_API_REPEAT_LAST_N},
};

/* dry_sequence_breakers given: the bit past mkc_sampling_more_options' in more_set */
#define MORE_BREAKERS (1u << MKC_SAMPLING_MORE_OPTIONS)

/* The samplers the kernel lacks: llama-server's fields of mkc_sampling_more_options (ollama's
 * options share the names it has: typical_p, mirostat, mirostat_tau, mirostat_eta) and
 * dry_sequence_breakers (strings). */
static int read_more(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  for (int k = 0; k < MKC_SAMPLING_MORE_OPTIONS; k++) {
    const mkc_sampling_more_option *o = &mkc_sampling_more_options[k];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, o->field);
    if (!v || cJSON_IsNull(v)) continue;
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!mkc_sampling_more_fits(k, x))
      return mkc_refuse(why, cap, "%s: expected %s in %.15g..%.15g", o->field,
                        o->is_int ? "a whole number" : "a number", o->lo, o->hi);
    mkc_sampling_more_put(&r->more, k, x);
    r->more_set |= 1u << k;
  }
  /* samplers: ["top_k", "min_p", ...] or "kmt"; a chain mkc cannot follow is named on the log
   * line (note_native_unfollowed), not refused: clients send one with every request */
  const cJSON *sm = cJSON_GetObjectItemCaseSensitive(root, "samplers");
  char names[512] = "", w[300];
  size_t at = 0;
  for (const cJSON *e = cJSON_IsArray(sm) ? sm->child : NULL; e && at < sizeof names; e = e->next)
    at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", at ? ";" : "",
                           cJSON_IsString(e) ? e->valuestring : "?");
  if (cJSON_IsString(sm))
    r->have_samplers = mkc_samplers_parse(sm->valuestring, strlen(sm->valuestring), 1, &r->samplers,
                                          w, sizeof w) == 0;
  else if (cJSON_IsArray(sm) && at < sizeof names)
    r->have_samplers = mkc_samplers_parse(names, at, 0, &r->samplers, w, sizeof w) == 0;
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "dry_sequence_breakers");
  if (!b || cJSON_IsNull(b)) return 0;
  if (!cJSON_IsArray(b))
    return mkc_refuse(why, cap, "dry_sequence_breakers: expected a list of texts");
  r->more.n_breakers = 0;
  for (const cJSON *s = b->child; s; s = s->next)
    if (!cJSON_IsString(s) ||
        mkc_sampling_more_add_breaker(&r->more, s->valuestring, strlen(s->valuestring)) != 0)
      return mkc_refuse(why, cap, "dry_sequence_breakers: expected up to %d texts of 1 to %d bytes",
                        MKC_DRY_BREAKERS, MKC_DRY_BREAKER_LEN - 1);
  r->more_set |= MORE_BREAKERS;
  return 0;
}

mkc_sampling_more mkc_api_sampling_more(const mkc_api_req *r, mkc_sampling_more m) {
  for (int k = 0; k < MKC_SAMPLING_MORE_OPTIONS; k++)
    if (r->more_set & (1u << k)) mkc_sampling_more_put(&m, k, mkc_sampling_more_get(&r->more, k));
  if (r->more_set & MORE_BREAKERS) {
    m.n_breakers = r->more.n_breakers;
    memcpy(m.breakers, r->more.breakers, sizeof m.breakers);
  }
  return m;
}

/* An optional whole number in 0..MKC_LOGPROBS_MAX: 1 and *v when given,
 * 0 when not, -1 with why when out of range. */
/* obj's whole number `name` in [lo, hi] into *v: 1, 0 when not given (or null), or -1 after
 * the refusal "NAME: expected WHAT" (prefix: the object's name and a dot, or ""). */
static int whole_in(const cJSON *obj, const char *prefix, const char *name, double lo, double hi,
                    const char *what, int *v, char *why, size_t cap) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, name);
  if (!x || cJSON_IsNull(x)) return 0;
  double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
  if (!(d >= lo && d <= hi && d == floor(d)))
    return mkc_refuse(why, cap, "%s%s: expected %s", prefix, name, what);
  *v = (int)d;
  return 1;
}

static int small_count(const cJSON *root, const char *name, int *v, char *why, size_t cap) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, name);
  if (!x || cJSON_IsNull(x)) return 0;
  double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
  if (!(d >= 0 && d <= MKC_LOGPROBS_MAX && d == floor(d)))
    return mkc_refuse(why, cap, "%s: expected a whole number in 0..%d", name, MKC_LOGPROBS_MAX);
  *v = (int)d;
  return 1;
}

/* chat's way (and ollama's): "logprobs": true with "top_logprobs": N; completions':
 * "logprobs": N. */
static int read_logprobs(const cJSON *root, mkc_api_req *r, int chat_way, char *why, size_t cap) {
  r->top_logprobs = -1;
  int n = 0, given;
  if (!chat_way) {
    if ((given = small_count(root, "logprobs", &n, why, cap)) < 0) return -1;
    if (given) r->top_logprobs = n;
    return 0;
  }
  int on = flag(root, "logprobs", 0, why, cap);
  if (on < 0 || (given = small_count(root, "top_logprobs", &n, why, cap)) < 0) return -1;
  if (given && !on) return mkc_refuse(why, cap, "top_logprobs: needs \"logprobs\": true");
  if (on) r->top_logprobs = n;
  return 0;
}

/* The sampling fields and the seed, read from obj (the request, or ollama's options). */
static int read_sampling(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  for (size_t k = 0; k < sizeof NUMBERS / sizeof *NUMBERS; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, NUMBERS[k].name);
    if (!v || cJSON_IsNull(v)) continue;
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(x >= NUMBERS[k].lo && x <= NUMBERS[k].hi) || (NUMBERS[k].is_int && x != floor(x)))
      return mkc_refuse(why, cap, "%s: expected %s in %.15g..%.15g", NUMBERS[k].name,
                        NUMBERS[k].is_int ? "a whole number" : "a number", NUMBERS[k].lo,
                        NUMBERS[k].hi);
    if (NUMBERS[k].is_int)
      *(int *)((char *)r + NUMBERS[k].at) = (int)x;
    else
      *(double *)((char *)r + NUMBERS[k].at) = x;
    r->set |= NUMBERS[k].bit;
  }
  const cJSON *seed = cJSON_GetObjectItemCaseSensitive(root, "seed");
  if (r->native && cJSON_IsNumber(seed) && seed->valuedouble == -1) seed = NULL; /* drawn */
  if (seed && !cJSON_IsNull(seed)) {
    double x = cJSON_IsNumber(seed) ? seed->valuedouble : NAN;
    if (!(x >= 0 && x < 18446744073709551616.0 && x == floor(x)))
      return mkc_refuse(why, cap, "seed: expected a whole number >= 0%s",
                        r->native ? " (or -1)" : "");
    r->seed = (unsigned long long)x;
    r->have_seed = 1;
  }
  return read_more(root, r, why, cap);
}

/* A JSON schema the answer must follow (field: the request's name for it). */
static int read_schema(const cJSON *sch, const char *field, mkc_api_req *r, char *why, size_t cap) {
  char *text = cJSON_PrintUnformatted(sch), w[300] = "out of memory";
  r->schema = text ? mkc_schema_compile(text, strlen(text), w, sizeof w) : NULL;
  free(text);
  if (!r->schema) return mkc_refuse(why, cap, "%s: %s", field, w);
  r->json_format = 1;
  return 0;
}

/* OpenAI's logit_bias: {"TOKEN_ID": BIAS, ...}, each bias -100..100 as OpenAI takes them; the
 * kernel adds them to the logits (mkc_sampling's bias). The ids are checked against the
 * vocabulary with the rest of the options. */
static int read_logit_bias(const cJSON *bias, mkc_api_req *r, char *why, size_t cap) {
  if (!cJSON_IsObject(bias))
    return mkc_refuse(why, cap, "logit_bias: expected an object of token ids to numbers");
  r->have_bias = 1;
  for (const cJSON *e = bias->child; e; e = e->next) {
    char *end;
    errno = 0;
    long id = strtol(e->string, &end, 10);
    if (!*e->string || *end || errno || id < 0 || id > INT_MAX ||
        !isdigit((unsigned char)*e->string))
      return mkc_refuse(why, cap, "logit_bias: \"%s\" is no token id", mkc_shown(e->string));
    if (!cJSON_IsNumber(e) || !(e->valuedouble >= -100 && e->valuedouble <= 100))
      return mkc_refuse(why, cap, "logit_bias[\"%s\"]: expected a number in -100..100", e->string);
    if (r->n_bias == MKC_BIAS_CAP)
      return mkc_refuse(why, cap, "logit_bias: at most %d tokens", MKC_BIAS_CAP);
    /* kept ascending; a key given twice is refused, not summed (the request fails) */
    if (mkc_bias_add(r->bias_id, r->bias, &r->n_bias, (int)id, (float)e->valuedouble) == 1)
      return mkc_refuse(why, cap, "logit_bias: token %ld is given twice", id);
  }
  return 0;
}

/* llama-server's logit_bias as a list: [[TOKEN_ID, BIAS], ...], BIAS a number in -1e6..1e6
 * (so that sums stay finite) or false (the token banned: -inf); a token given twice has the sum
 * of its biases, as -l sums them. */
static int read_logit_bias_list(const cJSON *bias, mkc_api_req *r, char *why, size_t cap) {
  r->have_bias = 1;
  int k = 0;
  for (const cJSON *e = bias->child; e; e = e->next, k++) {
    const cJSON *id = cJSON_GetArrayItem(e, 0), *b = cJSON_GetArrayItem(e, 1);
    double x = cJSON_IsNumber(id) ? id->valuedouble : -1;
    if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !(x >= 0 && x <= INT_MAX) ||
        x != floor(x) || !(cJSON_IsFalse(b) || (cJSON_IsNumber(b) && fabs(b->valuedouble) <= 1e6)))
      return mkc_refuse(
          why, cap,
          "logit_bias[%d]: expected [token id, bias] (a number in -1e6..1e6, or false to "
          "ban it)",
          k);
    if (r->n_bias == MKC_BIAS_CAP)
      return mkc_refuse(why, cap, "logit_bias: at most %d tokens", MKC_BIAS_CAP);
    mkc_bias_add(r->bias_id, r->bias, &r->n_bias, (int)x,
                 cJSON_IsFalse(b) ? -INFINITY : (float)b->valuedouble);
  }
  return 0;
}

/* OpenAI's fields that change the answer and that mkc either follows or
 * refuses, never drops: stream_options, logit_bias, response_format. */
static int read_openai_options(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
  if (so && !cJSON_IsNull(so)) {
    if (!cJSON_IsObject(so)) return mkc_refuse(why, cap, "stream_options: expected an object");
    if (!r->stream) return mkc_refuse(why, cap, "stream_options: only with \"stream\": true");
    if ((r->include_usage = flag(so, "include_usage", 0, why, cap)) < 0) return -1;
  }
  const cJSON *bias = cJSON_GetObjectItemCaseSensitive(root, "logit_bias");
  if (r->native && cJSON_IsArray(bias)) {
    if (read_logit_bias_list(bias, r, why, cap) != 0) return -1;
  } else if (bias && !cJSON_IsNull(bias) && read_logit_bias(bias, r, why, cap) != 0) {
    return -1;
  }
  const cJSON *effort = cJSON_GetObjectItemCaseSensitive(root, "reasoning_effort");
  if (effort && !cJSON_IsNull(effort)) {
    if (!cJSON_IsString(effort)) return mkc_refuse(why, cap, "reasoning_effort: expected a string");
    r->reasoning_effort = effort->valuestring; /* checked against the template when rendered */
  }
  const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "reasoning_format");
  if (rf && !cJSON_IsNull(rf)) { /* llama-server's: where the reasoning goes */
    int f = cJSON_IsString(rf) ? mkc_reasoning_format_from_name(rf->valuestring) : -1;
    if (f < 0)
      return mkc_refuse(why, cap,
                        "reasoning_format: expected none, deepseek or auto (mkc does not give "
                        "deepseek-legacy's both at once)");
    r->reasoning_format = 1 + f;
  }
  /* llama-server's chat_template_kwargs: the two template variables mkc renders */
  const cJSON *kw = cJSON_GetObjectItemCaseSensitive(root, "chat_template_kwargs");
  if (kw && !cJSON_IsNull(kw) && !cJSON_IsObject(kw))
    return mkc_refuse(why, cap, "chat_template_kwargs: expected an object");
  for (const cJSON *k = cJSON_IsObject(kw) ? kw->child : NULL; k; k = k->next) {
    if (strcmp(k->string, "enable_thinking") == 0 && cJSON_IsBool(k))
      r->think = cJSON_IsTrue(k);
    else if (strcmp(k->string, "reasoning_effort") == 0 && cJSON_IsString(k))
      r->reasoning_effort = k->valuestring;
    else
      return mkc_refuse(
          why, cap,
          "chat_template_kwargs.%s: mkc's templates take enable_thinking (true or false) "
          "and reasoning_effort (a string)",
          k->string);
  }
  /* llama-server's grammar: GBNF text */
  const cJSON *gram = cJSON_GetObjectItemCaseSensitive(root, "grammar");
  if (gram && !cJSON_IsNull(gram)) {
    char w[300];
    if (!cJSON_IsString(gram))
      return mkc_refuse(why, cap, "grammar: expected GBNF text (a string)");
    if (!(r->grammar = mkc_gbnf_compile(gram->valuestring, strlen(gram->valuestring), w, sizeof w)))
      return mkc_refuse(why, cap, "grammar: %s", w);
    r->json_format = 1;
  }
  /* llama-server's json_schema: a schema beside the request's fields */
  const cJSON *js = cJSON_GetObjectItemCaseSensitive(root, "json_schema");
  if (js && !cJSON_IsNull(js)) {
    if (r->grammar) return mkc_refuse(why, cap, "grammar and json_schema: one of them");
    if (!cJSON_IsObject(js)) return mkc_refuse(why, cap, "json_schema: expected a JSON schema");
    if (read_schema(js, "json_schema", r, why, cap) != 0) return -1;
  }
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "response_format");
  if (fmt && !cJSON_IsNull(fmt)) {
    const cJSON *type = cJSON_IsObject(fmt) ? cJSON_GetObjectItemCaseSensitive(fmt, "type") : NULL;
    const char *t = cJSON_IsString(type) ? type->valuestring : "";
    if (r->json_format && strcmp(t, "text") != 0)
      return mkc_refuse(why, cap, "%s and response_format (JSON output): one of them",
                        r->grammar ? "grammar" : "json_schema");
    if (strcmp(t, "json_schema") == 0) {
      const cJSON *inner = cJSON_GetObjectItemCaseSensitive(fmt, "json_schema");
      const cJSON *sch = cJSON_GetObjectItemCaseSensitive(inner, "schema");
      if (!cJSON_IsObject(sch))
        return mkc_refuse(why, cap, "response_format: json_schema.schema: expected a JSON schema");
      return read_schema(sch, "response_format", r, why, cap);
    }
    if (strcmp(t, "text") != 0 && strcmp(t, "json_object") != 0)
      return mkc_refuse(why, cap,
                        "response_format: {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
                        "{\"type\": \"json_schema\", \"json_schema\": {\"schema\": ...}}");
    r->json_format |= strcmp(t, "json_object") == 0; /* already set by a grammar or json_schema */
  }
  return 0;
}

/* llama-server's n_keep, ollama's num_keep (in obj): a whole number >= -1 (-1: the whole
 * prompt), into r->n_keep; 0, or -1 after the refusal. */
static int read_keep(const cJSON *obj, const char *name, mkc_api_req *r, char *why, size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
  if (!v || cJSON_IsNull(v)) return 0;
  double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
  if (!(x >= -1 && x <= 1 << 30 && x == floor(x)))
    return mkc_refuse(why, cap, "%s: expected -1 (the whole prompt) or a whole number >= 0", name);
  r->n_keep = (int)x;
  r->have_keep = 1;
  return 0;
}

static int read_numbers(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  if (read_sampling(root, r, why, cap) != 0 || read_keep(root, "n_keep", r, why, cap) != 0)
    return -1;
  /* llama-server's n_discard: what a context shift drops after n_keep (0: half the rest) */
  if (whole_in(root, "", "n_discard", 0, 1 << 30, "a whole number >= 0 (0: half)", &r->n_discard,
               why, cap) < 0)
    return -1;
  /* max_tokens, or the chat API's newer max_completion_tokens; -1: no bound */
  r->max_tokens = -1;
  const char *names[] = {"max_tokens", "max_completion_tokens"};
  for (int k = 0; k < 2; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, names[k]);
    if (!v || cJSON_IsNull(v)) continue;
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(x >= 1 && x <= 1 << 30 && x == floor(x)))
      return mkc_refuse(why, cap, "%s: expected a whole number >= 1", names[k]);
    r->max_tokens = (int)x;
  }
  /* OpenAI's choices, each its own draw; llama-server's n_cmpl on its own endpoints, n there
   * where n_cmpl is not given */
  const char *n_name = "n";
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "n"),
              *best = cJSON_GetObjectItemCaseSensitive(root, "best_of");
  const cJSON *n_cmpl = r->native ? cJSON_GetObjectItemCaseSensitive(root, "n_cmpl") : NULL;
  if (n_cmpl && !cJSON_IsNull(n_cmpl)) n = n_cmpl, n_name = "n_cmpl";
  if (n && !cJSON_IsNull(n)) {
    double x = cJSON_IsNumber(n) ? n->valuedouble : NAN;
    if (!(x >= 1 && x <= MKC_API_CHOICES && x == floor(x)))
      return mkc_refuse(why, cap, "%s: expected a whole number of completions, 1..%d", n_name,
                        MKC_API_CHOICES);
    r->n_choices = (int)x;
  }
  if (best && !cJSON_IsNull(best) && !(cJSON_IsNumber(best) && best->valuedouble == 1))
    return mkc_refuse(why, cap, "best_of: one completion is drawn per request (1)");
  if (r->native) { /* llama-server's n_predict (negative: no bound) and n_probs */
    const cJSON *np = cJSON_GetObjectItemCaseSensitive(root, "n_predict");
    double x = cJSON_IsNumber(np) ? np->valuedouble : NAN;
    if (np && !cJSON_IsNull(np) && (!(x >= -(1 << 30) && x <= 1 << 30) || x != floor(x) || x == 0))
      return mkc_refuse(why, cap, "n_predict: expected -1 (no bound) or a whole number >= 1");
    if (np && !cJSON_IsNull(np)) r->max_tokens = x > 0 ? (int)x : -1;
    int probs = 0, given = small_count(root, "n_probs", &probs, why, cap);
    if (given < 0) return -1;
    r->top_logprobs = given && probs > 0 ? probs : -1;
  } else if (read_logprobs(root, r, r->chat, why, cap) != 0) {
    return -1;
  }
  /* OpenAI's completions' echo: the prompt's text ahead of the answer's */
  if (!r->chat && !r->native && (r->echo = flag(root, "echo", 0, why, cap)) < 0) return -1;
  if (r->echo && r->top_logprobs >= 0)
    return mkc_refuse(why, cap,
                      "echo with logprobs: the prompt's log-probabilities are not "
                      "computed (only the answer's)");
  if ((r->stream = flag(root, "stream", 0, why, cap)) < 0) return -1;
  return read_openai_options(root, r, why, cap);
}

/* name added to r->unfollowed at *n (", " before all but the first): 0, or -1 once the list
 * is full, its end then "..." (cut: said so). */
static int note_name(mkc_api_req *r, size_t *n, const char *name) {
  size_t room = sizeof r->unfollowed - *n;
  int w = snprintf(r->unfollowed + *n, room, "%s%s", *n ? ", " : "", name);
  if (w < 0 || (size_t)w >= room) {
    strcpy(r->unfollowed + sizeof r->unfollowed - 4, "...");
    return -1;
  }
  *n += (size_t)w;
  return 0;
}

void mkc_api_note_unfollowed(mkc_api_req *r, const char *name) {
  size_t n = strlen(r->unfollowed);
  (void)note_name(r, &n, name);
}

/* Of names[0..count), the fields root gives (not null) named on the log line; samplers not
 * when it is followed. */
static void note_given(const cJSON *root, const char *const *names, size_t count, mkc_api_req *r) {
  size_t n = 0;
  for (size_t i = 0; i < count; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, names[i]);
    if (!v || cJSON_IsNull(v) || (r->have_samplers && !strcmp(names[i], "samplers"))) continue;
    if (note_name(r, &n, names[i]) != 0) return;
  }
}

/* llama-server's fields that mkc does not follow (on its own endpoint and OpenAI's), named on
 * the request's log line (its clients send some with every request: refusing them would refuse
 * the client). */
static void note_native_unfollowed(const cJSON *root, mkc_api_req *r) {
  static const char *const NOT[] = {"samplers",
                                    "id_slot",
                                    "n_indent",
                                    "min_keep",
                                    "t_max_predict_ms",
                                    "t_max_prompt_ms",
                                    "post_sampling_probs",
                                    "response_fields",
                                    "tfs_z"};
  note_given(root, NOT, sizeof NOT / sizeof *NOT, r);
}

/* /infill's fields (r->prompt "" when not given). */
static int read_infill(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  const char *names[] = {"input_prefix", "input_suffix"},
             **at[] = {&r->input_prefix, &r->input_suffix};
  for (int k = 0; k < 2; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, names[k]);
    if (!cJSON_IsString(v))
      return mkc_refuse(why, cap, "%s: expected a string (required)", names[k]);
    *at[k] = v->valuestring;
  }
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
  if (p && !cJSON_IsNull(p) && !cJSON_IsString(p))
    return mkc_refuse(why, cap, "prompt: expected a string");
  r->prompt = cJSON_IsString(p) ? p->valuestring : "";
  const cJSON *extra = cJSON_GetObjectItemCaseSensitive(root, "input_extra");
  if (!extra || cJSON_IsNull(extra)) return 0;
  if (!cJSON_IsArray(extra))
    return mkc_refuse(why, cap,
                      "input_extra: expected a list of {\"filename\": string, "
                      "\"text\": string}");
  int n = cJSON_GetArraySize(extra);
  r->extra_names = calloc((size_t)n + 1, sizeof *r->extra_names);
  r->extra_texts = calloc((size_t)n + 1, sizeof *r->extra_texts);
  if (!r->extra_names || !r->extra_texts) return mkc_refuse(why, cap, "out of memory");
  const cJSON *c;
  cJSON_ArrayForEach(c, extra) {
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(c, "text"),
                *name = cJSON_GetObjectItemCaseSensitive(c, "filename");
    if (!cJSON_IsString(text))
      return mkc_refuse(why, cap, "input_extra[%d].text: expected a string (required)", r->n_extra);
    if (name && !cJSON_IsNull(name) && !cJSON_IsString(name))
      return mkc_refuse(why, cap, "input_extra[%d].filename: expected a string", r->n_extra);
    r->extra_names[r->n_extra] = cJSON_IsString(name) ? name->valuestring : NULL;
    r->extra_texts[r->n_extra++] = text->valuestring;
  }
  return 0;
}

/* A chat or completion request (native: llama-server's own endpoint's fields; infill: its
 * /infill's). */
static int parse_completion(const char *body, size_t n, int chat, int native, int infill,
                            mkc_api_req *r, char *why, size_t cap) {
  memset(r, 0, sizeof *r);
  r->chat = chat;
  r->native = native;
  r->infill = infill;
  r->think = -1;
  cJSON *root = cJSON_ParseWithLength(body, n);
  r->root = root;
  r->body = body, r->body_len = n; /* for as_python, while parsing */
  int rc = 0;
  if (!root)
    rc = mkc_refuse(why, cap, "the body is not JSON");
  else if (!cJSON_IsObject(root))
    rc = mkc_refuse(why, cap, "the body is not a JSON object");
  else if ((rc = chat     ? read_messages(root, r, why, cap)
                 : infill ? read_infill(root, r, why, cap)
                          : read_prompt(root, r, why, cap)) == 0 &&
           (rc = read_stop(root, r, why, cap)) == 0 &&
           (rc = read_numbers(root, r, why, cap)) == 0 &&
           (rc = read_tools_where(root, r, why, cap)) == 0 &&
           (r->ignore_eos = flag(root, "ignore_eos", 0, why, cap)) < 0) /* llama-server's */
    rc = -1;
  if (rc == 0 && mkc_api_answers(r) > MKC_API_ANSWERS)
    rc = mkc_refuse(why, cap, "prompt and n: at most %d answers (%d prompts, n %d)",
                    MKC_API_ANSWERS, r->n_prompts, r->n_choices);
  if (rc == 0) note_native_unfollowed(root, r); /* llama-server's clients send them to either */
  r->body = NULL, r->body_len = 0;
  if (rc) mkc_api_req_free(r);
  return rc;
}

int mkc_api_parse(const char *body, size_t n, int chat, mkc_api_req *r, char *why, size_t cap) {
  return parse_completion(body, n, chat, 0, 0, r, why, cap);
}

int mkc_api_parse_native(const char *body, size_t n, mkc_api_req *r, char *why, size_t cap) {
  return parse_completion(body, n, 0, 1, 0, r, why, cap);
}

int mkc_api_parse_infill(const char *body, size_t n, mkc_api_req *r, char *why, size_t cap) {
  return parse_completion(body, n, 0, 1, 1, r, why, cap);
}

int mkc_api_parse_responses(const char *body, size_t n, int counting, int chat_body, mkc_api_req *r,
                            char *why, size_t cap) {
  if (chat_body) {
    int rc = parse_completion(body, n, 1, 0, 0, r, why, cap);
    r->counting = counting;
    return rc;
  }
  memset(r, 0, sizeof *r);
  cJSON *root = cJSON_ParseWithLength(body, n), *chat = NULL;
  int skipped = 0;
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return mkc_refuse(why, cap, root ? "the body is not a JSON object" : "the body is not JSON");
  }
  chat = mkc_api_responses_chat(root, &skipped, why, cap);
  char *text = chat ? cJSON_PrintUnformatted(chat) : NULL;
  cJSON_Delete(chat);
  int rc = !text ? -1 : parse_completion(text, strlen(text), 1, 0, 0, r, why, cap);
  if (chat && !text) mkc_refuse(why, cap, "out of memory");
  free(text);
  if (rc == 0) {
    r->responses = 1;
    r->counting = counting;
    /* fields mkc does not follow: no response is stored, nothing is truncated but by the
     * context */
    static const char *const NOT[] = {
        "store",      "include",      "truncation",       "metadata",
        "background", "service_tier", "prompt_cache_key", "safety_identifier"};
    for (size_t k = 0; k < sizeof NOT / sizeof *NOT; k++) {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, NOT[k]);
      if (v && !cJSON_IsNull(v) && !cJSON_IsFalse(v)) mkc_api_note_unfollowed(r, NOT[k]);
    }
    if (skipped) mkc_api_note_unfollowed(r, "tools that are not functions");
  } else if (!strncmp(why, "messages", 8)) { /* a converted message: say so */
    char was[512];
    snprintf(was, sizeof was, "%s", why);
    snprintf(why, cap,
             "input, read as chat messages (instructions first, a turn's items joined): %s", was);
  }
  cJSON_Delete(root);
  return rc;
}

/* Anthropic's system field (a string or text blocks) as the first message. */
static int read_anthropic_system(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  const cJSON *sys = cJSON_GetObjectItemCaseSensitive(root, "system");
  if (!sys || cJSON_IsNull(sys)) return 0;
  char *joined = NULL;
  const char *text = content_of(sys, 0, 0, &joined, why, cap);
  if (!text) return mkc_refuse(why, cap, "system: expected a string or a list of text blocks");
  mkc_chat_msg *msgs = realloc(r->msgs, (size_t)(r->n_msgs + 1) * sizeof *msgs);
  char **owned = realloc(r->owned, (size_t)(r->n_owned + 1) * sizeof *owned);
  if (msgs) r->msgs = msgs;
  if (owned) r->owned = owned;
  if (!msgs || !owned) {
    free(joined);
    return mkc_refuse(why, cap, "out of memory");
  }
  own(r, joined);
  memmove(r->msgs + 1, r->msgs, (size_t)r->n_msgs * sizeof *r->msgs);
  r->msgs[0] = (mkc_chat_msg){.role = "system", .content = text};
  r->n_msgs++;
  return 0;
}

/* Anthropic's fields mkc does not follow, named on the log line. */
static void note_anthropic_unfollowed(const cJSON *root, mkc_api_req *r) {
  static const char *const NOT[] = {"service_tier", "container", "mcp_servers"};
  note_given(root, NOT, sizeof NOT / sizeof *NOT, r);
}

/* why, when it names a converted message ("messages[k]..."), made to name the client's. */
static void client_index(const cJSON *made, char *why, size_t cap) {
  int k, at = 0;
  if (sscanf(why, "messages[%d]%n", &k, &at) != 1 || at == 0) return;
  const cJSON *from =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(made, k), MKC_API_ANTHROPIC_FROM);
  char rest[512];
  snprintf(rest, sizeof rest, "%s", why + at);
  if (cJSON_IsNumber(from)) snprintf(why, cap, "messages[%d]%s", from->valueint, rest);
}

static int read_anthropic(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages"), *m;
  for (m = cJSON_IsArray(msgs) ? msgs->child : NULL; m; m = m->next) {
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (cJSON_IsString(role) && strcmp(role->valuestring, "user") &&
        strcmp(role->valuestring, "assistant"))
      return mkc_refuse(why, cap,
                        "messages: a role is user or assistant (system is its own field)");
  }
  /* tool_use and tool_result blocks, tools and tool_choice as OpenAI's: read as its are, the
   * tools' schemas and calls' inputs written from the converted tree (the body's paths are
   * Anthropic's) */
  cJSON *oai = mkc_api_anthropic_openai(root, why, cap);
  if (!oai) return -1;
  r->converted = oai;
  const char *body = r->body;
  r->body = NULL;
  int rc = read_messages(oai, r, why, cap) != 0 || read_tools(oai, r, why, cap) != 0;
  r->body = body;
  const cJSON *made = cJSON_GetObjectItemCaseSensitive(oai, "messages");
  if (rc) return client_index(made, why, cap), -1;
  if (read_anthropic_system(root, r, why, cap) != 0) return -1;
  /* the client's index of each message (-1: the system field), for the template's errors */
  if (!(r->origin = malloc((size_t)r->n_msgs * sizeof *r->origin)))
    return mkc_refuse(why, cap, "out of memory");
  int system = r->n_msgs > cJSON_GetArraySize(made);
  for (int i = 0; i < r->n_msgs; i++) {
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(made, i - system),
                                                         MKC_API_ANTHROPIC_FROM);
    r->origin[i] = i < system ? -1 : cJSON_IsNumber(from) ? from->valueint : i - system;
  }
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "max_tokens");
  double x = cJSON_IsNumber(mt) ? mt->valuedouble : NAN;
  if (r->counting && (!mt || cJSON_IsNull(mt)))
    x = -1;
  else if (!(x >= 1 && x <= 1 << 30 && x == floor(x)))
    return mkc_refuse(why, cap, "max_tokens: required, a whole number >= 1");
  r->max_tokens = (int)x;
  const cJSON *stops = cJSON_GetObjectItemCaseSensitive(root, "stop_sequences"), *e;
  if (stops && !cJSON_IsNull(stops) &&
      (!cJSON_IsArray(stops) || cJSON_GetArraySize(stops) > MKC_API_STOPS))
    return mkc_refuse(why, cap, "stop_sequences: expected a list of up to %d strings",
                      MKC_API_STOPS);
  for (e = cJSON_IsArray(stops) ? stops->child : NULL; e; e = e->next) {
    if (!cJSON_IsString(e) || !*e->valuestring)
      return mkc_refuse(why, cap, "stop_sequences[%d]: expected a non-empty string", r->n_stop);
    r->stop[r->n_stop++] = e->valuestring;
  }
  if ((r->stream = flag(root, "stream", 0, why, cap)) < 0) return -1;
  if (read_sampling(root, r, why, cap) != 0) return -1;
  /* thinking {type: enabled (budget_tokens) | disabled}: followed where the template can
   * (mkc_serve_job_open knows it); another type is only named on the log line */
  const cJSON *thinking = cJSON_GetObjectItemCaseSensitive(root, "thinking"),
              *type = cJSON_GetObjectItemCaseSensitive(thinking, "type");
  r->thinking = -1;
  if (thinking && !cJSON_IsNull(thinking) && !cJSON_IsObject(thinking))
    return mkc_refuse(why, cap, "thinking: expected {\"type\": \"enabled\" or \"disabled\"}");
  if (cJSON_IsString(type) && !strcmp(type->valuestring, "enabled")) r->thinking = 1;
  if (cJSON_IsString(type) && !strcmp(type->valuestring, "disabled")) r->thinking = 0;
  r->thinking_budget = cJSON_GetObjectItemCaseSensitive(thinking, "budget_tokens") != NULL;
  note_anthropic_unfollowed(root, r);
  if (cJSON_IsObject(thinking) && r->thinking < 0) mkc_api_note_unfollowed(r, "thinking");
  return 0;
}

/* The body, a JSON object, read into r (its API's flags set) by read: 0, or -1 with why filled
 * and r freed. */
static int parse_body(const char *body, size_t n, mkc_api_req *r,
                      int (*read)(const cJSON *, mkc_api_req *, char *, size_t), char *why,
                      size_t cap) {
  cJSON *root = cJSON_ParseWithLength(body, n);
  r->root = root;
  r->body = body, r->body_len = n; /* for as_python, while parsing */
  int rc = !root                   ? mkc_refuse(why, cap, "the body is not JSON")
           : !cJSON_IsObject(root) ? mkc_refuse(why, cap, "the body is not a JSON object")
                                   : read(root, r, why, cap);
  r->body = NULL, r->body_len = 0;
  if (rc) mkc_api_req_free(r);
  return rc;
}

int mkc_api_parse_anthropic(const char *body, size_t n, mkc_api_req *r, char *why, size_t cap) {
  *r = (mkc_api_req){.chat = 1, .anthropic = 1, .think = -1, .top_logprobs = -1};
  return parse_body(body, n, r, read_anthropic, why, cap);
}

int mkc_api_parse_anthropic_count(const char *body, size_t n, mkc_api_req *r, char *why,
                                  size_t cap) {
  *r = (mkc_api_req){.chat = 1, .anthropic = 1, .counting = 1, .think = -1, .top_logprobs = -1};
  return parse_body(body, n, r, read_anthropic, why, cap);
}

/* ollama's /api/generate: prompt, system, raw and context. */
static int read_generate(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt"),
              *sys = cJSON_GetObjectItemCaseSensitive(root, "system"),
              *ctx = cJSON_GetObjectItemCaseSensitive(root, "context");
  if (p && !cJSON_IsNull(p) && !cJSON_IsString(p))
    return mkc_refuse(why, cap, "prompt: expected a string");
  if (sys && !cJSON_IsNull(sys) && !cJSON_IsString(sys))
    return mkc_refuse(why, cap, "system: expected a string");
  r->prompt = cJSON_IsString(p) ? p->valuestring : "";
  r->system = cJSON_IsString(sys) && *sys->valuestring ? sys->valuestring : NULL;
  if ((r->raw = flag(root, "raw", 0, why, cap)) < 0) return -1;
  if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "images")) > 0)
    return mkc_refuse(why, cap, "images: this model reads text only");
  /* what would change the prompt mkc cannot honour: refused, never dropped */
  const cJSON *suffix = cJSON_GetObjectItemCaseSensitive(root, "suffix"),
              *tmpl = cJSON_GetObjectItemCaseSensitive(root, "template");
  if (cJSON_IsString(suffix) && *suffix->valuestring) {
    if (ctx && !cJSON_IsNull(ctx))
      return mkc_refuse(why, cap,
                        "suffix: not with context (the gap is filled from the prompt "
                        "alone)");
    fill_between(r, r->prompt, suffix->valuestring);
  }
  if (cJSON_IsString(tmpl) && *tmpl->valuestring)
    return mkc_refuse(why, cap,
                      "template: mkc does not render ollama's Go templates (send the prompt "
                      "already templated with \"raw\": true)");
  if (!ctx || cJSON_IsNull(ctx)) return 0;
  return mkc_api_read_ids(ctx, "context", &r->context, &r->n_context, why, cap);
}

/* The options' names that none of the readers above take, into r->unfollowed. */
static void note_unfollowed(const cJSON *opt, mkc_api_req *r) {
  static const char *const FOLLOWED[] = {"seed", "stop", "num_predict", "num_keep", "num_ctx"};
  size_t n = strlen(r->unfollowed);
  for (const cJSON *k = opt->child; k; k = k->next) {
    int known = 0;
    for (size_t i = 0; i < sizeof NUMBERS / sizeof *NUMBERS && !known; i++)
      known = !strcmp(k->string, NUMBERS[i].name);
    for (int i = 0; i < MKC_SAMPLING_MORE_OPTIONS && !known; i++)
      known = !strcmp(k->string, mkc_sampling_more_options[i].field);
    for (size_t i = 0; i < sizeof FOLLOWED / sizeof *FOLLOWED && !known; i++)
      known = !strcmp(k->string, FOLLOWED[i]);
    if (!known && note_name(r, &n, k->string) != 0) return;
  }
}

/* ollama's /api/chat and /api/generate: the sampling fields, num_predict and
 * stop in "options"; a stream unless "stream": false. */
static int read_ollama(const cJSON *root, mkc_api_req *r, char *why, size_t cap) {
  if (r->chat ? read_messages(root, r, why, cap) : read_generate(root, r, why, cap)) return -1;
  /* format: "json" (a JSON object), or a JSON schema */
  const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
  if (cJSON_IsObject(format) && read_schema(format, "format", r, why, cap) != 0) return -1;
  if (format && !cJSON_IsNull(format) && !cJSON_IsObject(format) &&
      !(cJSON_IsString(format) && (!*format->valuestring || !strcmp(format->valuestring, "json"))))
    return mkc_refuse(why, cap, "format: \"json\" or a JSON schema");
  if (cJSON_IsString(format)) r->json_format = *format->valuestring != 0;
  if (read_tools_where(root, r, why, cap) != 0) return -1;
  if ((r->stream = flag(root, "stream", 1, why, cap)) < 0) return -1;
  if ((r->truncate = flag(root, "truncate", 1, why, cap)) < 0) return -1;
  /* shift: ollama's context shift as generation fills the context (its default: true) */
  int shift = flag(root, "shift", 2, why, cap); /* 2: not given */
  if (shift < 0) return -1;
  r->shift = shift == 2 ? 0 : shift ? 1 : -1;
  /* think: true or false, or a level ("low", "medium", "high": gpt-oss's) */
  const cJSON *think = cJSON_GetObjectItemCaseSensitive(root, "think");
  r->think = -1;
  if (cJSON_IsString(think))
    r->reasoning_effort = think->valuestring;
  else if (cJSON_IsBool(think))
    r->think = cJSON_IsTrue(think);
  else if (think && !cJSON_IsNull(think))
    return mkc_refuse(why, cap,
                      "think: expected true, false or a level (\"low\", \"medium\", \"high\")");
  r->max_tokens = -1;
  /* logprobs: true with top_logprobs: N, as the chat API takes them (ollama since 0.12.11) */
  if (read_logprobs(root, r, 1, why, cap) != 0) return -1;
  const cJSON *opt = cJSON_GetObjectItemCaseSensitive(root, "options");
  if (!opt || cJSON_IsNull(opt)) return 0;
  if (!cJSON_IsObject(opt)) return mkc_refuse(why, cap, "options: expected an object");
  if (read_sampling(opt, r, why, cap) != 0 || read_stop(opt, r, why, cap) != 0 ||
      read_keep(opt, "num_keep", r, why, cap) != 0)
    return -1;
  note_unfollowed(opt, r);
  if (whole_in(opt, "options.", "num_ctx", 1, 1 << 24, "a whole number of tokens >= 1", &r->num_ctx,
               why, cap) < 0)
    return -1;
  /* num_predict: -1 no bound, -2 until the context is full (no shift then) */
  const cJSON *np = cJSON_GetObjectItemCaseSensitive(opt, "num_predict");
  if (np && !cJSON_IsNull(np)) {
    double x = cJSON_IsNumber(np) ? np->valuedouble : NAN;
    if (!((x >= 1 && x <= 1 << 30) || x == -1 || x == -2) || x != floor(x))
      return mkc_refuse(why, cap, "options.num_predict: expected -1, -2 or a whole number >= 1");
    r->max_tokens = x > 0 ? (int)x : -1;
    if (x == -2) r->shift = -1;
  }
  return 0;
}

int mkc_api_parse_ollama(const char *body, size_t n, int chat, mkc_api_req *r, char *why,
                         size_t cap) {
  *r = (mkc_api_req){.chat = chat, .ollama = 1, .think = -1};
  return parse_body(body, n, r, read_ollama, why, cap);
}

int mkc_api_parse_tokens(const char *body, size_t n, int detokenize, mkc_api_tokens *t, char *why,
                         size_t cap) {
  memset(t, 0, sizeof *t);
  cJSON *root = cJSON_ParseWithLength(body, n);
  t->root = root;
  int rc = 0;
  if (!root || !cJSON_IsObject(root)) {
    rc = mkc_refuse(why, cap, root ? "the body is not a JSON object" : "the body is not JSON");
  } else if (detokenize) {
    rc = mkc_api_read_ids(cJSON_GetObjectItemCaseSensitive(root, "tokens"), "tokens", &t->ids,
                          &t->n_ids, why, cap);
  } else {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "content");
    if (!cJSON_IsString(c))
      rc = mkc_refuse(why, cap, "content: expected a string");
    else if ((t->add_special = flag(root, "add_special", 0, why, cap)) < 0 ||
             (t->parse_special = flag(root, "parse_special", 1, why, cap)) < 0 ||
             (t->with_pieces = flag(root, "with_pieces", 0, why, cap)) < 0)
      rc = -1;
    else
      t->content = c->valuestring;
  }
  if (rc) mkc_api_tokens_free(t);
  return rc;
}

void mkc_api_tokens_free(mkc_api_tokens *t) {
  free(t->ids);
  cJSON_Delete(t->root);
  memset(t, 0, sizeof *t);
}

mkc_sampling mkc_api_sampling(const mkc_api_req *r, mkc_sampling o) {
  if (r->set & MKC_API_TEMPERATURE) o.temp = (float)r->temperature;
  if (r->set & MKC_API_TOP_P) o.top_p = (float)r->top_p;
  if (r->set & MKC_API_MIN_P) o.min_p = (float)r->min_p;
  if (r->set & MKC_API_PRESENCE) o.presence_penalty = (float)r->presence_penalty;
  if (r->set & MKC_API_FREQUENCY) o.frequency_penalty = (float)r->frequency_penalty;
  if (r->set & MKC_API_REPEAT) o.repeat_penalty = (float)r->repeat_penalty;
  if (r->set & MKC_API_TOP_K) o.top_k = r->top_k;
  if (r->set & MKC_API_REPEAT_LAST_N) o.repeat_last_n = r->repeat_last_n;
  if (r->have_seed) {
    o.seed_lo = (unsigned)r->seed;
    o.seed_hi = (unsigned)(r->seed >> 32);
  }
  if (r->have_bias) {
    o.n_bias = r->n_bias;
    memcpy(o.bias_id, r->bias_id, sizeof o.bias_id);
    memcpy(o.bias, r->bias, sizeof o.bias);
  }
  return o;
}

int mkc_api_answers(const mkc_api_req *r) {
  return (r->n_prompts > 1 ? r->n_prompts : 1) * (r->n_choices > 1 ? r->n_choices : 1);
}

int mkc_api_select_prompt(mkc_api_req *r, int k) {
  const cJSON *item = cJSON_GetArrayItem(r->prompts, k);
  free(r->prompt_ids);
  r->prompt_ids = NULL, r->n_prompt_ids = 0, r->prompt = NULL;
  if (cJSON_IsString(item)) {
    r->prompt = item->valuestring;
    return 0;
  }
  char why[80];
  return mkc_api_read_ids(item, "prompt", &r->prompt_ids, &r->n_prompt_ids, why, sizeof why);
}

void mkc_api_req_free(mkc_api_req *r) {
  for (int i = 0; r->owned && i < r->n_owned; i++) free(r->owned[i]);
  free(r->owned);
  free(r->tools);
  free(r->msgs);
  free(r->prompt_ids);
  free(r->context);
  free(r->extra_names);
  free(r->extra_texts);
  mkc_schema_free(r->schema);
  mkc_gbnf_free(r->grammar);
  cJSON_Delete(r->root);
  cJSON_Delete(r->converted);
  free(r->origin);
  memset(r, 0, sizeof *r);
}

char *mkc_api_error_json(const char *msg, const char *type) {
  cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
  cJSON_AddStringToObject(e, "message", msg);
  cJSON_AddStringToObject(e, "type", type);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

cJSON *mkc_json_text(const char *text, size_t n) {
  char *q = malloc(6 * n + 3), *w = q; /* the worst case: every byte \u00XX */
  if (!q) return NULL;
  *w++ = '"';
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)text[i];
    const char *esc = c == '"'    ? "\\\""
                      : c == '\\' ? "\\\\"
                      : c == '\n' ? "\\n"
                      : c == '\r' ? "\\r"
                      : c == '\t' ? "\\t"
                                  : NULL;
    if (esc)
      w += sprintf(w, "%s", esc);
    else if (c < 0x20)
      w += sprintf(w, "\\u%04x", c);
    else
      *w++ = (char)c;
  }
  *w++ = '"';
  *w = '\0';
  cJSON *item = cJSON_CreateRaw(q);
  free(q);
  return item;
}
