/* libFuzzer target for chat templates, outside data twice over: the
 * template text a model ships and the messages a user types. The first
 * byte picks what the rest is: (0) a template text, detected, its family's
 * rendering of a conversation cut from the same bytes, the tool families'
 * rendering of one with tools, a call and its result, and the same bytes
 * read as a reply that may call tools; (1) a tokenizer_config.json; (2) a
 * GGUF file whose tokenizer.chat_template is read and detected. Nothing may
 * crash or read out of bounds, detection gives a family or unknown, every
 * family (gpt-oss unless a reply spells its channels) renders the
 * conversation with each user message's text (trimmed)
 * in it, the tool families the result (Qwen's the tools too), and calls read
 * from a reply have names and JSON objects for arguments.
 * Seeds in fuzz/corpus/chat_template: templates and configs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "formats/gguf.h"
#include "model/chat_template.h"
#include "model/tool_calls.h"

static const char SPACES[] = " \t\n\v\f\r\x1c\x1d\x1e\x1f";

/* s without the whitespace the renderers may trim. */
static void core(const char *s, char *out) {
  size_t n = strlen(s);
  while (n && strchr(SPACES, *s)) s++, n--;
  while (n && strchr(SPACES, s[n - 1])) n--;
  memcpy(out, s, n);
  out[n] = '\0';
}

static void render_all(const char *text, size_t n) {
  enum { MAX = 6, PIECE = 48 };
  char pieces[MAX][PIECE], kept[PIECE];
  mkc_chat_msg msgs[MAX] = {0};
  int count = (int)(n % (MAX + 1)), has_system = (int)(n / 7 % 2);
  for (int i = 0; i < count; i++) {
    size_t from = n ? (size_t)i * 31 % n : 0, k = n - from < PIECE - 1 ? n - from : PIECE - 1;
    memcpy(pieces[i], text + from, k);
    pieces[i][k] = '\0';
    int turn = i - has_system;
    msgs[i].role = has_system && i == 0 ? "system" : turn % 2 == 0 ? "user" : "assistant";
    msgs[i].content = pieces[i];
  }
  /* gpt-oss refuses a reply that spells its channels, as its template does */
  int channels = 0;
  for (int i = has_system + 1; i < count; i += 2)
    channels |= strstr(pieces[i], "<|channel|>analysis<|message|>") ||
                strstr(pieces[i], "<|channel|>final<|message|>");
  for (int family = 0; family < MKC_CHAT_N_FAMILIES; family++) {
    char *out = mkc_chat_render(family, msgs, count, family % 2);
    if (!out && family == MKC_CHAT_GPT_OSS && channels) continue;
    if (!out) abort();
    for (int i = has_system; i < count; i += 2) {
      core(pieces[i], kept);
      if (!strstr(out, kept)) abort();
    }
    free(out);
  }
}

/* Tools: the text as a tool, a call's arguments and its result, rendered by
 * the tool families; then read as a reply. */
static void tools_all(const char *text, size_t n) {
  const mkc_chat_call call = {"f", text};
  const mkc_chat_msg msgs[] = {{.role = "user", .content = "q"},
                               {.role = "assistant", .content = "", .calls = &call, .n_calls = 1},
                               {.role = "tool", .content = text}};
  mkc_chat_opts o = {.tools = &text, .n_tools = 1};
  for (int family = 0; family < MKC_CHAT_N_FAMILIES; family++) {
    if (!mkc_chat_tools(family)) continue;
    char *out = mkc_chat_render_with(family, msgs, 3, 1, &o);
    /* Qwen's write the texts as they are; the others rewrite them (JSON, TypeScript) */
    int format = mkc_chat_tools(family);
    const char *result = format == MKC_TOOLS_QWEN ? "<tool_response>"
                         : format == MKC_TOOLS_LLAMA3
                             ? "<|start_header_id|>ipython<|end_header_id|>"
                             : "<|start|>functions.f to=assistant";
    if (!out || !strstr(out, result) || (format == MKC_TOOLS_QWEN && !strstr(out, text))) abort();
    free(out);
  }
  for (int format = MKC_TOOLS_QWEN; format <= MKC_TOOLS_HARMONY; format++) {
    mkc_tool_calls c;
    int got = format == MKC_TOOLS_HARMONY ? mkc_tool_calls_harmony("functions.f", text, n, "", &c)
                                          : mkc_tool_calls_read(format, text, n, &c);
    if (got != 1) continue;
    if (c.n < 1 || !c.content || strlen(c.content) > n) abort();
    for (int k = 0; k < c.n; k++) {
      cJSON *args = cJSON_Parse(c.calls[k].arguments);
      if (!c.calls[k].name[0] || !cJSON_IsObject(args)) abort();
      cJSON_Delete(args);
    }
    mkc_tool_calls_free(&c);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t n = size - 1;
  char *rest = malloc(n + 1);
  if (!rest) return 0;
  memcpy(rest, data + 1, n);
  rest[n] = '\0';
  char *tmpl = NULL;
  if (data[0] % 3 == 0) {
    int f = mkc_chat_detect(rest);
    if (f < MKC_CHAT_UNKNOWN || f >= MKC_CHAT_N_FAMILIES) abort();
    render_all(rest, strlen(rest));
    tools_all(rest, strlen(rest));
  } else if (data[0] % 3 == 1) {
    if (mkc_chat_template_from_config(rest, n, "fuzz", &tmpl) == 0 && tmpl)
      (void)mkc_chat_detect(tmpl);
  } else {
    mkc_gguf *f = mkc_gguf_open_memory(rest, n, "fuzz.gguf");
    if (f && mkc_chat_template_gguf(f, &tmpl) == 0 && tmpl) (void)mkc_chat_detect(tmpl);
    mkc_gguf_close(f);
  }
  free(tmpl);
  free(rest);
  return 0;
}
