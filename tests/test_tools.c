/* Tools (function calling) in the chat families that have them, qwen2.5,
 * qwen3 and llama3.1: the JSON written into prompts (model/tojson.h)
 * against Python's json.dumps (ensure_ascii=False, as transformers' tojson
 * filter calls it; indent=4 too); conversations with tool definitions,
 * calls and results rendered as jinja2 renders Qwen2.5-7B-Instruct's,
 * Qwen3-0.6B's and Llama-3.2-3B-Instruct's templates (llama.cpp
 * models/templates); the order such a conversation may take, and the
 * families and templates that refuse tools; the calls read back from a
 * reply (model/tool_calls.h); and mkc serve's answers with calls (OpenAI's
 * tool_calls and finish_reason, ollama's; whole and streamed, a stream never
 * showing a call's text as content) read back from the socket. */
#include "check.h"
#include "serve_answers.h"
#include "model/chat_template.h"
#include "model/tojson.h"
#include "model/tool_calls.h"
#include "util/json_text.h"
#include "chat_templates.h"

/* ---- tojson: Python's json.dumps(json.loads(IN), ensure_ascii=False) ---- */

static void expect_json(const char *in, const char *want, const char *what) {
  cJSON *v = cJSON_Parse(in);
  char *got = v ? mkc_tojson(v) : NULL;
  if (!CHECK(got && strcmp(got, want) == 0, "tojson: %s", what)) {
    printf("     | expected %s\n     | got      %s\n", want, got ? got : "(NULL)");
  }
  free(got);
  cJSON_Delete(v);
}

static void test_tojson(void) {
  expect_json("[0.1,1e-05,1e16,1.5e300,123456789.125,1e-7,0.0001,2.5e-5,100.5,-3,5e-324,"
              "1.7976931348623157e308,0.30000000000000004,-2.5e-10,1234567890123456.5,0,7]",
              "[0.1, 1e-05, 1e+16, 1.5e+300, 123456789.125, 1e-07, 0.0001, 2.5e-05, 100.5, -3, "
              "5e-324, 1.7976931348623157e+308, 0.30000000000000004, -2.5e-10, "
              "1234567890123456.5, 0, 7]",
              "numbers as repr() writes floats, whole ones as integers");
  expect_json(
      "{\"ctl\": \"a\\u0001\\u001f\\u007f \\u00e9 \\ud83d\\ude00 \\\\ / \\\"\\b\\f\\r\\t\\n\","
      "\"o\":{\"b\":null,\"c\":true,\"d\":false,\"e\":[],\"f\":{},\"g\":[1,[2,{}]]}}",
      "{\"ctl\": \"a\\u0001\\u001f\x7f \xc3\xa9 \xf0\x9f\x98\x80 \\\\ / \\\"\\b\\f\\r\\t\\n\", "
      "\"o\": {\"b\": null, \"c\": true, \"d\": false, \"e\": [], \"f\": {}, \"g\": [1, [2, "
      "{}]]}}",
      "strings (controls escaped, the rest as is), literals, nesting, empty lists");
  expect_json("{\"z\": 1, \"a\": 2}", "{\"z\": 1, \"a\": 2}", "keys keep their order");
}

/* ---- JSON as text (util/json_text.h): Python's json.dumps(json.loads(IN),
 * ensure_ascii=False[, indent=4]) ---- */

static void expect_python(const char *in, int indent, const char *want, const char *what) {
  char *got = mkc_json_python(in, strlen(in), indent);
  if (!CHECK(got && strcmp(got, want) == 0, "json text: %s", what))
    printf("     | expected %s\n     | got      %s\n", want, got ? got : "(NULL)");
  free(got);
}

static void test_json_text(void) {
  expect_python("[0.1,1e-05,1e16,1.5e300,123456789.125,1e-7,0.0001,2.5e-5,100.5,-3,5e-324,"
                "1.7976931348623157e308,0.30000000000000004,-2.5e-10,1234567890123456.5,0,7,1.0,"
                "-0,-0.0,1100339658373689424,1E2,1e400]",
                0,
                "[0.1, 1e-05, 1e+16, 1.5e+300, 123456789.125, 1e-07, 0.0001, 2.5e-05, 100.5, -3, "
                "5e-324, 1.7976931348623157e+308, 0.30000000000000004, -2.5e-10, "
                "1234567890123456.5, 0, 7, 1.0, 0, -0.0, 1100339658373689424, 100.0, Infinity]",
                "integers as written (19 digits kept, -0 as 0), floats as repr() (1.0 stays "
                "1.0, 1e400 is Infinity)");
  const char *escaped = "{\"a\\u0062\": \"\\u00e9\\ud83d\\ude00\\/\\\"\\\\\\b\\f\\n\\r\\t\\u0001"
                        "\\u007f\", \"k\": [ ], \"o\" : { } }";
  expect_python(escaped, 0,
                "{\"ab\": \"\xc3\xa9\xf0\x9f\x98\x80/\\\"\\\\\\b\\f\\n\\r\\t\\u0001\x7f\", "
                "\"k\": [], \"o\": {}}",
                "escapes decoded (a surrogate pair to one character) and written as Python does");
  expect_python(escaped, 4,
                "{\n    \"ab\": \"\xc3\xa9\xf0\x9f\x98\x80/\\\"\\\\\\b\\f\\n\\r\\t\\u0001\x7f"
                "\",\n    \"k\": [],\n    \"o\": {}\n}",
                "indent=4: one item a line, empty ones inline");
  const char *spaced = " { \"a\" : [ 1.50 , \"x y\" ] , \"b\": 1100339658373689424 } ";
  char *c = mkc_json_compact(spaced, strlen(spaced));
  CHECK(c && strcmp(c, "{\"a\":[1.50,\"x y\"],\"b\":1100339658373689424}") == 0,
        "json text: compact keeps numbers and strings as written (%s)", c ? c : "NULL");
  free(c);
  const char *doc = "{\"m\": [{\"x\": 1}, {\"t\": [5, {\"f\": {\"a\": {\"q\": 2 }}}]}]}";
  const char *at = NULL;
  size_t len = 0;
  CHECK(mkc_json_at(doc, strlen(doc), "m/1/t/1/f/a", &at, &len) && len == 9 &&
            memcmp(at, "{\"q\": 2 }", 9) == 0,
        "json text: a value found by its path");
  CHECK(!mkc_json_at(doc, strlen(doc), "m/2", &at, &len) &&
            !mkc_json_at(doc, strlen(doc), "m/0/y", &at, &len),
        "json text: a path to nothing finds nothing");
  static const char *const BAD[] = {"", "{", "[1,]", "{\"a\" 1}", "1 2", "\"\x01\"", "01x", "tru"};
  int refused = 1;
  for (size_t k = 0; k < sizeof BAD / sizeof *BAD; k++) {
    char *p = mkc_json_python(BAD[k], strlen(BAD[k]), 0),
         *q = mkc_json_compact(BAD[k], strlen(BAD[k]));
    refused &= !p && !q;
    free(p), free(q);
  }
  CHECK(refused, "json text: what is not one JSON value is refused");
  /* escapes JSON has not: a backslash before a NUL byte (the http fuzzer's: compact's text had held
   * the NUL, and a C string cut it short), before another letter, \u without 4 hex digits, a
   * backslash last */
  static const char ESC[][16] = {"{\"a\\\0b\": 1}", "[\"\\q\"]", "\"\\u12\"", "\"\\u12g4\"",
                                 "\"a\\"};
  refused = 1;
  for (size_t k = 0; k < sizeof ESC / sizeof *ESC; k++) {
    size_t n = k == 0 ? 11 : strlen(ESC[k]); /* the first holds its NUL */
    char *p = mkc_json_python(ESC[k], n, 0), *q = mkc_json_compact(ESC[k], n);
    refused &= !p && !q && mkc_json_skip(ESC[k], n) == 0;
    free(p), free(q);
  }
  CHECK(refused, "json text: escapes JSON has not are refused (\\ before a NUL, \\q, short \\u)");
  const char *good = "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\"]";
  char *gc = mkc_json_compact(good, strlen(good));
  CHECK(gc && strcmp(gc, good) == 0, "json text: every escape JSON has is kept (%s)",
        gc ? gc : "refused");
  free(gc);
}

/* ---- rendering ---- */

/* Qwen2.5-7B-Instruct's and Qwen3-0.6B's templates with the two TOOLS (jinja2, tojson as
 * transformers defines it): the system turn's tools, after its text. */
static const char TOOLS_BLOCK[] =
    "# Tools\n"
    "\n"
    "You may call one or more functions to assist with the user query.\n"
    "\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Current "
    "weather \\\"now\\\"\\nin a city\", \"parameters\": {\"type\": \"object\", \"properties\": "
    "{\"city\": {\"type\": \"string\"}, \"unit\": {\"type\": \"string\", \"enum\": [\"celsius\", "
    "\"fahrenheit\"]}, \"days\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 1.5}}, "
    "\"required\": [\"city\"]}}}\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"now\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {}}}}\n"
    "</tools>\n"
    "\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n"
    "<tool_call>\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
    "</tool_call><|im_end|>\n";
/* ... and CONVERSATION after the system turn, the cue last (the same in both). */
static const char CONVERSATION_TEXT[] =
    "<|im_start|>user\n"
    "Weather in Paris and Zürich?<|im_end|>\n"
    "<|im_start|>assistant\n"
    "<tool_call>\n"
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
    "</tool_call>\n"
    "<tool_call>\n"
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"celsius\"}}\n"
    "</tool_call><|im_end|>\n"
    "<|im_start|>user\n"
    "<tool_response>\n"
    "{\"temp\": 21}\n"
    "</tool_response>\n"
    "<tool_response>\n"
    "{\"temp\": 17}\n"
    "</tool_response><|im_end|>\n"
    "<|im_start|>assistant\n"
    "21 and 17.<|im_end|>\n"
    "<|im_start|>user\n"
    "And now?<|im_end|>\n"
    "<|im_start|>assistant\n";
/* Qwen3-0.6B's with REASONED_CALL, and CALL_THEN_REPLY (no tools). */
static const char Q3_REASONED_CALL[] = "<|im_start|>user\n"
                                       "Q<|im_end|>\n"
                                       "<|im_start|>assistant\n"
                                       "<think>\n"
                                       "Look it up.\n"
                                       "</think>\n"
                                       "\n"
                                       "Checking.\n"
                                       "<tool_call>\n"
                                       "{\"name\": \"now\", \"arguments\": {}}\n"
                                       "</tool_call><|im_end|>\n"
                                       "<|im_start|>user\n"
                                       "<tool_response>\n"
                                       "12:00\n"
                                       "</tool_response><|im_end|>\n"
                                       "<|im_start|>assistant\n";
static const char Q3_CALL_THEN_REPLY[] = "<|im_start|>user\n"
                                         "Q<|im_end|>\n"
                                         "<|im_start|>assistant\n"
                                         "Checking.\n"
                                         "<tool_call>\n"
                                         "{\"name\": \"now\", \"arguments\": {}}\n"
                                         "</tool_call><|im_end|>\n"
                                         "<|im_start|>user\n"
                                         "<tool_response>\n"
                                         "12:00\n"
                                         "</tool_response><|im_end|>\n"
                                         "<|im_start|>assistant\n"
                                         "<think>\n"
                                         "\n"
                                         "</think>\n"
                                         "\n"
                                         "Noon.<|im_end|>\n"
                                         "<|im_start|>assistant\n";

/* Llama-3.2-3B-Instruct's template (jinja2, no strftime_now: the date its fallback) with
 * LLAMA_CONVERSATION: the first user turn's opening with the two TOOLS, ... */
static const char LLAMA_TOOLS[] =
    "<|start_header_id|>user<|end_header_id|>\n"
    "\n"
    "Given the following functions, please respond with a JSON for a function call with its proper "
    "arguments that best answers the given prompt.\n"
    "\n"
    "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name "
    "and its value}.Do not use variables.\n"
    "\n"
    "{\n"
    "    \"type\": \"function\",\n"
    "    \"function\": {\n"
    "        \"name\": \"get_weather\",\n"
    "        \"description\": \"Current weather \\\"now\\\"\\nin a city\",\n"
    "        \"parameters\": {\n"
    "            \"type\": \"object\",\n"
    "            \"properties\": {\n"
    "                \"city\": {\n"
    "                    \"type\": \"string\"\n"
    "                },\n"
    "                \"unit\": {\n"
    "                    \"type\": \"string\",\n"
    "                    \"enum\": [\n"
    "                        \"celsius\",\n"
    "                        \"fahrenheit\"\n"
    "                    ]\n"
    "                },\n"
    "                \"days\": {\n"
    "                    \"type\": \"integer\",\n"
    "                    \"minimum\": 0,\n"
    "                    \"maximum\": 1.5\n"
    "                }\n"
    "            },\n"
    "            \"required\": [\n"
    "                \"city\"\n"
    "            ]\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n"
    "{\n"
    "    \"type\": \"function\",\n"
    "    \"function\": {\n"
    "        \"name\": \"now\",\n"
    "        \"parameters\": {\n"
    "            \"type\": \"object\",\n"
    "            \"properties\": {}\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n";
/* ... and the turns after the first user message's text (the same with tools or without). */
static const char LLAMA_TURNS[] =
    "<|start_header_id|>assistant<|end_header_id|>\n"
    "\n"
    "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Zürich\", \"unit\": "
    "\"celsius\"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n"
    "\n"
    "\"{\\\"temp\\\": 17}\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
    "\n"
    "17 degrees.<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
    "\n"
    "And now?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
    "\n";

/* openai/gpt-oss-120b's template (jinja2; strftime_now 2026-12-02) with HARMONY_TOOLS,
 * then with HARMONY_ODD_TOOLS: the developer turn's tools, between "# Tools\n\n" and <|end|>. */
static const char HARMONY_NAMESPACE[] =
    "## functions\n"
    "\n"
    "namespace functions {\n"
    "\n"
    "// Current weather\n"
    "type get_weather = (_: {\n"
    "// The city\n"
    "city: string,\n"
    "unit?: \"celsius\" | \"fahrenheit\", // default: celsius,\n"
    "days?: number, // default: 1,\n"
    "ratio?: number,\n"
    "verbose?: boolean, // default: false,\n"
    "tags?: string[],\n"
    "points?: {\n"
    "x: \n"
    "                number}[],\n"
    "where?: {\n"
    "lat: \n"
    "                number, lon?: \n"
    "                number},\n"
    "note?: string | null,\n"
    "either?: string | null,\n"
    "pick?: string// a name | \n"
    "number,\n"
    "anything?: any,\n"
    "}) => any;\n"
    "\n"
    "// The time\n"
    "type now = () => any;\n"
    "\n"
    "// Ping\n"
    "type ping = () => any;\n"
    "\n"
    "} // namespace functions";
static const char HARMONY_ODD_NAMESPACE[] = "## functions\n"
                                            "\n"
                                            "namespace functions {\n"
                                            "\n"
                                            "// F\n"
                                            "type f = (_: {\n"
                                            "a: string                    // default: \"x\" | \n"
                                            "number// n                    // default: 3,\n"
                                            "b: number[][],\n"
                                            "c?: any[],\n"
                                            "d?: object[] | null,\n"
                                            "e?: object,\n"
                                            "g?: {\n"
                                            "h?: \n"
                                            "                {\n"
                                            "i?: \n"
                                            "                boolean}},\n"
                                            "j?: object | \n"
                                            "string,\n"
                                            "// kind\n"
                                            "k?: \"p\" | \"q\", // default: p,\n"
                                            "l?: number,\n"
                                            "m?: any[],\n"
                                            "n?: string, // default: \"z\",\n"
                                            "o?: string// default: w,\n"
                                            "}) => any;\n"
                                            "\n"
                                            "} // namespace functions";
/* ... and HARMONY_CONVERSATION with the tool now, then its first three messages. */
static const char HARMONY_RENDERED[] =
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\n"
    "Current date: 2026-12-02\n"
    "\n"
    "Reasoning: medium\n"
    "\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message.\n"
    "Calls to these tools must go to the commentary channel: "
    "'functions'.<|end|><|start|>developer<|message|># Instructions\n"
    "\n"
    "Be brief.\n"
    "\n"
    "# Tools\n"
    "\n"
    "## functions\n"
    "\n"
    "namespace functions {\n"
    "\n"
    "// The time\n"
    "type now = () => any;\n"
    "\n"
    "} // namespace functions<|end|><|start|>user<|message|>Weather?<|end|><|start|>assistant "
    "to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": "
    "\"Paris\"}<|call|><|start|>functions.get_weather "
    "to=assistant<|channel|>commentary<|message|>\"{\\\"temp\\\": "
    "21}\"<|end|><|start|>assistant<|channel|>final<|message|>21 "
    "C.<|end|><|start|>user<|message|>Thanks<|end|><|start|>assistant";
static const char HARMONY_RENDERED_CALL[] =
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\n"
    "Current date: 2026-12-02\n"
    "\n"
    "Reasoning: medium\n"
    "\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message.\n"
    "Calls to these tools must go to the commentary channel: "
    "'functions'.<|end|><|start|>developer<|message|># Tools\n"
    "\n"
    "## functions\n"
    "\n"
    "namespace functions {\n"
    "\n"
    "// The time\n"
    "type now = () => any;\n"
    "\n"
    "} // namespace "
    "functions<|end|><|start|>user<|message|>Weather?<|end|><|start|>assistant<|channel|>analysis<|"
    "message|>Need weather.<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary "
    "json<|message|>{\"city\": \"Paris\"}<|call|><|start|>functions.get_weather "
    "to=assistant<|channel|>commentary<|message|>\"{\\\"temp\\\": 21}\"<|end|><|start|>assistant";
/* The tools as a client sends them. */
static const char *const HARMONY_TOOLS[] = {
    "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Current "
    "weather\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\","
    "\"description\":\"The "
    "city\"},\"unit\":{\"type\":\"string\",\"enum\":[\"celsius\",\"fahrenheit\"],\"default\":"
    "\"celsius\"},\"days\":{\"type\":\"integer\",\"default\":1},\"ratio\":{\"type\":\"number\"},"
    "\"verbose\":{\"type\":\"boolean\",\"default\":false},\"tags\":{\"type\":\"array\",\"items\":{"
    "\"type\":\"string\"}},\"points\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"x\":{\"type\":\"number\"}},\"required\":[\"x\"]}},\"where\":{\"type\":"
    "\"object\",\"properties\":{\"lat\":{\"type\":\"number\"},\"lon\":{\"type\":\"number\","
    "\"description\":\"deg\"}},\"required\":[\"lat\"]},\"note\":{\"type\":\"string\",\"nullable\":"
    "true},\"either\":{\"type\":[\"string\",\"null\"]},\"pick\":{\"oneOf\":[{\"type\":\"string\","
    "\"description\":\"a "
    "name\"},{\"type\":\"integer\"}]},\"anything\":{}},\"required\":[\"city\"]}}}",
    "{\"type\":\"function\",\"function\":{\"name\":\"now\",\"description\":\"The "
    "time\",\"parameters\":{\"type\":\"object\",\"properties\":{}}}}",
    "{\"type\":\"function\",\"function\":{\"name\":\"ping\",\"description\":\"Ping\"}}"};
static const char *const HARMONY_ODD_TOOLS[] = {
    "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"F\",\"parameters\":{"
    "\"type\":\"object\",\"properties\":{\"a\":{\"oneOf\":[{\"type\":\"string\",\"default\":\"x\"},"
    "{\"type\":\"integer\",\"description\":\"n\",\"default\":3}]},\"b\":{\"type\":\"array\","
    "\"items\":{\"type\":\"array\",\"items\":{\"type\":\"number\"}}},\"c\":{\"type\":\"array\"},"
    "\"d\":{\"type\":\"array\",\"items\":{\"type\":\"object\"},\"nullable\":true},\"e\":{\"type\":"
    "\"object\"},\"g\":{\"type\":\"object\",\"properties\":{\"h\":{\"type\":\"object\","
    "\"properties\":{\"i\":{\"type\":\"boolean\"}}}}},\"j\":{\"oneOf\":[{\"type\":\"object\"},{"
    "\"type\":\"string\"}]},\"k\":{\"type\":\"string\",\"enum\":[\"p\",\"q\"],\"description\":"
    "\"kind\",\"default\":\"p\"},\"l\":{\"type\":[\"number\"]},\"m\":{\"type\":\"array\",\"items\":"
    "{\"type\":\"object\",\"properties\":{\"aaaaaaaaaaaa\":{\"type\":\"string\"},"
    "\"bbbbbbbbbbbbbbbb\":{\"type\":\"string\"}}}},\"n\":{\"type\":\"string\",\"default\":\"z\"},"
    "\"o\":{\"oneOf\":[{\"type\":\"string\"}],\"default\":\"w\"}},\"required\":[\"a\",\"b\"]}}}"};

/* The tools, as a client sends them (compact, so tojson's spacing shows). */
static const char *const TOOLS_JSON[] = {
    "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Current "
    "weather \\\"now\\\"\\nin a city\",\"parameters\":{\"type\":\"object\",\"properties\":{"
    "\"city\":{\"type\":\"string\"},\"unit\":{\"type\":\"string\",\"enum\":[\"celsius\","
    "\"fahrenheit\"]},\"days\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1.5}},"
    "\"required\":[\"city\"]}}}",
    "{\"type\":\"function\",\"function\":{\"name\":\"now\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{}}}}"};

static const mkc_chat_call WEATHER[] = {
    {"get_weather", "{\"city\": \"Paris\"}"},
    {"get_weather", "{\"city\": \"Zürich\", \"unit\": \"celsius\"}"}};
static const mkc_chat_call NOW[] = {{"now", "{}"}};

/* system, a question, two calls, their results, a reply, a question */
static const mkc_chat_msg CONVERSATION[] = {
    {.role = "system", .content = "Be brief."},
    {.role = "user", .content = "Weather in Paris and Zürich?"},
    {.role = "assistant", .content = "", .calls = WEATHER, .n_calls = 2},
    {.role = "tool", .content = "{\"temp\": 21}"},
    {.role = "tool", .content = "{\"temp\": 17}"},
    {.role = "assistant", .content = "21 and 17."},
    {.role = "user", .content = "And now?"},
};
#define N_CONVERSATION 7
/* a reply that reasons, says something and calls after the last question */
static const mkc_chat_msg REASONED_CALL[] = {
    {.role = "user", .content = "Q"},
    {.role = "assistant",
     .content = "<think>\nLook it up.\n</think>\n\nChecking.",
     .calls = NOW,
     .n_calls = 1},
    {.role = "tool", .content = "12:00"},
};
/* a call without reasoning, its result, then the last reply */
static const mkc_chat_msg CALL_THEN_REPLY[] = {
    {.role = "user", .content = "Q"},
    {.role = "assistant", .content = "Checking.", .calls = NOW, .n_calls = 1},
    {.role = "tool", .content = "12:00"},
    {.role = "assistant", .content = "Noon."},
};

/* system, a question, a call, its result, a padded reply (trimmed), a question */
static const mkc_chat_call ZURICH[] = {
    {"get_weather", "{\"city\": \"Zürich\", \"unit\": \"celsius\"}"}};
static const mkc_chat_msg LLAMA_CONVERSATION[] = {
    {.role = "system", .content = "Be brief."},
    {.role = "user", .content = "Weather in Zürich?"},
    {.role = "assistant", .content = "", .calls = ZURICH, .n_calls = 1},
    {.role = "tool", .content = "{\"temp\": 17}"},
    {.role = "assistant", .content = " 17 degrees. "},
    {.role = "user", .content = "And now?"},
};

static void expect_render(int family, const mkc_chat_msg *msgs, int n, const mkc_chat_opts *o,
                          const char *want, const char *what) {
  char *got = mkc_chat_render_with(family, msgs, n, 1, o);
  if (!CHECK(got && strcmp(got, want) == 0, "%s", what))
    printf("     | expected %s\n     | got      %s\n", want, got ? got : "(NULL)");
  free(got);
}

static void test_render(void) {
  char *tools[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    cJSON *v = cJSON_Parse(TOOLS_JSON[k]);
    tools[k] = mkc_tojson(v);
    cJSON_Delete(v);
  }
  mkc_chat_opts with = {.tools = (const char *const *)tools, .n_tools = 2};
  char want[8192];
  snprintf(want, sizeof want, "<|im_start|>system\nBe brief.\n\n%s%s", TOOLS_BLOCK,
           CONVERSATION_TEXT);
  expect_render(MKC_CHAT_QWEN25, CONVERSATION, N_CONVERSATION, &with, want,
                "qwen2.5: tools after the system text, calls, results as one user turn");
  expect_render(MKC_CHAT_QWEN3, CONVERSATION, N_CONVERSATION, &with, want,
                "qwen3: the same conversation renders the same");
  snprintf(want, sizeof want,
           "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
           "assistant.\n\n%s%s",
           TOOLS_BLOCK, CONVERSATION_TEXT);
  expect_render(MKC_CHAT_QWEN25, CONVERSATION + 1, N_CONVERSATION - 1, &with, want,
                "qwen2.5: tools without a system message: the template's own text first");
  snprintf(want, sizeof want, "<|im_start|>system\n%s%s", TOOLS_BLOCK, CONVERSATION_TEXT);
  expect_render(MKC_CHAT_QWEN3, CONVERSATION + 1, N_CONVERSATION - 1, &with, want,
                "qwen3: tools without a system message: the tools alone");
  snprintf(want, sizeof want, "<|im_start|>system\nBe brief.<|im_end|>\n%s", CONVERSATION_TEXT);
  expect_render(MKC_CHAT_QWEN25, CONVERSATION, N_CONVERSATION, NULL, want,
                "qwen2.5: calls and results without tools offered (the system turn plain)");
  expect_render(MKC_CHAT_QWEN3, REASONED_CALL, 3, NULL, Q3_REASONED_CALL,
                "qwen3: a reply with reasoning after the last question keeps it, its text and "
                "call after");
  expect_render(MKC_CHAT_QWEN3, CALL_THEN_REPLY, 4, NULL, Q3_CALL_THEN_REPLY,
                "qwen3: a call without reasoning is plain; the last reply gets the empty block");
  /* llama3.1 */
  const char *ipython_system = "<|start_header_id|>system<|end_header_id|>\n\nEnvironment: "
                               "ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 "
                               "Jul 2024\n\n";
  snprintf(want, sizeof want, "%sBe brief.<|eot_id|>%sWeather in Zürich?<|eot_id|>%s",
           ipython_system, LLAMA_TOOLS, LLAMA_TURNS);
  expect_render(MKC_CHAT_LLAMA31, LLAMA_CONVERSATION, 6, &with, want,
                "llama3.1: Environment: ipython, the tools indented in the first user turn, the "
                "call as the reply's JSON, the result an ipython turn holding a JSON string");
  snprintf(want, sizeof want, "%s<|eot_id|>%sWeather in Zürich?<|eot_id|>%s", ipython_system,
           LLAMA_TOOLS, LLAMA_TURNS);
  expect_render(MKC_CHAT_LLAMA31, LLAMA_CONVERSATION + 1, 5, &with, want,
                "llama3.1: tools without a system message");
  snprintf(want, sizeof want,
           "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December "
           "2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>"
           "\n\nWeather in Zürich?<|eot_id|>%s",
           LLAMA_TURNS);
  expect_render(MKC_CHAT_LLAMA31, LLAMA_CONVERSATION + 1, 5, NULL, want,
                "llama3.1: a call and its result without tools offered");
  check_stderr_begin();
  char *none = mkc_chat_render_with(MKC_CHAT_LLAMA31, LLAMA_CONVERSATION, 1, 1, &with);
  char *err = check_stderr_end();
  CHECK(!none && err &&
            strstr(err, "tools: the llama3.1 chat template puts them in the first user "
                        "message, and there is none"),
        "llama3.1: tools and no user message: refused, as the template raises");
  free(none), free(err);
  for (int k = 0; k < 2; k++) free(tools[k]);
}

/* texts[0..n) as serve gives them to the template: each written by tojson. */
static char **tojson_all(const char *const *texts, int n) {
  char **out = calloc((size_t)n, sizeof *out);
  for (int k = 0; out && k < n; k++) {
    cJSON *v = cJSON_Parse(texts[k]);
    out[k] = mkc_tojson(v);
    cJSON_Delete(v);
  }
  return out;
}

static void free_all(char **texts, int n) {
  for (int k = 0; texts && k < n; k++) free(texts[k]);
  free(texts);
}

static const mkc_chat_call CLOCK[] = {{"now", "{}"}};
/* Qwen3-0.6B's template (jinja2) with reasoning_content given apart. */
static const char Q3_REASONING_APART[] =
    "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\nLook it up.\n</think>\n\n"
    "Checking.\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
    "<|im_start|>user\n<tool_response>\n12:00\n</tool_response><|im_end|>\n<|im_start|>"
    "assistant\n<think>\n\n</think>\n\nNoon.<|im_end|>\n<|im_start|>assistant\n";
static const mkc_chat_call PARIS[] = {{"get_weather", "{\"city\": \"Paris\"}"}};
/* system, a question, a call with text (analysis), its result, a reply, thanks */
static const mkc_chat_msg HARMONY_CONVERSATION[] = {
    {.role = "system", .content = "Be brief."},
    {.role = "user", .content = "Weather?"},
    {.role = "assistant", .content = "Need weather.", .calls = PARIS, .n_calls = 1},
    {.role = "tool", .content = "{\"temp\": 21}"},
    {.role = "assistant", .content = "21 C."},
    {.role = "user", .content = "Thanks"},
};

static void test_render_harmony(void) {
  const char *const system = "<|start|>system<|message|>You are ChatGPT, a large language model "
                             "trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: "
                             "2026-12-02\n\nReasoning: medium\n\n# Valid channels: analysis, "
                             "commentary, final. Channel must be included for every message.\n"
                             "Calls to these tools must go to the commentary channel: "
                             "'functions'.<|end|><|start|>developer<|message|># Tools\n\n";
  const mkc_chat_msg q[] = {{.role = "user", .content = "Q"}};
  static const struct {
    const char *const *tools;
    int n;
    const char *namespace, *what;
  } SETS[] = {{HARMONY_TOOLS, 3, HARMONY_NAMESPACE,
               "gpt-oss: the tools as TypeScript (strings, enums, defaults, numbers, arrays, "
               "nested objects, nullable, type lists, oneOf, none; no parameters)"},
              {HARMONY_ODD_TOOLS, 1, HARMONY_ODD_NAMESPACE,
               "gpt-oss: the template's quirks (oneOf defaults, arrays of arrays, long item "
               "types as any[], nested objects' newlines, a oneOf with an object not any)"}};
  char want[8192];
  for (size_t k = 0; k < sizeof SETS / sizeof *SETS; k++) {
    char **tools = tojson_all(SETS[k].tools, SETS[k].n);
    mkc_chat_opts o = {.tools = (const char *const *)tools, .n_tools = SETS[k].n};
    snprintf(want, sizeof want, "%s%s<|end|><|start|>user<|message|>Q<|end|><|start|>assistant",
             system, SETS[k].namespace);
    expect_render(MKC_CHAT_GPT_OSS, q, 1, &o, want, SETS[k].what);
    free_all(tools, SETS[k].n);
  }
  /* an item type of 43 characters and 63 bytes: not "long" (Jinja counts characters) */
  const char *const cyrillic[] = {
      "{\"type\":\"function\",\"function\":{\"name\":\"g\",\"description\":\"G\",\"parameters\":"
      "{\"type\":\"object\",\"properties\":{\"paths\":{\"type\":\"array\",\"items\":{\"oneOf\":[{"
      "\"type\":\"string\",\"description\":\"Путь к файлу на "
      "диске\"},{\"type\":\"number\"}]}}}}}}"};
  char **g = tojson_all(cyrillic, 1);
  mkc_chat_opts og = {.tools = (const char *const *)g, .n_tools = 1};
  snprintf(want, sizeof want,
           "%s## functions\n\nnamespace functions {\n\n// G\ntype g = (_: {\npaths?: string// Путь "
           "к файлу на диске | \nnumber[],\n}) => any;\n\n} // namespace functions<|end|><|start|>"
           "user<|message|>Q<|end|><|start|>assistant",
           system);
  expect_render(MKC_CHAT_GPT_OSS, q, 1, &og, want,
                "gpt-oss: an item type's length in characters, as Jinja counts (not bytes)");
  free_all(g, 1);
  /* properties as a list, not an object (a fuzzer's find: their names were NULL): read as none,
   * at the top and nested, where the template would fail to walk them */
  const char *const listed[] = {
      "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"F\",\"parameters\":"
      "{\"type\":\"object\",\"properties\":[\"number\",\"null\"],\"required\":[\"a\"]}}}",
      "{\"type\":\"function\",\"function\":{\"name\":\"h\",\"description\":\"H\",\"parameters\":"
      "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"object\",\"properties\":[{"
      "\"type\":\"string\"}]}}}}}"};
  char **l = tojson_all(listed, 2);
  mkc_chat_opts ol = {.tools = (const char *const *)l, .n_tools = 2};
  snprintf(
      want, sizeof want,
      "%s## functions\n\nnamespace functions {\n\n// F\ntype f = () => any;\n\n// H\ntype h "
      "= (_: {\nx?: object,\n}) => any;\n\n} // namespace functions<|end|><|start|>user<|message|>"
      "Q<|end|><|start|>assistant",
      system);
  expect_render(MKC_CHAT_GPT_OSS, q, 1, &ol, want,
                "gpt-oss: properties given as a list read as none (the function's, an object's)");
  free_all(l, 2);
  char **now = tojson_all(HARMONY_TOOLS + 1, 1);
  mkc_chat_opts o = {.tools = (const char *const *)now, .n_tools = 1};
  expect_render(MKC_CHAT_GPT_OSS, HARMONY_CONVERSATION, 6, &o, HARMONY_RENDERED,
                "gpt-oss: a call to functions.NAME (its text dropped: a final reply follows), "
                "the result from the function as a JSON string, the reply");
  expect_render(MKC_CHAT_GPT_OSS, HARMONY_CONVERSATION + 1, 3, &o, HARMONY_RENDERED_CALL,
                "gpt-oss: a call's text kept as analysis when no final reply follows");
  free_all(now, 1);
  /* reasoning given apart from the content (llama-server's reasoning_content, ollama's thinking) */
  const char *bare = "<|start|>system<|message|>You are ChatGPT, a large language model trained "
                     "by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: 2026-12-02\n\n"
                     "Reasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel "
                     "must be included for every message.<|end|><|start|>user<|message|>Time?"
                     "<|end|>";
  const mkc_chat_msg thought_call[] = {{.role = "user", .content = "Time?"},
                                       {.role = "assistant",
                                        .content = "",
                                        .calls = CLOCK,
                                        .n_calls = 1,
                                        .reasoning = "Need the clock."},
                                       {.role = "tool", .content = "12:00"}};
  snprintf(want, sizeof want,
           "%s<|start|>assistant<|channel|>analysis<|message|>Need the clock.<|end|><|start|>"
           "assistant to=functions.now<|channel|>commentary json<|message|>{}<|call|><|start|>"
           "functions.now to=assistant<|channel|>commentary<|message|>\"12:00\"<|end|><|start|>"
           "assistant",
           bare);
  expect_render(MKC_CHAT_GPT_OSS, thought_call, 3, NULL, want,
                "gpt-oss: a call's reasoning given apart is its analysis (no tools offered: "
                "none in the system turn)");
  const mkc_chat_msg finished[] = {{.role = "user", .content = "Time?"},
                                   {.role = "assistant", .content = "Noon.", .reasoning = "Easy."}};
  snprintf(want, sizeof want,
           "%s<|start|>assistant<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant"
           "<|channel|>final<|message|>Noon.<|return|>",
           bare);
  char *got = mkc_chat_render_with(MKC_CHAT_GPT_OSS, finished, 2, 0, NULL);
  CHECK(got && strcmp(got, want) == 0,
        "gpt-oss: a finished conversation's last reply keeps its reasoning as analysis");
  free(got);
  const mkc_chat_msg apart[] = {{.role = "user", .content = "Q"},
                                {.role = "assistant",
                                 .content = "\nChecking.",
                                 .calls = CLOCK,
                                 .n_calls = 1,
                                 .reasoning = "\nLook it up.\n"},
                                {.role = "tool", .content = "12:00"},
                                {.role = "assistant", .content = "Noon.", .reasoning = ""}};
  expect_render(MKC_CHAT_QWEN3, apart, 4, NULL, Q3_REASONING_APART,
                "qwen3: reasoning given apart goes in the think block as it is (its newlines "
                "stripped), the content after it");
  const mkc_chat_msg earlier[] = {{.role = "user", .content = "Q"},
                                  {.role = "assistant", .content = "A", .reasoning = "R"},
                                  {.role = "user", .content = "Q2"}};
  expect_render(MKC_CHAT_QWEN3, earlier, 3, NULL,
                "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n"
                "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n",
                "qwen3: an earlier reply's reasoning given apart is dropped");
  const mkc_chat_msg both[] = {
      {.role = "user", .content = "Q"},
      {.role = "assistant", .content = "text", .calls = CLOCK, .n_calls = 1, .reasoning = "why"},
      {.role = "tool", .content = "12:00"}};
  check_stderr_begin();
  got = mkc_chat_render_with(MKC_CHAT_GPT_OSS, both, 3, 1, NULL);
  char *err = check_stderr_end();
  CHECK(!got && err && strstr(err, "chat message 2: a tool call with both text and reasoning"),
        "gpt-oss: a call with both text and reasoning is refused, as the template does");
  free(got), free(err);
}

/* ---- what is refused ---- */

static void expect_refused(int family, const mkc_chat_msg *msgs, int n, int bad,
                           const char *why_has, const char *what) {
  char why[320] = "";
  int at = -2;
  int rc = mkc_chat_check(family, msgs, n, &at, why, sizeof why);
  CHECK(rc == -1 && at == bad && strstr(why, why_has), "refused: %s (message %d: %s)", what, at,
        why);
}

static void test_refused(void) {
  expect_refused(MKC_CHAT_CHATML, CONVERSATION, N_CONVERSATION, 2,
                 "tool calls: the chatml chat template has no tools (qwen2.5's, qwen3's, "
                 "llama3.1's and gpt-oss's have)",
                 "chatml: an assistant's calls");
  const mkc_chat_msg result[] = {{.role = "user", .content = "Q"},
                                 {.role = "assistant", .content = "A"},
                                 {.role = "tool", .content = "R"}};
  expect_refused(MKC_CHAT_LLAMA3, result, 3, 2, "a tool result: the llama3 chat template",
                 "llama3: a tool result");
  expect_refused(MKC_CHAT_QWEN3, result, 3, 2, "role 'tool' where 'user' was expected",
                 "qwen3: a result after a reply that made no call");
  const mkc_chat_msg unanswered[] = {
      {.role = "user", .content = "Q"},
      {.role = "assistant", .content = "", .calls = NOW, .n_calls = 1},
      {.role = "user", .content = "Q2"}};
  expect_refused(MKC_CHAT_QWEN25, unanswered, 3, 2, "role 'user' where 'tool' was expected",
                 "qwen2.5: a call whose result is missing");
  expect_refused(MKC_CHAT_LLAMA31, CONVERSATION, N_CONVERSATION, 2,
                 "2 tool calls: the llama3.1 chat template takes one per message",
                 "llama3.1: two calls in one message (the template raises)");
  const mkc_chat_msg odd_role[] = {{.role = "user", .content = "Q"},
                                   {.role = "assistant", .content = "", .calls = NOW, .n_calls = 1},
                                   {.role = "tool", .content = "R"},
                                   {.role = "robot", .content = "R"}};
  expect_refused(MKC_CHAT_QWEN3, odd_role, 4, 3, "role 'robot' where 'tool' was expected",
                 "qwen3: a role of no kind after a result");
  const mkc_chat_msg first[] = {{.role = "tool", .content = "R"}};
  expect_refused(MKC_CHAT_QWEN3, first, 1, 0, "role 'tool' where 'user' was expected",
                 "qwen3: a result first");
  const mkc_chat_msg user_calls[] = {{.role = "user", .content = "Q", .calls = NOW, .n_calls = 1}};
  expect_refused(MKC_CHAT_QWEN3, user_calls, 1, 0, "not the assistant's",
                 "qwen3: calls in a user's message");
  char why[256];
  const char *one = "{}";
  mkc_chat_opts o = {.tools = &one, .n_tools = 1};
  CHECK(mkc_chat_check_opts(MKC_CHAT_GEMMA, &o, why, sizeof why) == MKC_CHAT_OPT_TOOLS &&
            strcmp(why, "the gemma chat template has no tools (qwen2.5's, qwen3's, llama3.1's and "
                        "gpt-oss's have)") == 0,
        "gemma: tools offered are refused (%s)", why);
  CHECK(mkc_chat_check_opts(MKC_CHAT_QWEN25, &o, why, sizeof why) == 0 &&
            mkc_chat_check_opts(MKC_CHAT_QWEN3, &o, why, sizeof why) == 0,
        "qwen2.5 and qwen3 take tools");
  check_stderr_begin();
  char *text = mkc_chat_render_with(MKC_CHAT_CHATML, CONVERSATION + 1, 1, 1, &o);
  char *err = check_stderr_end();
  CHECK(!text && err &&
            strstr(err, "mkc: error: chat: tools: the chatml chat template has no tools"),
        "rendering with tools in chatml fails with the message");
  free(text), free(err);
}

/* ---- which templates ---- */

static void test_templates(void) {
  CHECK_INT(mkc_chat_detect(TPL_QWEN25), MKC_CHAT_QWEN25,
            "Qwen2.5-7B-Instruct's template is qwen2.5");
  CHECK(mkc_chat_tools_for(MKC_CHAT_QWEN25, TPL_QWEN25) && mkc_chat_tools_for(MKC_CHAT_QWEN3, NULL),
        "its tools are mkc's; so are qwen3's when the family is named (no template text)");
  CHECK(!mkc_chat_tools_for(MKC_CHAT_QWEN3, "<|im_start|>{{ '<tool_call>\\n<function=' }}</think>"),
        "a qwen3-family template that calls with XML (Qwen3.5's <function=...>) is not");
  CHECK(mkc_chat_tools_for(MKC_CHAT_LLAMA31, TPL_LLAMA32) == MKC_TOOLS_LLAMA3 &&
            mkc_chat_tools_for(MKC_CHAT_QWEN3, TPL_QWEN3) == MKC_TOOLS_QWEN,
        "Llama 3.2's and Qwen3's templates: their formats");
  CHECK(!mkc_chat_tools_for(MKC_CHAT_LLAMA31, "<|start_header_id|>Cutting Knowledge Date"),
        "a llama3.1-family template without Llama's instructions (Functionary's) is not");
  /* the line of openai/gpt-oss-120b's template that writes the tools' channel */
  CHECK(mkc_chat_tools_for(MKC_CHAT_GPT_OSS,
                           "{{- \"\\nCalls to these tools must go to the commentary channel: "
                           "'functions'.\" }}") == MKC_TOOLS_HARMONY,
        "gpt-oss's template: harmony's calls");
  CHECK(!mkc_chat_tools_for(MKC_CHAT_CHATML, NULL) && !mkc_chat_tools(MKC_CHAT_GEMMA) &&
            !mkc_chat_tools(MKC_CHAT_LLAMA3),
        "chatml, gemma and llama3: no tools");
}

/* ---- reading calls ---- */

static void test_read(void) {
  mkc_tool_calls c;
  const char *two = "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                    "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", "
                    "\"arguments\": {}}\n</tool_call>";
  CHECK(mkc_tool_calls_read(MKC_TOOLS_QWEN, two, strlen(two), &c) == 1 && c.n == 2 &&
            strcmp(c.calls[0].name, "get_weather") == 0 &&
            strcmp(c.calls[0].arguments, "{\"city\":\"Paris\"}") == 0 &&
            strcmp(c.calls[1].name, "now") == 0 && strcmp(c.calls[1].arguments, "{}") == 0 &&
            strcmp(c.content, "Let me look.") == 0,
        "two calls after some text: their names and arguments, the text trimmed");
  mkc_tool_calls_free(&c);
  static const char *const NOT_CALLS[] = {
      "Hello.",
      "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}",              /* cut off */
      "<tool_call>\n{\"name\": \"now\", \"arguments\": {}\n</tool_call>", /* not JSON */
      "<tool_call>\n{\"arguments\": {}}\n</tool_call>",                   /* no name */
      "<tool_call>\n{\"name\": \"now\", \"arguments\": \"x\"}\n</tool_call>",
      "<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call><tool_call>[]</tool_call>",
      "<tool_call>{\"name\": \"now\", \"arguments\": {}} and more</tool_call>",
  };
  for (size_t k = 0; k < sizeof NOT_CALLS / sizeof *NOT_CALLS; k++)
    CHECK(mkc_tool_calls_read(MKC_TOOLS_QWEN, NOT_CALLS[k], strlen(NOT_CALLS[k]), &c) == 0 &&
              c.n == 0 && !c.content,
          "not calls (the whole text is the reply): %s", NOT_CALLS[k]);
  const char *llama = "\n {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}} ";
  CHECK(mkc_tool_calls_read(MKC_TOOLS_LLAMA3, llama, strlen(llama), &c) == 1 && c.n == 1 &&
            strcmp(c.calls[0].name, "get_weather") == 0 &&
            strcmp(c.calls[0].arguments, "{\"city\":\"Paris\"}") == 0 && !c.content[0],
        "llama3.1: the reply as one call (its parameters)");
  mkc_tool_calls_free(&c);
  const char *named_args = "{\"name\": \"now\", \"arguments\": {}}";
  CHECK(mkc_tool_calls_read(MKC_TOOLS_LLAMA3, named_args, strlen(named_args), &c) == 1 &&
            strcmp(c.calls[0].name, "now") == 0,
        "llama3.1: \"arguments\" for \"parameters\" is read too");
  mkc_tool_calls_free(&c);
  static const char *const NOT_LLAMA[] = {
      "It is sunny.", "Here: {\"name\": \"now\", \"parameters\": {}}",
      "{\"name\": \"now\", \"parameters\": {}} and more", "{\"name\": \"now\"}",
      "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"};
  for (size_t k = 0; k < sizeof NOT_LLAMA / sizeof *NOT_LLAMA; k++)
    CHECK(mkc_tool_calls_read(MKC_TOOLS_LLAMA3, NOT_LLAMA[k], strlen(NOT_LLAMA[k]), &c) == 0 &&
              c.n == 0,
          "llama3.1, not a call: %s", NOT_LLAMA[k]);
  CHECK(mkc_tool_calls_read(MKC_TOOLS_NONE, two, strlen(two), &c) == 0,
        "a family without tools reads no calls");
}

/* ---- mkc serve's answers ---- */

/* The calls in a response's JSON objects: "name(arguments)" joined by ";"
 * (arguments as the answer gives them: OpenAI's a text, ollama's an
 * object, printed compact); the finish reason of the last object that has
 * one; each call's id (OpenAI's) checked present. */
static void calls_of(const char *response, int ollama, char *out, size_t cap, char *finish,
                     int *ids) {
  out[0] = finish[0] = '\0';
  *ids = 1;
  const char *body = response ? strstr(response, "\r\n\r\n") : NULL;
  for (const char *line = body ? body + 4 : NULL; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (strncmp(line, "data: ", 6) == 0) line += 6, len -= 6;
    cJSON *root = cJSON_ParseWithLength(line, len), *msg;
    if (ollama) {
      msg = cJSON_GetObjectItemCaseSensitive(root, "message");
      cJSON *why = cJSON_GetObjectItemCaseSensitive(root, "done_reason");
      if (cJSON_IsString(why)) snprintf(finish, 32, "%s", why->valuestring);
    } else {
      cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "choices"), 0);
      cJSON *why = cJSON_GetObjectItemCaseSensitive(choice, "finish_reason");
      if (cJSON_IsString(why)) snprintf(finish, 32, "%s", why->valuestring);
      msg = cJSON_GetObjectItemCaseSensitive(choice, "message");
      if (!msg) msg = cJSON_GetObjectItemCaseSensitive(choice, "delta");
    }
    const cJSON *call;
    cJSON_ArrayForEach(call, cJSON_GetObjectItemCaseSensitive(msg, "tool_calls")) {
      const cJSON *f = cJSON_GetObjectItemCaseSensitive(call, "function"),
                  *name = cJSON_GetObjectItemCaseSensitive(f, "name"),
                  *args = cJSON_GetObjectItemCaseSensitive(f, "arguments");
      char *a = cJSON_IsString(args) ? strdup(args->valuestring) : cJSON_PrintUnformatted(args);
      size_t at = strlen(out);
      snprintf(out + at, cap - at, "%s%s(%s)", at ? ";" : "",
               cJSON_IsString(name) ? name->valuestring : "?", a ? a : "?");
      free(a);
      if (!ollama && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(call, "id"))) *ids = 0;
    }
    cJSON_Delete(root);
    line = end ? end + 1 : NULL;
  }
}

/* What a client reads of serve's answer: the reply, the calls (calls_of),
 * the finish reason, the reasoning, whether every call has an id, whether
 * <tool_call> shows anywhere. */
typedef struct answered {
  char content[512], calls[512], finish[32], thought[256];
  int ids, tag_shown;
} answered;

/* serve's answer, family's tokens of answer, to a chat of KINDS[k]; with
 * tools offered when tools (the first call alone when one_call). */
static void ask(const mkc_tokenizer *t, int family, size_t k, int tools, int one_call,
                const char *answer, answered *a) {
  const char *tool = "{}";
  mkc_api_req r = {.chat = 1,
                   .ollama = KINDS[k].ollama,
                   .stream = KINDS[k].stream,
                   .top_logprobs = -1,
                   .tools = &tool,
                   .n_tools = tools,
                   .one_call = one_call};
  char *response = serve(t, family, &r, answer);
  joined(response, KINDS[k].content, a->content, sizeof a->content);
  joined(response, KINDS[k].thought, a->thought, sizeof a->thought);
  calls_of(response, KINDS[k].ollama, a->calls, sizeof a->calls, a->finish, &a->ids);
  a->tag_shown = !response || strstr(response, "<tool_call>") != NULL;
  free(response);
}

static void test_answers(void) {
  mkc_tokenizer *t = vocabulary(NULL);
  if (!CHECK(t != NULL, "a vocabulary with Qwen's tags loads")) return;
  const char *tool = "{}";
  answered a;
  const char *answer = "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                       "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", "
                       "\"arguments\": {}}\n</tool_call><|endoftext|>";
  /* gpt-oss: the call is its own message, to functions.NAME */
  const char *harmony = "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant "
                        "to=functions.get_weather<|channel|>commentary json<|message|>{\"city\":"
                        "\"Paris\"}<|call|>";
  for (size_t k = 0; k < N_KINDS; k++) {
    const char *name = KINDS[k].name, *finish = KINDS[k].ollama ? "stop" : "tool_calls";
    ask(t, MKC_CHAT_QWEN25, k, 1, 0, answer, &a);
    CHECK(strcmp(a.content, "Let me look.") == 0 &&
              strcmp(a.calls, "get_weather({\"city\":\"Paris\"});now({})") == 0 && a.ids &&
              strcmp(a.finish, finish) == 0 && !a.tag_shown,
          "serve, %s: the text as content, the two calls as tool_calls (with ids), finish %s, "
          "no <tool_call> text anywhere (got '%s', '%s', %s)",
          name, finish, a.content, a.calls, a.finish);
    ask(t, MKC_CHAT_QWEN25, k, 1, 1, answer, &a);
    CHECK(strcmp(a.calls, "get_weather({\"city\":\"Paris\"})") == 0,
          "serve, %s, parallel_tool_calls false: the first call alone (got '%s')", name, a.calls);
    ask(t, MKC_CHAT_QWEN25, k, 0, 0, answer, &a); /* no tools asked: the same answer is text */
    CHECK(!a.calls[0] && strstr(a.content, "<tool_call>\n{\"name\": \"now\"") &&
              strcmp(a.finish, "stop") == 0,
          "serve, %s, no tools asked: the calls' text is the content (got '%s')", name, a.content);
    /* llama3.1: the reply that is a call; one that opens otherwise streams as it comes */
    ask(t, MKC_CHAT_LLAMA31, k, 1, 0,
        "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|endoftext|>", &a);
    CHECK(!a.content[0] && strcmp(a.calls, "get_weather({\"city\":\"Paris\"})") == 0 && a.ids &&
              strcmp(a.finish, finish) == 0,
          "serve, llama3.1, %s: the reply's call as tool_calls, no content (got '%s', '%s', %s)",
          name, a.content, a.calls, a.finish);
    ask(t, MKC_CHAT_LLAMA31, k, 1, 0, " It is {sunny}.<|endoftext|>", &a);
    CHECK(strcmp(a.content, " It is {sunny}.") == 0 && !a.calls[0],
          "serve, llama3.1, %s: a reply that is no call is the content (got '%s')", name,
          a.content);
    ask(t, MKC_CHAT_GPT_OSS, k, 1, 0, harmony, &a);
    CHECK(!a.content[0] && strcmp(a.calls, "get_weather({\"city\":\"Paris\"})") == 0 && a.ids &&
              strcmp(a.finish, finish) == 0 && strcmp(a.thought, "Need weather.") == 0,
          "serve, gpt-oss, %s: the call as tool_calls, the reasoning apart, no content (got "
          "'%s', '%s', %s, '%s')",
          name, a.content, a.calls, a.finish, a.thought);
    ask(t, MKC_CHAT_GPT_OSS, k, 0, 0, harmony, &a);
    CHECK(strcmp(a.content, "{\"city\":\"Paris\"}") == 0 && !a.calls[0],
          "serve, gpt-oss, %s, no tools asked: the call's arguments are the reply (got '%s')", name,
          a.content);
  }
  for (size_t k = 0; k < N_KINDS; k++) {
    /* the recipient right after the prompt's cue, before the channel */
    ask(t, MKC_CHAT_GPT_OSS, k, 1, 0,
        " to=functions.get_weather<|channel|>commentary "
        "json<|message|>{\"city\":\"Paris\"}<|call|>",
        &a);
    CHECK(!a.content[0] && strcmp(a.calls, "get_weather({\"city\":\"Paris\"})") == 0,
          "serve, gpt-oss, %s: a call named in the cue's own header (got '%s', '%s')",
          KINDS[k].name, a.content, a.calls);
    /* a reply that opens like one and is not */
    ask(t, MKC_CHAT_GPT_OSS, k, 1, 0, "today is fine<|return|>", &a);
    CHECK(strcmp(a.content, "today is fine") == 0 && !a.calls[0],
          "serve, gpt-oss, %s: a reply opening with \"to\" is given back whole (got '%s')",
          KINDS[k].name, a.content);
    /* the model's numbers, digit for digit */
    ask(t, MKC_CHAT_QWEN3, k, 1, 0,
        "<tool_call>\n{\"name\": \"post\", \"arguments\": {\"channel_id\": "
        "1100339658373689424, \"ratio\": 1.0}}\n</tool_call><|endoftext|>",
        &a);
    CHECK(strcmp(a.calls, "post({\"channel_id\":1100339658373689424,\"ratio\":1.0})") == 0 ||
              (KINDS[k].ollama && strstr(a.calls, "post({\"channel_id\":")),
          "serve, qwen3, %s: a 19-digit id keeps its digits (got '%s')", KINDS[k].name, a.calls);
    /* a reply that opens with blanks: the stream's content is the whole answer's */
    ask(t, MKC_CHAT_QWEN25, k, 1, 0,
        " Hi <tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\nDone."
        "<|endoftext|>",
        &a);
    CHECK(strcmp(a.content, " Hi \nDone.") == 0 && strcmp(a.calls, "now({})") == 0,
          "serve, %s: text before and after a call, as the content (got '%s')", KINDS[k].name,
          a.content);
  }
  /* a function's name longer than a recipient holds is no call (never another, cut short) */
  ask(t, MKC_CHAT_GPT_OSS, 0, 1, 0,
      "<|channel|>commentary to=functions.a_name_of_more_than_seventy_characters_that_no_"
      "recipient_buffer_may_cut_short <|constrain|>json<|message|>{}<|call|>",
      &a);
  CHECK(!a.calls[0] && strcmp(a.content, "{}") == 0,
        "serve, gpt-oss: a recipient too long to hold is no call (got '%s', '%s')", a.calls,
        a.content);
  ask(t, MKC_CHAT_GPT_OSS, 0, 1, 0, "<|channel|>analysis to=python code<|message|>print(1)<|call|>",
      &a);
  CHECK(strcmp(a.content, "print(1)") == 0 && !a.calls[0] && strcmp(a.finish, "stop") == 0,
        "serve, gpt-oss: a message to another recipient (python) is no call: its text is the "
        "reply (got '%s')",
        a.content);
  /* qwen3: the reasoning apart, then the call; a block that is no call stays text */
  mkc_api_req r = {.chat = 1, .stream = 1, .top_logprobs = -1, .tools = &tool, .n_tools = 1};
  char *response = serve(t, MKC_CHAT_QWEN3, &r,
                         "<think>\nNeed the time.\n</think>\n\n<tool_call>\n{\"name\": \"now\", "
                         "\"arguments\": {}}\n</tool_call><|endoftext|>");
  const char *const reasoning_path[] = {"choices", "delta", "reasoning_content", NULL},
                    *const content_path[] = {"choices", "delta", "content", NULL};
  char reasoning[256], content[256], calls[256], finish[32];
  int ids;
  joined(response, reasoning_path, reasoning, sizeof reasoning);
  joined(response, content_path, content, sizeof content);
  calls_of(response, 0, calls, sizeof calls, finish, &ids);
  CHECK(strcmp(reasoning, "Need the time.\n") == 0 && !content[0] &&
            strcmp(calls, "now({})") == 0 && strcmp(finish, "tool_calls") == 0,
        "serve, qwen3 streamed: reasoning, no content, the call (got '%s', '%s', '%s')", reasoning,
        content, calls);
  free(response);
  const char *broken = "Hi <tool_call>{\"name\": 3}</tool_call><|endoftext|>";
  response = serve(t, MKC_CHAT_QWEN3, &r, broken);
  joined(response, content_path, content, sizeof content);
  calls_of(response, 0, calls, sizeof calls, finish, &ids);
  CHECK(strcmp(content, "Hi <tool_call>{\"name\": 3}</tool_call>") == 0 && !calls[0] &&
            strcmp(finish, "stop") == 0,
        "serve, streamed: a block that is no call is sent as text at the end (got '%s')", content);
  free(response);
  mkc_tokenizer_free(t);
}

/* ---- Anthropic's /v1/messages: calls as tool_use blocks ---- */

/* What an Anthropic client reads: the text blocks' text, the calls as "name(input)" joined by
 * ";" (a stream's input its input_json_delta pieces joined), the stop reason, the kinds of
 * block in order ("thinking,text,tool_use"), and whether every tool_use has an id. */
typedef struct anthropic_read {
  char text[256], calls[256], stop[32], kinds[128];
  int ids, tag_shown;
} anthropic_read;

static void add_kind(anthropic_read *a, const char *kind) {
  size_t at = strlen(a->kinds);
  snprintf(a->kinds + at, sizeof a->kinds - at, "%s%s", at ? "," : "", kind);
}

static void read_anthropic(const char *response, anthropic_read *a) {
  memset(a, 0, sizeof *a);
  a->ids = 1;
  const char *body = response ? strstr(response, "\r\n\r\n") : NULL;
  for (const char *line = body ? body + 4 : NULL; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (strncmp(line, "data: ", 6) == 0) line += 6, len -= 6;
    cJSON *o = cJSON_ParseWithLength(line, len), *b;
    const char *type = cJSON_IsString(cJSON_GetObjectItem(o, "type"))
                           ? cJSON_GetObjectItem(o, "type")->valuestring
                           : "";
    size_t at = strlen(a->calls);
    if (!strcmp(type, "message")) { /* whole */
      cJSON_ArrayForEach(b, cJSON_GetObjectItem(o, "content")) {
        const char *kind = cJSON_GetObjectItem(b, "type")->valuestring;
        add_kind(a, kind);
        if (!strcmp(kind, "text"))
          strncat(a->text, cJSON_GetObjectItem(b, "text")->valuestring,
                  sizeof a->text - strlen(a->text) - 1);
        if (strcmp(kind, "tool_use")) continue;
        char *input = cJSON_PrintUnformatted(cJSON_GetObjectItem(b, "input"));
        at = strlen(a->calls);
        snprintf(a->calls + at, sizeof a->calls - at, "%s%s(%s)", at ? ";" : "",
                 cJSON_GetObjectItem(b, "name")->valuestring, input);
        free(input);
        a->ids &= cJSON_IsString(cJSON_GetObjectItem(b, "id"));
      }
      snprintf(a->stop, sizeof a->stop, "%s", cJSON_GetObjectItem(o, "stop_reason")->valuestring);
    } else if (!strcmp(type, "content_block_start")) {
      b = cJSON_GetObjectItem(o, "content_block");
      const char *kind = cJSON_GetObjectItem(b, "type")->valuestring;
      add_kind(a, kind);
      if (!strcmp(kind, "tool_use")) {
        snprintf(a->calls + at, sizeof a->calls - at, "%s%s(", at ? ";" : "",
                 cJSON_GetObjectItem(b, "name")->valuestring);
        a->ids &= cJSON_IsString(cJSON_GetObjectItem(b, "id"));
      }
    } else if (!strcmp(type, "content_block_delta")) {
      cJSON *d = cJSON_GetObjectItem(o, "delta");
      const char *kind = cJSON_GetObjectItem(d, "type")->valuestring;
      if (!strcmp(kind, "text_delta"))
        strncat(a->text, cJSON_GetObjectItem(d, "text")->valuestring,
                sizeof a->text - strlen(a->text) - 1);
      if (!strcmp(kind, "input_json_delta"))
        strncat(a->calls, cJSON_GetObjectItem(d, "partial_json")->valuestring,
                sizeof a->calls - at - 1);
    } else if (!strcmp(type, "content_block_stop") && at && a->calls[at - 1] != ')') {
      strncat(a->calls, ")", sizeof a->calls - at - 1);
    } else if (!strcmp(type, "message_delta")) {
      snprintf(a->stop, sizeof a->stop, "%s",
               cJSON_GetObjectItem(cJSON_GetObjectItem(o, "delta"), "stop_reason")->valuestring);
    }
    cJSON_Delete(o);
    line = end ? end + 1 : NULL;
  }
}

static void ask_anthropic(const mkc_tokenizer *t, int family, int stream, int tools, int one_call,
                          const char *answer, anthropic_read *a) {
  const char *tool = "{}";
  mkc_api_req r = {.chat = 1,
                   .anthropic = 1,
                   .stream = stream,
                   .top_logprobs = -1,
                   .tools = &tool,
                   .n_tools = tools,
                   .one_call = one_call};
  char *response = serve(t, family, &r, answer);
  read_anthropic(response, a);
  a->tag_shown = !response || strstr(response, "<tool_call>") != NULL;
  free(response);
}

static void test_anthropic_answers(void) {
  mkc_tokenizer *t = vocabulary(NULL);
  if (!CHECK(t != NULL, "a vocabulary with Qwen's tags loads")) return;
  const char *answer = "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                       "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", "
                       "\"arguments\": {}}\n</tool_call><|endoftext|>";
  anthropic_read a;
  for (int stream = 0; stream < 2; stream++) {
    const char *how = stream ? "streamed" : "whole";
    ask_anthropic(t, MKC_CHAT_QWEN25, stream, 1, 0, answer, &a);
    CHECK(!strcmp(a.text, "Let me look.") &&
              !strcmp(a.calls, "get_weather({\"city\":\"Paris\"});now({})") && a.ids &&
              !strcmp(a.stop, "tool_use") && !strcmp(a.kinds, "text,tool_use,tool_use") &&
              !a.tag_shown,
          "Anthropic, %s: the text block, then a tool_use block per call (with ids), stop_reason "
          "tool_use, no <tool_call> text (got '%s', '%s', %s, %s)",
          how, a.text, a.calls, a.stop, a.kinds);
    ask_anthropic(t, MKC_CHAT_QWEN25, stream, 1, 1, answer, &a);
    CHECK(!strcmp(a.calls, "get_weather({\"city\":\"Paris\"})"),
          "Anthropic, %s, disable_parallel_tool_use: the first call alone (got '%s')", how,
          a.calls);
    ask_anthropic(t, MKC_CHAT_QWEN25, stream, 0, 0, answer, &a);
    CHECK(!a.calls[0] && strstr(a.text, "<tool_call>\n{\"name\": \"now\"") &&
              !strcmp(a.stop, "end_turn") && !strcmp(a.kinds, "text"),
          "Anthropic, %s, no tools offered: the calls' text is the text block (got %s, %s)", how,
          a.stop, a.kinds);
    ask_anthropic(t, MKC_CHAT_LLAMA31, stream, 1, 0,
                  "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|endoftext|>",
                  &a);
    CHECK(!strcmp(a.kinds, "tool_use") && !strcmp(a.calls, "get_weather({\"city\":\"Paris\"})") &&
              !strcmp(a.stop, "tool_use"),
          "Anthropic, llama3.1, %s: a reply that only calls has no text block (got %s, '%s')", how,
          a.kinds, a.calls);
    ask_anthropic(t, MKC_CHAT_QWEN3, stream, 1, 0,
                  "<think>\nNeed the time.\n</think>\n\n<tool_call>\n{\"name\": \"now\", "
                  "\"arguments\": {}}\n</tool_call><|endoftext|>",
                  &a);
    CHECK(!strcmp(a.kinds, "thinking,tool_use") && !strcmp(a.calls, "now({})") &&
              !strcmp(a.stop, "tool_use"),
          "Anthropic, qwen3, %s: the thinking block, then the call (got %s, '%s', %s)", how,
          a.kinds, a.calls, a.stop);
  }
  mkc_tokenizer_free(t);
}

int main(void) {
  setenv("MKC_CHAT_DATE", "2026-12-02", 1); /* gpt-oss's system turn: the day jinja2 was run */
  test_tojson();
  test_json_text();
  test_render();
  test_render_harmony();
  test_refused();
  test_templates();
  test_read();
  test_answers();
  test_anthropic_answers();
  return check_done();
}
