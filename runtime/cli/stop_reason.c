/* See stop_reason.h. */
#include "stop_reason.h"

#include <stdio.h>

#include "util/text.h"

const char *mkc_stop_reason(const mkc_decode_stats *st, int eog, int interrupted, int open_ended,
                            const char *reverse, char *buf, size_t cap) {
  if (interrupted) return "interrupted (Ctrl-C)";
  if (eog) return "end of generation";
  if (reverse) {
    snprintf(buf, cap, "reverse prompt \"%s\"", mkc_shown(reverse));
    return buf;
  }
  if (st->complete)
    return st->complete == 2 ? "the grammar allows nothing more" : "the JSON is whole";
  /* -n -1 asks for every position the context has left */
  if (st->ctx_full || open_ended) return "context full (use --ctx)";
  return "-n reached";
}
