/* libFuzzer target for llama.cpp's escapes in -p and -r (cli/escapes.h):
 * any text is rewritten in place without reading or writing past it, and
 * the result is what a second reading of the rules gives, written here as a
 * walk that looks ahead by index (the runtime's looks up each escape by
 * pointer): each of \n \r \t \' \" \\ names its byte, \x and two hex digits
 * theirs, every other backslash stays; an escape naming NUL refuses the
 * whole text and leaves it as it was.
 * Seeds in fuzz/corpus/escapes: prompts as users write them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/escapes.h"

static int hex(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c |= 0x20;
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The rules again: out gets the rewritten text; -1 when an escape names NUL. */
static long expected(const char *in, size_t n, char *out) {
  static const char from[] = "nrt'\"\\", to[] = "\n\r\t'\"\\";
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (in[i] != '\\' || i + 1 == n) {
      out[o++] = in[i];
      continue;
    }
    const char *k = in[i + 1] ? strchr(from, in[i + 1]) : NULL;
    if (k) {
      out[o++] = to[k - from];
      i++;
    } else if (in[i + 1] == 'x' && i + 3 < n && hex((unsigned char)in[i + 2]) >= 0 &&
               hex((unsigned char)in[i + 3]) >= 0) {
      int b = hex((unsigned char)in[i + 2]) * 16 + hex((unsigned char)in[i + 3]);
      if (b == 0) return -1;
      out[o++] = (char)b;
      i += 3;
    } else {
      out[o++] = in[i];
    }
  }
  return (long)o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t n = strnlen((const char *)data, size); /* argv holds no NUL: the text ends at one */
  char *text = malloc(n + 1), *want = malloc(n + 1);
  if (!text || !want) abort();
  memcpy(text, data, n);
  text[n] = '\0';
  long w = expected(text, n, want);
  size_t got = mkc_unescape(text);
  if (w < 0) {
    if (got != (size_t)-1 || memcmp(text, data, n) != 0 || text[n]) abort();
  } else if (got != (size_t)w || memcmp(text, want, got) != 0 || text[got]) {
    abort();
  }
  free(text);
  free(want);
  return 0;
}
