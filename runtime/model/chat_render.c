/* See chat_template.h: a conversation written in each family's format.
 * Each renderer follows the family's published template (the Jinja a
 * model ships in tokenizer_config.json), with three rules of mkc's own:
 * no leading BOS text (the tokenizer adds it), no default system prompt
 * when the conversation has none, and without add_assistant nothing is
 * appended after the last message (some templates add eos_token or the
 * assistant's cue there). "trim" is Jinja's: ASCII whitespace at both ends. */
#include "chat_template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "harmony_tools.h"
#include "tojson.h"
#include "util/buf.h"
#include "util/json_text.h"

/* The text being written. */
typedef mkc_buf text;

static void put_n(text *t, const char *s, size_t n) { mkc_buf_put_n(t, s, n); }
static void put(text *t, const char *s) { mkc_buf_put(t, s); }

/* Python's str.isspace() over ASCII (Jinja's trim is str.strip()). */
static int is_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static void put_trimmed(text *t, const char *s) {
  size_t n = strlen(s);
  while (n && is_space((unsigned char)*s)) s++, n--;
  while (n && is_space((unsigned char)s[n - 1])) n--;
  put_n(t, s, n);
}

static void put_content(text *t, const char *s, int trim) {
  if (trim)
    put_trimmed(t, s);
  else
    put(t, s);
}

/* A conversation after checking: the system message (or NULL), then
 * turns that alternate user (even i) and assistant (odd i); in the
 * families with tools, which read each turn's role, tool results and
 * calls too. */
typedef struct chat {
  const char *system;
  const mkc_chat_msg *turns;
  int n, add_assistant;
  const char *effort; /* gpt-oss's reasoning effort, or NULL */
  int no_reasoning;   /* qwen3: the cue closes an empty think block */
  const char *const *tools;
  int n_tools;
} chat;

static int is_user(int i) { return i % 2 == 0; }

/* Index of the last user turn, or -1. */
static int last_user(const chat *c) { return c->n == 0 ? -1 : (c->n - 1) & ~1; }

/* Families whose turns are an opening per role, the content and one
 * closing string: ChatML, Phi-3/4, Zephyr, Granite, Llama 3, Command R. */
typedef struct turn_format {
  const char *open[3]; /* system, user, assistant; the assistant's is also the cue */
  const char *close;
  int trim, trim_system, skip_empty_system;
} turn_format;

/* SmolLM2-135M-Instruct, Qwen2.5-Instruct (tokenizer_config.json). */
static const turn_format CHATML = {
    .open = {"<|im_start|>system\n", "<|im_start|>user\n", "<|im_start|>assistant\n"},
    .close = "<|im_end|>\n"};
/* Phi-3.5-mini-instruct: an empty system message is left out. */
static const turn_format PHI3 = {.open = {"<|system|>\n", "<|user|>\n", "<|assistant|>\n"},
                                 .close = "<|end|>\n",
                                 .skip_empty_system = 1};
/* Phi-4-mini-instruct: every message, an empty system one too, with no newline. */
static const turn_format PHI4_MINI = {.open = {"<|system|>", "<|user|>", "<|assistant|>"},
                                      .close = "<|end|>"};
/* phi-4. */
static const turn_format PHI4 = {.open = {"<|im_start|>system<|im_sep|>",
                                          "<|im_start|>user<|im_sep|>",
                                          "<|im_start|>assistant<|im_sep|>"},
                                 .close = "<|im_end|>"};
/* zephyr-7b-beta, TinyLlama-1.1B-Chat: eos_token is </s>. */
static const turn_format ZEPHYR = {.open = {"<|system|>\n", "<|user|>\n", "<|assistant|>\n"},
                                   .close = "</s>\n"};
/* granite-3.0-8b-instruct. */
static const turn_format GRANITE = {.open = {"<|start_of_role|>system<|end_of_role|>",
                                             "<|start_of_role|>user<|end_of_role|>",
                                             "<|start_of_role|>assistant<|end_of_role|>"},
                                    .close = "<|end_of_text|>\n"};
/* Meta-Llama-3-8B-Instruct: every content trimmed. */
static const turn_format LLAMA3 = {.open = {"<|start_header_id|>system<|end_header_id|>\n\n",
                                            "<|start_header_id|>user<|end_header_id|>\n\n",
                                            "<|start_header_id|>assistant<|end_header_id|>\n\n"},
                                   .close = "<|eot_id|>",
                                   .trim = 1,
                                   .trim_system = 1};
/* c4ai-command-r-plus "default": user and assistant stripped, system not. */
static const turn_format COMMAND_R = {.open = {"<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>",
                                               "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>",
                                               "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
                                      .close = "<|END_OF_TURN_TOKEN|>",
                                      .trim = 1};

static void render_turns(text *t, const chat *c, const turn_format *f) {
  if (c->system && !(f->skip_empty_system && !c->system[0])) {
    put(t, f->open[0]);
    put_content(t, c->system, f->trim_system);
    put(t, f->close);
  }
  for (int i = 0; i < c->n; i++) {
    put(t, f->open[is_user(i) ? 1 : 2]);
    put_content(t, c->turns[i].content, f->trim);
    put(t, f->close);
  }
  if (c->add_assistant) put(t, f->open[2]);
}

/* Qwen3's split of a reply: *answer the text after its last </think>,
 * newlines first stripped; the reasoning [*from, *to) the text before the
 * first </think>, after a <think>, without the newlines around it; no
 * </think>: the whole reply answers, the reasoning is empty. */
static void qwen3_split(const char *reply, const char **answer, const char **from,
                        const char **to) {
  const char *close = strstr(reply, "</think>");
  *answer = reply;
  for (const char *at = close; at; at = strstr(at + 1, "</think>"))
    *answer = at + strlen("</think>");
  while (close && **answer == '\n') (*answer)++;
  *from = reply, *to = close ? close : reply;
  while (*to > *from && (*to)[-1] == '\n') (*to)--;
  for (const char *at; (at = memmem(*from, (size_t)(*to - *from), "<think>", 7));) *from = at + 7;
  while (*from < *to && **from == '\n') (*from)++;
}

/* Qwen2.5's and Qwen3's system turn: with tools, the system text (else
 * fallback: Qwen2.5's default; NULL: none) and a blank line, then the
 * definitions, one per line, and how to call them; without, the system
 * message alone when there is one. */
static void put_qwen_system(text *t, const chat *c, const char *fallback) {
  const char *system = c->system ? c->system : fallback;
  if (!c->n_tools && !c->system) return;
  put(t, CHATML.open[0]);
  if (!c->n_tools) {
    put(t, c->system);
    put(t, CHATML.close);
    return;
  }
  if (system) {
    put(t, system);
    put(t, "\n\n");
  }
  put(t, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n<tools>");
  for (int k = 0; k < c->n_tools; k++) {
    put(t, "\n");
    put(t, c->tools[k]);
  }
  put(t, "\n</tools>\n\nFor each function call, return a json object with function name and "
         "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
         "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n");
}

/* A reply's calls, each a <tool_call> block on its own line (Qwen3's first
 * one without the newline when the reply has no text). */
static void put_qwen_calls(text *t, const mkc_chat_msg *m, int newline_first) {
  for (int k = 0; k < m->n_calls; k++) {
    if (k || newline_first) put(t, "\n");
    put(t, "<tool_call>\n{\"name\": \"");
    put(t, m->calls[k].name);
    put(t, "\", \"arguments\": ");
    put(t, m->calls[k].arguments);
    put(t, "}\n</tool_call>");
  }
}

/* Tool results: a run of them is one user turn, each in <tool_response>. */
static int is_role(const chat *c, int i, const char *role) {
  return strcmp(c->turns[i].role, role) == 0;
}

static void put_qwen_result(text *t, const chat *c, int i) {
  if (i == 0 || !is_role(c, i - 1, "tool")) put(t, "<|im_start|>user");
  put(t, "\n<tool_response>\n");
  put(t, c->turns[i].content);
  put(t, "\n</tool_response>");
  if (i == c->n - 1 || !is_role(c, i + 1, "tool")) put(t, CHATML.close);
}

/* Qwen2.5-7B-Instruct: ChatML turns; with tools, the system turn holds
 * them, and its default text when there is no system message. */
static void render_qwen25(text *t, const chat *c) {
  put_qwen_system(t, c, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  for (int i = 0; i < c->n; i++) {
    const mkc_chat_msg *m = &c->turns[i];
    if (is_role(c, i, "tool")) {
      put_qwen_result(t, c, i);
    } else if (m->n_calls) {
      put(t, "<|im_start|>assistant");
      if (*m->content) {
        put(t, "\n");
        put(t, m->content);
      }
      put_qwen_calls(t, m, 1);
      put(t, CHATML.close);
    } else {
      put(t, CHATML.open[is_role(c, i, "user") ? 1 : 2]);
      put(t, m->content);
      put(t, CHATML.close);
    }
  }
  if (c->add_assistant) put(t, CHATML.open[2]);
}

/* Qwen3's last query: the last user message that is not tool results
 * wrapped by hand; c->n when there is none (then no reply comes after it:
 * the template's index is then the last message's). */
static int qwen3_last_query(const chat *c) {
  for (int i = c->n - 1; i >= 0; i--) {
    const char *s = c->turns[i].content;
    size_t n = strlen(s), open = strlen("<tool_response>"), close = strlen("</tool_response>");
    int wrapped = n >= open && strncmp(s, "<tool_response>", open) == 0 && n >= close &&
                  strcmp(s + n - close, "</tool_response>") == 0;
    if (is_role(c, i, "user") && !wrapped) return i;
  }
  return c->n;
}

/* Qwen3-0.6B: ChatML turns; a reply is the text after its </think>, and
 * after the last query the last reply, or one with reasoning, keeps it,
 * rewrapped; tools as Qwen2.5's, their calls after the reply's text. */
static void render_qwen3(text *t, const chat *c) {
  put_qwen_system(t, c, NULL);
  int query = qwen3_last_query(c);
  for (int i = 0; i < c->n; i++) {
    const mkc_chat_msg *m = &c->turns[i];
    if (is_role(c, i, "tool")) {
      put_qwen_result(t, c, i);
      continue;
    }
    if (is_role(c, i, "user")) {
      put(t, CHATML.open[1]);
      put(t, m->content);
      put(t, CHATML.close);
      continue;
    }
    const char *answer, *from, *to;
    qwen3_split(m->content, &answer, &from, &to);
    if (m->reasoning) { /* given apart: the content as it is */
      answer = m->content, from = m->reasoning, to = from + strlen(from);
    }
    put(t, CHATML.open[2]);
    if (i > query && (i == c->n - 1 || to > from)) {
      while (from < to && *from == '\n') from++; /* strip('\n') */
      while (to > from && to[-1] == '\n') to--;
      put(t, "<think>\n");
      put_n(t, from, (size_t)(to - from));
      put(t, "\n</think>\n\n");
      const char *a = answer;
      while (*a == '\n') a++;
      put(t, a);
    } else {
      put(t, answer);
    }
    put_qwen_calls(t, m, *answer != '\0');
    put(t, CHATML.close);
  }
  if (c->add_assistant) put(t, CHATML.open[2]);
  /* enable_thinking false */
  if (c->add_assistant && c->no_reasoning) put(t, "<think>\n\n</think>\n\n");
}

/* s as tojson writes a string: quoted, escaped. */
static void put_json_string(text *t, const char *s) {
  cJSON *v = cJSON_CreateString(s);
  char *quoted = v ? mkc_tojson(v) : NULL;
  t->oom |= !quoted;
  if (quoted) put(t, quoted);
  free(quoted);
  cJSON_Delete(v);
}

/* Llama 3.1's tools, before the first user message's text: how to call,
 * then each definition as tojson(indent=4). */
static void put_llama_tools(text *t, const chat *c) {
  put(t, "Given the following functions, please respond with a JSON for a function call with its "
         "proper arguments that best answers the given prompt.\n\nRespond in the format "
         "{\"name\": function name, \"parameters\": dictionary of argument name and its "
         "value}.Do not use variables.\n\n");
  for (int k = 0; k < c->n_tools; k++) {
    char *indented = mkc_json_python(c->tools[k], strlen(c->tools[k]), 4);
    put(t, indented ? indented : c->tools[k]);
    put(t, "\n\n");
    free(indented);
  }
}

/* Llama-3.2-3B-Instruct (also 3.1, 3.3): the system turn always comes,
 * with two date lines; the date is the templates' fallback, not today's,
 * so a prompt renders the same every day. With tools: "Environment:
 * ipython" first, and the tools in the first user message; a call is the
 * reply's one JSON object, a result an ipython turn holding its text as a
 * JSON string (the template's tojson of any iterable, a string too). */
static void render_llama31(text *t, const chat *c) {
  put(t, LLAMA3.open[0]);
  if (c->n_tools) put(t, "Environment: ipython\n");
  put(t, "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
  if (c->system) put_trimmed(t, c->system);
  put(t, LLAMA3.close);
  for (int i = 0; i < c->n; i++) {
    const mkc_chat_msg *m = &c->turns[i];
    if (is_role(c, i, "tool")) {
      put(t, "<|start_header_id|>ipython<|end_header_id|>\n\n");
      put_json_string(t, m->content);
    } else if (m->n_calls) { /* one (mkc_chat_check) */
      put(t, LLAMA3.open[2]);
      put(t, "{\"name\": \"");
      put(t, m->calls[0].name);
      put(t, "\", \"parameters\": ");
      put(t, m->calls[0].arguments);
      put(t, "}");
    } else {
      put(t, LLAMA3.open[is_role(c, i, "user") ? 1 : 2]);
      if (i == 0 && c->n_tools) put_llama_tools(t, c);
      put_trimmed(t, m->content);
    }
    put(t, LLAMA3.close);
  }
  if (c->add_assistant) put(t, LLAMA3.open[2]);
}

/* Llama-2-7b-chat-hf: the system block opens the first user turn, that
 * whole content is stripped, and each later user turn starts with BOS. */
static void render_llama2(text *t, const chat *c) {
  for (int i = 0; i < c->n; i++) {
    const char *content = c->turns[i].content;
    if (!is_user(i)) {
      put(t, " ");
      put_trimmed(t, content);
      put(t, " </s>");
      continue;
    }
    put(t, i ? "<s>[INST] " : "[INST] ");
    if (i == 0 && c->system) {
      text first = {0};
      put(&first, "<<SYS>>\n");
      put(&first, c->system);
      put(&first, "\n<</SYS>>\n\n");
      put(&first, content);
      t->oom |= first.oom;
      if (first.s) put_trimmed(t, first.s);
      free(first.s);
    } else {
      put_trimmed(t, content);
    }
    put(t, " [/INST]");
  }
}

/* The [INST] families of Mistral (mistral-common's tokenizer versions). */
typedef struct inst_format {
  const char *inst, *inst_end, *reply; /* around a user turn; before a reply */
  const char *system_open;             /* [SYSTEM_PROMPT] block, or NULL: folded */
  int system_last;                     /* folded into the last user turn, not the first */
  int trim_reply;
} inst_format;

/* Mistral-7B-Instruct-v0.2 (v1 with a system prompt). */
static const inst_format MISTRAL_V1 = {.inst = " [INST] ", .inst_end = " [/INST]", .reply = " "};
/* Mistral-7B-Instruct-v0.3, Mistral-Large-Instruct-2407: the system
 * message goes into the last user turn (mistral-common does the same). */
static const inst_format MISTRAL_V3 = {
    .inst = "[INST] ", .inst_end = "[/INST]", .reply = " ", .system_last = 1, .trim_reply = 1};
/* Mistral-Nemo-Instruct-2407. */
static const inst_format MISTRAL_V3_TEKKEN = {
    .inst = "[INST]", .inst_end = "[/INST]", .reply = "", .system_last = 1};
/* Mistral-Large-Instruct-2411. */
static const inst_format MISTRAL_V7 = {
    .inst = "[INST] ", .inst_end = "[/INST]", .reply = " ", .system_open = "[SYSTEM_PROMPT] "};
/* Mistral-Small-3.1-24B-Instruct-2503. */
static const inst_format MISTRAL_V7_TEKKEN = {
    .inst = "[INST]", .inst_end = "[/INST]", .reply = "", .system_open = "[SYSTEM_PROMPT]"};

static void render_inst(text *t, const chat *c, const inst_format *f) {
  if (c->system && f->system_open) {
    put(t, f->system_open);
    put(t, c->system);
    put(t, "[/SYSTEM_PROMPT]");
  }
  int fold_at = f->system_open || !c->system ? -1 : f->system_last ? last_user(c) : 0;
  for (int i = 0; i < c->n; i++) {
    if (is_user(i)) {
      put(t, f->inst);
      if (i == fold_at) {
        put(t, c->system);
        put(t, "\n\n");
      }
      put(t, c->turns[i].content);
      put(t, f->inst_end);
    } else {
      put(t, f->reply);
      put_content(t, c->turns[i].content, f->trim_reply);
      put(t, "</s>");
    }
  }
}

/* gemma-2-2b-it's turns ("model" for the assistant, content trimmed) with
 * gemma-3-it's system rule: its text and a blank line open the first user
 * turn. */
static void render_gemma(text *t, const chat *c) {
  for (int i = 0; i < c->n; i++) {
    put(t, is_user(i) ? "<start_of_turn>user\n" : "<start_of_turn>model\n");
    if (i == 0 && c->system) {
      put(t, c->system);
      put(t, "\n\n");
    }
    put_trimmed(t, c->turns[i].content);
    put(t, "<end_of_turn>\n");
  }
  if (c->add_assistant) put(t, "<start_of_turn>model\n");
}

/* DeepSeek-R1-Distill-Qwen-32B: the system text right after BOS; a reply
 * keeps only what follows its last </think>; the cue opens a <think>. */
static void render_deepseek_r1(text *t, const chat *c) {
  if (c->system) put(t, c->system);
  for (int i = 0; i < c->n; i++) {
    const char *content = c->turns[i].content;
    if (is_user(i)) {
      put(t, "<｜User｜>");
      put(t, content);
      continue;
    }
    for (const char *end; (end = strstr(content, "</think>"));) content = end + strlen("</think>");
    put(t, "<｜Assistant｜>");
    put(t, content);
    put(t, "<｜end▁of▁sentence｜>");
  }
  if (c->add_assistant) put(t, "<｜Assistant｜><think>\n");
}

/* Today as gpt-oss's template writes it (strftime_now("%Y-%m-%d")): the
 * local date, or $MKC_CHAT_DATE. */
static void put_today(text *t) {
  const char *fixed = getenv("MKC_CHAT_DATE");
  if (fixed && *fixed) {
    put(t, fixed);
    return;
  }
  char day[32] = "";
  time_t now = time(NULL);
  struct tm tm;
  if (localtime_r(&now, &tm)) strftime(day, sizeof day, "%Y-%m-%d", &tm);
  put(t, day);
}

/* openai/gpt-oss-20b chat_template.jinja (harmony): the system turn
 * (identity, dates, reasoning effort, channels, and with tools where their
 * calls go); the system message as the developer's instructions, and the
 * tools (harmony_tools.h); replies in the final channel, their reasoning
 * dropped; the last one, with no cue after it, ends with <|return|>; a call
 * is a commentary message to functions.NAME, after the reply's text as
 * analysis when no final reply follows it; a result is a message from the
 * function holding its text as a JSON string; the cue opens the
 * assistant's header. */
static void render_gpt_oss(text *t, const chat *c) {
  put(t, "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
         "Knowledge cutoff: 2024-06\nCurrent date: ");
  put_today(t);
  put(t, "\n\nReasoning: ");
  put(t, c->effort ? c->effort : "medium");
  put(t, "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every "
         "message.");
  if (c->n_tools) put(t, "\nCalls to these tools must go to the commentary channel: 'functions'.");
  put(t, "<|end|>");
  if ((c->system && *c->system) || c->n_tools) {
    put(t, "<|start|>developer<|message|>");
    if (c->system && *c->system) {
      put(t, "# Instructions\n\n");
      put(t, c->system);
      put(t, "\n\n");
    }
    if (c->n_tools) {
      put(t, "# Tools\n\n");
      mkc_harmony_tools(t, c->tools, c->n_tools);
    }
    put(t, "<|end|>");
  }
  const char *called = NULL; /* the last call's function, which a result answers */
  for (int i = 0; i < c->n; i++) {
    const mkc_chat_msg *m = &c->turns[i];
    if (is_role(c, i, "tool")) {
      put(t, "<|start|>functions.");
      put(t, called ? called : "");
      put(t, " to=assistant<|channel|>commentary<|message|>");
      put_json_string(t, m->content);
      put(t, "<|end|>");
    } else if (m->n_calls) { /* one (mkc_chat_check) */
      int final_later = 0;
      for (int k = i + 1; k < c->n; k++)
        final_later |= is_role(c, k, "assistant") && !c->turns[k].n_calls;
      /* the reply's text, or its reasoning, as the analysis (mkc_chat_check: not both) */
      const char *analysis = *m->content ? m->content : m->reasoning;
      if (analysis && *analysis && !final_later) {
        put(t, "<|start|>assistant<|channel|>analysis<|message|>");
        put(t, analysis);
        put(t, "<|end|>");
      }
      put(t, "<|start|>assistant to=functions.");
      put(t, m->calls[0].name);
      put(t, "<|channel|>commentary json<|message|>");
      put(t, m->calls[0].arguments);
      put(t, "<|call|>");
      called = m->calls[0].name;
    } else if (is_role(c, i, "user")) {
      put(t, "<|start|>user<|message|>");
      put(t, m->content);
      put(t, "<|end|>");
    } else {
      int last = i == c->n - 1 && !c->add_assistant;
      if (last && m->reasoning) { /* a finished conversation keeps its last reasoning */
        put(t, "<|start|>assistant<|channel|>analysis<|message|>");
        put(t, m->reasoning);
        put(t, "<|end|>");
      }
      put(t, "<|start|>assistant<|channel|>final<|message|>");
      put(t, m->content);
      put(t, last ? "<|return|>" : "<|end|>");
      called = NULL;
    }
  }
  if (c->add_assistant) put(t, "<|start|>assistant");
}

/* gpt-oss's template refuses a reply that spells its channels: the
 * reasoning and the reply are separate fields there, and mkc keeps only the
 * reply. 0, or -1 after a message. */
static int check_gpt_oss(const chat *c, int first) {
  for (int i = 0; i < c->n; i++) {
    const mkc_chat_msg *m = &c->turns[i];
    if (!is_role(c, i, "assistant")) continue;
    const char *in = strstr(m->content, "<|channel|>analysis<|message|>") ||
                             strstr(m->content, "<|channel|>final<|message|>")
                         ? "reply"
                     : m->reasoning && (strstr(m->reasoning, "<|channel|>analysis<|message|>") ||
                                        strstr(m->reasoning, "<|channel|>final<|message|>"))
                         ? "reasoning"
                         : NULL;
    if (in) {
      fprintf(stderr,
              "mkc: error: chat message %d: an assistant %s holds <|channel|> tags (gpt-oss: "
              "pass only the final channel's text)\n",
              i + first + 1, in);
      return -1;
    }
    if (m->n_calls && *m->content && m->reasoning && *m->reasoning) {
      fprintf(stderr,
              "mkc: error: chat message %d: a tool call with both text and reasoning (gpt-oss's "
              "template takes one of them as the call's analysis)\n",
              i + first + 1);
      return -1;
    }
  }
  return 0;
}

/* Each family's renderer: a turn format, an [INST] format, or its own. */
typedef struct family_renderer {
  const turn_format *turns;
  const inst_format *inst;
  void (*own)(text *, const chat *);
} family_renderer;

static const family_renderer RENDERERS[MKC_CHAT_N_FAMILIES] = {
    [MKC_CHAT_CHATML] = {.turns = &CHATML},
    [MKC_CHAT_QWEN3] = {.own = render_qwen3},
    [MKC_CHAT_LLAMA3] = {.turns = &LLAMA3},
    [MKC_CHAT_LLAMA31] = {.own = render_llama31},
    [MKC_CHAT_LLAMA2] = {.own = render_llama2},
    [MKC_CHAT_MISTRAL_V1] = {.inst = &MISTRAL_V1},
    [MKC_CHAT_MISTRAL_V3] = {.inst = &MISTRAL_V3},
    [MKC_CHAT_MISTRAL_V3_TEKKEN] = {.inst = &MISTRAL_V3_TEKKEN},
    [MKC_CHAT_MISTRAL_V7] = {.inst = &MISTRAL_V7},
    [MKC_CHAT_MISTRAL_V7_TEKKEN] = {.inst = &MISTRAL_V7_TEKKEN},
    [MKC_CHAT_GEMMA] = {.own = render_gemma},
    [MKC_CHAT_PHI3] = {.turns = &PHI3},
    [MKC_CHAT_PHI4] = {.turns = &PHI4},
    [MKC_CHAT_PHI4_MINI] = {.turns = &PHI4_MINI},
    [MKC_CHAT_ZEPHYR] = {.turns = &ZEPHYR},
    [MKC_CHAT_COMMAND_R] = {.turns = &COMMAND_R},
    [MKC_CHAT_GRANITE] = {.turns = &GRANITE},
    [MKC_CHAT_DEEPSEEK_R1] = {.own = render_deepseek_r1},
    [MKC_CHAT_GPT_OSS] = {.own = render_gpt_oss},
    [MKC_CHAT_QWEN25] = {.own = render_qwen25},
};

/* For messages: the families mkc writes tools for. */
#define TOOL_FAMILIES "qwen2.5's, qwen3's, llama3.1's and gpt-oss's"

/* The families with tools: after user comes assistant; after an assistant
 * with calls, their results; after results, more of them, the assistant or
 * the user; after an assistant without calls, the user. */
static const char *tool_order(const mkc_chat_msg *prev, const char *role) {
  if (!prev) return strcmp(role, "user") ? "user" : NULL;
  if (strcmp(prev->role, "user") == 0) return strcmp(role, "assistant") ? "assistant" : NULL;
  if (strcmp(prev->role, "tool") == 0)
    return strcmp(role, "tool") && strcmp(role, "assistant") && strcmp(role, "user") ? "tool"
                                                                                     : NULL;
  if (prev->n_calls) return strcmp(role, "tool") ? "tool" : NULL;
  return strcmp(role, "user") ? "user" : NULL;
}

int mkc_chat_check(int family, const mkc_chat_msg *msgs, int n, int *bad, char *why, size_t cap) {
  static const char *const expected[] = {"user", "assistant"};
  const char *name = mkc_chat_family_name(family) ? mkc_chat_family_name(family) : "model's";
  int tools = mkc_chat_tools(family), first = 0;
  *bad = -1;
  if (n < 0 || (n > 0 && !msgs)) {
    snprintf(why, cap, "%d messages", n);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    const char *role = msgs[i].role;
    *bad = i;
    if (!role || !msgs[i].content) {
      snprintf(why, cap, "no %s", role ? "content" : "role");
      return -1;
    }
    if (i == 0 && strcmp(role, "system") == 0) {
      first = 1;
      continue;
    }
    int is_tool = strcmp(role, "tool") == 0;
    if (!tools && (is_tool || msgs[i].n_calls)) {
      snprintf(why, cap, "%s: the %s chat template has no tools (%s have)",
               is_tool ? "a tool result" : "tool calls", name, TOOL_FAMILIES);
      return -1;
    }
    if (msgs[i].n_calls && (strcmp(role, "assistant") != 0 || !msgs[i].calls)) {
      snprintf(why, cap, "tool calls in a message that is not the assistant's");
      return -1;
    }
    if (msgs[i].n_calls > 1 && (tools == MKC_TOOLS_LLAMA3 || tools == MKC_TOOLS_HARMONY)) {
      snprintf(why, cap, "%d tool calls: the %s chat template takes one per message",
               msgs[i].n_calls, name);
      return -1;
    }
    const char *want = tools ? tool_order(i > first ? &msgs[i - 1] : NULL, role)
                       : strcmp(role, expected[(i - first) % 2]) ? expected[(i - first) % 2]
                                                                 : NULL;
    if (want) {
      snprintf(why, cap,
               "role '%s' where '%s' was expected (a system message comes first, then user and "
               "assistant alternate, user first%s)",
               role, want,
               tools ? "; an assistant's tool calls are followed by their results, role 'tool'"
                     : "");
      return -1;
    }
  }
  return 0;
}

/* msgs -> c, or -1 after a message naming the first bad message. */
static int check(int family, const mkc_chat_msg *msgs, int n, chat *c) {
  char why[320];
  int bad;
  *c = (chat){0};
  if (mkc_chat_check(family, msgs, n, &bad, why, sizeof why) != 0) {
    if (bad < 0)
      fprintf(stderr, "mkc: error: chat: %s\n", why);
    else
      fprintf(stderr, "mkc: error: chat message %d: %s\n", bad + 1, why);
    return -1;
  }
  int first = n > 0 && strcmp(msgs[0].role, "system") == 0;
  c->system = first ? msgs[0].content : NULL;
  c->turns = msgs + first;
  c->n = n - first;
  return 0;
}

int mkc_chat_check_opts(int family, const mkc_chat_opts *o, char *why, size_t cap) {
  const char *e = o ? o->reasoning_effort : NULL,
             *name = mkc_chat_family_name(family) ? mkc_chat_family_name(family) : "model's";
  if (e && family != MKC_CHAT_GPT_OSS) {
    snprintf(why, cap, "the %s chat template has none to set (gpt-oss's has)", name);
    return MKC_CHAT_OPT_EFFORT;
  }
  if (e && strcmp(e, "low") && strcmp(e, "medium") && strcmp(e, "high")) {
    snprintf(why, cap, "gpt-oss's are low, medium and high");
    return MKC_CHAT_OPT_EFFORT;
  }
  if (o && o->no_reasoning && family != MKC_CHAT_QWEN3) {
    snprintf(why, cap, "the %s chat template has no way to turn reasoning off (qwen3's has)", name);
    return MKC_CHAT_OPT_NO_REASONING;
  }
  if (o && o->n_tools && !mkc_chat_tools(family)) {
    snprintf(why, cap, "the %s chat template has no tools (%s have)", name, TOOL_FAMILIES);
    return MKC_CHAT_OPT_TOOLS;
  }
  return 0;
}

char *mkc_chat_render(int family, const mkc_chat_msg *msgs, int n, int add_assistant) {
  return mkc_chat_render_with(family, msgs, n, add_assistant, NULL);
}

char *mkc_chat_render_with(int family, const mkc_chat_msg *msgs, int n, int add_assistant,
                           const mkc_chat_opts *o) {
  chat c;
  if (!mkc_chat_family_name(family)) {
    fprintf(stderr, "mkc: error: chat: no template family %d (one of: %s)\n", family,
            mkc_chat_family_names());
    return NULL;
  }
  char why[256];
  int refused = mkc_chat_check_opts(family, o, why, sizeof why);
  if (refused == MKC_CHAT_OPT_EFFORT)
    fprintf(stderr, "mkc: error: chat: reasoning effort '%s': %s\n", o->reasoning_effort, why);
  else if (refused == MKC_CHAT_OPT_NO_REASONING)
    fprintf(stderr, "mkc: error: chat: no reasoning: %s\n", why);
  else if (refused)
    fprintf(stderr, "mkc: error: chat: tools: %s\n", why);
  if (refused) return NULL;
  if (check(family, msgs, n, &c) != 0) return NULL;
  c.effort = o ? o->reasoning_effort : NULL;
  c.no_reasoning = o && o->no_reasoning;
  c.tools = o ? o->tools : NULL;
  c.n_tools = o && o->tools ? o->n_tools : 0;
  if (c.n_tools && family == MKC_CHAT_LLAMA31 && c.n == 0) {
    fprintf(stderr, "mkc: error: chat: tools: the llama3.1 chat template puts them in the first "
                    "user message, and there is none\n");
    return NULL;
  }
  if (family == MKC_CHAT_GPT_OSS && check_gpt_oss(&c, (int)(c.turns - msgs)) != 0) return NULL;
  c.add_assistant = add_assistant;
  const family_renderer *r = &RENDERERS[family];
  if (!r->turns && !r->inst && !r->own) { /* a family added without one */
    fprintf(stderr, "mkc: error: chat: family '%s' has no renderer\n",
            mkc_chat_family_name(family));
    return NULL;
  }
  text t = {0};
  put(&t, ""); /* an empty conversation is "", not NULL */
  if (r->turns)
    render_turns(&t, &c, r->turns);
  else if (r->inst)
    render_inst(&t, &c, r->inst);
  else
    r->own(&t, &c);
  if (t.oom) {
    free(t.s);
    fprintf(stderr, "mkc: error: chat: out of memory\n");
    return NULL;
  }
  return t.s;
}

char *mkc_chat_render_prompt(int family, const mkc_chat_msg *msgs, int n, const mkc_chat_opts *o) {
  if (n < 2 || strcmp(msgs[n - 1].role, "assistant") != 0)
    return mkc_chat_render_with(family, msgs, n, 1, o);
  char *head = mkc_chat_render_with(family, msgs, n - 1, 1, o);
  if (!head) return NULL;
  size_t a = strlen(head), b = strlen(msgs[n - 1].content);
  char *p = realloc(head, a + b + 1);
  if (!p) {
    free(head);
    fprintf(stderr, "mkc: error: chat: out of memory\n");
    return NULL;
  }
  memcpy(p + a, msgs[n - 1].content, b + 1);
  return p;
}
