/* A model's tool calls, read from the text of its reply, in the format its
 * chat template teaches (enum mkc_tool_format, chat_template.h): Qwen's
 * <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, one block
 * per call, after any text of the reply; Llama 3.1's reply that is one
 * {"name": ..., "parameters": {...}} object; gpt-oss's message to
 * functions.NAME (harmony.h) holding the arguments. */
#ifndef MKC_TOOL_CALLS_H
#define MKC_TOOL_CALLS_H

#include <stddef.h>

/* The opening tag; a stream holds back text from it on (serve_answer.c). */
#define MKC_TOOL_CALL_OPEN "<tool_call>"

typedef struct mkc_tool_call {
  char *name;
  char *arguments; /* the arguments as the model wrote them, whitespace between tokens left out */
} mkc_tool_call;

typedef struct mkc_tool_calls {
  mkc_tool_call *calls;
  int n;
  char *content; /* the reply's text outside the blocks, whitespace at its end left out */
} mkc_tool_calls;

/* The calls in text[0..n) in format: Qwen's, every <tool_call> block closed
 * and holding a JSON object with a string "name" and an object
 * "arguments"; Llama 3.1's, the whole text (whitespace around it aside) a
 * JSON object with a string "name" and an object "parameters" (or
 * "arguments"). 1 with *out filled (mkc_tool_calls_free), 0 when the text
 * holds no call or something that is not one (then the whole text is the
 * reply: nothing is taken from it), -1 when out of memory. */
int mkc_tool_calls_read(int format, const char *text, size_t n, mkc_tool_calls *out);
/* gpt-oss's call: a message to recipient ("functions.NAME") whose text,
 * args[0..n), is the arguments' JSON object; content the reply beside it.
 * 1 with *out filled, 0 when it is not such a call, -1 when out of memory. */
int mkc_tool_calls_harmony(const char *recipient, const char *args, size_t n, const char *content,
                           mkc_tool_calls *out);

void mkc_tool_calls_free(mkc_tool_calls *c);

#endif
