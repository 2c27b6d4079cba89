/* Chat templates: which prompt format a model was tuned on, and a
 * conversation written in it. mkc has no Jinja interpreter: a model's
 * template text (GGUF tokenizer.chat_template, Hugging Face chat_template)
 * is recognised as one of the families below by marker strings, as
 * llama.cpp's built-in detection does, and each family has a renderer
 * written from its published template (docs/DECISIONS.md, docs/MODELS.md).
 *
 * BOS: a rendering never begins with the BOS text. The caller tokenizes it
 * with add_bos = mkc_tokenizer_add_bos(tok) and parse_special = 1, so the
 * model's own setting decides the first token and turn markers spelled in
 * the text (<|im_start|>, </s><s> between Llama 2 turns) become their
 * special tokens. */
#ifndef MKC_CHAT_TEMPLATE_H
#define MKC_CHAT_TEMPLATE_H

#include <stddef.h>

#include "formats/gguf.h"

/* A tool call an assistant message made: the function's name and its
 * arguments as JSON text, written into the prompt as is (mkc_tojson's). */
typedef struct mkc_chat_call {
  const char *name;
  const char *arguments;
} mkc_chat_call;

/* One message. role: "system" (only as the first message), "user",
 * "assistant" or, in the families with tools (mkc_chat_tools), "tool": a
 * call's result. After the system message, user and assistant alternate,
 * user first; with tools, an assistant message with calls is followed by
 * their results (tool messages), which are followed by the assistant's or
 * the user's next message. */
typedef struct mkc_chat_msg {
  const char *role;
  const char *content;
  const mkc_chat_call *calls; /* an assistant's tool calls (NULL: none) */
  int n_calls;
  /* an assistant's reasoning given apart from its content (NULL: none):
   * qwen3 writes it in the reply's think block, gpt-oss as the analysis
   * before a call; the other families drop it, as their templates do */
  const char *reasoning;
} mkc_chat_msg;

/* The families mkc renders; names as --chat-template takes them. */
enum mkc_chat_family {
  MKC_CHAT_UNKNOWN = -1,
  MKC_CHAT_CHATML,            /* "chatml": SmolLM2, Qwen2, OpenHermes */
  MKC_CHAT_QWEN3,             /* "qwen3": ChatML with Qwen3's <think> rules */
  MKC_CHAT_LLAMA3,            /* "llama3": Llama 3 Instruct */
  MKC_CHAT_LLAMA31,           /* "llama3.1": Llama 3.1-3.3 (date lines in the system turn) */
  MKC_CHAT_LLAMA2,            /* "llama2": Llama 2 chat, CodeLlama Instruct (<<SYS>>) */
  MKC_CHAT_MISTRAL_V1,        /* "mistral-v1": Mistral 7B Instruct v0.1/v0.2, Mixtral 8x7B */
  MKC_CHAT_MISTRAL_V3,        /* "mistral-v3": Mistral 7B Instruct v0.3, Mistral Large 2407 */
  MKC_CHAT_MISTRAL_V3_TEKKEN, /* "mistral-v3-tekken": Mistral Nemo, Ministral */
  MKC_CHAT_MISTRAL_V7,        /* "mistral-v7": Mistral Large 2411 */
  MKC_CHAT_MISTRAL_V7_TEKKEN, /* "mistral-v7-tekken": Mistral Small 3.x */
  MKC_CHAT_GEMMA,             /* "gemma": Gemma, Gemma 2, Gemma 3 */
  MKC_CHAT_PHI3,              /* "phi3": Phi-3, Phi-3.5 */
  MKC_CHAT_PHI4,              /* "phi4": Phi-4 */
  MKC_CHAT_PHI4_MINI,         /* "phi4-mini": Phi-4-mini (phi3's markers, no newlines) */
  MKC_CHAT_ZEPHYR,            /* "zephyr": Zephyr 7B beta, TinyLlama chat (</s> ends turns) */
  MKC_CHAT_COMMAND_R,         /* "command-r": Command R, R+ */
  MKC_CHAT_GRANITE,           /* "granite": Granite 3.x */
  MKC_CHAT_DEEPSEEK_R1,       /* "deepseek-r1": DeepSeek R1 and its Qwen/Llama distills */
  MKC_CHAT_GPT_OSS,           /* "gpt-oss": gpt-oss (OpenAI's harmony format) */
  MKC_CHAT_QWEN25,            /* "qwen2.5": ChatML with Qwen2.5's tools */
  MKC_CHAT_N_FAMILIES
};

/* The family of a template text, or MKC_CHAT_UNKNOWN. A text that is
 * exactly a family's name is that family. Never prints. */
int mkc_chat_detect(const char *tmpl);
/* The family named name (the names above), or MKC_CHAT_UNKNOWN. */
int mkc_chat_family_from_name(const char *name);
/* The family's name; NULL when out of range. */
const char *mkc_chat_family_name(int family);
/* "chatml, llama3, ..." for messages. */
const char *mkc_chat_family_names(void);

/* Whether the family's models reason before they answer (gpt-oss's
 * analysis channel, the <think> block of qwen3 and deepseek-r1). */
int mkc_chat_reasons(int family);

/* How a family's models call tools (tool_calls.h reads their replies). */
enum mkc_tool_format {
  MKC_TOOLS_NONE,   /* mkc writes no tools for the family */
  MKC_TOOLS_QWEN,   /* qwen2.5, qwen3: <tool_call> blocks of {"name", "arguments"} */
  MKC_TOOLS_LLAMA3, /* llama3.1: the reply is one {"name", "parameters"} object */
  MKC_TOOLS_HARMONY /* gpt-oss: a commentary message to functions.NAME (harmony.h) */
};

/* The family's tool format: whether mkc writes its tools (their
 * definitions, calls and results in the conversation), and how its models
 * answer a call. */
int mkc_chat_tools(int family);

/* mkc_chat_tools for a model whose template text is tmpl (NULL: not known,
 * as when --chat-template names the family): the template must be one that
 * writes its tools as mkc does, with Qwen's instructions
 * ("<args-json-object>": Qwen3.5's and Qwen3-Coder's, which call with XML,
 * are not), Llama 3.1's ("dictionary of argument name and its value":
 * Functionary's is not) or gpt-oss's ("Calls to these tools must go to the
 * commentary channel"). */
int mkc_chat_tools_for(int family, const char *tmpl);

/* Whether msgs[0..n) is a conversation the family renders: 0, or -1 with
 * *bad the message at fault (0-based; -1 when the list is) and why filled
 * ("role 'x' where 'y' was expected ..."). */
int mkc_chat_check(int family, const mkc_chat_msg *msgs, int n, int *bad, char *why, size_t cap);

/* msgs[0..n) in the family's format, malloc'd and NUL-terminated; NULL
 * after a "mkc: error: ..." message (a bad role or order, a family out of
 * range, out of memory). add_assistant appends the opening of the
 * assistant's turn; families whose user turn ends with that cue ([/INST])
 * add nothing. What each family does with the system message (its own
 * turn, folded into a user turn, or after the BOS) is in docs/MODELS.md;
 * a system message folded into a user turn that is not there yet renders
 * as nothing.
 *
 * Growing a conversation by whole turns only appends to its rendering,
 * except for mistral-v3 and mistral-v3-tekken, which move the system
 * message into the last user turn, qwen3 and deepseek-r1, which
 * rewrite earlier replies (their <think> parts), and gpt-oss, whose last
 * reply ends with <|return|> until a user turn follows it.
 *
 * gpt-oss's system turn holds today's date (the template's strftime_now):
 * the local date, or $MKC_CHAT_DATE when set (a prompt that must not change
 * from day to day). */
char *mkc_chat_render(int family, const mkc_chat_msg *msgs, int n, int add_assistant);

/* What some families' templates take besides the messages. reasoning_effort:
 * gpt-oss's "low", "medium" or "high" (NULL: its template's "medium").
 * no_reasoning: qwen3's enable_thinking false (the cue followed by an empty
 * think block). */
typedef struct mkc_chat_opts {
  const char *reasoning_effort;
  int no_reasoning;
  /* tools: the functions the model may call, each a JSON object as tojson
   * writes it (mkc_tojson of an OpenAI {"type": "function", "function":
   * {...}}; llama3.1 writes them again indented, gpt-oss as TypeScript);
   * only for the families of mkc_chat_tools */
  const char *const *tools;
  int n_tools;
} mkc_chat_opts;

/* Which option mkc_chat_check_opts refused. */
enum { MKC_CHAT_OPT_EFFORT = 1, MKC_CHAT_OPT_NO_REASONING, MKC_CHAT_OPT_TOOLS };

/* mkc_chat_render with o (NULL: none); an option the family does not take is
 * an error (mkc_chat_check_opts's message). */
char *mkc_chat_render_with(int family, const mkc_chat_msg *msgs, int n, int add_assistant,
                           const mkc_chat_opts *o);

/* The prompt that brings the model to its answer: msgs rendered with the cue of the
 * assistant's turn; or, when the last message (after another) is the assistant's, the start
 * of the answer (a prefill, as llama-server and Anthropic's API take it), the others so
 * rendered, then its content as it is, for the model to go on from. */
char *mkc_chat_render_prompt(int family, const mkc_chat_msg *msgs, int n, const mkc_chat_opts *o);

/* 0 when family takes o, else the option refused (MKC_CHAT_OPT_*) with why
 * filled, for a message that names the option: a reasoning effort for a
 * template without one or a level not its; no reasoning for a template that
 * cannot turn it off; tools for a template without them. */
int mkc_chat_check_opts(int family, const mkc_chat_opts *o, char *why, size_t cap);

/* The family the CLI uses for a model: override_name when not NULL (a family's
 * name, or a template's text that mkc recognises, as llama.cpp's --chat-template
 * takes either; else an error naming --chat-template and the known names),
 * else the family of model_template, the model's template text (an error
 * when it is NULL or not recognised, saying to pass --chat-template). -1
 * after a message; model_path names the model in messages. */
int mkc_chat_family_for(const char *model_path, const char *model_template,
                        const char *override_name);

/* Reading a model's template text (chat_read.c). Each returns 0 with *out
 * malloc'd (NULL when the model has none), or -1 after a message. */
/* GGUF: the string tokenizer.chat_template. */
int mkc_chat_template_gguf(const mkc_gguf *f, char **out);
/* A Hugging Face folder: DIR/chat_template.jinja when present, else
 * DIR/tokenizer_config.json's chat_template. */
int mkc_chat_template_hf(const char *dir, char **out);
/* tokenizer_config.json's text: "chat_template" is a string, or a list of
 * {"name", "template"} of which "default" is taken. name is for messages. */
int mkc_chat_template_from_config(const char *json, size_t n, const char *name, char **out);

#endif
