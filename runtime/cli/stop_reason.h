/* Why generation ended, in the words run's stats line and chat's turn line
 * both use. */
#ifndef MKC_STOP_REASON_H
#define MKC_STOP_REASON_H

#include "exec/decode.h"

/* eog: ended on an end-of-generation token; interrupted: Ctrl-C;
 * open_ended: no -n was given, so running out of tokens to generate means
 * the context is full; reverse: the reverse prompt (-r) the completion
 * reached, or NULL, written into buf (cap bytes). */
const char *mkc_stop_reason(const mkc_decode_stats *st, int eog, int interrupted, int open_ended,
                            const char *reverse, char *buf, size_t cap);

#endif
