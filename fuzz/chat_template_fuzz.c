/* libFuzzer target for chat templates, outside data twice over: the
 * template text a model ships and the messages a user types. The first
 * byte picks what the rest is: (0) a template text, detected, its family's
 * rendering of a conversation cut from the same bytes; (1) a
 * tokenizer_config.json; (2) a GGUF file whose tokenizer.chat_template is
 * read and detected. Nothing may crash or read out of bounds, detection
 * gives a family or unknown, and every family renders the conversation
 * with each user message's text (trimmed) in it.
 * Seeds in fuzz/corpus/chat_template: templates and configs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "model/chat_template.h"

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
  mkc_chat_msg msgs[MAX];
  int count = (int)(n % (MAX + 1)), has_system = (int)(n / 7 % 2);
  for (int i = 0; i < count; i++) {
    size_t from = n ? (size_t)i * 31 % n : 0, k = n - from < PIECE - 1 ? n - from : PIECE - 1;
    memcpy(pieces[i], text + from, k);
    pieces[i][k] = '\0';
    int turn = i - has_system;
    msgs[i].role = has_system && i == 0 ? "system" : turn % 2 == 0 ? "user" : "assistant";
    msgs[i].content = pieces[i];
  }
  for (int family = 0; family < MKC_CHAT_N_FAMILIES; family++) {
    char *out = mkc_chat_render(family, msgs, count, family % 2);
    if (!out) abort();
    for (int i = has_system; i < count; i += 2) {
      core(pieces[i], kept);
      if (!strstr(out, kept)) abort();
    }
    free(out);
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
