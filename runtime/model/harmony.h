/* gpt-oss's answers in OpenAI's harmony format: a run of messages, each
 * <|start|>ROLE<|channel|>CHANNEL<|message|>TEXT<|end|>, the answer's first
 * header opened by the prompt's cue (<|start|>assistant) and the answer ended
 * by <|return|> (or <|call|>, a tool call). The analysis channel holds the
 * reasoning; final (and commentary) the reply; a message whose header names
 * a recipient (to=functions.NAME, before or after the channel) is a tool
 * call, its text the call's arguments. A splitter reads an answer's tokens
 * as they come and tells which part each token's text is: a header's (not
 * shown), the reasoning, the reply, or a call's (reasoning.h puts it to
 * use). The answer's first header is the prompt's cue (<|start|>assistant):
 * its text before any control token is held while it may still be a
 * recipient (" to=functions.f", then <|channel|>), and given back as reply
 * the moment it cannot be one. */
#ifndef MKC_HARMONY_H
#define MKC_HARMONY_H

#include <stddef.h>

#include "tokenizer/tokenizer.h"

/* An answer's parts: a header or tag (never shown), the reasoning, the
 * reply, a tool call's arguments. */
enum mkc_answer_part { MKC_PART_HEADER, MKC_PART_REASONING, MKC_PART_REPLY, MKC_PART_CALL };

typedef struct mkc_harmony {
  /* the format's control tokens; -1 where the vocabulary lacks one */
  int start, channel, message, constrain, end, ret, call;
  int part;      /* of the text that follows */
  int naming;    /* between <|channel|> and <|message|> or <|constrain|> */
  char name[16]; /* the channel's name as read so far (its start: "analysis", ...) */
  size_t n_name;
  int in_header; /* between <|start|> or <|channel|> and <|message|> */
  int opening;   /* no control token yet: the text may be the cue's recipient */
  size_t n_head;
  char head[4400];    /* the header's text so far (its start); the opening's, with a piece */
  char recipient[80]; /* the last call's (to=RECIPIENT), "" before any */
} mkc_harmony;

/* A splitter for tok's answers; 0, or -1 when tok lacks <|channel|> or
 * <|message|> (not harmony's vocabulary). Text before any header is reply. */
int mkc_harmony_init(mkc_harmony *h, const mkc_tokenizer *tok);

/* The part that token id (-1: the detokenizer's flush), whose text is
 * *text[0..*n), belongs to (enum mkc_answer_part). Control tokens are
 * headers; so is the channel's name. When the opening's held text turns out
 * to be reply, *text and *n are moved to it (in h, with this piece). */
int mkc_harmony_push(mkc_harmony *h, int id, const char **text, size_t *n);

#endif
