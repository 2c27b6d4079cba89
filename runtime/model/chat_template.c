/* See chat_template.h: family names, recognising a template text, and the
 * CLI's choice of family. Detection looks for the marker strings each
 * family's published templates are built from (the approach of llama.cpp's
 * llm_chat_detect_template, with mkc's own order and markers): a template
 * that matches none is unknown, never guessed. */
#include "chat_template.h"

#include <stdio.h>
#include <string.h>

static const char *const NAMES[MKC_CHAT_N_FAMILIES] = {
    [MKC_CHAT_CHATML] = "chatml",
    [MKC_CHAT_QWEN3] = "qwen3",
    [MKC_CHAT_LLAMA3] = "llama3",
    [MKC_CHAT_LLAMA31] = "llama3.1",
    [MKC_CHAT_LLAMA2] = "llama2",
    [MKC_CHAT_MISTRAL_V1] = "mistral-v1",
    [MKC_CHAT_MISTRAL_V3] = "mistral-v3",
    [MKC_CHAT_MISTRAL_V3_TEKKEN] = "mistral-v3-tekken",
    [MKC_CHAT_MISTRAL_V7] = "mistral-v7",
    [MKC_CHAT_MISTRAL_V7_TEKKEN] = "mistral-v7-tekken",
    [MKC_CHAT_GEMMA] = "gemma",
    [MKC_CHAT_PHI3] = "phi3",
    [MKC_CHAT_PHI4] = "phi4",
    [MKC_CHAT_PHI4_MINI] = "phi4-mini",
    [MKC_CHAT_ZEPHYR] = "zephyr",
    [MKC_CHAT_COMMAND_R] = "command-r",
    [MKC_CHAT_GRANITE] = "granite",
    [MKC_CHAT_DEEPSEEK_R1] = "deepseek-r1",
    [MKC_CHAT_GPT_OSS] = "gpt-oss",
    [MKC_CHAT_QWEN25] = "qwen2.5",
};

const char *mkc_chat_family_name(int family) {
  return family >= 0 && family < MKC_CHAT_N_FAMILIES ? NAMES[family] : NULL;
}

int mkc_chat_reasons(int family) {
  return family == MKC_CHAT_GPT_OSS || family == MKC_CHAT_QWEN3 || family == MKC_CHAT_DEEPSEEK_R1;
}

int mkc_chat_tools(int family) {
  return family == MKC_CHAT_QWEN25 || family == MKC_CHAT_QWEN3 ? MKC_TOOLS_QWEN
         : family == MKC_CHAT_LLAMA31                          ? MKC_TOOLS_LLAMA3
         : family == MKC_CHAT_GPT_OSS                          ? MKC_TOOLS_HARMONY
                                                               : MKC_TOOLS_NONE;
}

int mkc_chat_tools_for(int family, const char *tmpl) {
  int format = mkc_chat_tools(family);
  const char *marker = format == MKC_TOOLS_QWEN     ? "<args-json-object>"
                       : format == MKC_TOOLS_LLAMA3 ? "dictionary of argument name and its value"
                                                    : "Calls to these tools must go to the "
                                                      "commentary channel";
  return format && (!tmpl || strstr(tmpl, marker)) ? format : MKC_TOOLS_NONE;
}

int mkc_chat_family_from_name(const char *name) {
  for (int f = 0; name && f < MKC_CHAT_N_FAMILIES; f++)
    if (strcmp(name, NAMES[f]) == 0) return f;
  return MKC_CHAT_UNKNOWN;
}

const char *mkc_chat_family_names(void) {
  static char list[512];
  if (!list[0]) {
    size_t k = 0;
    for (int f = 0; f < MKC_CHAT_N_FAMILIES; f++)
      k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", f ? ", " : "", NAMES[f]);
  }
  return list;
}

static int has(const char *text, const char *marker) { return strstr(text, marker) != NULL; }

/* The [INST] families. Mistral's v1 puts a space before [/INST], v3 and
 * the tekken ones do not; tekken has no space after [INST] either. */
static int detect_inst(const char *t) {
  if (has(t, "[SYSTEM_PROMPT]"))
    return has(t, "[SYSTEM_PROMPT] ") ? MKC_CHAT_MISTRAL_V7 : MKC_CHAT_MISTRAL_V7_TEKKEN;
  if (has(t, "<<SYS>>")) return MKC_CHAT_LLAMA2;
  if (has(t, " [/INST]")) return MKC_CHAT_MISTRAL_V1;
  if (has(t, "[INST]'") || has(t, "[INST]\"")) return MKC_CHAT_MISTRAL_V3_TEKKEN;
  return MKC_CHAT_MISTRAL_V3;
}

int mkc_chat_detect(const char *t) {
  if (!t) return MKC_CHAT_UNKNOWN;
  int named = mkc_chat_family_from_name(t);
  if (named >= 0) return named;
  /* OpenAI's harmony: every message has a <|channel|> (llama.cpp's test too) */
  if (has(t, "<|start|>") && has(t, "<|channel|>")) return MKC_CHAT_GPT_OSS;
  if (has(t, "<|im_start|>")) {
    if (has(t, "<|im_sep|>")) return MKC_CHAT_PHI4;
    /* SmolVLM opens with <|im_start|> but its turns are "User:" lines. */
    if (has(t, "<end_of_utterance>")) return MKC_CHAT_UNKNOWN;
    /* Qwen2.5's tools; other templates with <tool_call> (Hermes 2 Pro,
     * Hermes 3) word their tools otherwise, and are chatml without them. */
    if (!has(t, "</think>"))
      return has(t, "<tool_call>") && has(t, "You are Qwen, created by Alibaba Cloud.")
                 ? MKC_CHAT_QWEN25
                 : MKC_CHAT_CHATML;
    /* QwQ's cue opens a <think> block, and it keeps a last reply as is. */
    if (has(t, "assistant\\n<think>\\n'") || has(t, "assistant\n<think>\n'"))
      return MKC_CHAT_UNKNOWN;
    return MKC_CHAT_QWEN3;
  }
  if (has(t, "[INST]")) return detect_inst(t);
  if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>"))
    return has(t, "Cutting Knowledge Date") ? MKC_CHAT_LLAMA31 : MKC_CHAT_LLAMA3;
  if (has(t, "<start_of_turn>")) return MKC_CHAT_GEMMA;
  /* Phi-4-mini shares the markers but has no newline after the role, and a
   * tools block in the system turn (which mkc does not write). */
  if (has(t, "<|assistant|>") && has(t, "<|end|>")) {
    if (!has(t, "<|tool|>")) return MKC_CHAT_PHI3;
    return has(t, "'<|' + message['role'] + '|>' + message['content'] + '<|end|>'")
               ? MKC_CHAT_PHI4_MINI
               : MKC_CHAT_UNKNOWN;
  }
  /* Zephyr's turns end with eos_token; other <|user|> templates (StableLM,
   * Falcon 3, GLM) end theirs otherwise. The newline is a real one or
   * Jinja's escape, depending on how the template was written. */
  if (has(t, "<|user|>\n' + message['content'] + eos_token") ||
      has(t, "<|user|>\\n' + message['content'] + eos_token"))
    return MKC_CHAT_ZEPHYR;
  /* Command R7B has the same turn tokens around another layout. */
  if (has(t, "<|START_OF_TURN_TOKEN|>") && has(t, "<|USER_TOKEN|>"))
    return has(t, "<|START_RESPONSE|>") ? MKC_CHAT_UNKNOWN : MKC_CHAT_COMMAND_R;
  if (has(t, "<|start_of_role|>")) return MKC_CHAT_GRANITE;
  if (has(t, "<｜User｜>") && has(t, "<｜Assistant｜>") && has(t, "</think>"))
    return MKC_CHAT_DEEPSEEK_R1;
  return MKC_CHAT_UNKNOWN;
}

int mkc_chat_family_for(const char *model_path, const char *model_template,
                        const char *override_name) {
  if (override_name) { /* a name, or (as llama.cpp takes too) a template's text */
    int f = mkc_chat_family_from_name(override_name);
    if (f < 0) f = mkc_chat_detect(override_name);
    if (f < 0 && !strchr(override_name, '{'))
      fprintf(stderr, "mkc: error: --chat-template '%s': unknown name (one of: %s)\n",
              override_name, mkc_chat_family_names());
    else if (f < 0)
      fprintf(stderr,
              "mkc: error: --chat-template: the template given is not one mkc knows; pass "
              "--chat-template NAME (one of: %s)\n",
              mkc_chat_family_names());
    return f;
  }
  if (!model_template) {
    fprintf(stderr,
            "mkc: error: %s: the model has no chat template; pass --chat-template NAME (one of: "
            "%s)\n",
            model_path, mkc_chat_family_names());
    return -1;
  }
  int f = mkc_chat_detect(model_template);
  if (f < 0)
    fprintf(stderr,
            "mkc: error: %s: unknown chat template; pass --chat-template NAME (one of: %s)\n",
            model_path, mkc_chat_family_names());
  return f;
}
