/* mkc serve's request parsers on hand-written requests (the oracle: what
 * each one spells): the HTTP head and body framing, every prefix of a whole
 * request read as incomplete, each refusal's status; then the JSON of
 * completion and chat requests, the fields given and the defaults of those
 * not, and the messages of the bad ones; a client's hang-up on a socket
 * pair. Also run under ASan/UBSan. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "cli/serve_answer.h"
#include "model/reasoning.h"
#include "serve/api.h"
#include "serve/embed_api.h"
#include "serve/file_name.h"
#include "serve/http.h"

static long parse(const char *s, mkc_http_req *r, char *why) {
  return mkc_http_parse(s, strlen(s), 1000, r, why, 200);
}

/* A target's query parameters (llama-server's POST /slots/0?action=save): found by name,
 * percent-decoded, a bare name empty; absent ones, bad escapes and long values told apart. */
static void query(void) {
  mkc_http_req r;
  char why[200], v[16];
  CHECK(parse("POST /slots/0?x=1&action=save&na%6De=a%20b+c%2Bd&bare&e=&bad=%4&nul=%00&long="
              "0123456789abcdef HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
              &r, why) > 0 &&
            strcmp(r.path, "/slots/0") == 0,
        "a target with a query: the path before it (%s) %s", r.path, why);
  static const struct {
    const char *name, *value;
    int rc;
  } WANT[] = {{"action", "save", 1}, {"x", "1", 1},   {"name", "a b c+d", 1}, {"bare", "", 1},
              {"e", "", 1},          {"bad", "", -1}, {"nul", "", -1},        {"long", "", -1},
              {"act", "", 0},        {"save", "", 0}};
  for (size_t i = 0; i < sizeof WANT / sizeof *WANT; i++) {
    strcpy(v, "");
    int rc = mkc_http_query(&r, WANT[i].name, v, sizeof v);
    CHECK(rc == WANT[i].rc && (rc != 1 || strcmp(v, WANT[i].value) == 0),
          "query %s: %d '%s' (want %d '%s')", WANT[i].name, rc, v, WANT[i].rc, WANT[i].value);
  }
  CHECK(parse("GET /slots HTTP/1.1\r\n\r\n", &r, why) > 0 && !r.query &&
            mkc_http_query(&r, "action", v, sizeof v) == 0,
        "no query: every name is absent");
  CHECK(parse("GET /x?a=\tb HTTP/1.1\r\n\r\n", &r, why) == -400 && strstr(why, "control character"),
        "a control character in the query: 400 (%s)", why);
}

/* A client's file name (llama-server's slot files): the oracle is llama-server's rule, spelled
 * out name by name. */
static void file_names(void) {
  static const struct {
    const char *name;
    int ok;
  } NAMES[] = {{"a.bin", 1},
               {"\xc3\xa9t\xc3\xa9 2.bin", 1},
               {"a-b_c (1).kv", 1},
               {"\xe6\x97\xa5.kv", 1},
               {".hidden", 1},
               {"", 0},
               {"a/b", 0},
               {"a\\b", 0},
               {" a", 0},
               {"a ", 0},
               {"a.", 0},
               {".", 0},
               {"..", 0},
               {"..a", 0},
               {"a..b", 0},
               {"a:b", 0},
               {"a*b", 0},
               {"a?b", 0},
               {"a\"b", 0},
               {"a<b", 0},
               {"a>b", 0},
               {"a|b", 0},
               {"a\x01"
                "b",
                0},
               {"a\x7f", 0},
               {"a\xc2\x80", 0},
               {"a\xe2\x88\x95"
                "b",
                0},
               {"a\xe2\x88\x96"
                "b",
                0},
               {"a\xef\xbc\x8e"
                "b",
                0},
               {"a\xef\xbf\xbd", 0},
               {"\xef\xbb\xbf"
                "a",
                0},
               {"a\xc0\xaf", 0},
               {"a\xed\xa0\x80", 0},
               {"a\xff", 0},
               {"a\xe2\x82", 0}};
  for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++)
    CHECK(mkc_file_name_ok(NAMES[i].name) == NAMES[i].ok, "file name \"%s\": %s", NAMES[i].name,
          NAMES[i].ok ? "taken" : "refused");
  char name[300];
  memset(name, 'n', sizeof name);
  name[255] = '\0';
  CHECK(mkc_file_name_ok(name), "a 255-byte file name: taken");
  name[255] = 'n', name[256] = '\0';
  CHECK(!mkc_file_name_ok(name), "a 256-byte file name: refused");
}

static void framing(void) {
  const char *post = "POST /v1/completions?stream=1 HTTP/1.1\r\nHost: a\r\n"
                     "content-LENGTH:  7 \r\n\r\n{\"a\":1}trailing";
  mkc_http_req r;
  char why[200];
  long whole = (long)(strlen(post) - strlen("trailing"));
  CHECK_INT(parse(post, &r, why), whole, "a POST: its size is head and body, not what follows");
  CHECK(strcmp(r.method, "POST") == 0 && strcmp(r.path, "/v1/completions") == 0,
        "... method POST, path without its query (%s %s)", r.method, r.path);
  CHECK(r.body_len == 7 && memcmp(r.body, "{\"a\":1}", 7) == 0, "... a 7-byte body");
  CHECK(r.query_len == 8 && memcmp(r.query, "stream=1", 8) == 0, "... its query, stream=1");
  int incomplete = 1;
  for (long k = 0; k < whole; k++)
    incomplete &= mkc_http_parse(post, (size_t)k, 1000, &r, why, sizeof why) == 0;
  CHECK(incomplete, "each of its %ld prefixes reads as incomplete", whole);
  CHECK_INT(parse("GET /health HTTP/1.0\n\n", &r, why), 22, "bare LF line ends");
  CHECK(strcmp(r.path, "/health") == 0 && r.body_len == 0, "... GET /health, no body");

  static const struct {
    const char *req;
    int status;
    const char *why;
  } BAD[] = {
      {"POST /x HTTP/1.1\r\n\r\n", 411, "Content-Length"},
      {"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501, "transfer encoding"},
      {"POST /x HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", 413, "1001 bytes, over the 1000"},
      {"POST /x HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400, "bad Content-Length"},
      {"POST /x HTTP/1.1\r\nContent-Length: \r\n\r\n", 400, "empty Content-Length"},
      {"POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, "differ"},
      {"GET /x HTTP/2.0\r\n\r\n", 505, "HTTP/1.0 and HTTP/1.1"},
      {"GET /x HTTP/1.1\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n", 400,
       "two Authorization headers"},
      {"GET /x\r\n\r\n", 400, "malformed request line"},
      {"GET x HTTP/1.1\r\n\r\n", 400, "not a path"},
      {"GETTINGS /x HTTP/1.1\r\n\r\n", 501, "unknown method"},
      {"GET /x HTTP/1.1\r\nNo colon here\r\n\r\n", 400, "malformed header"},
      {"GET /x HTTP/1.1\r\nBad name: v\r\n\r\n", 400, "malformed header"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
    long got = parse(BAD[i].req, &r, why);
    CHECK(got == -BAD[i].status && strstr(why, BAD[i].why), "refused %d (%s): %.*s", BAD[i].status,
          BAD[i].why, (int)strcspn(BAD[i].req, "\r"), BAD[i].req);
  }
  char big[MKC_HTTP_HEAD_MAX + 64] = "GET /x HTTP/1.1\r\nX: ";
  memset(big + strlen(big), 'a', MKC_HTTP_HEAD_MAX);
  big[sizeof big - 1] = '\0';
  CHECK_INT(parse(big, &r, why), -431, "a head over 16 KiB: 431");
  char path[400] = "GET /";
  memset(path + 5, 'p', 300);
  strcpy(path + 305, " HTTP/1.1\r\n\r\n");
  CHECK_INT(parse(path, &r, why), -414, "a 301-byte target: 414");
  CHECK_INT(parse("GET /x HTTP/1.1\r\norigin:  http://localhost:3000 \r\n\r\n", &r, why) > 0 &&
                strcmp(r.origin, "http://localhost:3000") == 0,
            1, "the Origin header, trimmed (%s)", r.origin);
  char long_origin[400] = "GET /x HTTP/1.1\r\nOrigin: http://localhost";
  memset(long_origin + strlen(long_origin), 'a', 200);
  strcpy(long_origin + strlen(long_origin), "\r\n\r\n");
  CHECK(parse(long_origin, &r, why) > 0 && strlen(r.origin) == 127 &&
            !mkc_http_local_origin(r.origin),
        "a 216-byte Origin: kept as its first 127 bytes, not this machine's");
  static const char *const LOCAL[] = {"http://localhost", "http://localhost:8080",
                                      "https://127.0.0.1:1", "http://[::1]:3000"};
  static const char *const FOREIGN[] = {"http://localhost.evil.example",
                                        "http://localhost:",
                                        "http://localhost:123456",
                                        "http://127.0.0.2",
                                        "null",
                                        "file://",
                                        "http://localhost/x",
                                        "ftp://localhost",
                                        "http://localhost:80a"};
  for (size_t i = 0; i < sizeof LOCAL / sizeof *LOCAL; i++)
    CHECK(mkc_http_local_origin(LOCAL[i]), "this machine's origin: %s", LOCAL[i]);
  for (size_t i = 0; i < sizeof FOREIGN / sizeof *FOREIGN; i++)
    CHECK(!mkc_http_local_origin(FOREIGN[i]), "not this machine's: %s", FOREIGN[i]);
  CHECK(strcmp(mkc_http_reason(413), "Content Too Large") == 0 && !*mkc_http_reason(299),
        "reason phrases");
}

static int api(const char *json, int chat, mkc_api_req *r, char *why) {
  return mkc_api_parse(json, strlen(json), chat, r, why, 200);
}

static int ollama(const char *json, int chat, mkc_api_req *r, char *why) {
  return mkc_api_parse_ollama(json, strlen(json), chat, r, why, 200);
}

static int tokens_of(const char *json, int detokenize, mkc_api_tokens *t, char *why) {
  return mkc_api_parse_tokens(json, strlen(json), detokenize, t, why, 200);
}

/* Tools: the definitions written as the template writes them (tojson), a
 * reply's calls with their arguments (a text parsed, an object as is), the
 * results, tool_choice "none" and parallel_tool_calls false. */
static void tool_requests(void) {
  mkc_api_req r;
  char why[200];
  const char *openai =
      "{\"messages\": [{\"role\": \"user\", \"content\": \"Weather?\"}, {\"role\": "
      "\"assistant\", \"content\": null, \"reasoning_content\": \"Look.\", \"tool_calls\": "
      "[{\"id\": \"c1\", \"type\": "
      "\"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": "
      "\"{\\\"city\\\":\\\"Paris\\\"}\"}}]}, {\"role\": \"tool\", \"tool_call_id\": \"c1\", "
      "\"content\": \"21 C\"}], \"tools\": [{\"type\":\"function\",\"function\":{\"name\":"
      "\"get_weather\",\"parameters\":{\"type\":\"object\"}}}], \"parallel_tool_calls\": "
      "false}";
  int rc = api(openai, 1, &r, why);
  CHECK(rc == 0 && r.n_tools == 1 &&
            strcmp(r.tools[0], "{\"type\": \"function\", \"function\": {\"name\": "
                               "\"get_weather\", \"parameters\": {\"type\": \"object\"}}}") == 0 &&
            r.one_call && r.n_msgs == 3 && r.msgs[1].n_calls == 1 &&
            strcmp(r.msgs[1].content, "") == 0 &&
            strcmp(r.msgs[1].calls[0].name, "get_weather") == 0 &&
            strcmp(r.msgs[1].calls[0].arguments, "{\"city\": \"Paris\"}") == 0 &&
            strcmp(r.msgs[2].role, "tool") == 0 && strcmp(r.msgs[2].content, "21 C") == 0 &&
            strcmp(r.msgs[1].reasoning, "Look.") == 0,
        "OpenAI's tools: the definition as tojson writes it, the call's arguments text parsed "
        "and rewritten, content null as empty, the reasoning given back, the result (%s)",
        rc ? why : "parsed");
  mkc_api_req_free(&r);
  const char *none = "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"tools\": "
                     "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}], \"tool_choice\": "
                     "\"none\"}";
  CHECK(api(none, 1, &r, why) == 0 && r.n_tools == 0 && !r.one_call,
        "tool_choice none: the tools are not offered");
  mkc_api_req_free(&r);
  const char *oll =
      "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": "
      "\"assistant\", \"content\": \"\", \"thinking\": \"hm\", \"tool_calls\": [{\"function\": "
      "{\"name\": \"f\", \"arguments\": {\"x\": [1, 2.5]}}}]}, {\"role\": \"tool\", \"content\": "
      "\"ok\", \"tool_name\": \"f\"}], \"tools\": [{\"type\": \"function\", "
      "\"function\": {\"name\": \"f\"}}]}";
  rc = ollama(oll, 1, &r, why);
  CHECK(rc == 0 && r.n_tools == 1 && r.msgs[1].n_calls == 1 &&
            strcmp(r.msgs[1].calls[0].arguments, "{\"x\": [1, 2.5]}") == 0 && r.msgs[1].reasoning &&
            strcmp(r.msgs[1].reasoning, "hm") == 0 && !r.msgs[0].reasoning,
        "ollama's tools: arguments as an object, the reasoning given back (thinking) (%s)",
        rc ? why : "parsed");
  mkc_api_req_free(&r);
}

static void requests(void) {
  mkc_api_req r;
  char why[200];
  CHECK(api("{\"prompt\": \"Hello\"}", 0, &r, why) == 0 && strcmp(r.prompt, "Hello") == 0 &&
            r.max_tokens == -1 && !r.stream && !r.n_stop && !r.set && !r.have_seed &&
            r.top_logprobs == -1,
        "a text prompt; nothing else given: no bound, no stream, no stop, the server's sampling");
  mkc_sampling base = {.temp = 0.5f, .top_k = 40, .top_p = 0.95f, .seed_lo = 9};
  mkc_sampling same = mkc_api_sampling(&r, base);
  CHECK(memcmp(&same, &base, sizeof base) == 0, "... its sampling is the server's as it was");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": \"a\", \"stream\": true, \"stream_options\": {\"include_usage\": true}, "
            "\"logit_bias\": {}, \"response_format\": {\"type\": \"text\"}}",
            0, &r, why) == 0 &&
            r.stream && r.include_usage && !r.json_format,
        "stream_options.include_usage; an empty logit_bias and a text response_format change "
        "nothing and are taken");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": \"a\", \"n\": 16}", 0, &r, why) == 0 && r.n_choices == 16,
        "OpenAI's n: 16 choices");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": \"a\"}", 0, &r, why) == 0 && r.n_choices <= 1, "no n: one choice");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": [\"a\", \"bc\"], \"n\": 2}", 0, &r, why) == 0 && r.n_prompts == 2 &&
            strcmp(r.prompt, "a") == 0 && mkc_api_answers(&r) == 4 &&
            mkc_api_select_prompt(&r, 1) == 0 && strcmp(r.prompt, "bc") == 0,
        "a list of two texts, n 2: four answers; the first is the prompt, then the second");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": \"a\", \"n_keep\": 4, \"n_discard\": 7}", 0, &r, why) == 0 &&
            r.n_keep == 4 && r.n_discard == 7,
        "llama-server's n_keep 4, n_discard 7");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": [[4, 5]]}", 0, &r, why) == 0 && r.n_prompts == 0 && r.n_prompt_ids == 2 &&
            r.prompt_ids[0] == 4,
        "a list of one list of ids: that prompt");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": [[1, 2], [3]]}", 0, &r, why) == 0 && r.n_prompts == 2 &&
            r.n_prompt_ids == 2 && r.prompt_ids[1] == 2 && mkc_api_select_prompt(&r, 1) == 0 &&
            r.n_prompt_ids == 1 && r.prompt_ids[0] == 3 && !r.prompt,
        "a list of two lists of ids: the first, then the second");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": \"a\", \"stream\": true, \"stream_options\": {}}", 0, &r, why) == 0 &&
            !r.include_usage,
        "stream_options without include_usage: none");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": \"a\", \"response_format\": {\"type\": \"json_schema\"}}", 0, &r, why) ==
                -1 &&
            strstr(why, "response_format: json_schema.schema: expected a JSON schema"),
        "response_format json_schema without a schema refused: %s", why);
  CHECK(api("{\"prompt\": \"a\", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": "
            "{\"name\": \"n\", \"strict\": true, \"schema\": {\"type\": \"object\", "
            "\"properties\": {\"x\": {\"type\": \"integer\"}}, \"required\": [\"x\"]}}}}",
            0, &r, why) == 0 &&
            r.json_format && r.schema,
        "response_format json_schema: JSON output its schema validates");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": \"a\", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": "
            "{\"schema\": {\"type\": \"string\", \"maxLength\": 3}}}}",
            0, &r, why) == -1 &&
            strstr(why, "response_format: json schema: the schema: \"maxLength\" is not offered"),
        "a schema with a keyword mkc does not follow: refused by name: %s", why);
  CHECK(api("{\"prompt\": \"a\", \"response_format\": {\"type\": \"yaml\"}}", 0, &r, why) == -1 &&
            strstr(why, "response_format: {\"type\": \"text\"}, {\"type\": \"json_object\"} or"),
        "response_format of another type refused: %s", why);
  CHECK(api("{\"prompt\": \"a\", \"response_format\": {\"type\": \"json_object\"}}", 0, &r, why) ==
                0 &&
            r.json_format,
        "response_format json_object: JSON output");
  mkc_api_req_free(&r);
  CHECK(api("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"reasoning_effort\": "
            "\"high\"}",
            1, &r, why) == 0 &&
            r.reasoning_effort && strcmp(r.reasoning_effort, "high") == 0 && r.think == -1,
        "reasoning_effort is taken (the template checks its level), think not given");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": \"a\"}", 0, &r, why) == 0 && !r.reasoning_effort && r.think == -1,
        "no reasoning_effort, no think");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": \"a\", \"reasoning_effort\": 2}", 0, &r, why) == -1 &&
            strstr(why, "reasoning_effort: expected a string"),
        "reasoning_effort not a string refused: %s", why);
  CHECK(api("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"reasoning_format\": "
            "\"none\"}",
            1, &r, why) == 0 &&
            r.reasoning_format == 1 + MKC_REASONING_NONE,
        "llama-server's reasoning_format none is taken");
  mkc_api_req_free(&r);
  CHECK(api("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}", 1, &r, why) == 0 &&
            r.reasoning_format == 0,
        "... not given: 0 (the server's)");
  mkc_api_req_free(&r);
  CHECK(api("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"reasoning_format\": "
            "\"deepseek-legacy\"}",
            1, &r, why) == -1 &&
            strstr(why, "reasoning_format: expected none, deepseek or auto"),
        "reasoning_format deepseek-legacy refused, not dropped: %s", why);
  CHECK(api("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"chat_template_kwargs\": "
            "{\"enable_thinking\": false, \"reasoning_effort\": \"low\"}}",
            1, &r, why) == 0 &&
            r.think == 0 && r.reasoning_effort && strcmp(r.reasoning_effort, "low") == 0,
        "llama-server's chat_template_kwargs: enable_thinking and reasoning_effort are taken");
  mkc_api_req_free(&r);
  CHECK(api("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"chat_template_kwargs\": "
            "{\"tools_in_user_message\": true}}",
            1, &r, why) == -1 &&
            strstr(why, "chat_template_kwargs.tools_in_user_message: mkc's templates take"),
        "another chat_template_kwargs variable is refused, not dropped: %s", why);
  CHECK(api("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"chat_template_kwargs\": "
            "{\"enable_thinking\": \"no\"}}",
            1, &r, why) == -1 &&
            strstr(why, "chat_template_kwargs.enable_thinking: mkc's templates take"),
        "enable_thinking not a boolean is refused: %s", why);
  CHECK(ollama("{\"prompt\": \"a\", \"think\": \"low\"}", 0, &r, why) == 0 && r.reasoning_effort &&
            strcmp(r.reasoning_effort, "low") == 0 && r.think == -1,
        "ollama's think as a level is the reasoning effort");
  mkc_api_req_free(&r);
  CHECK(ollama("{\"prompt\": \"a\", \"think\": false}", 0, &r, why) == 0 && !r.reasoning_effort &&
            r.think == 0,
        "ollama's think false");
  mkc_api_req_free(&r);
  CHECK(ollama("{\"prompt\": \"a\"}", 0, &r, why) == 0 && r.think == -1, "ollama: no think given");
  mkc_api_req_free(&r);
  CHECK(ollama("{\"prompt\": \"a\", \"think\": 1}", 0, &r, why) == -1 &&
            strstr(why, "think: expected true, false or a level"),
        "ollama's think as a number refused: %s", why);
  CHECK(api("{\"prompt\": \"a\", \"logit_bias\": [1]}", 0, &r, why) == -1 &&
            strstr(why, "logit_bias"),
        "logit_bias not an object refused: %s", why);
  CHECK(api("{\"prompt\": \"a\", \"stream\": true, \"stream_options\": {\"include_usage\": 1}}", 0,
            &r, why) == -1 &&
            strstr(why, "include_usage: expected true or false"),
        "include_usage not a boolean refused: %s", why);
  CHECK(api("{\"prompt\": \"a\", \"logprobs\": 0}", 0, &r, why) == 0 && r.top_logprobs == 0,
        "completions: logprobs 0 (each token's own, no top ones)");
  mkc_api_req_free(&r);
  CHECK(api("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"logprobs\": true, "
            "\"top_logprobs\": 20}",
            1, &r, why) == 0 &&
            r.top_logprobs == 20,
        "chat: logprobs true, top_logprobs 20");
  mkc_api_req_free(&r);
  CHECK(api("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"logprobs\": false}", 1,
            &r, why) == 0 &&
            r.top_logprobs == -1,
        "chat: logprobs false is none");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": [\"Hi\"]}", 0, &r, why) == 0 && strcmp(r.prompt, "Hi") == 0,
        "a list of one string is that string");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": [5, 0, 7], \"max_tokens\": 3, \"stream\": true, \"stop\": [\"a\", "
            "\"bc\"], \"temperature\": 0, \"top_k\": 3, \"seed\": 4294967297, \"n\": 1}",
            0, &r, why) == 0,
        "token ids with fields");
  CHECK(r.n_prompt_ids == 3 && r.prompt_ids[0] == 5 && r.prompt_ids[2] == 7 && r.max_tokens == 3 &&
            r.stream && r.n_stop == 2 && strcmp(r.stop[1], "bc") == 0,
        "... ids 5 0 7, max_tokens 3, stream, stops \"a\" \"bc\"");
  mkc_sampling o = mkc_api_sampling(&r, base);
  CHECK(o.temp == 0 && o.top_k == 3 && o.top_p == 0.95f && o.seed_lo == 1 && o.seed_hi == 1,
        "... temperature 0 and top_k 3 over the server's, top_p kept; seed 2^32 + 1 split");
  mkc_api_req_free(&r);
  CHECK(api("{\"messages\": [{\"role\": \"developer\", \"content\": \"S\"}, {\"role\": \"user\", "
            "\"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"text\", \"text\": "
            "\"b\"}]}], \"max_completion_tokens\": 2}",
            1, &r, why) == 0 &&
            r.n_msgs == 2 && strcmp(r.msgs[0].role, "system") == 0 &&
            strcmp(r.msgs[1].content, "ab") == 0 && r.max_tokens == 2,
        "chat: developer is system, text parts joined, max_completion_tokens");
  mkc_api_req_free(&r);

  static const struct {
    const char *json;
    int chat;
    const char *why;
  } BAD[] = {
      {"{\"prompt\": ", 0, "not JSON"},
      {"3", 0, "not a JSON object"},
      {"{}", 0, "prompt: expected"},
      {"{\"prompt\": []}", 0, "prompt: expected"},
      {"{\"prompt\": [1, 2.5]}", 0, "prompt[1]: expected a token id"},
      {"{\"prompt\": \"a\", \"stop\": \"\"}", 0, "stop: an empty string"},
      {"{\"prompt\": \"a\", \"stop\": [\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\"]}", 0,
       "up to 8 strings"},
      {"{\"prompt\": \"a\", \"max_tokens\": 0}", 0, "max_tokens: expected a whole number >= 1"},
      {"{\"prompt\": \"a\", \"seed\": -1}", 0, "seed: expected"},
      {"{\"prompt\": \"a\", \"n\": 17}", 0, "n: expected a whole number of completions, 1..16"},
      {"{\"prompt\": \"a\", \"n\": 0}", 0, "n: expected a whole number of completions"},
      {"{\"prompt\": \"a\", \"n_discard\": 1.5}", 0, "n_discard: expected a whole number >= 0"},
      {"{\"prompt\": \"a\", \"min_p\": \"0.1\"}", 0, "min_p: expected a number"},
      {"{\"prompt\": \"a\", \"repeat_last_n\": 257}", 0, "repeat_last_n: expected"},
      {"{\"prompt\": \"a\", \"logprobs\": 21}", 0, "logprobs: expected a whole number in 0..20"},
      {"{\"prompt\": \"a\", \"logprobs\": true}", 0, "logprobs: expected a whole number"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"logprobs\": 1}", 1,
       "logprobs: expected true or false"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"top_logprobs\": 1}", 1,
       "needs \"logprobs\": true"},
      {"{\"messages\": []}", 1, "messages: expected a non-empty list"},
      {"{\"messages\": [{\"content\": \"a\"}]}", 1, "messages[0]: expected an object"},
      {"{\"messages\": [{\"role\": \"robot\", \"content\": \"a\"}]}", 1,
       "messages[0].role: expected system, user, assistant or tool"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"a\", \"tool_calls\": []}]}", 1,
       "messages[0].tool_calls: only in an assistant's message"},
      {"{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": [{\"function\": {\"name\": "
       "\"f\", \"arguments\": \"{oops\"}}]}]}",
       1, "messages[0].tool_calls[0].function.arguments: expected a JSON object"},
      {"{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": [{\"function\": {}}]}]}", 1,
       "messages[0].tool_calls[0]: expected {\"function\": {\"name\""},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"tools\": {}}", 1,
       "tools: expected a list of functions"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"tools\": [{\"type\": "
       "\"function\", \"function\": {\"name\": \"f\"}}], \"tool_choice\": \"required\"}",
       1, "tool_choice: \"auto\" or \"none\" (a call cannot be forced"},
      {"{\"prompt\": \"a\", \"tools\": []}", 0, "tools: only in a chat request"},
      {"{\"messages\": [{\"role\": \"assistant\", \"content\": \"a\", \"reasoning_content\": 1}]}",
       1, "messages[0].reasoning_content: expected a string"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", 1, "messages[0].content"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}", 1,
       "only text parts"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++)
    CHECK(api(BAD[i].json, BAD[i].chat, &r, why) == -1 && strstr(why, BAD[i].why),
          "refused: %s (%s)", BAD[i].json, why);
  /* ollama's: a stream unless said otherwise, options inside */
  CHECK(ollama("{\"prompt\": \"p\"}", 0, &r, why) == 0 && r.ollama && r.stream &&
            r.max_tokens == -1 && !r.raw && !r.system && !r.n_context && !r.set,
        "ollama generate: a stream by default, no bound, the template, the server's sampling");
  mkc_api_req_free(&r);
  const char *og =
      "{\"prompt\": \"p\", \"system\": \"s\", \"raw\": true, \"stream\": false, "
      "\"context\": [1, 2, 3], \"options\": {\"num_predict\": 7, \"temperature\": 0.5, "
      "\"seed\": 9, \"stop\": [\"x\"], \"num_ctx\": 4096}}";
  CHECK(ollama(og, 0, &r, why) == 0 && !r.stream && r.raw && strcmp(r.system, "s") == 0 &&
            r.n_context == 3 && r.context[2] == 3 && r.max_tokens == 7 && r.temperature == 0.5 &&
            r.have_seed && r.seed == 9 && r.n_stop == 1 && r.num_ctx == 4096 && !r.unfollowed[0],
        "ollama generate: system, raw, no stream, context, options (num_predict, temperature, "
        "seed, stop, num_ctx)");
  mkc_api_req_free(&r);
  const char *oc = "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"options\": "
                   "{\"num_predict\": -2}}";
  CHECK(ollama(oc, 1, &r, why) == 0 && r.n_msgs == 1 && r.max_tokens == -1 && r.shift == -1,
        "ollama chat: num_predict -2 (fill the context) is no bound, and no shift");
  mkc_api_req_free(&r);
  /* context shift: ollama's shift (not given: 0, the server decides; ollama's default is on) and
   * num_keep; llama-server's n_keep on its endpoints and OpenAI's */
  CHECK(ollama("{\"prompt\": \"a\"}", 0, &r, why) == 0 && r.shift == 0 && !r.have_keep,
        "ollama: shift and num_keep not given");
  mkc_api_req_free(&r);
  CHECK(ollama("{\"prompt\": \"a\", \"shift\": false, \"options\": {\"num_keep\": -1}}", 0, &r,
               why) == 0 &&
            r.shift == -1 && r.have_keep && r.n_keep == -1 && !r.unfollowed[0],
        "ollama: shift false, num_keep -1 (the whole prompt), both followed");
  mkc_api_req_free(&r);
  CHECK(ollama("{\"prompt\": \"a\", \"shift\": true, \"options\": {\"num_keep\": 9}}", 0, &r,
               why) == 0 &&
            r.shift == 1 && r.n_keep == 9,
        "ollama: shift true, num_keep 9");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": \"a\", \"n_keep\": 12}", 0, &r, why) == 0 && r.have_keep &&
            r.n_keep == 12 && !r.unfollowed[0],
        "OpenAI completions: llama-server's n_keep followed");
  mkc_api_req_free(&r);
  CHECK(ollama("{\"prompt\": \"a\", \"shift\": 1}", 0, &r, why) == -1 &&
            strstr(why, "shift: expected true or false"),
        "ollama: shift not a boolean is refused (%s)", why);
  mkc_api_req_free(&r);
  /* fill in the middle: llama-server's /infill, and a completion's suffix */
  const char *inf =
      "{\"input_prefix\": \"def f(\", \"input_suffix\": \"):\", \"input_extra\": "
      "[{\"filename\": \"a.py\", \"text\": \"A\"}, {\"text\": \"B\"}], \"n_predict\": 4}";
  CHECK(mkc_api_parse_infill(inf, strlen(inf), &r, why, 200) == 0 && r.infill == 1 && r.native &&
            !strcmp(r.input_prefix, "def f(") && !strcmp(r.input_suffix, "):") &&
            !strcmp(r.prompt, "") && r.n_extra == 2 && !strcmp(r.extra_names[0], "a.py") &&
            !r.extra_names[1] && !strcmp(r.extra_texts[1], "B") && r.max_tokens == 4,
        "/infill: prefix, suffix, two chunks (the second unnamed), no prompt, n_predict");
  mkc_api_req_free(&r);
  static const struct {
    const char *json, *why;
  } IBAD[] = {{"{\"input_suffix\": \"b\"}", "input_prefix: expected a string (required)"},
              {"{\"input_prefix\": \"a\", \"input_suffix\": 5}", "input_suffix: expected a string"},
              {"{\"input_prefix\": \"a\", \"input_suffix\": \"b\", \"prompt\": [1]}",
               "prompt: expected a string"},
              {"{\"input_prefix\": \"a\", \"input_suffix\": \"b\", \"input_extra\": {}}",
               "input_extra: expected a list"},
              {"{\"input_prefix\": \"a\", \"input_suffix\": \"b\", \"input_extra\": [{\"text\": "
               "\"t\", \"filename\": 3}]}",
               "input_extra[0].filename: expected a string"}};
  for (size_t i = 0; i < sizeof IBAD / sizeof *IBAD; i++)
    CHECK(mkc_api_parse_infill(IBAD[i].json, strlen(IBAD[i].json), &r, why, 200) == -1 &&
              strstr(why, IBAD[i].why),
          "/infill refused: %s (%s)", IBAD[i].json, why);
  CHECK(api("{\"prompt\": \"def f(\", \"suffix\": \"):\"}", 0, &r, why) == 0 && r.infill == 2 &&
            !strcmp(r.input_prefix, "def f(") && !strcmp(r.input_suffix, "):"),
        "OpenAI completion's suffix: filled between the prompt and it");
  mkc_api_req_free(&r);
  CHECK(api("{\"prompt\": [1, 2], \"suffix\": \"x\"}", 0, &r, why) == -1 &&
            strstr(why, "suffix: the prompt before it must be text"),
        "a suffix after token ids is refused (%s)", why);
  CHECK(ollama("{\"prompt\": \"a\", \"suffix\": \"b\"}", 0, &r, why) == 0 && r.infill == 2 &&
            !strcmp(r.input_prefix, "a") && !strcmp(r.input_suffix, "b"),
        "ollama generate's suffix: filled between the prompt and it");
  mkc_api_req_free(&r);
  CHECK(ollama("{\"prompt\": \"a\", \"suffix\": \"b\", \"context\": [1]}", 0, &r, why) == -1 &&
            strstr(why, "suffix: not with context"),
        "ollama's suffix with context is refused (%s)", why);
  CHECK(api("{\"prompt\": \"a\", \"n_keep\": 1.5}", 0, &r, why) == -1 &&
            strstr(why, "n_keep: expected -1 (the whole prompt) or a whole number >= 0"),
        "n_keep 1.5 is refused (%s)", why);
  mkc_api_req_free(&r);
  CHECK(ollama("{\"prompt\": \"a\", \"format\": \"json\"}", 0, &r, why) == 0 && r.json_format,
        "ollama format \"json\": JSON output");
  mkc_api_req_free(&r);
  CHECK(ollama("{\"prompt\": \"a\", \"format\": \"\"}", 0, &r, why) == 0 && !r.json_format,
        "ollama format \"\": none");
  mkc_api_req_free(&r);
  CHECK(ollama("{\"prompt\": \"a\", \"format\": {\"type\": \"array\", \"items\": {\"type\": "
               "\"string\"}}}",
               0, &r, why) == 0 &&
            r.json_format && r.schema,
        "ollama format as a schema: JSON output it validates");
  mkc_api_req_free(&r);
  static const struct {
    const char *json;
    int chat;
    const char *why;
  } OBAD[] = {
      {"{\"prompt\": 5}", 0, "prompt: expected a string"},
      {"{\"prompt\": \"a\", \"context\": [1, -1]}", 0, "context[1]: expected a token id"},
      {"{\"prompt\": \"a\", \"format\": {\"type\": \"string\", \"pattern\": \"x\"}}", 0,
       "format: json schema: the schema: \"pattern\" is not offered"},
      {"{\"prompt\": \"a\", \"format\": \"yaml\"}", 0, "format: \"json\" or a JSON schema"},
      {"{\"prompt\": \"a\", \"format\": 1}", 0, "format: \"json\" or a JSON schema"},
      {"{\"prompt\": \"a\", \"stream\": 1}", 0, "stream: expected true or false"},
      {"{\"prompt\": \"a\", \"options\": {\"num_predict\": 0}}", 0, "num_predict"},
      {"{\"prompt\": \"a\", \"options\": [1]}", 0, "options: expected an object"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"tools\": [{}]}", 1,
       "tools[0]: expected {\"type\": \"function\", \"function\": {\"name\""},
  };
  for (size_t i = 0; i < sizeof OBAD / sizeof *OBAD; i++)
    CHECK(ollama(OBAD[i].json, OBAD[i].chat, &r, why) == -1 && strstr(why, OBAD[i].why),
          "ollama refused: %s (%s)", OBAD[i].json, why);
  tool_requests();
  /* llama-server's /tokenize and /detokenize */
  mkc_api_tokens t;
  CHECK(tokens_of("{\"content\": \"x\"}", 0, &t, why) == 0 && strcmp(t.content, "x") == 0 &&
            !t.add_special && t.parse_special && !t.with_pieces,
        "tokenize: add_special false, parse_special true, no pieces unless asked");
  mkc_api_tokens_free(&t);
  CHECK(tokens_of("{\"tokens\": [3, 0, 9]}", 1, &t, why) == 0 && t.n_ids == 3 && t.ids[0] == 3 &&
            t.ids[2] == 9,
        "detokenize: ids 3 0 9");
  mkc_api_tokens_free(&t);
  CHECK(tokens_of("{\"tokens\": [1.5]}", 1, &t, why) == -1 &&
            strstr(why, "tokens[0]: expected a token id"),
        "detokenize refused: %s", why);
  CHECK(tokens_of("{\"content\": 1}", 0, &t, why) == -1 &&
            strstr(why, "content: expected a string"),
        "tokenize refused: %s", why);
  /* a text with every byte JSON escapes, a NUL inside: all of it, as JSON spells it */
  cJSON *tj = cJSON_CreateObject();
  cJSON_AddItemToObject(tj, "t", mkc_json_text("a\0b\"c\\\n\r\t\x01\x1f\xc3\xa9z", 14));
  cJSON_AddItemToObject(tj, "e", mkc_json_text(NULL, 0));
  char *js = cJSON_PrintUnformatted(tj);
  CHECK(js && strcmp(js,
                     "{\"t\":\"a\\u0000b\\\"c\\\\\\n\\r\\t\\u0001\\u001f\xc3\xa9z\",\"e\":\"\"}") ==
                  0,
        "a text with a NUL, quotes, controls and UTF-8 as a JSON string: %s", js ? js : "(null)");
  free(js);
  cJSON_Delete(tj);
  char *e = mkc_api_error_json("a \"quoted\" word", "invalid_request_error");
  CHECK(e && strcmp(e, "{\"error\":{\"message\":\"a \\\"quoted\\\" word\",\"type\":"
                       "\"invalid_request_error\"}}") == 0,
        "an error's JSON, quotes escaped: %s", e ? e : "(null)");
  free(e);
}

/* API keys: the Authorization header's Bearer token against the server's
 * keys (the oracle: the strings as written). */
static void keys(void) {
  static const char *const K[] = {"s3cret", "other-key"};
  static const struct {
    const char *header; /* NULL: none */
    int ok;
  } CASES[] = {
      {"Bearer s3cret", 1},    {"bearer s3cret", 1},
      {"BEARER other-key", 1}, {NULL, 0},
      {"Bearer s3cre", 0},     {"Bearer s3crets", 0},
      {"Bearer S3cret", 0},    {"Basic s3cret", 0},
      {"Bearer ", 0},          {"Bearer", 0},
      {"s3cret", 0},           {"Bearer  s3cret", 0},
      {"Bearer other-kez", 0},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
    char req[200], why[200];
    mkc_http_req r;
    snprintf(req, sizeof req, "GET /v1/models HTTP/1.1\r\n%s%s%s\r\n",
             CASES[i].header ? "Authorization: " : "", CASES[i].header ? CASES[i].header : "",
             CASES[i].header ? "\r\n" : "");
    long got = parse(req, &r, why);
    CHECK(got > 0 && mkc_http_bearer_ok(&r, K, 2) == CASES[i].ok, "Authorization: %s: %s",
          CASES[i].header ? CASES[i].header : "(none)", CASES[i].ok ? "a key" : "refused");
  }
  mkc_http_req r;
  char why[200];
  CHECK(parse("GET / HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n", &r, why) > 0 &&
            !mkc_http_bearer_ok(&r, K, 0),
        "no keys: nothing matches");
  /* Anthropic's clients' header */
  CHECK(parse("GET / HTTP/1.1\r\nX-Api-Key: other-key\r\n\r\n", &r, why) > 0 &&
            mkc_http_bearer_ok(&r, K, 2),
        "x-api-key: other-key (any case of the name): a key");
  CHECK(parse("GET / HTTP/1.1\r\nx-api-key: other-kez\r\n\r\n", &r, why) > 0 &&
            !mkc_http_bearer_ok(&r, K, 2),
        "x-api-key: other-kez: refused");
  CHECK(parse("GET / HTTP/1.1\r\nx-api-key:\r\n\r\n", &r, why) > 0 && !mkc_http_bearer_ok(&r, K, 2),
        "an empty x-api-key: refused");
  CHECK(parse("GET / HTTP/1.1\r\nx-api-key: a\r\nx-api-key: b\r\n\r\n", &r, why) == -400,
        "two x-api-key headers: 400 (%s)", why);
}

/* Anthropic's Messages API: its system field first, text blocks joined, an assistant's
 * thinking blocks given back as its reasoning, and its refusals. */
static void anthropic_requests(void) {
  mkc_api_req r;
  char why[200];
  const char *ok_req =
      "{\"max_tokens\": 8, \"system\": [{\"type\": \"text\", \"text\": \"Be \"}, {\"type\": "
      "\"text\", \"text\": \"brief.\"}], \"stop_sequences\": [\"END\"], \"top_k\": 5, "
      "\"messages\": "
      "[{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", \"content\": "
      "[{\"type\": \"thinking\", \"thinking\": \"Greet.\", \"signature\": \"\"}, {\"type\": "
      "\"redacted_thinking\", \"data\": \"x\"}, {\"type\": \"text\", \"text\": \"Hello\"}]}, "
      "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Bye\"}]}]}";
  int rc = mkc_api_parse_anthropic(ok_req, strlen(ok_req), &r, why, sizeof why);
  CHECK(rc == 0 && r.anthropic && r.chat && r.n_msgs == 4 && !strcmp(r.msgs[0].role, "system") &&
            !strcmp(r.msgs[0].content, "Be brief.") && !strcmp(r.msgs[2].content, "Hello") &&
            r.msgs[2].reasoning && !strcmp(r.msgs[2].reasoning, "Greet.") && !r.msgs[1].reasoning &&
            !strcmp(r.msgs[3].content, "Bye") && r.max_tokens == 8 && r.n_stop == 1 &&
            !strcmp(r.stop[0], "END") && r.top_k == 5,
        "Anthropic's request: the system blocks joined first, the assistant's thinking as its "
        "reasoning, its text as its content (%s)",
        rc ? why : "read");
  if (rc == 0) mkc_api_req_free(&r);
  /* tool use: the call an assistant's tool_calls, the results tool messages ahead of the
   * user's text, the tool a function with its schema as the parameters */
  const char *tools_req =
      "{\"max_tokens\": 8, \"tools\": [{\"name\": \"get_weather\", \"description\": \"Weather\", "
      "\"input_schema\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": "
      "\"string\"}}}}], \"tool_choice\": {\"type\": \"auto\", \"disable_parallel_tool_use\": "
      "true}, "
      "\"messages\": [{\"role\": \"user\", \"content\": \"Weather?\"}, {\"role\": \"assistant\", "
      "\"content\": [{\"type\": \"text\", \"text\": \"Looking.\"}, {\"type\": \"tool_use\", "
      "\"id\": "
      "\"toolu_1\", \"name\": \"get_weather\", \"input\": {\"city\": \"Paris\", \"n\": [1, 2.5]}}, "
      "{\"type\": \"tool_use\", \"id\": \"toolu_2\", \"name\": \"now\", \"input\": {}}]}, "
      "{\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"tool_use_id\": "
      "\"toolu_1\", \"content\": \"21 C\"}, {\"type\": \"tool_result\", \"tool_use_id\": "
      "\"toolu_2\", \"content\": [{\"type\": \"text\", \"text\": \"noon\"}]}, {\"type\": \"text\", "
      "\"text\": \"Thanks.\"}]}]}";
  rc = mkc_api_parse_anthropic(tools_req, strlen(tools_req), &r, why, sizeof why);
  CHECK(rc == 0 && r.n_msgs == 5 && r.n_tools == 1 && r.one_call &&
            !strcmp(r.tools[0], "{\"type\": \"function\", \"function\": {\"name\": "
                                "\"get_weather\", \"description\": \"Weather\", \"parameters\": "
                                "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": "
                                "\"string\"}}}}}") &&
            !strcmp(r.msgs[1].role, "assistant") && !strcmp(r.msgs[1].content, "Looking.") &&
            r.msgs[1].n_calls == 2 && !strcmp(r.msgs[1].calls[0].name, "get_weather") &&
            !strcmp(r.msgs[1].calls[0].arguments, "{\"city\": \"Paris\", \"n\": [1, 2.5]}") &&
            !strcmp(r.msgs[1].calls[1].arguments, "{}") && !strcmp(r.msgs[2].role, "tool") &&
            !strcmp(r.msgs[2].content, "21 C") && !strcmp(r.msgs[3].role, "tool") &&
            !strcmp(r.msgs[3].content, "noon") && !strcmp(r.msgs[4].role, "user") &&
            !strcmp(r.msgs[4].content, "Thanks.") && r.origin && r.origin[0] == 0 &&
            r.origin[1] == 1 && r.origin[2] == 2 && r.origin[3] == 2 && r.origin[4] == 2,
        "Anthropic's tool use: tool_use blocks as the assistant's calls, tool_result blocks as "
        "tool messages before the user's text (each naming the client's message), the tool "
        "as a function, disable_parallel_tool_use as one call (%s)",
        rc ? why : "read");
  if (rc == 0) mkc_api_req_free(&r);
  const char *none =
      "{\"max_tokens\": 8, \"tools\": [{\"name\": \"f\", \"input_schema\": {}}], "
      "\"tool_choice\": {\"type\": \"none\"}, \"messages\": [{\"role\": \"user\", "
      "\"content\": [{\"type\": \"tool_result\", \"tool_use_id\": \"x\", \"content\": "
      "\"done\"}]}]}";
  rc = mkc_api_parse_anthropic(none, strlen(none), &r, why, sizeof why);
  CHECK(rc == 0 && r.n_tools == 0 && r.n_msgs == 1 && !strcmp(r.msgs[0].role, "tool") &&
            !strcmp(r.msgs[0].content, "done"),
        "Anthropic's tool_choice none: no tools offered; a user message of results alone is "
        "those results (%s)",
        rc ? why : "read");
  if (rc == 0) mkc_api_req_free(&r);
  const char *no_tools = "{\"max_tokens\": 8, \"tool_choice\": {\"type\": \"any\"}, \"messages\": "
                         "[{\"role\": \"user\", \"content\": \"a\"}]}";
  rc = mkc_api_parse_anthropic(no_tools, strlen(no_tools), &r, why, sizeof why);
  CHECK(rc == 0 && r.n_tools == 0,
        "Anthropic's tool_choice any without tools: nothing to choose, not refused (%s)",
        rc ? why : "read");
  if (rc == 0) mkc_api_req_free(&r);
  const char *think = "{\"max_tokens\": 8, \"thinking\": {\"type\": \"disabled\"}, \"messages\": "
                      "[{\"role\": \"user\", \"content\": \"a\"}]}";
  rc = mkc_api_parse_anthropic(think, strlen(think), &r, why, sizeof why);
  CHECK(rc == 0 && r.thinking == 0 && !r.thinking_budget && !r.unfollowed[0],
        "Anthropic's thinking disabled: read, to be followed where the template can (%s)",
        rc ? why : "read");
  if (rc == 0) mkc_api_req_free(&r);
  const char *count = "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}";
  rc = mkc_api_parse_anthropic_count(count, strlen(count), &r, why, sizeof why);
  CHECK(rc == 0 && r.max_tokens == -1 && r.counting,
        "Anthropic's count_tokens: max_tokens not required (%s)", rc ? why : "read");
  if (rc == 0) mkc_api_req_free(&r);
  static const struct {
    const char *json, *why;
  } BAD[] = {
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}", "max_tokens: required"},
      {"{\"max_tokens\": 0, \"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}",
       "max_tokens: required"},
      {"{\"max_tokens\": 4, \"messages\": [{\"role\": \"system\", \"content\": \"a\"}]}",
       "system is its own field"},
      {"{\"max_tokens\": 4, \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
       "\"image\"}]}]}",
       "only text, thinking, tool_use and tool_result blocks"},
      /* the client's index, though its tool result became a message of its own before it */
      {"{\"max_tokens\": 4, \"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": "
       "\"assistant\", \"content\": [{\"type\": \"tool_use\", \"name\": \"f\", \"input\": {}}]}, "
       "{\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"content\": \"x\"}, "
       "{\"type\": \"image\"}]}]}",
       "messages[2].content: only text, thinking, tool_use and tool_result blocks"},
      {"{\"max_tokens\": 4, \"tools\": [{\"name\": \"f\"}], \"messages\": [{\"role\": \"user\", "
       "\"content\": \"a\"}]}",
       "tools[0]: expected {\"name\", \"description\", \"input_schema\": an object}"},
      {"{\"max_tokens\": 4, \"tools\": [{\"type\": \"web_search_20250305\", \"name\": "
       "\"web_search\"}], \"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}",
       "tools[0]: web_search_20250305 is one of Anthropic's own tools"},
      {"{\"max_tokens\": 4, \"tools\": [{\"name\": \"f\", \"input_schema\": {}}], \"tool_choice\": "
       "{\"type\": \"any\"}, \"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}",
       "tool_choice: {\"type\": \"auto\"} or {\"type\": \"none\"}"},
      {"{\"max_tokens\": 4, \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
       "\"tool_use\", \"name\": \"f\", \"input\": {}}]}]}",
       "messages[0].content[0]: a tool_use block belongs in an assistant's message"},
      {"{\"max_tokens\": 4, \"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": "
       "\"assistant\", \"content\": [{\"type\": \"tool_use\", \"name\": \"f\", \"input\": 3}]}]}",
       "messages[1].content[0]: a tool_use block has a \"name\" and an object \"input\""},
      {"{\"max_tokens\": 4, \"thinking\": true, \"messages\": [{\"role\": \"user\", \"content\": "
       "\"a\"}]}",
       "thinking: expected {\"type\": \"enabled\" or \"disabled\"}"},
      {"{\"max_tokens\": 4, \"stop_sequences\": \"x\", \"messages\": [{\"role\": \"user\", "
       "\"content\": \"a\"}]}",
       "stop_sequences: expected a list"},
      {"{\"max_tokens\": 4, \"system\": 5, \"messages\": [{\"role\": \"user\", \"content\": "
       "\"a\"}]}",
       "system: expected a string or a list of text blocks"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++)
    CHECK(mkc_api_parse_anthropic(BAD[i].json, strlen(BAD[i].json), &r, why, sizeof why) == -1 &&
              strstr(why, BAD[i].why),
          "Anthropic's refused: %s (%s)", BAD[i].json, why);
}

/* OpenAI's Responses API read as its chat request: each kind of item, the fields converted. */
static void responses_requests(void) {
  mkc_api_req r;
  char why[300];
  const char *req =
      "{\"instructions\": \"Be brief.\", \"max_output_tokens\": 9, \"reasoning\": {\"effort\": "
      "\"low\"}, \"store\": true, \"input\": [{\"role\": \"developer\", \"content\": \"Dev.\"}, "
      "{\"type\": \"message\", \"role\": \"user\", \"content\": [{\"type\": \"input_text\", "
      "\"text\": \"Wea\"}, {\"type\": \"input_text\", \"text\": \"ther?\"}]}, {\"type\": "
      "\"reasoning\", \"summary\": [], \"content\": [{\"type\": \"reasoning_text\", \"text\": "
      "\"Call it.\"}]}, {\"type\": \"function_call\", \"call_id\": \"c1\", \"name\": \"get\", "
      "\"arguments\": \"{\\\"city\\\":\\\"Paris\\\"}\"}, {\"type\": \"function_call\", "
      "\"call_id\": \"c2\", \"name\": \"now\", \"arguments\": \"{}\"}, {\"type\": "
      "\"function_call_output\", \"call_id\": \"c1\", \"output\": \"21 C\"}, {\"type\": "
      "\"function_call_output\", \"call_id\": \"c2\", \"output\": [{\"type\": \"input_text\", "
      "\"text\": \"noon\"}]}, {\"role\": \"assistant\", \"content\": \"It is \"}, {\"type\": "
      "\"message\", \"role\": \"assistant\", \"content\": [{\"type\": \"output_text\", \"text\": "
      "\"21 C.\"}]}, {\"role\": \"user\", \"content\": \"Thanks\"}], \"tools\": [{\"type\": "
      "\"function\", \"name\": \"get\", \"parameters\": {\"type\": \"object\"}}, {\"type\": "
      "\"file_search\"}], \"tool_choice\": \"auto\"}";
  int rc = mkc_api_parse_responses(req, strlen(req), 0, 0, &r, why, sizeof why);
  CHECK(rc == 0 && r.responses && r.chat && r.n_msgs == 8 && !strcmp(r.msgs[0].role, "system") &&
            !strcmp(r.msgs[0].content, "Be brief.") && !strcmp(r.msgs[1].role, "system") &&
            !strcmp(r.msgs[1].content, "Dev.") && !strcmp(r.msgs[2].role, "user") &&
            !strcmp(r.msgs[2].content, "Weather?") && !strcmp(r.msgs[3].role, "assistant") &&
            r.msgs[3].reasoning && !strcmp(r.msgs[3].reasoning, "Call it.") &&
            r.msgs[3].n_calls == 2 && !strcmp(r.msgs[3].calls[0].name, "get") &&
            !strcmp(r.msgs[3].calls[0].arguments, "{\"city\": \"Paris\"}") &&
            !strcmp(r.msgs[3].calls[1].name, "now") && !strcmp(r.msgs[4].role, "tool") &&
            !strcmp(r.msgs[4].content, "21 C") && !strcmp(r.msgs[5].content, "noon") &&
            !strcmp(r.msgs[6].role, "assistant") && !strcmp(r.msgs[6].content, "It is 21 C.") &&
            !strcmp(r.msgs[7].content, "Thanks") && r.max_tokens == 9 && r.reasoning_effort &&
            !strcmp(r.reasoning_effort, "low") && r.n_tools == 1 &&
            strstr(r.tools[0], "\"function\": {\"name\": \"get\"") &&
            strstr(r.unfollowed, "store") && strstr(r.unfollowed, "tools that are not functions"),
        "Responses' request: instructions and a developer message as system ones, input_text "
        "parts joined, a reasoning item and two function_call items joined into one assistant "
        "message, function_call_outputs as tool messages, an easy and a typed assistant message "
        "joined, max_output_tokens, reasoning.effort, the function tool (file_search noted) (%s)",
        rc ? why : r.unfollowed);
  if (rc == 0) mkc_api_req_free(&r);
  /* a chat's own fields beside the Responses ones: input and max_output_tokens win */
  const char *dup = "{\"input\": [{\"role\": \"user\", \"content\": \"a\"}, {\"type\": "
                    "\"reasoning\", \"content\": [{\"text\": \"one\"}]}, {\"type\": "
                    "\"reasoning\", \"content\": [{\"text\": \"two\"}]}, {\"role\": "
                    "\"assistant\", \"content\": \"x\"}, {\"role\": \"user\", \"content\": "
                    "\"y\"}], \"messages\": [{\"role\": \"user\", \"content\": \"b\"}], "
                    "\"messages\": [{\"role\": \"user\", \"content\": \"c\"}], "
                    "\"max_tokens\": 3, \"max_tokens\": 4, \"max_completion_tokens\": 500, "
                    "\"reasoning_effort\": \"high\", \"reasoning\": {\"effort\": \"low\"}, "
                    "\"max_output_tokens\": 7}";
  rc = mkc_api_parse_responses(dup, strlen(dup), 0, 0, &r, why, sizeof why);
  CHECK(rc == 0 && r.n_msgs == 3 && !strcmp(r.msgs[0].content, "a") && r.max_tokens == 7 &&
            r.msgs[1].reasoning && !strcmp(r.msgs[1].reasoning, "two") &&
            !strcmp(r.msgs[1].content, "x") && r.reasoning_effort &&
            !strcmp(r.reasoning_effort, "low"),
        "Responses' request with chat fields beside (some twice): input over messages, "
        "max_output_tokens over max_tokens and max_completion_tokens, reasoning.effort over "
        "reasoning_effort, a turn's second reasoning item over its first (%s)",
        rc ? why : "read");
  if (rc == 0) mkc_api_req_free(&r);
  const char *fmt = "{\"input\": \"a\", \"response_format\": {\"type\": \"text\"}, "
                    "\"text\": {\"format\": {\"type\": \"json_schema\", "
                    "\"name\": \"n\", \"schema\": {\"type\": \"object\"}}}}";
  rc = mkc_api_parse_responses(fmt, strlen(fmt), 0, 0, &r, why, sizeof why);
  CHECK(rc == 0 && r.json_format && r.schema && r.n_msgs == 1 && !strcmp(r.msgs[0].role, "user"),
        "Responses' text.format json_schema: the answer constrained to the schema (%s)",
        rc ? why : "read");
  if (rc == 0) mkc_api_req_free(&r);
  const char *count = "{\"input\": \"a\"}";
  rc = mkc_api_parse_responses(count, strlen(count), 1, 0, &r, why, sizeof why);
  CHECK(rc == 0 && r.counting && r.responses, "Responses' input_tokens: counting set (%s)",
        rc ? why : "read");
  if (rc == 0) mkc_api_req_free(&r);
  static const struct {
    const char *json, *why;
  } BAD[] = {
      {"{\"input\": []}", "input: expected a string or a non-empty list of items"},
      {"{\"input\": \"a\", \"previous_response_id\": \"resp_1\"}", "previous_response_id"},
      {"{\"input\": \"a\", \"instructions\": 3}", "instructions: expected a string"},
      {"{\"input\": [{\"role\": \"critic\", \"content\": \"a\"}]}",
       "input[0].role: user, system, developer or assistant"},
      {"{\"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_file\"}]}]}",
       "input[0].content[0]: this model reads text only"},
      {"{\"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"output_text\", \"text\": "
       "\"a\"}]}]}",
       "input[0].content[0]: expected an input_text part"},
      {"{\"input\": [{\"type\": \"function_call_output\", \"output\": \"x\"}]}",
       "input[0]: a function_call_output has a string \"call_id\""},
      {"{\"input\": [3]}", "input[0]: expected an object"},
      {"{\"input\": \"a\", \"tools\": [{\"type\": \"function\", \"name\": \"f\"}], "
       "\"tool_choice\": {\"type\": \"function\", \"name\": \"f\"}}",
       "tool_choice: \"auto\" or \"none\""},
      {"{\"input\": [{\"role\": \"user\", \"content\": 5}]}",
       "input[0].content: expected a string or a list of parts"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++)
    CHECK(mkc_api_parse_responses(BAD[i].json, strlen(BAD[i].json), 0, 0, &r, why, sizeof why) ==
                  -1 &&
              strstr(why, BAD[i].why),
          "Responses' refused: %s (%s)", BAD[i].json, why);
}

/* Reads fd to its end into a string (malloc'd). */
static char *read_all(int fd) {
  size_t n = 0, cap = 1 << 16;
  char *buf = malloc(cap);
  ssize_t k;
  while (buf && (k = read(fd, buf + n, cap - n - 1)) > 0)
    if ((n += (size_t)k) + 1 == cap) buf = realloc(buf, cap *= 2);
  if (buf) buf[n] = '\0';
  return buf;
}

/* The Responses stream of an answer that reasons, replies and calls, on a socket pair: its
 * events in the protocol's order, each named as its type and numbered; its whole form the
 * same items. */
static void responses_answers(void) {
  int sv[2];
  if (!CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "a socket pair")) return;
  mkc_api_req r = {.chat = 1, .responses = 1, .stream = 1};
  mkc_tool_call call = {.name = "get", .arguments = "{\"city\":\"Paris\"}"};
  mkc_answer g = {.r = &r, .fd = sv[0], .model = "m", .created = 7, .split = 1, .n_ids = 5};
  snprintf(g.id, sizeof g.id, "9");
  g.reasoning = "Think.", g.reasoning_len = 6;
  g.calls.calls = &call, g.calls.n = 1;
  int rc = mkc_responses_stream_start(&g) || mkc_responses_delta(&g, 1, "Thi", 3) ||
           mkc_responses_delta(&g, 1, "nk.", 3) || mkc_responses_delta(&g, 0, "Hel", 3) ||
           mkc_responses_delta(&g, 0, "lo", 2) || mkc_responses_calls(&g) ||
           mkc_responses_stream_end(&g, 10, 4);
  close(sv[0]);
  char *text = read_all(sv[1]);
  close(sv[1]);
  static const char *const WANT[] = {"response.created",
                                     "response.in_progress",
                                     "response.output_item.added",
                                     "response.reasoning_text.delta",
                                     "response.reasoning_text.delta",
                                     "response.reasoning_text.done",
                                     "response.output_item.done",
                                     "response.output_item.added",
                                     "response.content_part.added",
                                     "response.output_text.delta",
                                     "response.output_text.delta",
                                     "response.output_text.done",
                                     "response.content_part.done",
                                     "response.output_item.done",
                                     "response.output_item.added",
                                     "response.function_call_arguments.delta",
                                     "response.function_call_arguments.done",
                                     "response.output_item.done",
                                     "response.completed"};
  int n = 0, order = 1, named = 1;
  cJSON *last = NULL;
  for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
    if (!strncmp(line, "event: ", 7)) {
      named &= n < 19 && !strcmp(line + 7, WANT[n]);
      continue;
    }
    if (strncmp(line, "data: ", 6)) continue;
    cJSON *o = cJSON_Parse(line + 6);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type"),
                *seq = cJSON_GetObjectItemCaseSensitive(o, "sequence_number");
    order &= n < 19 && cJSON_IsString(type) && !strcmp(type->valuestring, WANT[n]) &&
             cJSON_IsNumber(seq) && seq->valueint == n;
    n++;
    cJSON_Delete(last);
    last = o;
  }
  CHECK(rc == 0 && n == 19 && order && named,
        "Responses' stream: reasoning, message and call items each added, given their deltas "
        "and done, in order, named and numbered (%d events)",
        n);
  char *out = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(last, "response"), "output"));
  const char *want_out =
      "[{\"id\":\"rs_9\",\"type\":\"reasoning\",\"status\":\"completed\",\"summary\":[],"
      "\"content\":[{\"type\":\"reasoning_text\",\"text\":\"Think.\"}]},{\"id\":\"msg_9\",\"type\":"
      "\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":"
      "\"output_text\",\"text\":\"Hello\",\"annotations\":[],\"logprobs\":[]}]},{\"id\":\"fc_9_0\","
      "\"type\":\"function_call\",\"status\":\"completed\",\"call_id\":\"call_9_0\",\"name\":"
      "\"get\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]";
  CHECK(out && !strcmp(out, want_out), "... response.completed's output: the three items done (%s)",
        out ? out : "none");
  cJSON *whole = mkc_responses_object(&g, "Hello", 5, 10, 4);
  char *w = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(whole, "output"));
  const cJSON *u = cJSON_GetObjectItemCaseSensitive(whole, "usage");
  CHECK(w && !strcmp(w, want_out) &&
            cJSON_GetObjectItemCaseSensitive(u, "input_tokens")->valueint == 10 &&
            cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(u, "input_tokens_details"), "cached_tokens")
                    ->valueint == 4 &&
            cJSON_GetObjectItemCaseSensitive(u, "total_tokens")->valueint == 15 &&
            !strcmp(cJSON_GetObjectItemCaseSensitive(whole, "status")->valuestring, "completed"),
        "Responses' whole answer: the same items, usage 10 (4 cached) + 5");
  free(w), free(out), free(text);
  cJSON_Delete(whole), cJSON_Delete(last), cJSON_Delete(g.items);
  free(g.item_text);
}

/* A client's hang-up, on a socket pair: open, half-closed, closed. */
static void hang_ups(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    CHECK(0, "socketpair: %s", strerror(errno));
    return;
  }
  CHECK(!mkc_http_peer_gone(sv[0]), "a connected client is there");
  CHECK(write(sv[1], "x", 1) == 1 && !mkc_http_peer_gone(sv[0]),
        "a client that sends more is still there");
  shutdown(sv[1], SHUT_WR);
  CHECK(mkc_http_peer_gone(sv[0]), "a client that half-closes counts as gone");
  close(sv[1]);
  CHECK(mkc_http_peer_gone(sv[0]), "a client that closes is gone");
  close(sv[0]);
}

/* The embedding requests (serve/embed_api.h): each API's input forms and
 * options, and the refusals. */
static void embed_requests(void) {
  static const struct {
    int kind;
    const char *json, *want; /* want: "n=N texts ids t d b" summary, or the message's start */
  } CASES[] = {
      {MKC_EMBED_OLLAMA, "{\"model\":\"m\",\"input\":\"hi\"}", "n=1 T 1 0 0"},
      {MKC_EMBED_OLLAMA, "{\"input\":[\"a\",\"b\"],\"truncate\":false,\"dimensions\":8}",
       "n=2 TT 0 8 0"},
      {MKC_EMBED_OLLAMA, "{\"model\":\"m\"}", "n=0  1 0 0"},
      {MKC_EMBED_OLLAMA, "{\"input\":[1,2]}", "input[0]: expected a string"},
      {MKC_EMBED_OLLAMA, "{\"input\":\"x\",\"truncate\":1}", "truncate: expected true or false"},
      {MKC_EMBED_LEGACY, "{\"prompt\":\"hi\",\"options\":{}}", "n=1 T 0 0 0"},
      {MKC_EMBED_LEGACY, "{\"prompt\":\"\"}", "n=0  0 0 0"},
      {MKC_EMBED_LEGACY, "{\"prompt\":3}", "prompt: expected a string"},
      {MKC_EMBED_OPENAI, "{\"input\":\"hi\",\"encoding_format\":\"base64\"}", "n=1 T 0 0 1"},
      {MKC_EMBED_OPENAI, "{\"input\":[5,6,7]}", "n=1 3 0 0 0"},
      {MKC_EMBED_OPENAI, "{\"input\":[[5,6],[7],\"t\"],\"dimensions\":2}", "n=3 21T 0 2 0"},
      {MKC_EMBED_OPENAI, "{\"input\":[]}", "input: an empty list"},
      {MKC_EMBED_OPENAI, "{\"model\":\"m\"}", "input: required"},
      {MKC_EMBED_OPENAI, "{\"input\":[[5,-1]]}", "input[0][1]: expected a token id"},
      {MKC_EMBED_OPENAI, "{\"input\":[[]]}", "input[0]: an empty list of token ids"},
      {MKC_EMBED_OPENAI, "{\"input\":\"x\",\"encoding_format\":\"int8\"}",
       "encoding_format: expected"},
      {MKC_EMBED_OPENAI, "{\"input\":\"x\",\"dimensions\":0}", "dimensions: expected"},
      {MKC_EMBED_OPENAI, "[1]", "the body is not a JSON object"},
      {MKC_EMBED_OPENAI, "{", "the body is not JSON"},
  };
  for (size_t k = 0; k < sizeof CASES / sizeof *CASES; k++) {
    mkc_embed_req r;
    char why[200] = "", got[200];
    const char *j = CASES[k].json;
    if (mkc_embed_parse(j, strlen(j), CASES[k].kind, &r, why, sizeof why) == 0) {
      char forms[64] = "";
      for (int i = 0; i < r.n && i < 8; i++)
        snprintf(forms + strlen(forms), sizeof forms - strlen(forms), r.texts[i] ? "T" : "%d",
                 r.n_ids[i]);
      snprintf(got, sizeof got, "n=%d %s %d %d %d", r.n, forms, r.truncate, r.dimensions, r.base64);
      mkc_embed_req_free(&r);
    } else {
      snprintf(got, sizeof got, "%s", why);
    }
    CHECK(strncmp(got, CASES[k].want, strlen(CASES[k].want)) == 0, "embedding request %s: %s", j,
          got);
  }
  /* OpenAI's base64: little-endian float32 bytes; 1.0f is 00 00 80 3f */
  float v[2] = {1.0f, -2.5f};
  char *b = mkc_embed_base64(v, 2);
  CHECK(b && strcmp(b, "AACAPwAAIMA=") == 0, "base64 of (1, -2.5): %s", b ? b : "(null)");
  free(b);
}

int main(void) {
  embed_requests();
  framing();
  query();
  file_names();
  requests();
  keys();
  anthropic_requests();
  responses_requests();
  responses_answers();
  hang_ups();
  return check_done();
}
