/* See hash.h. */
#include "hash.h"

#include <string.h>

uint64_t mkc_fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

uint64_t mkc_fnv1a_str(uint64_t h, const char *s) { return mkc_fnv1a(h, s, strlen(s) + 1); }
