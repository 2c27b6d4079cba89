/* See file_name.h. */
#include "file_name.h"

#include <stdint.h>
#include <string.h>

#include "util/utf8.h"

int mkc_file_name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > 255 || name[0] == ' ' || name[n - 1] == ' ' || name[n - 1] == '.' ||
      strstr(name, ".."))
    return 0;
  for (size_t i = 0; i < n;) {
    int32_t c;
    int len = mkc_utf8_next(name + i, n - i, &c);
    if (len <= 0) return 0;
    if (c <= 0x1f || (c >= 0x7f && c <= 0x9f) || c == 0xff0e || c == 0x2215 || c == 0x2216 ||
        c == 0xfffd || c == 0xfeff || (c < 0x80 && strchr(":*?\"<>|/\\", (int)c)))
      return 0;
    i += (size_t)len;
  }
  return 1;
}
