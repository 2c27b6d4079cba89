/* libFuzzer target for mkc serve's requests, outside data from the network:
 * the HTTP parser on the bytes (and on every prefix of a whole request,
 * which must read as incomplete), then the JSON of a parsed body as a chat
 * and as a completion request (each API's), and as each embedding request. Nothing may crash or
 * read out of bounds; a whole request's size is within the input, its body inside it; a parsed
 * request's strings are what its checks promise; the bytes as JSON kept as text (util/json_text.h).
 * Seeds in fuzz/corpus/http: requests as clients send them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/api.h"
#include "serve/embed_api.h"
#include "serve/file_name.h"
#include "serve/http.h"
#include "util/json_text.h"

static void check(int ok) {
  if (!ok) abort();
}

static void api(const char *body, size_t n) {
  for (int k = 0; k < 10; k++) { /* OpenAI's completion and chat, ollama's generate and chat,
                                   llama-server's own completion, Anthropic's messages and its
                                   count_tokens, llama-server's /infill, OpenAI's Responses and
                                   its input_tokens */
    mkc_api_req r;
    char why[200];
    int anthropic = k == 5 || k == 6, responses = k >= 8, counting = k == 6 || k == 9,
        chat = (k % 2 && k < 4) || anthropic || responses, ollama = k / 2 == 1, infill = k == 7,
        native = k == 4 || infill;
    int rc = responses   ? mkc_api_parse_responses(body, n, counting, 0, &r, why, sizeof why)
             : infill    ? mkc_api_parse_infill(body, n, &r, why, sizeof why)
             : counting  ? mkc_api_parse_anthropic_count(body, n, &r, why, sizeof why)
             : anthropic ? mkc_api_parse_anthropic(body, n, &r, why, sizeof why)
             : native    ? mkc_api_parse_native(body, n, &r, why, sizeof why)
             : ollama    ? mkc_api_parse_ollama(body, n, chat, &r, why, sizeof why)
                         : mkc_api_parse(body, n, chat, &r, why, sizeof why);
    if (rc != 0) {
      check(why[0] != '\0');
      continue;
    }
    check(chat ? r.n_msgs > 0 : (r.prompt != NULL) != (r.n_prompt_ids > 0));
    /* fill in the middle: /infill's parts, or a suffix after a text prompt */
    check(r.infill == (infill     ? 1
                       : r.infill ? 2
                                  : 0) &&
          (!r.infill || (r.input_prefix && r.input_suffix)));
    for (int i = 0; i < r.n_extra; i++) check(r.extra_texts[i] != NULL);
    check(r.ollama == ollama && r.native == native && r.anthropic == anthropic &&
          r.responses == responses && r.counting == counting && r.top_logprobs >= -1);
    check(!anthropic || r.max_tokens >= 1 || counting); /* required, but to count */
    for (int i = 0; i < r.n_context; i++) check(r.context[i] >= 0);
    check(!anthropic || r.origin); /* each message names the client's, the system field -1 */
    for (int i = 0; i < r.n_msgs; i++) {
      check(strlen(r.msgs[i].role) > 0 && r.msgs[i].content);
      check(!r.origin || r.origin[i] >= (i == 0 ? -1 : 0));
      for (int k = 0; k < r.msgs[i].n_calls; k++) /* a name, and arguments written as an object */
        check(r.msgs[i].calls[k].name[0] && r.msgs[i].calls[k].arguments[0] == '{');
    }
    for (int i = 0; i < r.n_tools; i++) check(r.tools[i][0] == '{');
    for (int i = 0; i < r.n_prompt_ids; i++) check(r.prompt_ids[i] >= 0);
    for (int i = 0; i < r.n_stop; i++) check(strlen(r.stop[i]) > 0);
    check(r.max_tokens == -1 || r.max_tokens >= 1);
    check(r.n_bias >= 0 && r.n_bias <= MKC_BIAS_CAP && (r.have_bias || r.n_bias == 0));
    for (int i = 0; i < r.n_bias; i++) /* logit_bias: ascending ids, once each, in range */
      check(r.bias_id[i] >= 0 && (i == 0 || r.bias_id[i] > r.bias_id[i - 1]) &&
            (native ? r.bias[i] == -INFINITY || fabsf(r.bias[i]) <= 1e6f * MKC_BIAS_CAP
                    : r.bias[i] >= -100 && r.bias[i] <= 100));
    mkc_api_sampling(&r, (mkc_sampling){0});
    /* the samplers the kernel lacks: what a request gives, over the defaults, passes the check */
    mkc_sampling_more more, base;
    mkc_sampling_more_init(&base);
    more = mkc_api_sampling_more(&r, base);
    char more_why[160];
    check(mkc_sampling_more_check(&more, more_why, sizeof more_why) == 0);
    for (int i = 0; i < more.n_breakers; i++)
      check(strlen(more.breakers[i]) > 0 && strlen(more.breakers[i]) < MKC_DRY_BREAKER_LEN);
    mkc_api_req_free(&r);
  }
}

/* The body as each embedding request: a parse keeps its promises. */
static void embed(const char *body, size_t n) {
  for (int kind = MKC_EMBED_OLLAMA; kind <= MKC_EMBED_OPENAI; kind++) {
    mkc_embed_req r;
    char why[200];
    if (mkc_embed_parse(body, n, kind, &r, why, sizeof why) != 0) {
      check(why[0] != '\0');
      continue;
    }
    check(r.kind == kind && r.n >= 0 && r.dimensions >= 0 && (r.n == 0 || r.texts));
    for (int i = 0; i < r.n; i++) {
      check((r.texts[i] != NULL) != (r.ids[i] != NULL) && (r.texts[i] || r.n_ids[i] > 0));
      for (int k = 0; !r.texts[i] && k < r.n_ids[i]; k++) check(r.ids[i][k] >= 0);
    }
    mkc_embed_req_free(&r);
  }
}

/* JSON kept as text (the request's tools and arguments are written from it):
 * what one form accepts, the others accept, and what it writes is JSON. */
static void json_text(const char *s, size_t n) {
  char *compact = mkc_json_compact(s, n), *flat = mkc_json_python(s, n, 0),
       *indented = mkc_json_python(s, n, 4);
  check(!compact == !flat && !flat == !indented);
  if (compact) {
    check(mkc_json_skip(compact, strlen(compact)) == strlen(compact));
    const char *at;
    size_t len;
    if (mkc_json_at(s, n, "tools/0", &at, &len)) check(at >= s && at + len <= s + n);
  }
  free(compact), free(flat), free(indented);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *buf = (const char *)data;
  mkc_http_req req;
  char why[200];
  long got = mkc_http_parse(buf, size, 1 << 16, &req, why, sizeof why);
  if (got < 0) {
    check(got >= -599 && why[0] != '\0');
  } else if (got > 0) {
    check((size_t)got <= size && req.body >= buf && req.body + req.body_len == buf + got);
    check(req.method[0] && req.path[0] == '/' && strlen(req.origin) < sizeof req.origin);
    mkc_http_local_origin(req.origin);
    /* the key, when there is one, lies within the head */
    check(!req.auth || (req.auth >= buf && req.auth + req.auth_len <= req.body));
    static const char *const keys[] = {"sk-local-1", ""};
    mkc_http_bearer_ok(&req, keys, 2);
    /* the query lies within the head; a parameter's value is a string within out */
    check(!req.query || (req.query >= buf && req.query + req.query_len <= req.body));
    static const char *const names[] = {"action", "", "a"};
    for (int q = 0; q < 3; q++) {
      char value[32];
      int rc = mkc_http_query(&req, names[q], value, sizeof value);
      check(rc >= -1 && rc <= 1 && (rc != 1 || strlen(value) < sizeof value));
    }
    for (size_t k = 0; k < (size_t)got; k += 1 + (size_t)got / 64) { /* a prefix is incomplete */
      mkc_http_req part;
      check(mkc_http_parse(buf, k, 1 << 16, &part, why, sizeof why) == 0);
    }
    api(req.body, req.body_len);
    embed(req.body, req.body_len);
    json_text(req.body, req.body_len);
  }
  char name[300]; /* the bytes as a client's file name */
  size_t n_name = size < sizeof name - 1 ? size : sizeof name - 1;
  memcpy(name, buf, n_name);
  name[n_name] = '\0';
  check(mkc_file_name_ok(name) == 0 ||
        (strlen(name) >= 1 && !strchr(name, '/') && !strstr(name, "..")));
  api(buf, size); /* the bytes as a body, whatever the head made of them */
  embed(buf, size);
  json_text(buf, size);
  for (int detok = 0; detok < 2; detok++) {
    mkc_api_tokens t;
    char why[200];
    if (mkc_api_parse_tokens(buf, size, detok, &t, why, sizeof why) != 0) continue;
    check(detok ? t.n_ids >= 0 : t.content != NULL);
    mkc_api_tokens_free(&t);
  }
  return 0;
}
