/* Fitting a chat into a context: when its rendering is too long, the oldest
 * turns are left out, whole (a turn starts at a user message, so no answer
 * or tool result loses what it answers), while every system message and the
 * last turn stay. ollama does the same for /api/chat (its "truncate"), by
 * messages rather than turns. */
#ifndef MKC_CHAT_FIT_H
#define MKC_CHAT_FIT_H

#include "chat_template.h"
#include "tokenizer/tokenizer.h"

typedef struct mkc_chat_fit {
  char *text;   /* the kept messages' prompt (malloc'd; mkc_chat_render_prompt) */
  int n_tokens; /* text's tokens (with BOS when tok adds one) */
  int first;    /* the first message kept after the system messages before it */
  int dropped;  /* how many messages were left out */
} mkc_chat_fit;

/* The longest tail of msgs[0..n) (from a user message on, with the system
 * messages before it) whose rendering is at most limit tokens: 0 with *f
 * filled. When even the last turn alone is longer, it is the one given,
 * with f->n_tokens > limit (the caller says what to do). -1 after a message
 * (a rendering the template refuses, out of memory). */
int mkc_chat_fit_into(int family, const mkc_chat_msg *msgs, int n, const mkc_chat_opts *o,
                      const mkc_tokenizer *tok, int limit, mkc_chat_fit *f);

/* The tokens a cut chat leaves for its answer in a context of ctx: the answer's limit
 * (>= 1) at most half the context; without one, a quarter of it. */
int mkc_chat_fit_reserve(int ctx, int limit);

/* The messages kept from first on: msgs' system messages before first, then
 * msgs[first..n), into out (room for n); returns how many. */
int mkc_chat_fit_kept(const mkc_chat_msg *msgs, int n, int first, mkc_chat_msg *out);

#endif
