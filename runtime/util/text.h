/* Small string helpers shared by the readers of names and paths. */
#ifndef MKC_TEXT_H
#define MKC_TEXT_H

int mkc_ends_with(const char *s, const char *suffix); /* 1 or 0 */

#endif
