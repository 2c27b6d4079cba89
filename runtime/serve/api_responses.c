/* OpenAI's Responses API read as its chat request (api_responses.h). */
#include "api_responses.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "util/text.h"

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static cJSON *text_part(const char *text) {
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "type", "text");
  cJSON_AddStringToObject(p, "text", text);
  return p;
}

/* Content (a string, or parts) as chat text parts: a user's or system's input_text, an
 * assistant's output_text or refusal (assistant), a tool output's input_text. NULL with why. */
static cJSON *parts_of(const cJSON *content, const char *where, int assistant, char *why,
                       size_t cap) {
  cJSON *parts = cJSON_CreateArray();
  if (cJSON_IsString(content)) {
    cJSON_AddItemToArray(parts, text_part(content->valuestring));
    return parts;
  }
  if (!cJSON_IsArray(content)) {
    cJSON_Delete(parts);
    return mkc_refuse(why, cap, "%s.content: expected a string or a list of parts", where), NULL;
  }
  int k = 0;
  for (const cJSON *p = content->child; p; p = p->next, k++) {
    const char *type = str(p, "type"), *text = str(p, "text");
    if (!type) type = "";
    if (assistant && !strcmp(type, "refusal")) text = str(p, "refusal");
    int known = !strcmp(type, "input_text") ||
                (assistant && (!strcmp(type, "output_text") || !strcmp(type, "refusal")));
    const char *fault =
        !strcmp(type, "input_image") || !strcmp(type, "input_file") || !strcmp(type, "input_audio")
            ? "this model reads text only"
        : !known ? (assistant ? "expected an output_text or refusal part"
                              : "expected an input_text part")
        : !text  ? "a text part has a string \"text\""
                 : NULL;
    if (fault) {
      cJSON_Delete(parts);
      return mkc_refuse(why, cap, "%s.content[%d]: %s", where, k, fault), NULL;
    }
    cJSON_AddItemToArray(parts, text_part(text));
  }
  return parts;
}

/* Every entry called key out of o (a body may repeat a key; cJSON keeps each). */
static void drop(cJSON *o, const char *key) {
  while (cJSON_GetObjectItemCaseSensitive(o, key)) cJSON_DeleteItemFromObjectCaseSensitive(o, key);
}

static cJSON *message(const char *role) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "role", role);
  return m;
}

/* The last message when it is an assistant's (an item of the same turn joins it), else NULL. */
static cJSON *open_assistant(cJSON *msgs) {
  cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
  const char *role = str(last, "role");
  return role && !strcmp(role, "assistant") ? last : NULL;
}

/* The assistant message item i joins (the open one, or a new one). */
static cJSON *assistant_for(cJSON *msgs) {
  cJSON *m = open_assistant(msgs);
  if (!m) cJSON_AddItemToArray(msgs, m = message("assistant"));
  return m;
}

/* Item i of input into msgs: 0, or -1 with why. */
static int item(const cJSON *it, int i, cJSON *msgs, char *why, size_t cap) {
  char where[32];
  snprintf(where, sizeof where, "input[%d]", i);
  const char *role = str(it, "role"), *type = str(it, "type");
  if (!cJSON_IsObject(it)) return mkc_refuse(why, cap, "%s: expected an object", where);
  if (role && (!type || !strcmp(type, "message"))) { /* a message, easy form or item */
    int assistant = !strcmp(role, "assistant");
    if (!assistant && strcmp(role, "user") && strcmp(role, "system") && strcmp(role, "developer"))
      return mkc_refuse(why, cap, "%s.role: user, system, developer or assistant", where);
    cJSON *parts =
        parts_of(cJSON_GetObjectItemCaseSensitive(it, "content"), where, assistant, why, cap);
    if (!parts) return -1;
    cJSON *m = assistant ? open_assistant(msgs) : NULL, *had;
    if (m && (had = cJSON_GetObjectItemCaseSensitive(m, "content")) && cJSON_IsArray(had)) {
      while (cJSON_GetArraySize(parts))
        cJSON_AddItemToArray(had, cJSON_DetachItemFromArray(parts, 0));
      cJSON_Delete(parts);
      return 0;
    }
    if (!m) cJSON_AddItemToArray(msgs, m = message(role));
    if (!cJSON_ReplaceItemInObject(m, "content", parts)) cJSON_AddItemToObject(m, "content", parts);
    return 0;
  }
  if (type && !strcmp(type, "function_call")) { /* the assistant's call */
    const char *name = str(it, "name"), *args = str(it, "arguments"), *id = str(it, "call_id");
    if (!name || !args || !id)
      return mkc_refuse(why, cap,
                        "%s: a function_call has string \"name\", \"arguments\" and "
                        "\"call_id\"",
                        where);
    cJSON *m = assistant_for(msgs), *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    if (!calls) calls = cJSON_AddArrayToObject(m, "tool_calls");
    cJSON *call = cJSON_CreateObject(), *f;
    cJSON_AddStringToObject(call, "id", id);
    cJSON_AddStringToObject(call, "type", "function");
    f = cJSON_AddObjectToObject(call, "function");
    cJSON_AddStringToObject(f, "name", name);
    cJSON_AddStringToObject(f, "arguments", args);
    cJSON_AddItemToArray(calls, call);
    return 0;
  }
  if (type && !strcmp(type, "function_call_output")) { /* a tool's result */
    const char *id = str(it, "call_id");
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(it, "output");
    if (!id)
      return mkc_refuse(why, cap, "%s: a function_call_output has a string \"call_id\"", where);
    cJSON *content = cJSON_IsString(out) ? cJSON_CreateString(out->valuestring)
                                         : parts_of(out, where, 0, why, cap);
    if (!content) return -1;
    cJSON *m = message("tool");
    cJSON_AddStringToObject(m, "tool_call_id", id);
    cJSON_AddItemToObject(m, "content", content);
    cJSON_AddItemToArray(msgs, m);
    return 0;
  }
  if (type && !strcmp(type, "reasoning")) { /* given back: the assistant's reasoning */
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(it, "content"), 0);
    const char *text = str(c, "text");
    cJSON *m = text ? assistant_for(msgs) : NULL; /* a second item of a turn: the latest */
    if (m) cJSON_DeleteItemFromObjectCaseSensitive(m, "reasoning_content");
    if (m) cJSON_AddStringToObject(m, "reasoning_content", text);
    return 0; /* only a summary or encrypted content: nothing mkc can read */
  }
  if (type && !strcmp(type, "item_reference"))
    return mkc_refuse(why, cap, "%s: item_reference: mkc stores no items; send the item itself",
                      where);
  return mkc_refuse(why, cap,
                    "%s: expected a message, function_call, function_call_output or reasoning "
                    "item",
                    where);
}

/* text.format as response_format: json_schema {name, schema, strict}, json_object, or text
 * (nothing). 0, or -1 with why. */
static int format(const cJSON *root, cJSON *chat, char *why, size_t cap) {
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text");
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(text, "format");
  if (!f || cJSON_IsNull(f)) return 0;
  const char *type = str(f, "type");
  if (!type || (strcmp(type, "text") && strcmp(type, "json_object") && strcmp(type, "json_schema")))
    return mkc_refuse(why, cap,
                      "text.format: {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
                      "{\"type\": \"json_schema\", \"schema\": {...}}");
  if (!strcmp(type, "text")) return 0;
  drop(chat, "response_format");
  cJSON *rf = cJSON_AddObjectToObject(chat, "response_format");
  cJSON_AddStringToObject(rf, "type", type);
  if (!strcmp(type, "json_schema")) {
    cJSON *js = cJSON_AddObjectToObject(rf, "json_schema");
    static const char *const KEYS[] = {"name", "schema", "strict", "description"};
    for (size_t k = 0; k < sizeof KEYS / sizeof *KEYS; k++) {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(f, KEYS[k]);
      if (v) cJSON_AddItemToObject(js, KEYS[k], cJSON_Duplicate(v, 1));
    }
  }
  return 0;
}

/* Function tools {type, name, description, parameters, strict} as chat's {type, function: {...}};
 * the others (web_search, file_search, ...) counted in *skipped. A function tool_choice
 * {type, name} as chat's {type, function: {name}}. */
static void tools(const cJSON *root, cJSON *chat, int *skipped) {
  const cJSON *given = cJSON_GetObjectItemCaseSensitive(root, "tools");
  if (cJSON_IsArray(given)) {
    cJSON *list = cJSON_AddArrayToObject(chat, "tools");
    for (const cJSON *t = given->child; t; t = t->next) {
      const char *type = str(t, "type");
      if (!type || strcmp(type, "function")) {
        (*skipped)++;
        continue;
      }
      cJSON *tool = cJSON_CreateObject(), *f = cJSON_Duplicate(t, 1);
      cJSON_DeleteItemFromObjectCaseSensitive(f, "type");
      cJSON_AddStringToObject(tool, "type", "function");
      cJSON_AddItemToObject(tool, "function", f);
      cJSON_AddItemToArray(list, tool);
    }
  } else if (given) {
    cJSON_AddItemToObject(chat, "tools", cJSON_Duplicate(given, 1)); /* the reader refuses it */
  }
  const cJSON *choice = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
  const char *name = str(choice, "name"), *type = str(choice, "type");
  if (cJSON_IsObject(choice) && type && !strcmp(type, "function") && name) {
    cJSON *c = cJSON_AddObjectToObject(chat, "tool_choice");
    cJSON_AddStringToObject(c, "type", "function");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(c, "function"), "name", name);
  } else if (choice) {
    cJSON_AddItemToObject(chat, "tool_choice", cJSON_Duplicate(choice, 1));
  }
}

cJSON *mkc_api_responses_chat(const cJSON *root, int *skipped, char *why, size_t cap) {
  *skipped = 0;
  const cJSON *input = cJSON_GetObjectItemCaseSensitive(root, "input"),
              *ins = cJSON_GetObjectItemCaseSensitive(root, "instructions"),
              *prev = cJSON_GetObjectItemCaseSensitive(root, "previous_response_id");
  if (cJSON_IsString(prev) && *prev->valuestring)
    return mkc_refuse(why, cap,
                      "previous_response_id: mkc stores no responses; send the whole "
                      "conversation in input"),
           NULL;
  if (!cJSON_IsString(input) && !(cJSON_IsArray(input) && cJSON_GetArraySize(input) > 0))
    return mkc_refuse(why, cap, "input: expected a string or a non-empty list of items"), NULL;
  if (ins && !cJSON_IsNull(ins) && !cJSON_IsString(ins))
    return mkc_refuse(why, cap, "instructions: expected a string"), NULL;
  cJSON *chat = cJSON_Duplicate(root, 1);
  static const char *const GONE[] = {"input",
                                     "instructions",
                                     "previous_response_id",
                                     "max_output_tokens",
                                     "reasoning",
                                     "text",
                                     "tools",
                                     "tool_choice",
                                     "n",
                                     "logprobs",
                                     "top_logprobs",
                                     "stream_options", /* the Responses API's own */
                                     "messages"};      /* made from input below */
  for (size_t k = 0; k < sizeof GONE / sizeof *GONE; k++) drop(chat, GONE[k]);
  cJSON *msgs = cJSON_AddArrayToObject(chat, "messages");
  if (cJSON_IsString(ins)) {
    cJSON *m = message("system");
    cJSON_AddStringToObject(m, "content", ins->valuestring);
    cJSON_AddItemToArray(msgs, m);
  }
  if (cJSON_IsString(input)) {
    cJSON *m = message("user");
    cJSON_AddStringToObject(m, "content", input->valuestring);
    cJSON_AddItemToArray(msgs, m);
  }
  int i = 0;
  for (const cJSON *it = cJSON_IsArray(input) ? input->child : NULL; it; it = it->next, i++)
    if (item(it, i, msgs, why, cap) != 0) {
      cJSON_Delete(chat);
      return NULL;
    }
  const cJSON *max = cJSON_GetObjectItemCaseSensitive(root, "max_output_tokens");
  /* a converted field over the chat's own sent beside it */
  if (max && !cJSON_IsNull(max)) {
    drop(chat, "max_tokens"), drop(chat, "max_completion_tokens");
    cJSON_AddItemToObject(chat, "max_tokens", cJSON_Duplicate(max, 1));
  }
  const char *effort = str(cJSON_GetObjectItemCaseSensitive(root, "reasoning"), "effort");
  if (effort) {
    drop(chat, "reasoning_effort");
    cJSON_AddStringToObject(chat, "reasoning_effort", effort);
  }
  tools(root, chat, skipped);
  if (format(root, chat, why, cap) != 0) {
    cJSON_Delete(chat);
    return NULL;
  }
  return chat;
}
