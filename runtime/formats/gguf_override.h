/* llama.cpp's --override-kv: a GGUF file's metadata entries replaced (or added) before the model
 * is read from them, as KEY=TYPE:VALUE with TYPE int, float, bool (true, false) or str (at most
 * 127 bytes); several in one flag's value separated by commas, a field in double quotes holding
 * commas (llama.cpp reads the value as a CSV row). */
#ifndef MKC_GGUF_OVERRIDE_H
#define MKC_GGUF_OVERRIDE_H

#include "gguf.h"

/* Checks spec (one flag's value): 0, or -1 after "mkc: error: --override-kv ..." naming the
 * field at fault. */
int mkc_gguf_override_check(const char *spec);
/* Applies spec (checked) to f: a key the file holds keeps its kind (an integer key takes int, a
 * floating-point one float, ...; an array none). 0, or -1 after a message. */
int mkc_gguf_override(mkc_gguf *f, const char *spec);

#endif
