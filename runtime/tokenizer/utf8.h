/* The Unicode classes the tokenizers' pre-tokenizers need (\p{L}, \p{N},
 * \s; \p{Lu}/\p{Lt}, \p{Ll} and \p{M} for Tekken's), from runtime/tokenizer/unicode_tables.c, and
 * UTF-8 (util/utf8.h). */
#ifndef MKC_UTF8_H
#define MKC_UTF8_H

#include <stdint.h>

#include "util/utf8.h"

/* General categories L* and N*, and the White_Space property. */
int mkc_unicode_is_letter(int32_t cp);
int mkc_unicode_is_number(int32_t cp);
int mkc_unicode_is_space(int32_t cp);
/* Lu or Lt; Ll; M* (marks, which are not letters). */
int mkc_unicode_is_upper(int32_t cp);
int mkc_unicode_is_lower(int32_t cp);
int mkc_unicode_is_mark(int32_t cp);

#endif
