/* Unicode category lookups over the generated tables. */
#include "utf8.h"

extern const uint32_t mkc_unicode_letters[][2], mkc_unicode_numbers[][2], mkc_unicode_uppers[][2],
    mkc_unicode_lowers[][2], mkc_unicode_marks[][2];
extern const int mkc_unicode_letters_count, mkc_unicode_numbers_count, mkc_unicode_uppers_count,
    mkc_unicode_lowers_count, mkc_unicode_marks_count;

static int in_ranges(const uint32_t (*r)[2], int n, int32_t cp) {
  if (cp < 0) return 0;
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if ((uint32_t)cp < r[mid][0])
      hi = mid - 1;
    else if ((uint32_t)cp > r[mid][1])
      lo = mid + 1;
    else
      return 1;
  }
  return 0;
}

int mkc_unicode_is_letter(int32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  return in_ranges(mkc_unicode_letters, mkc_unicode_letters_count, cp);
}

int mkc_unicode_is_number(int32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(mkc_unicode_numbers, mkc_unicode_numbers_count, cp);
}

int mkc_unicode_is_upper(int32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
  return in_ranges(mkc_unicode_uppers, mkc_unicode_uppers_count, cp);
}

int mkc_unicode_is_lower(int32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z';
  return in_ranges(mkc_unicode_lowers, mkc_unicode_lowers_count, cp);
}

int mkc_unicode_is_mark(int32_t cp) {
  return cp >= 0x300 && in_ranges(mkc_unicode_marks, mkc_unicode_marks_count, cp);
}

/* White_Space (Unicode PropList.txt), which is what \s means in the
 * tokenizers' patterns: tab..carriage return, space, NEL, NBSP, the Zs
 * spaces, line and paragraph separators. */
int mkc_unicode_is_space(int32_t cp) {
  switch (cp) {
  case 0x09:
  case 0x0a:
  case 0x0b:
  case 0x0c:
  case 0x0d:
  case 0x20:
  case 0x85:
  case 0xa0:
  case 0x1680:
  case 0x2028:
  case 0x2029:
  case 0x202f:
  case 0x205f:
  case 0x3000:
    return 1;
  default:
    return cp >= 0x2000 && cp <= 0x200a;
  }
}
