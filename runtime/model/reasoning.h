/* An answer's reasoning apart from its reply, for the chat templates whose
 * models reason before they answer: gpt-oss's harmony channels (harmony.h),
 * and the <think>...</think> block of qwen3 and deepseek-r1 (whose cue opens
 * the block itself). A splitter reads the answer's tokens as they stream and
 * tells which part each token's text is, with the whitespace that opens a
 * part (the newlines after <think> and </think>) left out, as llama-server's
 * reasoning_content and ollama's thinking leave it. */
#ifndef MKC_REASONING_H
#define MKC_REASONING_H

#include <stddef.h>
#include <stdio.h>

#include "harmony.h"
#include "tokenizer/tokenizer.h"

typedef struct mkc_reasoning {
  int harmony; /* gpt-oss: h decides; else the think tags do */
  mkc_harmony h;
  int open, close; /* <think> and </think>, single tokens */
  int part;        /* enum mkc_answer_part of the text that follows (the tags' only) */
  int opening;     /* a part just began: its leading whitespace is dropped */
  int thinking;    /* mkc_reasoning_print: "Thinking..." printed, its end not yet */
} mkc_reasoning;

/* llama-server's reasoning_format: where an answer's reasoning goes. AUTO and DEEPSEEK: apart
 * (reasoning_content); NONE: left in the reply as the model wrote it. */
enum mkc_reasoning_format { MKC_REASONING_AUTO, MKC_REASONING_NONE, MKC_REASONING_DEEPSEEK };
/* "auto", "none" or "deepseek" -> enum mkc_reasoning_format; -1 for any other name
 * (deepseek-legacy's reasoning both apart and in the reply is not given). */
int mkc_reasoning_format_from_name(const char *name);

/* A splitter for family's answers (enum mkc_chat_family): 0, or -1 when the
 * family does not reason or tok lacks its tokens (then nothing is split). */
int mkc_reasoning_init(mkc_reasoning *r, int family, const mkc_tokenizer *tok);

/* The part (enum mkc_answer_part) that token id's text, *text[0..*n), is;
 * *text and *n are moved past whitespace that opens a part. */
int mkc_reasoning_push(mkc_reasoning *r, int id, const char **text, size_t *n);

/* A terminal's view (mkc chat, run --chat): the reasoning between
 * "Thinking...\n" and "\n...done thinking.\n\n", the reply (and a tool
 * call's arguments) as is, headers and tags not at all. Returns the part; *text, *n as
 * mkc_reasoning_push. */
int mkc_reasoning_print(mkc_reasoning *r, int id, const char **text, size_t *n, FILE *out);

#endif
