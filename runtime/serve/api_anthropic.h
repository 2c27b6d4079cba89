/* Anthropic's tool use on /v1/messages, read as OpenAI's chat request is: an assistant's
 * tool_use blocks become its tool_calls (the input as the arguments), a user's tool_result
 * blocks become tool messages ahead of the user's own text (a message of results alone is
 * those results), each tool {name, description, input_schema} a function whose parameters are
 * the schema, and tool_choice {type: auto | none} with disable_parallel_tool_use its OpenAI
 * fields (with no tools, tool_choice is not read). The other blocks stay in the messages, for the
 * chat reader to take or refuse. */
#ifndef MKC_API_ANTHROPIC_H
#define MKC_API_ANTHROPIC_H

#include <stddef.h>

struct cJSON;

#define MKC_API_ANTHROPIC_FROM "mkc_from"

/* A new object with root's "messages", "tools" and "tool_choice" so converted (the caller
 * deletes it), or NULL with why filled: a tool block of the wrong shape or role, one of
 * Anthropic's server tools, a forced tool choice. Each converted message names the index of
 * the client's message it came from in a field MKC_API_ANTHROPIC_FROM. */
struct cJSON *mkc_api_anthropic_openai(const struct cJSON *root, char *why, size_t cap);

#endif
