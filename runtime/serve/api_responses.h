/* OpenAI's Responses API (POST /v1/responses) read as its chat request, as llama-server
 * converts it: instructions become the system message; input (a string: the user's message; or
 * items) becomes the messages: a message item (its content a string or input_text parts; an
 * assistant's output_text or refusal parts), a function_call (an assistant's tool call,
 * joined to the assistant message before it), a function_call_output (a tool message), a
 * reasoning item (the assistant's reasoning_content); max_output_tokens becomes max_tokens,
 * reasoning.effort reasoning_effort, text.format response_format, each function tool and a
 * function tool_choice their chat forms. The other fields stay, for the chat reader to take
 * or ignore. */
#ifndef MKC_API_RESPONSES_H
#define MKC_API_RESPONSES_H

#include <stddef.h>

struct cJSON;

/* A new chat request object from root (the caller deletes it), or NULL with why filled: no
 * input, previous_response_id (nothing is stored), an image or file, an item of no known kind.
 * *skipped: how many tools were not functions (OpenAI's built-in tools), left out. */
struct cJSON *mkc_api_responses_chat(const struct cJSON *root, int *skipped, char *why, size_t cap);

#endif
