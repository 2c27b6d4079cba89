/* Chat templates (runtime/model/chat_template.h). Rendering: one fixed
 * conversation (system, user, assistant, user, assistant, user, then the
 * assistant's cue) in every family equals the text written by hand from
 * that family's published template (cited beside each string), plus the
 * rules each family has for a missing system message, <think> blocks and
 * the place of the system message. Detection: templates as models ship
 * them (tests/chat_templates.h) are recognised as their family, others
 * are unknown, and the CLI-facing choice prints the messages that name
 * --chat-template. Reading: GGUF metadata, tokenizer_config.json (string
 * or named list) and chat_template.jinja; with MKC_TEST_DATA, SmolLM2's
 * GGUF template is read, detected as ChatML, and its rendering tokenizes
 * to the turn tokens, and a chat cut to fit a limit (model/chat_fit.h) is cut where a
 * linear scan would cut it. Random bytes and conversations crash nothing. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "scratch.h"
#include "chat_templates.h"
#include "formats/gguf.h"
#include "model/chat_fit.h"
#include "model/chat_template.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"
#include "util/rng.h"

/* Conversations here are written {role, content}: their messages make no tool calls. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* s with control characters as \xNN, for failure output. */
static void show(const char *label, const char *s) {
  printf("     %s: \"", label);
  for (; s && *s; s++) printf((unsigned char)*s < 32 ? "\\x%02x" : "%c", (unsigned char)*s);
  printf("\"%s\n", s ? "" : " (NULL)");
}

static int check_text(const char *actual, const char *expected, const char *what) {
  int ok = actual && strcmp(actual, expected) == 0;
  if (!CHECK(ok, "%s", what)) {
    show("expected", expected);
    show("actual  ", actual);
  }
  return ok;
}

/* The conversation every family renders: padded and trailing-newline
 * contents show which families trim. */
static const mkc_chat_msg CONVERSATION[] = {
    {"system", "Be brief."},    {"user", "Hi!"},    {"assistant", " Hello. "},
    {"user", "What is 2+2?\n"}, {"assistant", "4"}, {"user", "Thanks"},
};
#define N_CONVERSATION 6

/* Expected renderings with the assistant's cue, written from each family's
 * template as shipped (without the leading bos_token: the tokenizer adds
 * BOS). */
static const struct {
  int family;
  const char *expected;
} RENDERED[] = {
    /* SmolLM2-135M-Instruct tokenizer_config.json (and its GGUF):
     * '<|im_start|>' + role + '\n' + content + '<|im_end|>' + '\n';
     * cue '<|im_start|>assistant\n'. */
    {MKC_CHAT_CHATML, "<|im_start|>system\nBe brief.<|im_end|>\n"
                      "<|im_start|>user\nHi!<|im_end|>\n"
                      "<|im_start|>assistant\n Hello. <|im_end|>\n"
                      "<|im_start|>user\nWhat is 2+2?\n<|im_end|>\n"
                      "<|im_start|>assistant\n4<|im_end|>\n"
                      "<|im_start|>user\nThanks<|im_end|>\n"
                      "<|im_start|>assistant\n"},
    /* Qwen3-0.6B tokenizer_config.json: deliberately ChatML's text, the
     * same turns when no reply has a </think> and the last turn is the
     * user's. */
    {MKC_CHAT_QWEN3, "<|im_start|>system\nBe brief.<|im_end|>\n"
                     "<|im_start|>user\nHi!<|im_end|>\n"
                     "<|im_start|>assistant\n Hello. <|im_end|>\n"
                     "<|im_start|>user\nWhat is 2+2?\n<|im_end|>\n"
                     "<|im_start|>assistant\n4<|im_end|>\n"
                     "<|im_start|>user\nThanks<|im_end|>\n"
                     "<|im_start|>assistant\n"},
    /* Meta-Llama-3-8B-Instruct tokenizer_config.json: '<|start_header_id|>'
     * + role + '<|end_header_id|>\n\n' + content | trim + '<|eot_id|>';
     * cue '<|start_header_id|>assistant<|end_header_id|>\n\n'. */
    {MKC_CHAT_LLAMA3, "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                      "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
                      "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
                      "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
                      "<|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|>"
                      "<|start_header_id|>user<|end_header_id|>\n\nThanks<|eot_id|>"
                      "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    /* Llama-3.2-3B-Instruct tokenizer_config.json, no tools, date_string
     * its fallback: the system header, "Cutting Knowledge Date: December
     * 2023\n", "Today Date: " + date_string + "\n\n", the system message
     * trimmed, '<|eot_id|>'; then Llama 3's turns. */
    {MKC_CHAT_LLAMA31, "<|start_header_id|>system<|end_header_id|>\n\n"
                       "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
                       "Be brief.<|eot_id|>"
                       "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
                       "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
                       "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
                       "<|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|>"
                       "<|start_header_id|>user<|end_header_id|>\n\nThanks<|eot_id|>"
                       "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    /* Llama-2-7b-chat-hf tokenizer_config.json: bos_token + '[INST] ' +
     * content.strip() + ' [/INST]', the first content being '<<SYS>>\n' +
     * system + '\n<</SYS>>\n\n' + message; replies ' ' + content.strip() +
     * ' ' + eos_token (as Meta's "How to prompt Llama 2"). */
    {MKC_CHAT_LLAMA2, "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi! [/INST] Hello. </s>"
                      "<s>[INST] What is 2+2? [/INST] 4 </s>"
                      "<s>[INST] Thanks [/INST]"},
    /* Mistral-7B-Instruct-v0.2 tokenizer_config.json ("v1" with a system
     * prompt): ' [INST] ' + system + '\n\n' + first message + ' [/INST]',
     * ' [INST] ' + message + ' [/INST]', ' ' + reply + eos_token (mistral
     * cookbook, tokenization/templates.md, V1). */
    {MKC_CHAT_MISTRAL_V1, " [INST] Be brief.\n\nHi! [/INST]  Hello. </s>"
                          " [INST] What is 2+2?\n [/INST] 4</s>"
                          " [INST] Thanks [/INST]"},
    /* Mistral-7B-Instruct-v0.3 / Mistral-Large-Instruct-2407 ("v3"):
     * "[INST] " + message + "[/INST]", the last one "[INST] " + system +
     * "\n\n" + message + "[/INST]"; " " + reply|trim + eos_token. */
    {MKC_CHAT_MISTRAL_V3, "[INST] Hi![/INST] Hello.</s>"
                          "[INST] What is 2+2?\n[/INST] 4</s>"
                          "[INST] Be brief.\n\nThanks[/INST]"},
    /* Mistral-Nemo-Instruct-2407 ("v3-tekken"): "[INST]" + message +
     * "[/INST]", the system message in the last one; reply + eos_token. */
    {MKC_CHAT_MISTRAL_V3_TEKKEN, "[INST]Hi![/INST] Hello. </s>"
                                 "[INST]What is 2+2?\n[/INST]4</s>"
                                 "[INST]Be brief.\n\nThanks[/INST]"},
    /* Mistral-Large-Instruct-2411 ("v7"): '[SYSTEM_PROMPT] ' + system +
     * '[/SYSTEM_PROMPT]', '[INST] ' + message + '[/INST]', ' ' + reply +
     * eos_token. */
    {MKC_CHAT_MISTRAL_V7, "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT]"
                          "[INST] Hi![/INST]  Hello. </s>"
                          "[INST] What is 2+2?\n[/INST] 4</s>"
                          "[INST] Thanks[/INST]"},
    /* Mistral-Small-3.1-24B-Instruct-2503 ("v7-tekken"): the same without
     * the spaces. */
    {MKC_CHAT_MISTRAL_V7_TEKKEN, "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT]"
                                 "[INST]Hi![/INST] Hello. </s>"
                                 "[INST]What is 2+2?\n[/INST]4</s>"
                                 "[INST]Thanks[/INST]"},
    /* gemma-2-2b-it: '<start_of_turn>' + role ('model' for the assistant) +
     * '\n' + content | trim + '<end_of_turn>\n', cue
     * '<start_of_turn>model\n'; gemma-3-it: system + '\n\n' opens the first
     * user turn. */
    {MKC_CHAT_GEMMA, "<start_of_turn>user\nBe brief.\n\nHi!<end_of_turn>\n"
                     "<start_of_turn>model\nHello.<end_of_turn>\n"
                     "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n"
                     "<start_of_turn>model\n4<end_of_turn>\n"
                     "<start_of_turn>user\nThanks<end_of_turn>\n"
                     "<start_of_turn>model\n"},
    /* Phi-3.5-mini-instruct: '<|' + role + '|>\n' + content + '<|end|>\n';
     * cue '<|assistant|>\n'. */
    {MKC_CHAT_PHI3, "<|system|>\nBe brief.<|end|>\n"
                    "<|user|>\nHi!<|end|>\n"
                    "<|assistant|>\n Hello. <|end|>\n"
                    "<|user|>\nWhat is 2+2?\n<|end|>\n"
                    "<|assistant|>\n4<|end|>\n"
                    "<|user|>\nThanks<|end|>\n"
                    "<|assistant|>\n"},
    /* phi-4: '<|im_start|>' + role + '<|im_sep|>' + content + '<|im_end|>';
     * each user turn followed by '<|im_start|>assistant<|im_sep|>'. */
    {MKC_CHAT_PHI4, "<|im_start|>system<|im_sep|>Be brief.<|im_end|>"
                    "<|im_start|>user<|im_sep|>Hi!<|im_end|>"
                    "<|im_start|>assistant<|im_sep|> Hello. <|im_end|>"
                    "<|im_start|>user<|im_sep|>What is 2+2?\n<|im_end|>"
                    "<|im_start|>assistant<|im_sep|>4<|im_end|>"
                    "<|im_start|>user<|im_sep|>Thanks<|im_end|>"
                    "<|im_start|>assistant<|im_sep|>"},
    /* Phi-4-mini-instruct: '<|' + role + '|>' + content + '<|end|>'; cue '<|assistant|>'. */
    {MKC_CHAT_PHI4_MINI, "<|system|>Be brief.<|end|>"
                         "<|user|>Hi!<|end|>"
                         "<|assistant|> Hello. <|end|>"
                         "<|user|>What is 2+2?\n<|end|>"
                         "<|assistant|>4<|end|>"
                         "<|user|>Thanks<|end|>"
                         "<|assistant|>"},
    /* zephyr-7b-beta (its model card; transformers renders with
     * trim_blocks): '<|' + role + '|>\n' + content + eos_token and the
     * newline after the expression; cue '<|assistant|>' and its newline. */
    {MKC_CHAT_ZEPHYR, "<|system|>\nBe brief.</s>\n"
                      "<|user|>\nHi!</s>\n"
                      "<|assistant|>\n Hello. </s>\n"
                      "<|user|>\nWhat is 2+2?\n</s>\n"
                      "<|assistant|>\n4</s>\n"
                      "<|user|>\nThanks</s>\n"
                      "<|assistant|>\n"},
    /* c4ai-command-r-plus, "default": system as given, user and chatbot
     * turns content.strip(). */
    {MKC_CHAT_COMMAND_R, "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Be brief.<|END_OF_TURN_TOKEN|>"
                         "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi!<|END_OF_TURN_TOKEN|>"
                         "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hello.<|END_OF_TURN_TOKEN|>"
                         "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>What is 2+2?<|END_OF_TURN_TOKEN|>"
                         "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>4<|END_OF_TURN_TOKEN|>"
                         "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Thanks<|END_OF_TURN_TOKEN|>"
                         "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
    /* granite-3.0-8b-instruct: '<|start_of_role|>' + role +
     * '<|end_of_role|>' + content + '<|end_of_text|>\n'. */
    {MKC_CHAT_GRANITE, "<|start_of_role|>system<|end_of_role|>Be brief.<|end_of_text|>\n"
                       "<|start_of_role|>user<|end_of_role|>Hi!<|end_of_text|>\n"
                       "<|start_of_role|>assistant<|end_of_role|> Hello. <|end_of_text|>\n"
                       "<|start_of_role|>user<|end_of_role|>What is 2+2?\n<|end_of_text|>\n"
                       "<|start_of_role|>assistant<|end_of_role|>4<|end_of_text|>\n"
                       "<|start_of_role|>user<|end_of_role|>Thanks<|end_of_text|>\n"
                       "<|start_of_role|>assistant<|end_of_role|>"},
    /* DeepSeek-R1-Distill-Qwen-32B: bos_token + system, '<｜User｜>' +
     * message, '<｜Assistant｜>' + reply + '<｜end▁of▁sentence｜>', cue
     * '<｜Assistant｜><think>\n'. */
    {MKC_CHAT_DEEPSEEK_R1, "Be brief.<｜User｜>Hi!<｜Assistant｜> Hello. <｜end▁of▁sentence｜>"
                           "<｜User｜>What is 2+2?\n<｜Assistant｜>4<｜end▁of▁sentence｜>"
                           "<｜User｜>Thanks<｜Assistant｜><think>\n"},
    /* openai/gpt-oss-120b chat_template.jinja (llama.cpp models/templates), as jinja2 renders it
     * with strftime_now giving MKC_CHAT_DATE: the system turn, the system message as the
     * developer's "# Instructions", replies in the final channel, cue '<|start|>assistant'. */
    {MKC_CHAT_GPT_OSS,
     "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
     "Knowledge cutoff: 2024-06\nCurrent date: 2026-12-02\n\nReasoning: medium\n\n"
     "# Valid channels: analysis, commentary, final. Channel must be included for every "
     "message.<|end|><|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|>"
     "<|start|>user<|message|>Hi!<|end|><|start|>assistant<|channel|>final<|message|> Hello. "
     "<|end|><|start|>user<|message|>What is 2+2?\n<|end|><|start|>assistant<|channel|>final"
     "<|message|>4<|end|><|start|>user<|message|>Thanks<|end|><|start|>assistant"},
    /* Qwen/Qwen2.5-7B-Instruct (llama.cpp models/templates/Qwen-Qwen2.5-7B-Instruct.jinja), as
     * jinja2 renders it: without tools, ChatML's turns. */
    {MKC_CHAT_QWEN25, "<|im_start|>system\nBe brief.<|im_end|>\n"
                      "<|im_start|>user\nHi!<|im_end|>\n"
                      "<|im_start|>assistant\n Hello. <|im_end|>\n"
                      "<|im_start|>user\nWhat is 2+2?\n<|im_end|>\n"
                      "<|im_start|>assistant\n4<|im_end|>\n"
                      "<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n"},
};
#define N_RENDERED ((int)(sizeof RENDERED / sizeof RENDERED[0]))

static void test_names(void) {
  int round_trip = 1;
  for (int f = 0; f < MKC_CHAT_N_FAMILIES; f++) {
    const char *name = mkc_chat_family_name(f);
    round_trip &= name && mkc_chat_family_from_name(name) == f &&
                  strstr(mkc_chat_family_names(), name) != NULL;
  }
  CHECK(round_trip, "each of the %d family names maps back to its family and is listed",
        MKC_CHAT_N_FAMILIES);
  check_text(
      mkc_chat_family_names(),
      "chatml, qwen3, llama3, llama3.1, llama2, mistral-v1, mistral-v3, mistral-v3-tekken, "
      "mistral-v7, mistral-v7-tekken, gemma, phi3, phi4, phi4-mini, zephyr, command-r, granite, "
      "deepseek-r1, gpt-oss, qwen2.5",
      "the names list");
  CHECK_INT(mkc_chat_family_from_name("ChatML"), MKC_CHAT_UNKNOWN, "names are case-sensitive");
  CHECK_INT(mkc_chat_family_from_name("llama2-sys"), MKC_CHAT_UNKNOWN,
            "a llama.cpp name mkc does not render is unknown");
  CHECK(!mkc_chat_family_name(-1) && !mkc_chat_family_name(MKC_CHAT_N_FAMILIES),
        "no name for a family out of range");
}

static void test_render(void) {
  int covered[MKC_CHAT_N_FAMILIES] = {0};
  for (int i = 0; i < N_RENDERED; i++) {
    char what[128];
    snprintf(what, sizeof what, "%s: system + 3 user turns + 2 replies + cue",
             mkc_chat_family_name(RENDERED[i].family));
    char *text = mkc_chat_render(RENDERED[i].family, CONVERSATION, N_CONVERSATION, 1);
    check_text(text, RENDERED[i].expected, what);
    free(text);
    covered[RENDERED[i].family] = 1;
  }
  int all = 1;
  for (int f = 0; f < MKC_CHAT_N_FAMILIES; f++) all &= covered[f];
  CHECK(all, "every family has an expected rendering");
}

static char *render(int family, const mkc_chat_msg *msgs, int n, int add_assistant) {
  return mkc_chat_render(family, msgs, n, add_assistant);
}

static void expect(int family, const mkc_chat_msg *msgs, int n, int add_assistant,
                   const char *expected, const char *what) {
  char *text = render(family, msgs, n, add_assistant);
  check_text(text, expected, what);
  free(text);
}

static void expect_with(int family, const mkc_chat_msg *msgs, int n, int add_assistant,
                        const mkc_chat_opts *o, const char *expected, const char *what) {
  char *text = mkc_chat_render_with(family, msgs, n, add_assistant, o);
  check_text(text, expected, what);
  free(text);
}

/* Each family's own rules, beyond the fixed conversation. */
static void test_rules(void) {
  const mkc_chat_msg user_only[] = {{"user", "Hi"}};
  const mkc_chat_msg ends_with_reply[] = {
      {"system", "S"}, {"user", "Q1"}, {"assistant", "A1"}, {"user", "Q2"}, {"assistant", "A2"}};
  expect(MKC_CHAT_CHATML, user_only, 1, 0, "<|im_start|>user\nHi<|im_end|>\n",
         "chatml: no cue without add_assistant, and no default system prompt");
  expect(MKC_CHAT_LLAMA2, user_only, 1, 0, "[INST] Hi [/INST]",
         "llama2: the user turn ends with the cue, with or without add_assistant");
  expect(MKC_CHAT_LLAMA31, user_only, 1, 1,
         "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
         "Today Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi"
         "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
         "llama3.1: the system turn comes even without a system message (Llama 3.2's template)");
  expect(MKC_CHAT_GEMMA, user_only, 1, 1,
         "<start_of_turn>user\nHi<end_of_turn>\n"
         "<start_of_turn>model\n",
         "gemma: no system message, no prefix");
  expect(MKC_CHAT_MISTRAL_V7, user_only, 1, 1, "[INST] Hi[/INST]",
         "mistral-v7: no system message, no [SYSTEM_PROMPT] block");
  /* mistral-common puts the system message into the last user turn even
   * when a reply follows it (the Jinja would drop it there). */
  expect(MKC_CHAT_MISTRAL_V3, ends_with_reply, 5, 0,
         "[INST] Q1[/INST] A1</s>[INST] S\n\nQ2[/INST] A2</s>",
         "mistral-v3: the system message goes into the last user turn");
  const mkc_chat_msg empty_system[] = {{"system", ""}, {"user", "Hi"}};
  expect(MKC_CHAT_PHI3, empty_system, 2, 1, "<|user|>\nHi<|end|>\n<|assistant|>\n",
         "phi3: an empty system message is left out (Phi-3.5's template)");
  expect(MKC_CHAT_PHI4_MINI, empty_system, 2, 1, "<|system|><|end|><|user|>Hi<|end|><|assistant|>",
         "phi4-mini: an empty system message is kept (Phi-4-mini's template renders every one)");
  const mkc_chat_msg padded_system[] = {{"system", "  S  "}, {"user", " Q \n"}};
  expect(MKC_CHAT_LLAMA2, padded_system, 2, 1, "[INST] <<SYS>>\n  S  \n<</SYS>>\n\n Q [/INST]",
         "llama2: strip() applies to the first turn's whole text, system block included");
  expect(MKC_CHAT_COMMAND_R, padded_system, 2, 0,
         "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>  S  <|END_OF_TURN_TOKEN|>"
         "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Q<|END_OF_TURN_TOKEN|>",
         "command-r: the system message is not stripped, the user's is");
  const mkc_chat_msg control_space[] = {{"user", "\x1f\v x \x1c"}};
  expect(MKC_CHAT_LLAMA3, control_space, 1, 0,
         "<|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>",
         "trim: Python's ASCII whitespace, \\x1c-\\x1f and \\v included");
  const mkc_chat_msg system_only[] = {{"system", "S"}};
  expect(MKC_CHAT_GEMMA, system_only, 1, 0, "",
         "gemma: a system message with no user turn to fold into renders as nothing");
  expect(MKC_CHAT_CHATML, system_only, 1, 0, "<|im_start|>system\nS<|im_end|>\n",
         "chatml: a system message alone is its own turn");
  expect(MKC_CHAT_ZEPHYR, NULL, 0, 0, "", "an empty conversation renders as \"\"");

  /* <think>: DeepSeek R1 keeps what follows the last </think>; Qwen3 also
   * strips the newlines after it, and rewraps a final reply. */
  const mkc_chat_msg thought[] = {{"user", "Q"},
                                  {"assistant", "<think>\nA\n</think>\n\n<think>B</think>\n\nR"},
                                  {"user", "Q2"}};
  expect(MKC_CHAT_DEEPSEEK_R1, thought, 3, 0,
         "<｜User｜>Q<｜Assistant｜>\n\nR<｜end▁of▁sentence｜><｜User｜>Q2",
         "deepseek-r1: a reply keeps only what follows its last </think>");
  expect(MKC_CHAT_QWEN3, thought, 3, 0,
         "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nR<|im_end|>\n"
         "<|im_start|>user\nQ2<|im_end|>\n",
         "qwen3: a reply before the last user turn loses its reasoning and the newlines");
  expect(MKC_CHAT_QWEN3, thought, 2, 0,
         "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\nA\n</think>\n\nR"
         "<|im_end|>\n",
         "qwen3: the final reply keeps the reasoning before the first </think>, rewrapped");
  const mkc_chat_msg plain_reply[] = {{"user", "Q"}, {"assistant", "\nR"}};
  expect(MKC_CHAT_QWEN3, plain_reply, 2, 0,
         "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nR"
         "<|im_end|>\n",
         "qwen3: a final reply without reasoning gets an empty think block");

  /* gpt-oss, as jinja2 renders openai/gpt-oss-120b's template (date: MKC_CHAT_DATE) */
  const char *harmony_system =
      "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
      "Knowledge cutoff: 2024-06\nCurrent date: 2026-12-02\n\nReasoning: medium\n\n"
      "# Valid channels: analysis, commentary, final. Channel must be included for every "
      "message.<|end|>";
  char want[1024];
  snprintf(want, sizeof want, "%s%s", harmony_system,
           "<|start|>user<|message|>Q1<|end|><|start|>assistant<|channel|>final<|message|>A1"
           "<|end|><|start|>user<|message|>Q2<|end|><|start|>assistant<|channel|>final"
           "<|message|>A2<|return|>");
  /* ends_with_reply without its system message */
  expect(MKC_CHAT_GPT_OSS, ends_with_reply + 1, 4, 0, want,
         "gpt-oss: no developer turn without a system message; the last reply ends with "
         "<|return|> when no cue follows");
  snprintf(want, sizeof want, "%s%s", harmony_system,
           "<|start|>user<|message|>Hi<|end|><|start|>assistant");
  expect(MKC_CHAT_GPT_OSS, empty_system, 2, 1, want,
         "gpt-oss: an empty system message gives no developer turn");
  /* the reasoning effort: jinja2's rendering with reasoning_effort = "high" */
  mkc_chat_opts high = {"high", 0};
  char *text = mkc_chat_render_with(MKC_CHAT_GPT_OSS, user_only, 1, 1, &high);
  CHECK(text && strstr(text, "Current date: 2026-12-02\n\nReasoning: high\n\n# Valid channels") &&
            !strstr(text, "medium"),
        "gpt-oss: reasoning effort high is the system turn's");
  free(text);
  char why[256];
  mkc_chat_opts max = {"max", 0};
  CHECK(mkc_chat_check_opts(MKC_CHAT_GPT_OSS, &max, why, sizeof why) == MKC_CHAT_OPT_EFFORT &&
            strcmp(why, "gpt-oss's are low, medium and high") == 0,
        "gpt-oss: a level not its is refused: %s", why);
  CHECK(mkc_chat_check_opts(MKC_CHAT_CHATML, &high, why, sizeof why) == MKC_CHAT_OPT_EFFORT &&
            strcmp(why, "the chatml chat template has none to set (gpt-oss's has)") == 0,
        "chatml: a reasoning effort is refused: %s", why);
  CHECK(mkc_chat_check_opts(MKC_CHAT_UNKNOWN, &high, why, sizeof why) == MKC_CHAT_OPT_EFFORT &&
            strcmp(why, "the model's chat template has none to set (gpt-oss's has)") == 0,
        "an unknown template: a reasoning effort is refused: %s", why);
  mkc_chat_opts none = {NULL, 0};
  CHECK(mkc_chat_check_opts(MKC_CHAT_CHATML, &none, why, sizeof why) == 0 &&
            mkc_chat_check_opts(MKC_CHAT_CHATML, NULL, why, sizeof why) == 0,
        "no reasoning effort: every template takes that");
  /* no reasoning: Qwen3-0.6B's template with enable_thinking false puts '<think>\n\n</think>\n\n'
   * after the cue */
  mkc_chat_opts off = {NULL, 1};
  expect_with(MKC_CHAT_QWEN3, user_only, 1, 1, &off,
              "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
              "qwen3: enable_thinking false closes an empty think block after the cue");
  expect_with(MKC_CHAT_QWEN3, user_only, 1, 0, &off, "<|im_start|>user\nHi<|im_end|>\n",
              "qwen3: ... and nothing without the cue");
  CHECK(mkc_chat_check_opts(MKC_CHAT_DEEPSEEK_R1, &off, why, sizeof why) ==
                MKC_CHAT_OPT_NO_REASONING &&
            strcmp(why, "the deepseek-r1 chat template has no way to turn reasoning off (qwen3's "
                        "has)") == 0,
        "deepseek-r1: no reasoning is refused: %s", why);
  CHECK(mkc_chat_check_opts(MKC_CHAT_GPT_OSS, &off, why, sizeof why) == MKC_CHAT_OPT_NO_REASONING,
        "gpt-oss: no reasoning is refused: %s", why);
  check_stderr_begin();
  text = mkc_chat_render_with(MKC_CHAT_LLAMA3, user_only, 1, 1, &high);
  char *err = check_stderr_end();
  CHECK(!text && err &&
            strcmp(err, "mkc: error: chat: reasoning effort 'high': the llama3 chat template has "
                        "none to set (gpt-oss's has)\n") == 0,
        "rendering with an option the family does not take is refused");
  free(text);
  free(err);
  /* the date: today's, local, when MKC_CHAT_DATE is unset (read before and after, for midnight) */
  char *fixed = getenv("MKC_CHAT_DATE") ? strdup(getenv("MKC_CHAT_DATE")) : NULL;
  unsetenv("MKC_CHAT_DATE");
  char before[32], after[32], line[64];
  time_t now = time(NULL);
  strftime(before, sizeof before, "%Y-%m-%d", localtime(&now));
  char *today = render(MKC_CHAT_GPT_OSS, user_only, 1, 1);
  now = time(NULL);
  strftime(after, sizeof after, "%Y-%m-%d", localtime(&now));
  int dated = 0;
  for (int k = 0; k < 2 && today; k++) {
    snprintf(line, sizeof line, "\nCurrent date: %s\n\n", k ? after : before);
    dated |= strstr(today, line) != NULL;
  }
  CHECK(dated, "gpt-oss: without MKC_CHAT_DATE, the current date is today's (%s)", before);
  free(today);
  if (fixed) setenv("MKC_CHAT_DATE", fixed, 1);
  free(fixed);
}

/* A conversation grown by whole turns only appends to its rendering (what
 * a chat loop that keeps its KV cache relies on), except in the families
 * the header names; the fixed conversation shows both. */
static void test_growth(void) {
  for (int f = 0; f < MKC_CHAT_N_FAMILIES; f++) {
    int appends = 1;
    char *whole = render(f, CONVERSATION, N_CONVERSATION, 1);
    for (int k = 1; k < N_CONVERSATION && whole; k++) {
      char *part = render(f, CONVERSATION, k, CONVERSATION[k].role[0] == 'a');
      appends &= part && strncmp(whole, part, strlen(part)) == 0;
      free(part);
    }
    /* Qwen3 rewraps the final reply even without a </think>. */
    int expected = f != MKC_CHAT_MISTRAL_V3 && f != MKC_CHAT_MISTRAL_V3_TEKKEN &&
                   f != MKC_CHAT_QWEN3 && f != MKC_CHAT_DEEPSEEK_R1 && f != MKC_CHAT_GPT_OSS;
    CHECK(whole && appends == expected, "%s: each shorter conversation's rendering %s",
          mkc_chat_family_name(f), expected ? "is a prefix" : "is not always a prefix");
    free(whole);
  }
}

static void expect_error(const mkc_chat_msg *msgs, int n, int family, const char *message,
                         const char *what) {
  check_stderr_begin();
  char *text = render(family, msgs, n, 1);
  char *err = check_stderr_end();
  CHECK(!text && err && strcmp(err, message) == 0, "%s", what);
  free(text);
  free(err);
}

static void test_errors(void) {
  const mkc_chat_msg tool[] = {{"user", "Q"}, {"tool", "{}"}};
  expect_error(tool, 2, MKC_CHAT_CHATML,
               "mkc: error: chat message 2: a tool result: the chatml chat template has no tools "
               "(qwen2.5's, qwen3's, llama3.1's and gpt-oss's have)\n",
               "a role the family does not render is refused, naming the message");
  const mkc_chat_msg late_system[] = {{"user", "Q"}, {"assistant", "A"}, {"system", "S"}};
  expect_error(late_system, 3, MKC_CHAT_LLAMA3,
               "mkc: error: chat message 3: role 'system' where 'user' was expected (a system "
               "message comes first, then user and assistant alternate, user first)\n",
               "a system message after the first is refused");
  const mkc_chat_msg two_users[] = {{"system", "S"}, {"user", "Q"}, {"user", "Q"}};
  expect_error(two_users, 3, MKC_CHAT_GEMMA,
               "mkc: error: chat message 3: role 'user' where 'assistant' was expected (a "
               "system message comes first, then user and assistant alternate, user first)\n",
               "two user turns in a row are refused");
  const mkc_chat_msg reply_first[] = {{"assistant", "A"}};
  expect_error(reply_first, 1, MKC_CHAT_PHI3,
               "mkc: error: chat message 1: role 'assistant' where 'user' was expected (a "
               "system message comes first, then user and assistant alternate, user first)\n",
               "a conversation must open with the user");
  const mkc_chat_msg no_content[] = {{"user", NULL}};
  expect_error(no_content, 1, MKC_CHAT_CHATML, "mkc: error: chat message 1: no content\n",
               "a message without content is refused");
  expect_error(
      CONVERSATION, N_CONVERSATION, MKC_CHAT_N_FAMILIES,
      "mkc: error: chat: no template family 20 (one of: chatml, qwen3, llama3, "
      "llama3.1, llama2, mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7, "
      "mistral-v7-tekken, gemma, phi3, phi4, phi4-mini, zephyr, command-r, granite, deepseek-r1, "
      "gpt-oss, qwen2.5)\n",
      "a family out of range is refused");
  expect_error(NULL, 2, MKC_CHAT_CHATML, "mkc: error: chat: 2 messages\n",
               "messages NULL with a count is refused");
  const mkc_chat_msg channels[] = {
      {"system", "S"}, {"user", "Q"}, {"assistant", "<|channel|>final<|message|>A"}};
  expect_error(channels, 3, MKC_CHAT_GPT_OSS,
               "mkc: error: chat message 3: an assistant reply holds <|channel|> tags (gpt-oss: "
               "pass only the final channel's text)\n",
               "gpt-oss: a reply that spells its channels is refused, as the template does");
}

static void test_detect(void) {
  static const struct {
    const char *name, *text;
    int family;
  } CASES[] = {
      {"SmolLM2-135M-Instruct", TPL_SMOLLM2, MKC_CHAT_CHATML},
      {"OpenHermes-2.5-Mistral-7B", TPL_OPENHERMES, MKC_CHAT_CHATML},
      {"Qwen3-0.6B", TPL_QWEN3, MKC_CHAT_QWEN3},
      {"Qwen2.5-7B-Instruct", TPL_QWEN25, MKC_CHAT_QWEN25},
      {"Meta-Llama-3-8B-Instruct", TPL_LLAMA3, MKC_CHAT_LLAMA3},
      {"Llama-3.2-3B-Instruct", TPL_LLAMA32, MKC_CHAT_LLAMA31},
      {"Llama-2-7b-chat-hf", TPL_LLAMA2, MKC_CHAT_LLAMA2},
      {"Mistral-7B-Instruct-v0.1 (first template)", TPL_MISTRAL_V01, MKC_CHAT_MISTRAL_V1},
      {"Mistral-7B-Instruct-v0.2", TPL_MISTRAL_V02, MKC_CHAT_MISTRAL_V1},
      {"Mistral-Large-Instruct-2407", TPL_MISTRAL_LARGE_2407, MKC_CHAT_MISTRAL_V3},
      {"Mistral-Nemo-Instruct-2407", TPL_MISTRAL_NEMO, MKC_CHAT_MISTRAL_V3_TEKKEN},
      {"Mistral-Large-Instruct-2411", TPL_MISTRAL_LARGE_2411, MKC_CHAT_MISTRAL_V7},
      {"Mistral-Small-3.1-24B-Instruct-2503", TPL_MISTRAL_SMALL_31, MKC_CHAT_MISTRAL_V7_TEKKEN},
      {"gemma-2-2b-it", TPL_GEMMA2, MKC_CHAT_GEMMA},
      {"gemma-3-it (excerpt)", TPL_GEMMA3, MKC_CHAT_GEMMA},
      {"Phi-3.5-mini-instruct", TPL_PHI35, MKC_CHAT_PHI3},
      {"Phi-3-mini-4k-instruct (first template)", TPL_PHI3_MINI, MKC_CHAT_PHI3},
      {"phi-4", TPL_PHI4, MKC_CHAT_PHI4},
      {"Phi-4-mini-instruct", TPL_PHI4_MINI, MKC_CHAT_PHI4_MINI},
      {"zephyr-7b-beta", TPL_ZEPHYR, MKC_CHAT_ZEPHYR},
      {"c4ai-command-r-plus", TPL_COMMAND_R, MKC_CHAT_COMMAND_R},
      {"granite-3.0-8b-instruct", TPL_GRANITE, MKC_CHAT_GRANITE},
      {"DeepSeek-R1-Distill-Qwen-32B", TPL_DEEPSEEK_R1, MKC_CHAT_DEEPSEEK_R1},
      {"gpt-oss-120b (excerpt)", TPL_GPT_OSS, MKC_CHAT_GPT_OSS},
      {"QwQ-32B (its cue opens <think>: no family of mkc's)", TPL_QWQ, MKC_CHAT_UNKNOWN},
      {"Vicuna 1.1 (no family of mkc's)", TPL_VICUNA, MKC_CHAT_UNKNOWN},
      {"deepseek-coder-33b-instruct (no family of mkc's)", TPL_DEEPSEEK_CODER, MKC_CHAT_UNKNOWN},
      /* Made-up texts with the markers of templates mkc does not render,
       * which share markers with families it does. */
      {"phi3's markers with a tools block but not Phi-4-mini's turns",
       "{{ '<|user|>\n' + message['content'] + '<|tool|>' + '<|end|>\n' }}{{ '<|assistant|>' }}",
       MKC_CHAT_UNKNOWN},
      {"SmolVLM's markers", "<|im_start|>{{ 'User:' }}<end_of_utterance>", MKC_CHAT_UNKNOWN},
      {"Command R7B's markers",
       "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>{{ m }}<|END_OF_TURN_TOKEN|><|START_RESPONSE|>",
       MKC_CHAT_UNKNOWN},
      {"StableLM's <|user|> turns ending in <|endoftext|>",
       "{{ '<|user|>\\n' + message['content'] + '<|endoftext|>' }}{{ '<|assistant|>\\n' }}",
       MKC_CHAT_UNKNOWN},
      {"a family's name", "mistral-v7-tekken", MKC_CHAT_MISTRAL_V7_TEKKEN},
      {"an empty text", "", MKC_CHAT_UNKNOWN},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    int f = mkc_chat_detect(CASES[i].text);
    const char *got = mkc_chat_family_name(f), *want = mkc_chat_family_name(CASES[i].family);
    CHECK(f == CASES[i].family, "detect %s: %s (got %s)", CASES[i].name, want ? want : "unknown",
          got ? got : "unknown");
  }
  CHECK_INT(mkc_chat_detect(NULL), MKC_CHAT_UNKNOWN, "detect NULL: unknown");
}

static void expect_family_for(const char *tmpl, const char *override, int family,
                              const char *message, const char *what) {
  check_stderr_begin();
  int f = mkc_chat_family_for("models/x.gguf", tmpl, override);
  char *err = check_stderr_end();
  CHECK(f == family && err && strcmp(err, message) == 0, "%s", what);
  free(err);
}

static void test_family_for(void) {
  expect_family_for(TPL_LLAMA2, NULL, MKC_CHAT_LLAMA2, "", "the model's template decides");
  expect_family_for(TPL_VICUNA, "zephyr", MKC_CHAT_ZEPHYR, "",
                    "--chat-template overrides an unknown template");
  expect_family_for(NULL, "gemma", MKC_CHAT_GEMMA, "",
                    "--chat-template serves a model without a template");
  expect_family_for(
      TPL_LLAMA2, "vicuna", -1,
      "mkc: error: --chat-template 'vicuna': unknown name (one of: chatml, qwen3, "
      "llama3, llama3.1, llama2, mistral-v1, mistral-v3, mistral-v3-tekken, "
      "mistral-v7, mistral-v7-tekken, gemma, phi3, phi4, phi4-mini, zephyr, command-r, "
      "granite, deepseek-r1, gpt-oss, qwen2.5)\n",
      "an unknown --chat-template name is an error listing the names");
  expect_family_for(
      TPL_VICUNA, NULL, -1,
      "mkc: error: models/x.gguf: unknown chat template; pass --chat-template NAME "
      "(one of: chatml, qwen3, llama3, llama3.1, llama2, mistral-v1, mistral-v3, "
      "mistral-v3-tekken, mistral-v7, mistral-v7-tekken, gemma, phi3, phi4, phi4-mini, "
      "zephyr, command-r, granite, deepseek-r1, gpt-oss, qwen2.5)\n",
      "an unknown template is an error naming --chat-template");
  expect_family_for(
      NULL, NULL, -1,
      "mkc: error: models/x.gguf: the model has no chat template; pass "
      "--chat-template NAME (one of: chatml, qwen3, llama3, llama3.1, llama2, "
      "mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7, mistral-v7-tekken, "
      "gemma, phi3, phi4, phi4-mini, zephyr, command-r, granite, deepseek-r1, gpt-oss, qwen2.5)\n",
      "a model without a template is its own error");
}

static void expect_config(const char *json, const char *expected, const char *message,
                          const char *what) {
  char *out = (char *)"unset";
  check_stderr_begin();
  int rc = mkc_chat_template_from_config(json, strlen(json), "d/tokenizer_config.json", &out);
  char *err = check_stderr_end();
  int ok = strcmp(err, message) == 0 && rc == (message[0] ? -1 : 0) &&
           (expected ? out && strcmp(out, expected) == 0 : !out);
  CHECK(ok, "%s", what);
  if (rc == 0) free(out);
  free(err);
}

static void test_config(void) {
  expect_config("{\"chat_template\": \"{{ '<|im_start|>' }}\", \"eos_token\": \"x\"}",
                "{{ '<|im_start|>' }}", "", "tokenizer_config.json: a string");
  expect_config("{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}, "
                "{\"name\": \"default\", \"template\": \"D\"}, {\"name\": \"rag\", "
                "\"template\": \"R\"}]}",
                "D", "", "tokenizer_config.json: a list, its \"default\" entry");
  expect_config("{\"add_bos_token\": true}", NULL, "", "tokenizer_config.json: no chat_template");
  expect_config("{\"chat_template\": null}", NULL, "", "tokenizer_config.json: null");
  expect_config("{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}]}", NULL,
                "mkc: error: d/tokenizer_config.json: chat_template lists 1 templates and none "
                "is named \"default\"\n",
                "a list without \"default\" is an error");
  expect_config("{\"chat_template\": [{\"name\": \"default\"}]}", NULL,
                "mkc: error: d/tokenizer_config.json: chat_template[0]: Expected {\"name\": "
                "string, \"template\": string}, Actual an object\n",
                "a list entry without a template is an error");
  expect_config("{\"chat_template\": 3}", NULL,
                "mkc: error: d/tokenizer_config.json: chat_template: Expected a string or a list "
                "of {name, template}, Actual a number\n",
                "a number is an error");
  expect_config("{\"chat_template\": ", NULL,
                "mkc: error: d/tokenizer_config.json: not a JSON object (a syntax error at byte "
                "17)\n",
                "broken JSON is an error");
}

static int write_text(const char *path, const char *text) {
  const void *parts[] = {text};
  size_t sizes[] = {strlen(text)};
  return mkc_write_atomic(path, parts, sizes, 1);
}

static void test_files(void) {
  char *out = NULL;
  int rc = mkc_chat_template_hf(tmp_dir, &out);
  CHECK(rc == 0 && !out, "a folder with neither file has no template");
  write_text(tmp_path("tokenizer_config.json"), "{\"chat_template\": \"from config\"}");
  rc = mkc_chat_template_hf(tmp_dir, &out);
  CHECK(rc == 0 && out && strcmp(out, "from config") == 0, "tokenizer_config.json's template");
  free(out);
  write_text(tmp_path("chat_template.jinja"), TPL_GEMMA2);
  rc = mkc_chat_template_hf(tmp_dir, &out);
  CHECK(rc == 0 && out && strcmp(out, TPL_GEMMA2) == 0,
        "chat_template.jinja wins over tokenizer_config.json");
  free(out);

  /* GGUF: the string, its absence, and another type. */
  const char *cases[] = {"string", "absent", "u32"};
  for (int i = 0; i < 3; i++) {
    mkc_gguf_writer *w = mkc_gguf_writer_new();
    mkc_gguf_set_str(w, "general.architecture", "llama");
    if (i == 0) mkc_gguf_set_str(w, "tokenizer.chat_template", TPL_ZEPHYR);
    if (i == 2) mkc_gguf_set_u32(w, "tokenizer.chat_template", 7);
    const char *path = tmp_path("t.gguf");
    mkc_gguf_write(w, path);
    mkc_gguf_writer_free(w);
    mkc_gguf *f = mkc_gguf_open(path);
    check_stderr_begin();
    rc = f ? mkc_chat_template_gguf(f, &out) : -2;
    char *err = check_stderr_end();
    if (i == 0)
      CHECK(rc == 0 && out && strcmp(out, TPL_ZEPHYR) == 0 && !err[0],
            "GGUF: tokenizer.chat_template is read");
    else if (i == 1)
      CHECK(rc == 0 && !out && !err[0], "GGUF: no tokenizer.chat_template, no template");
    else
      CHECK(rc == -1 && !out && strstr(err, "tokenizer.chat_template") && strstr(err, "u32"),
            "GGUF: tokenizer.chat_template of another type is an error naming the key (%s)",
            cases[i]);
    free(out);
    free(err);
    mkc_gguf_close(f);
  }
}

/* A chat cut to fit a limit (model/chat_fit.h), on SmolLM2's tokenizer: for every limit from
 * below the last turn's length to past the whole chat's, the cut found by halving is the first
 * of a linear scan over the cuts (each user message after the first) whose rendering fits, the
 * last one when none does; the system message stays; with the start of an answer last too. */
static void test_fit(const mkc_tokenizer *tok) {
  enum { TURNS = 9 };
  static char text[2 * TURNS + 2][64];
  mkc_chat_msg msgs[2 * TURNS + 3], kept[2 * TURNS + 3];
  int n = 0;
  msgs[n++] = (mkc_chat_msg){.role = "system", .content = "Be brief."};
  for (int t = 0; t < TURNS; t++) {
    snprintf(text[2 * t], sizeof text[0], "Question %d, a little longer each time%.*s", t, t,
             "!!!!!!!!!!");
    snprintf(text[2 * t + 1], sizeof text[0], "Answer %d.", t);
    msgs[n++] = (mkc_chat_msg){.role = "user", .content = text[2 * t]};
    msgs[n++] = (mkc_chat_msg){.role = "assistant", .content = text[2 * t + 1]};
  }
  msgs[n++] = (mkc_chat_msg){.role = "user", .content = "And the last question?"};
  for (int prefill = 0; prefill < 2; prefill++) {
    int m = n + prefill, bad = 0, tried = 0;
    if (prefill) msgs[n] = (mkc_chat_msg){.role = "assistant", .content = "The answer is"};
    int lengths[TURNS + 2], cuts[TURNS + 2], n_cuts = 0;
    for (int first = 0; first < m; first++) { /* the oracle: every cut's length */
      if (first != 0 && (first == 1 || strcmp(msgs[first].role, "user") != 0)) continue;
      int k = mkc_chat_fit_kept(msgs, m, first, kept);
      char *r = mkc_chat_render_prompt(MKC_CHAT_CHATML, kept, k, NULL);
      int *ids = NULL;
      lengths[n_cuts] =
          r ? mkc_tokenizer_encode(tok, r, strlen(r), mkc_tokenizer_add_bos(tok), 1, &ids) : -1;
      cuts[n_cuts++] = first;
      free(ids), free(r);
    }
    for (int limit = lengths[n_cuts - 1] - 3; limit <= lengths[0] + 2; limit++, tried++) {
      int want = n_cuts - 1;
      for (int c = n_cuts - 1; c >= 0; c--)
        if (lengths[c] <= limit) want = c;
      mkc_chat_fit f;
      int rc = mkc_chat_fit_into(MKC_CHAT_CHATML, msgs, m, NULL, tok, limit, &f);
      int k = rc == 0 ? mkc_chat_fit_kept(msgs, m, f.first, kept) : 0;
      if (rc != 0 || f.first != cuts[want] || f.n_tokens != lengths[want] || f.dropped != m - k ||
          strcmp(kept[0].role, "system") != 0 ||
          (prefill && strncmp(f.text + strlen(f.text) - 13, "The answer is", 13) != 0)) {
        if (!bad++)
          printf("     | limit %d: want the cut at %d (%d tokens), got %d (%d tokens)\n", limit,
                 cuts[want], lengths[want], rc == 0 ? f.first : -1, rc == 0 ? f.n_tokens : -1);
      }
      if (rc == 0) free(f.text);
    }
    CHECK(bad == 0 && n_cuts == TURNS + 1 && tried > 20,
          "chat fit%s: the cut halving finds is a linear scan's for %d limits over %d cuts (%d "
          "to %d tokens); the system message stays",
          prefill ? ", the start of an answer last" : "", tried, n_cuts, lengths[n_cuts - 1],
          lengths[0]);
  }
}

/* SmolLM2's GGUF: its template as read, detected, rendered and tokenized
 * with the model's own tokenizer (add_bos as the model says: none). */
static void test_smollm2(void) {
  char path[1024];
  if (test_data_path("SmolLM2-135M-Instruct.Q4_1.gguf", path, sizeof path) != 0) return;
  mkc_model_file mf;
  if (!CHECK(mkc_model_file_open(path, &mf) == 0, "SmolLM2: the model file opens")) return;
  CHECK(mf.chat_template && strcmp(mf.chat_template, TPL_SMOLLM2) == 0,
        "SmolLM2: tokenizer.chat_template is read whole");
  int family = mkc_chat_family_for(path, mf.chat_template, NULL);
  CHECK_INT(family, MKC_CHAT_CHATML, "SmolLM2: detected as chatml");
  char *text = mkc_chat_render(family, CONVERSATION, N_CONVERSATION, 1);
  int *ids = NULL;
  int n = text ? mkc_tokenizer_encode(mf.tok, text, strlen(text), mkc_tokenizer_add_bos(mf.tok), 1,
                                      &ids)
               : -1;
  int im_start = mkc_tokenizer_find(mf.tok, "<|im_start|>", 12);
  int im_end = mkc_tokenizer_find(mf.tok, "<|im_end|>", 10);
  int starts = 0, ends = 0;
  for (int i = 0; i < n; i++) starts += ids[i] == im_start, ends += ids[i] == im_end;
  CHECK(n > 0 && im_start >= 0 && ids[0] == im_start && starts == 7 && ends == 6,
        "SmolLM2: the rendering tokenizes to 7 <|im_start|> and 6 <|im_end|> tokens, no BOS "
        "first (%d tokens)",
        n);
  free(ids);
  free(text);
  test_fit(mf.tok);
  mkc_model_file_close(&mf);
}

/* stderr to /dev/null and back: the random inputs' messages are many. */
static int quiet_saved = -1;
static void quiet(int on) {
  fflush(stderr);
  if (on) {
    quiet_saved = dup(2);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    close(null);
  } else {
    dup2(quiet_saved, 2);
    close(quiet_saved);
  }
}

/* Random bytes as template texts and tokenizer_config.json, random
 * conversations in every family: no crash, and every user message's
 * text (trimmed) is in the rendering. */
static void test_random(void) {
  static const char *const markers[] = {
      "<|im_start|>",  "[INST]",  "<<SYS>>",  "[SYSTEM_PROMPT]", "<start_of_turn>",
      "<|assistant|>", "<|end|>", "</think>", "<|user|>",        "{\"chat_template\": [",
      "\"default\""};
  uint64_t rng = 12345;
  int in_range = 1, contained = 1, rendered = 1;
  char buf[512];
  quiet(1);
  for (int iter = 0; iter < 3000; iter++) {
    size_t n = 0, len = mkc_splitmix64(&rng) % (sizeof buf - 32);
    while (n < len) {
      if (mkc_splitmix64(&rng) % 8 == 0) {
        const char *m = markers[mkc_splitmix64(&rng) % (sizeof markers / sizeof markers[0])];
        size_t k = strlen(m);
        if (n + k >= sizeof buf) break;
        memcpy(buf + n, m, k), n += k;
      } else {
        buf[n++] = (char)(mkc_splitmix64(&rng) % 255 + 1);
      }
    }
    buf[n] = '\0';
    int f = mkc_chat_detect(buf);
    in_range &= f >= MKC_CHAT_UNKNOWN && f < MKC_CHAT_N_FAMILIES;
    char *out = NULL;
    if (mkc_chat_template_from_config(buf, n, "fuzz", &out) == 0) free(out);

    /* A conversation of pieces of the same bytes, in a random family. */
    mkc_chat_msg msgs[7] = {0};
    char pieces[7][64];
    int count = (int)(mkc_splitmix64(&rng) % 7), has_system = (int)(mkc_splitmix64(&rng) % 2);
    for (int i = 0; i < count; i++) {
      size_t from = n ? mkc_splitmix64(&rng) % n : 0, k = mkc_splitmix64(&rng) % 63;
      if (from + k > n) k = n - from;
      memcpy(pieces[i], buf + from, k);
      pieces[i][k] = '\0';
      int turn = i - has_system;
      msgs[i].role = has_system && i == 0 ? "system" : turn % 2 == 0 ? "user" : "assistant";
      msgs[i].content = pieces[i];
    }
    int family = (int)(mkc_splitmix64(&rng) % MKC_CHAT_N_FAMILIES);
    char *text = mkc_chat_render(family, msgs, count, (int)(mkc_splitmix64(&rng) % 2));
    rendered &= text != NULL;
    for (int i = has_system; text && i < count; i += 2) {
      char core[64];
      const char *s = pieces[i];
      size_t k = strlen(s);
      while (k && strchr(" \t\n\v\f\r\x1c\x1d\x1e\x1f", *s)) s++, k--;
      while (k && strchr(" \t\n\v\f\r\x1c\x1d\x1e\x1f", s[k - 1])) k--;
      memcpy(core, s, k);
      core[k] = '\0';
      if (!strstr(text, core)) {
        contained = 0;
        printf("     %s: message %d missing\n", mkc_chat_family_name(family), i + 1);
      }
    }
    free(text);
  }
  quiet(0);
  CHECK(in_range, "random texts: detection gives a family or unknown");
  CHECK(rendered, "random conversations: every family renders them");
  CHECK(contained, "random conversations: each user message's text is in the rendering");
}

int main(void) {
  if (scratch_open("chat") != 0) return 1;
  setenv("MKC_CHAT_DATE", "2026-12-02", 1); /* gpt-oss's system turn: the day jinja2 was run */
  test_names();
  test_render();
  test_rules();
  test_growth();
  test_errors();
  test_detect();
  test_family_for();
  test_config();
  test_files();
  test_smollm2();
  test_random();
  scratch_close();
  return check_done();
}
