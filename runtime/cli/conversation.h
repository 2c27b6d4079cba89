/* A chat as the model reads it: the messages, the text the model has seen
 * (templated prompts and its own answers) and the same as tokens. Each new
 * user turn adds only what the template puts after the text already seen,
 * so a session that holds the earlier tokens processes only the new turn
 * (llama.cpp's chat does the same diff of two renderings). */
#ifndef MKC_CONVERSATION_H
#define MKC_CONVERSATION_H

#include "model/chat_fit.h"
#include "model/chat_template.h"
#include "tokenizer/tokenizer.h"

typedef struct mkc_conversation {
  const mkc_tokenizer *tok;
  int family; /* enum mkc_chat_family */
  mkc_chat_msg *msgs;
  int n_msgs, cap_msgs;
  char *text; /* what hist spells: every rendering so far plus the answers */
  int *hist;  /* the tokens the model has read or written, in order */
  int n_hist, cap_hist;
  mkc_chat_opts opts; /* the template's options (gpt-oss's reasoning effort); set after init */
} mkc_conversation;

/* An empty conversation in family's format, opened by a system message when
 * system is non-NULL. 0, or -1 after a message. */
int mkc_conversation_init(mkc_conversation *c, const mkc_tokenizer *tok, int family,
                          const char *system);

/* Sets the template's options: its reasoning effort (--reasoning-effort
 * LEVEL; NULL: its default) and no reasoning (--reasoning-budget 0). 0, or
 * -1 after a message naming the flag. */
int mkc_conversation_options(mkc_conversation *c, const char *effort, int no_reasoning);

/* Adds a user message and the tokens that bring the model to the start of its
 * answer. *n_kept: how many of the earlier tokens stay as they were (all of
 * them, unless the template rewrote earlier text: then the history is the
 * whole new rendering, tokenized). 0, or -1 after a message. */
int mkc_conversation_user(mkc_conversation *c, const char *content, int *n_kept);

/* Leaves out the oldest turns (model/chat_fit.h) until the history, the
 * last user message's turn included, is at most limit tokens (or only that
 * turn is left): the history becomes the kept messages' rendering. *dropped:
 * how many messages went; *n_kept: how many of the earlier tokens stay as
 * they were. 0, or -1 after a message. */
int mkc_conversation_fit(mkc_conversation *c, int limit, int *n_kept, int *dropped);

/* Adds the model's answer: ids[0..n) as it generated them (an
 * end-of-generation token last when it ended so), text their printable
 * text. 0, or -1 after a message. */
int mkc_conversation_answer(mkc_conversation *c, const int *ids, int n, const char *text);

void mkc_conversation_free(mkc_conversation *c);

#endif
