/* An answer's reasoning apart from its reply (runtime/model/reasoning.h) on a
 * small byte-level vocabulary with gpt-oss's harmony control tokens and
 * Qwen3's <think> tags: which tokens end generation (<|return|> and <|call|>,
 * not <|end|>, as llama.cpp decides; <|end|> still does in a vocabulary
 * without both), gpt-oss's chat rendering read back as those control tokens,
 * and answers written by hand from OpenAI's harmony description and from
 * Qwen3's and DeepSeek-R1's templates split into header, reasoning and reply,
 * one token at a time as a chat streams them, with mkc chat's printed view;
 * and mkc serve's answers to such chats (OpenAI's reasoning_content, ollama's
 * thinking; whole and streamed) read back from the socket they are written
 * to. */
#include "check.h"
#include "serve_answers.h"
#include "model/chat_template.h"
#include "model/reasoning.h"

static int id_of(const mkc_tokenizer *t, const char *s) {
  return mkc_tokenizer_find(t, s, strlen(s));
}

static void test_eog(void) {
  mkc_tokenizer *t = vocabulary(NULL);
  if (!CHECK(t != NULL, "a vocabulary with harmony's control tokens loads")) return;
  CHECK(mkc_tokenizer_is_eog(t, id_of(t, "<|return|>")) &&
            mkc_tokenizer_is_eog(t, id_of(t, "<|call|>")),
        "<|return|> and <|call|> end generation");
  CHECK(!mkc_tokenizer_is_eog(t, id_of(t, "<|end|>")),
        "<|end|> does not: it closes the reasoning, and the reply follows");
  CHECK(!mkc_tokenizer_is_eog(t, id_of(t, "<|message|>")) &&
            !mkc_tokenizer_is_eog(t, id_of(t, "<|start|>")),
        "nor do <|message|> and <|start|>");
  mkc_tokenizer_free(t);
  t = vocabulary("<|call|>");
  CHECK(t && mkc_tokenizer_is_eog(t, id_of(t, "<|end|>")),
        "without <|call|>, <|end|> ends generation (Phi-3's vocabulary has <|end|> alone)");
  mkc_tokenizer_free(t);
}

/* The rendering, tokenized as chat does it, holds the control tokens themselves. */
static void test_rendering(void) {
  mkc_tokenizer *t = vocabulary(NULL);
  if (!t) return;
  setenv("MKC_CHAT_DATE", "2026-12-02", 1);
  const mkc_chat_msg msgs[] = {{.role = "user", .content = "Hi"}};
  char *text = mkc_chat_render(MKC_CHAT_GPT_OSS, msgs, 1, 1);
  int *ids = NULL, n = text ? mkc_tokenizer_encode(t, text, strlen(text), 0, 1, &ids) : -1;
  /* <|start|>system<|message|>...<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant */
  int starts = 0, messages = 0, ends = 0;
  for (int i = 0; i < n; i++) {
    starts += ids[i] == id_of(t, "<|start|>");
    messages += ids[i] == id_of(t, "<|message|>");
    ends += ids[i] == id_of(t, "<|end|>");
  }
  CHECK(n > 9 && ids[0] == id_of(t, "<|start|>") && starts == 3 && messages == 2 && ends == 2 &&
            ids[n - 10] == id_of(t, "<|start|>"),
        "the rendering reads back as 3 <|start|>, 2 <|message|>, 2 <|end|>, the cue last");
  char *back = n >= 0 ? mkc_tokenizer_decode(t, ids, n, 1) : NULL;
  CHECK(back && strcmp(back, text) == 0, "... and decodes to the same text");
  free(back);
  free(ids);
  free(text);
  mkc_tokenizer_free(t);
}

typedef struct split {
  char parts[4][256]; /* header, reasoning, reply, call texts (enum mkc_answer_part) */
  char printed[512];
} split;

/* answer, tokenized with its control tokens, streamed through family's
 * splitter and the printed view, one token at a time. */
static int run(const mkc_tokenizer *t, int family, const char *answer, split *s) {
  memset(s, 0, sizeof *s);
  mkc_reasoning h, hp;
  if (mkc_reasoning_init(&h, family, t) != 0 || mkc_reasoning_init(&hp, family, t) != 0) return -1;
  int *ids = NULL, n = mkc_tokenizer_encode(t, answer, strlen(answer), 0, 1, &ids);
  if (n < 0) return -1;
  char *out = NULL;
  size_t n_out = 0;
  FILE *f = open_memstream(&out, &n_out);
  mkc_detok d;
  mkc_detok_init(&d, t, 0);
  for (int i = 0; i <= n; i++) {
    char piece[MKC_DETOK_MAX];
    int id = i < n ? ids[i] : -1; /* then the detokenizer's flush */
    size_t k = i < n ? mkc_detok_push(&d, id, piece, sizeof piece)
                     : mkc_detok_flush(&d, piece, sizeof piece);
    const char *at = piece, *shown = piece;
    size_t n_at = k, n_shown = k;
    int part = mkc_reasoning_push(&h, id, &at, &n_at);
    strncat(s->parts[part], at, n_at);
    mkc_reasoning_print(&hp, id, &shown, &n_shown, f);
  }
  fclose(f);
  snprintf(s->printed, sizeof s->printed, "%s", out ? out : "");
  free(out);
  free(ids);
  return 0;
}

static void expect_split(const mkc_tokenizer *t, int family, const char *answer,
                         const char *reasoning, const char *reply, const char *printed,
                         const char *what) {
  split s;
  if (!CHECK(run(t, family, answer, &s) == 0, "%s: tokenized and split", what)) return;
  CHECK(strcmp(s.parts[MKC_PART_REASONING], reasoning) == 0, "%s: reasoning '%s' (got '%s')", what,
        reasoning, s.parts[MKC_PART_REASONING]);
  CHECK(strcmp(s.parts[MKC_PART_REPLY], reply) == 0, "%s: reply '%s' (got '%s')", what, reply,
        s.parts[MKC_PART_REPLY]);
  CHECK(strcmp(s.printed, printed) == 0, "%s: printed as '%s' (got '%s')", what, printed,
        s.printed);
}

/* A gpt-oss answer that calls a tool: reasoning, no reply, the call's
 * arguments {"city":"Oslo"} to recipient. */
static void expect_call(const mkc_tokenizer *t, const char *answer, const char *reasoning,
                        const char *recipient, const char *printed, const char *what) {
  expect_split(t, MKC_CHAT_GPT_OSS, answer, reasoning, "", printed, what);
  split s;
  mkc_reasoning r;
  if (run(t, MKC_CHAT_GPT_OSS, answer, &s) != 0 || mkc_reasoning_init(&r, MKC_CHAT_GPT_OSS, t))
    return;
  int *ids = NULL, n = mkc_tokenizer_encode(t, answer, strlen(answer), 0, 1, &ids);
  for (int i = 0; i < n; i++) {
    char *piece = mkc_tokenizer_decode(t, &ids[i], 1, 0);
    const char *at = piece ? piece : "";
    size_t k = strlen(at);
    mkc_reasoning_push(&r, ids[i], &at, &k);
    free(piece);
  }
  free(ids);
  CHECK(strcmp(s.parts[MKC_PART_CALL], "{\"city\":\"Oslo\"}") == 0 &&
            strcmp(r.h.recipient, recipient) == 0,
        "%s: the call's arguments (got '%s'), to %s (got '%s')", what, s.parts[MKC_PART_CALL],
        recipient, r.h.recipient);
}

static void test_split(void) {
  mkc_tokenizer *t = vocabulary(NULL);
  if (!t) return;
  /* OpenAI's harmony description: after the cue <|start|>assistant, the
   * reasoning in the analysis channel, then the reply in the final one */
  expect_split(t, MKC_CHAT_GPT_OSS,
               "<|channel|>analysis<|message|>User greets. Reply.<|end|>"
               "<|start|>assistant<|channel|>final<|message|>Hello!<|return|>",
               "User greets. Reply.", "Hello!",
               "Thinking...\nUser greets. Reply.\n...done thinking.\n\nHello!",
               "reasoning, then the reply");
  expect_split(t, MKC_CHAT_GPT_OSS, "<|channel|>final<|message|>Just this.<|return|>", "",
               "Just this.", "Just this.", "a reply without reasoning");
  /* a tool call: commentary to a function, its arguments' type constrained */
  expect_call(t,
              "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant"
              "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
              "{\"city\":\"Oslo\"}<|call|>",
              "Need weather.", "functions.get_weather",
              "Thinking...\nNeed weather.\n...done thinking.\n\n{\"city\":\"Oslo\"}",
              "a tool call after the channel: its arguments are the call's, its recipient read");
  expect_call(t,
              "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant "
              "to=functions.get_weather<|channel|>commentary json<|message|>"
              "{\"city\":\"Oslo\"}<|call|>",
              "Need weather.", "functions.get_weather",
              "Thinking...\nNeed weather.\n...done thinking.\n\n{\"city\":\"Oslo\"}",
              "a tool call with the recipient in the role's header (as the template writes it)");
  /* text with no header at all (a model that ignores the format) is not lost */
  expect_split(t, MKC_CHAT_GPT_OSS, "plain words", "", "plain words", "plain words",
               "text before any header");
  /* a name that only starts like analysis is not it */
  expect_split(t, MKC_CHAT_GPT_OSS, "<|channel|>analys<|message|>x<|end|>", "", "x", "x",
               "a channel named 'analys' is not the reasoning");
  /* the answer cut short inside the reasoning (-n, Ctrl-C): what came is reasoning */
  expect_split(t, MKC_CHAT_GPT_OSS, "<|channel|>analysis<|message|>Thinking ab", "Thinking ab", "",
               "Thinking...\nThinking ab", "an answer cut inside its reasoning");
  mkc_tokenizer_free(t);

  mkc_reasoning h;
  t = vocabulary("<|channel|>");
  CHECK(t && mkc_reasoning_init(&h, MKC_CHAT_GPT_OSS, t) == -1,
        "a vocabulary without <|channel|> is not harmony's: nothing is split");
  mkc_tokenizer_free(t);
}

/* Qwen3's <think> block (its template's reply: "<think>\n" reasoning
 * "\n</think>\n\n" answer) and DeepSeek-R1's, whose cue opened the block. */
static void test_think(void) {
  mkc_tokenizer *t = vocabulary(NULL);
  if (!t) return;
  expect_split(t, MKC_CHAT_QWEN3, "<think>\nThe user greets.\n</think>\n\nHello!",
               "The user greets.\n", "Hello!",
               "Thinking...\nThe user greets.\n\n...done thinking.\n\nHello!",
               "qwen3: the think block, then the reply (the newlines that open each left out)");
  expect_split(t, MKC_CHAT_QWEN3, "Hello!", "", "Hello!", "Hello!",
               "qwen3: a reply without a think block");
  expect_split(t, MKC_CHAT_QWEN3, "<think>\n\n</think>\n\nHi", "", "Hi", "Hi",
               "qwen3: an empty think block prints no Thinking...");
  expect_split(t, MKC_CHAT_DEEPSEEK_R1, "Okay, a greeting.\n</think>\n\nHi there.",
               "Okay, a greeting.\n", "Hi there.",
               "Thinking...\nOkay, a greeting.\n\n...done thinking.\n\nHi there.",
               "deepseek-r1: the answer starts in the block its cue opened");
  mkc_reasoning r;
  CHECK(mkc_reasoning_init(&r, MKC_CHAT_CHATML, t) == -1 &&
            mkc_reasoning_init(&r, MKC_CHAT_LLAMA3, t) == -1,
        "chatml and llama3 do not reason first: nothing is split");
  mkc_tokenizer_free(t);
  t = vocabulary("</think>");
  CHECK(t && mkc_reasoning_init(&r, MKC_CHAT_QWEN3, t) == -1,
        "qwen3 on a vocabulary without </think>: nothing is split");
  mkc_tokenizer_free(t);
}

static void test_serve(void) {
  mkc_tokenizer *t = vocabulary(NULL);
  if (!t) return;
  static const struct {
    int family;
    const char *answer;
  } ANSWERS[] = {{MKC_CHAT_GPT_OSS,
                  "<|channel|>analysis<|message|>User greets.<|end|>"
                  "<|start|>assistant<|channel|>final<|message|>Hello!<|return|>"},
                 {MKC_CHAT_QWEN3, "<think>\nUser greets.</think>\n\nHello!<|endoftext|>"}};

  for (size_t a = 0; a < sizeof ANSWERS / sizeof *ANSWERS; a++)
    for (size_t k = 0; k < N_KINDS; k++) {
      mkc_api_req r = {
          .chat = 1, .ollama = KINDS[k].ollama, .stream = KINDS[k].stream, .top_logprobs = -1};
      char *response = serve(t, ANSWERS[a].family, &r, ANSWERS[a].answer);
      char reasoning[256], content[256];
      joined(response, KINDS[k].thought, reasoning, sizeof reasoning);
      joined(response, KINDS[k].content, content, sizeof content);
      CHECK(strcmp(reasoning, "User greets.") == 0 && strcmp(content, "Hello!") == 0,
            "serve, %s, %s: the reasoning 'User greets.' apart from the reply 'Hello!' (got '%s', "
            "'%s')",
            mkc_chat_family_name(ANSWERS[a].family), KINDS[k].name, reasoning, content);
      free(response);
    }
  /* Anthropic's Messages API: the reasoning a thinking block before the text block */
  static const struct {
    int stream;
    const char *name, *const content[4], *const thought[4];
  } ANTHROPIC[] = {
      {0, "Anthropic's message", {"content", "1", "text"}, {"content", "0", "thinking"}},
      {1, "Anthropic's stream", {"delta", "text"}, {"delta", "thinking"}}};
  for (size_t a = 0; a < sizeof ANSWERS / sizeof *ANSWERS; a++)
    for (size_t k = 0; k < 2; k++) {
      mkc_api_req r = {
          .chat = 1, .anthropic = 1, .stream = ANTHROPIC[k].stream, .top_logprobs = -1};
      char *response = serve(t, ANSWERS[a].family, &r, ANSWERS[a].answer);
      char reasoning[256], content[256];
      joined(response, ANTHROPIC[k].thought, reasoning, sizeof reasoning);
      joined(response, ANTHROPIC[k].content, content, sizeof content);
      const char *order = response ? strstr(response, "\"type\":\"thinking\"") : NULL;
      CHECK(strcmp(reasoning, "User greets.") == 0 && strcmp(content, "Hello!") == 0 && order &&
                strstr(order, "\"type\":\"text\""),
            "serve, %s, %s: the reasoning in a thinking block, then the reply in a text block "
            "(got '%s', '%s')",
            mkc_chat_family_name(ANSWERS[a].family), ANTHROPIC[k].name, reasoning, content);
      free(response);
    }
  /* llama-server's reasoning_format none: qwen3's think block left in the content, whole and
   * streamed; deepseek and auto put it apart; ollama's API apart whatever it says */
  const struct {
    int format, stream, ollama;
    const char *content, *name;
  } FORMATS[] = {
      {1 + MKC_REASONING_NONE, 0, 0, "<think>\nUser greets.</think>\n\nHello!", "none, whole"},
      {1 + MKC_REASONING_NONE, 1, 0, "<think>\nUser greets.</think>\n\nHello!", "none, streamed"},
      {1 + MKC_REASONING_DEEPSEEK, 0, 0, "Hello!", "deepseek"},
      {1 + MKC_REASONING_AUTO, 1, 0, "Hello!", "auto, streamed"},
      {1 + MKC_REASONING_NONE, 0, 1, "Hello!", "none on ollama's chat"}};
  for (size_t k = 0; k < sizeof FORMATS / sizeof *FORMATS; k++) {
    mkc_api_req rq = {.chat = 1,
                      .top_logprobs = -1,
                      .stream = FORMATS[k].stream,
                      .ollama = FORMATS[k].ollama,
                      .reasoning_format = FORMATS[k].format};
    char *resp =
        serve(t, MKC_CHAT_QWEN3, &rq, "<think>\nUser greets.</think>\n\nHello!<|endoftext|>");
    const char *const path[] = {"choices", FORMATS[k].stream ? "delta" : "message", "content",
                                NULL};
    const char *const opath[] = {"message", "content", NULL};
    char got[256];
    joined(resp, FORMATS[k].ollama ? opath : path, got, sizeof got);
    int apart = resp && (strstr(resp, "\"reasoning_content\"") || strstr(resp, "\"thinking\""));
    int whole = strcmp(FORMATS[k].content, "Hello!") != 0;
    CHECK(strcmp(got, FORMATS[k].content) == 0 && apart == !whole,
          "serve, qwen3, reasoning_format %s: %s", FORMATS[k].name,
          whole ? "the think block left in the content, no reasoning field"
                : "the reply alone in the content, the reasoning apart");
    free(resp);
  }
  /* the server's --reasoning-format where the request gives none; the request's over it */
  mkc_api_req plain = {.chat = 1},
              deep = {.chat = 1, .reasoning_format = 1 + MKC_REASONING_DEEPSEEK};
  CHECK(!mkc_answer_reasoning_apart(&plain, MKC_REASONING_NONE) &&
            mkc_answer_reasoning_apart(&plain, MKC_REASONING_AUTO) &&
            mkc_answer_reasoning_apart(&deep, MKC_REASONING_NONE),
        "serve --reasoning-format none: a request that gives none keeps the reasoning in the "
        "reply; one that gives deepseek has it apart");
  /* a template that does not reason: the answer is the reply, whole, and no reasoning field */
  mkc_api_req r = {.chat = 1, .top_logprobs = -1};
  char *response = serve(t, MKC_CHAT_CHATML, &r, "<think>x</think>y");
  const char *const content_path[] = {"choices", "message", "content", NULL};
  char content[256];
  joined(response, content_path, content, sizeof content);
  CHECK(strcmp(content, "<think>x</think>y") == 0 && response && !strstr(response, "reasoning"),
        "serve, chatml: the tags stay in the content, no reasoning_content (got '%s')", content);
  free(response);
  mkc_tokenizer_free(t);
}

int main(void) {
  test_eog();
  test_rendering();
  test_split();
  test_think();
  test_serve();
  return check_done();
}
