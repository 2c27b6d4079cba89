/* A model's tool calls, read from the text of its reply. The families whose
 * templates offer tools (mkc_chat_tools) are tuned to answer a call as
 * Hermes' format: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>,
 * one block per call, after any text of the reply. */
#ifndef MKC_TOOL_CALLS_H
#define MKC_TOOL_CALLS_H

#include <stddef.h>

/* The opening tag; a stream holds back text from it on (serve_answer.c). */
#define MKC_TOOL_CALL_OPEN "<tool_call>"

typedef struct mkc_tool_call {
  char *name;
  char *arguments; /* the arguments, compact JSON (an object as the model wrote it) */
} mkc_tool_call;

typedef struct mkc_tool_calls {
  mkc_tool_call *calls;
  int n;
  char *content; /* the reply's text outside the blocks, trimmed */
} mkc_tool_calls;

/* The calls in text[0..n): every <tool_call> block closed and holding a JSON
 * object with a string "name" and an object "arguments". 1 with *out
 * filled (mkc_tool_calls_free), 0 when the text holds no call or a block
 * that is not one (then the whole text is the reply: nothing is taken
 * from it), -1 when out of memory. */
int mkc_tool_calls_read(const char *text, size_t n, mkc_tool_calls *out);
void mkc_tool_calls_free(mkc_tool_calls *c);

#endif
