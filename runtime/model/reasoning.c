/* See reasoning.h. */
#include "reasoning.h"

#include <string.h>

#include "chat_template.h"
#include "util/json_text.h"

static int find(const mkc_tokenizer *tok, const char *s) {
  return mkc_tokenizer_find(tok, s, strlen(s));
}

int mkc_reasoning_init(mkc_reasoning *r, int family, const mkc_tokenizer *tok) {
  *r = (mkc_reasoning){.open = -1, .close = -1, .part = MKC_PART_REPLY};
  if (family == MKC_CHAT_GPT_OSS) {
    r->harmony = 1;
    return mkc_harmony_init(&r->h, tok);
  }
  if (!mkc_chat_reasons(family)) return -1;
  r->open = find(tok, "<think>");
  r->close = find(tok, "</think>");
  /* deepseek-r1's cue ends with "<think>\n": the answer starts reasoning */
  if (family == MKC_CHAT_DEEPSEEK_R1) r->part = MKC_PART_REASONING, r->opening = 1;
  return r->open >= 0 && r->close >= 0 ? 0 : -1;
}

int mkc_reasoning_push(mkc_reasoning *r, int id, const char **text, size_t *n) {
  int part;
  if (r->harmony) {
    part = mkc_harmony_push(&r->h, id, text, n); /* h keeps the part that follows */
    if (part == MKC_PART_HEADER) r->opening = 1;
  } else if (id >= 0 && (id == r->open || id == r->close)) {
    r->part = id == r->open ? MKC_PART_REASONING : MKC_PART_REPLY;
    r->opening = 1;
    part = MKC_PART_HEADER;
  } else {
    part = r->part;
  }
  if (part == MKC_PART_HEADER) return part;
  if (r->opening) {
    while (*n && mkc_json_space(**text)) ++*text, --*n;
    if (*n) r->opening = 0;
  }
  return part;
}

int mkc_reasoning_print(mkc_reasoning *r, int id, const char **text, size_t *n, FILE *out) {
  int part = mkc_reasoning_push(r, id, text, n);
  if (part == MKC_PART_HEADER || *n == 0) return part;
  /* a call's arguments show as the reply does (a chat offers no tools) */
  if (part == MKC_PART_REASONING && !r->thinking) fputs("Thinking...\n", out);
  if (part != MKC_PART_REASONING && r->thinking) fputs("\n...done thinking.\n\n", out);
  r->thinking = part == MKC_PART_REASONING;
  fwrite(*text, 1, *n, out);
  return part;
}

int mkc_reasoning_format_from_name(const char *name) {
  return !strcmp(name, "auto")       ? MKC_REASONING_AUTO
         : !strcmp(name, "none")     ? MKC_REASONING_NONE
         : !strcmp(name, "deepseek") ? MKC_REASONING_DEEPSEEK
                                     : -1;
}
