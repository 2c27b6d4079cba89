/* Anthropic's tool use as OpenAI's (api_anthropic.h): the blocks moved into the messages and
 * fields the chat reader already takes, as llama-server converts them. */
#include "api_anthropic.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "util/text.h"

static const char *type_of(const cJSON *block) {
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(block, "type");
  return cJSON_IsString(t) ? t->valuestring : "";
}

/* tool_use {id, name, input} -> {"id", "type": "function", "function": {"name", "arguments"}} */
static cJSON *call_of(const cJSON *b, int i, int k, char *why, size_t cap) {
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id"),
              *name = cJSON_GetObjectItemCaseSensitive(b, "name"),
              *input = cJSON_GetObjectItemCaseSensitive(b, "input");
  if (!cJSON_IsString(name) || !*name->valuestring || !cJSON_IsObject(input))
    return mkc_refuse(why, cap,
                      "messages[%d].content[%d]: a tool_use block has a \"name\" and an object "
                      "\"input\"",
                      i, k),
           NULL;
  cJSON *call = cJSON_CreateObject(), *f;
  if (cJSON_IsString(id)) cJSON_AddStringToObject(call, "id", id->valuestring);
  cJSON_AddStringToObject(call, "type", "function");
  f = cJSON_AddObjectToObject(call, "function");
  cJSON_AddStringToObject(f, "name", name->valuestring);
  cJSON_AddItemToObject(f, "arguments", cJSON_Duplicate(input, 1));
  return call;
}

/* tool_result {tool_use_id, content} -> {"role": "tool", "tool_call_id", "content"} */
static cJSON *result_of(const cJSON *b, int i, int k, char *why, size_t cap) {
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "tool_use_id"),
              *content = cJSON_GetObjectItemCaseSensitive(b, "content");
  if (content && !cJSON_IsString(content) && !cJSON_IsArray(content) && !cJSON_IsNull(content))
    return mkc_refuse(why, cap,
                      "messages[%d].content[%d]: a tool_result's content is a string or a list of "
                      "text blocks",
                      i, k),
           NULL;
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "role", "tool");
  if (cJSON_IsString(id)) cJSON_AddStringToObject(m, "tool_call_id", id->valuestring);
  cJSON_AddItemToObject(m, "content",
                        cJSON_IsString(content) || cJSON_IsArray(content)
                            ? cJSON_Duplicate(content, 1)
                            : cJSON_CreateString(""));
  return m;
}

/* Message i (m) as one or more of OpenAI's, appended to out: 0, or -1 with why. */
static int message(const cJSON *m, int i, cJSON *out, char *why, size_t cap) {
  const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role"),
              *content = cJSON_GetObjectItemCaseSensitive(m, "content"), *b;
  if (!cJSON_IsArray(content) || !cJSON_IsString(role)) { /* the reader says what is wrong */
    cJSON_AddItemToArray(out, cJSON_Duplicate(m, 1));
    return 0;
  }
  int assistant = !strcmp(role->valuestring, "assistant"), k = 0;
  cJSON *rest = cJSON_CreateArray(), *calls = cJSON_CreateArray();
  cJSON_ArrayForEach(b, content) {
    const char *type = type_of(b);
    cJSON *made = NULL;
    if (!strcmp(type, "tool_use") && assistant) {
      if ((made = call_of(b, i, k, why, cap))) cJSON_AddItemToArray(calls, made);
    } else if (!strcmp(type, "tool_result") && !assistant) {
      if ((made = result_of(b, i, k, why, cap))) cJSON_AddItemToArray(out, made);
    } else if (!strcmp(type, "tool_use") || !strcmp(type, "tool_result")) {
      snprintf(why, cap, "messages[%d].content[%d]: a %s block belongs in %s message", i, k, type,
               assistant ? "a user's" : "an assistant's");
    } else {
      cJSON_AddItemToArray(rest, made = cJSON_Duplicate(b, 1));
    }
    if (!made) {
      cJSON_Delete(rest), cJSON_Delete(calls);
      return -1;
    }
    k++;
  }
  /* a user message of tool results alone is those results; an assistant's calls go with its
   * text (none: "") */
  int results_only = !assistant && cJSON_GetArraySize(rest) == 0 && k > 0;
  if (results_only) {
    cJSON_Delete(rest), cJSON_Delete(calls);
    return 0;
  }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "role", role->valuestring);
  cJSON_AddItemToObject(o, "content", rest);
  if (cJSON_GetArraySize(calls) > 0)
    cJSON_AddItemToObject(o, "tool_calls", calls);
  else
    cJSON_Delete(calls);
  cJSON_AddItemToArray(out, o);
  return 0;
}

/* tools [{name, description, input_schema}] -> [{"type": "function", "function": {"name",
 * "description", "parameters"}}]: 0, or -1 with why. */
static int tools(const cJSON *root, cJSON *o, char *why, size_t cap) {
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "tools"), *t;
  if (!list || cJSON_IsNull(list)) return 0;
  if (!cJSON_IsArray(list)) return mkc_refuse(why, cap, "tools: expected a list");
  cJSON *out = cJSON_AddArrayToObject(o, "tools");
  int k = 0;
  cJSON_ArrayForEach(t, list) {
    const char *type = type_of(t);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name"),
                *desc = cJSON_GetObjectItemCaseSensitive(t, "description"),
                *schema = cJSON_GetObjectItemCaseSensitive(t, "input_schema");
    if (*type && strcmp(type, "custom"))
      return mkc_refuse(why, cap,
                        "tools[%d]: %s is one of Anthropic's own tools; only yours are offered "
                        "({\"name\", \"description\", \"input_schema\"})",
                        k, type);
    if (!cJSON_IsString(name) || !*name->valuestring || !cJSON_IsObject(schema))
      return mkc_refuse(
          why, cap, "tools[%d]: expected {\"name\", \"description\", \"input_schema\": an object}",
          k);
    cJSON *fn = cJSON_CreateObject(), *f;
    cJSON_AddStringToObject(fn, "type", "function");
    f = cJSON_AddObjectToObject(fn, "function");
    cJSON_AddStringToObject(f, "name", name->valuestring);
    if (cJSON_IsString(desc)) cJSON_AddStringToObject(f, "description", desc->valuestring);
    cJSON_AddItemToObject(f, "parameters", cJSON_Duplicate(schema, 1));
    cJSON_AddItemToArray(out, fn);
    k++;
  }
  return 0;
}

/* tool_choice {type: auto | none | any | tool, disable_parallel_tool_use}: 0, or -1. */
static int choice(const cJSON *root, cJSON *o, char *why, size_t cap) {
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
  /* without tools there is nothing to choose (a client may send it regardless) */
  if (!c || cJSON_IsNull(c) ||
      cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "tools")) == 0)
    return 0;
  const char *type = type_of(c);
  if (!cJSON_IsObject(c) || (strcmp(type, "auto") && strcmp(type, "none")))
    return mkc_refuse(why, cap,
                      "tool_choice: {\"type\": \"auto\"} or {\"type\": \"none\"} (a call cannot be "
                      "forced: constrained output is not offered)");
  cJSON_AddStringToObject(o, "tool_choice", type);
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "disable_parallel_tool_use")))
    cJSON_AddFalseToObject(o, "parallel_tool_calls");
  return 0;
}

struct cJSON *mkc_api_anthropic_openai(const struct cJSON *root, char *why, size_t cap) {
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages"), *m;
  cJSON *o = cJSON_CreateObject();
  if (cJSON_IsArray(msgs)) {
    cJSON *out = cJSON_AddArrayToObject(o, "messages");
    int i = 0;
    cJSON_ArrayForEach(m, msgs) {
      int before = cJSON_GetArraySize(out);
      if (message(m, i, out, why, cap) != 0) {
        cJSON_Delete(o);
        return NULL;
      }
      /* each message made from it names the client's message, for the readers' errors */
      for (cJSON *made = cJSON_GetArrayItem(out, before); made; made = made->next)
        if (cJSON_IsObject(made)) cJSON_AddNumberToObject(made, MKC_API_ANTHROPIC_FROM, i);
      i++;
    }
  } else if (msgs) {
    cJSON_AddItemToObject(o, "messages", cJSON_Duplicate(msgs, 1));
  }
  if (tools(root, o, why, cap) != 0 || choice(root, o, why, cap) != 0) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}
