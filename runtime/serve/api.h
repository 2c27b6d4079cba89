/* The OpenAI-style requests mkc serve takes (POST /v1/completions and
 * /v1/chat/completions), read from their JSON bodies and checked: the fields
 * mkc acts on, every other field ignored as OpenAI's clients send many. */
#ifndef MKC_API_H
#define MKC_API_H

#include <stddef.h>

#include "backend/sampling_more.h"
#include "mkc_state.h"
#include "model/chat_template.h"

struct cJSON;

#define MKC_API_STOPS 8    /* stop strings per request */
#define MKC_API_CHOICES 16 /* OpenAI's n: choices per request */
#define MKC_API_ANSWERS 64 /* a list of prompts times n */

/* What a request asks for. The strings point into the parsed JSON, kept in
 * root (mkc_api_req_free). */
typedef struct mkc_api_req {
  int chat; /* from /v1/chat/completions: msgs; else a prompt */
  /* chat: role and content (each message's text parts joined); an
   * assistant's tool_calls and its reasoning given back (reasoning_content,
   * ollama's thinking); a tool message's result */
  mkc_chat_msg *msgs;
  char **owned; /* the joined contents and the calls' arguments, freed with the request */
  int n_owned;
  int n_msgs;
  /* tools: the functions the model may call, each as the template writes it
   * (mkc_tojson; in owned), none when tool_choice is "none"; one_call:
   * parallel_tool_calls false (an answer's first call alone is kept) */
  const char **tools;
  int n_tools, one_call;
  const char *prompt; /* completions: the prompt as text, or */
  int *prompt_ids;    /* as token ids (checked against the vocabulary later) */
  int n_prompt_ids;
  int max_tokens;    /* -1: until the end of generation or a full context */
  int stream;        /* answer as server-sent events */
  int include_usage; /* OpenAI's stream_options.include_usage: a last chunk with the usage */
  int echo;          /* OpenAI's completions' echo: the text is the prompt, then the answer */
  /* OpenAI's n (llama-server's n_cmpl): the answers to give (0 or 1: one), choice i drawn with
   * the seed + i, one after another (a stream's chunks say their choice's index) */
  int n_choices;
  /* A list of prompts (OpenAI's completions, llama-server's; 2..64 of them, all strings or all
   * lists of token ids; in root): each answered in turn, n choices each (choice k * n + i: prompt
   * k's i-th); prompt or prompt_ids is the first (mkc_api_select_prompt moves to another) */
  const struct cJSON *prompts;
  int n_prompts;
  /* -1: none; else each token's log-probability and the top_logprobs most
   * likely at its place (chat: logprobs true, top_logprobs N; completions:
   * logprobs N), 0..MKC_LOGPROBS_MAX */
  int top_logprobs;
  const char *stop[MKC_API_STOPS]; /* generation ends before any of these texts */
  int n_stop;
  /* sampling: each field given overrides the server's own option */
  double temperature, top_p, min_p, presence_penalty, frequency_penalty, repeat_penalty;
  int top_k, repeat_last_n;
  unsigned set; /* a bit per sampling field given, MKC_API_* below */
  unsigned long long seed;
  int have_seed;
  /* OpenAI's logit_bias (have_bias: given, replacing the server's -l): ascending ids, once each */
  int have_bias, n_bias;
  int bias_id[MKC_BIAS_CAP];
  float bias[MKC_BIAS_CAP];
  /* ollama's API (/api/chat, /api/generate): its answers' shape; generate's
   * system message, raw (the prompt as it is, no template) and context (the
   * token ids an earlier answer returned, which the prompt continues) */
  int ollama, raw;
  /* ollama's truncate (/api/chat; default true): a chat longer than the context loses its
   * oldest turns (model/chat_fit.h) rather than being refused */
  int truncate;
  /* Context shift as generation fills the context (mkc_decode_opts.shift): ollama's shift, 1
   * true, -1 false, 0 not given (ollama's default is true; elsewhere the server's
   * --context-shift decides); n_keep: the prompt's first tokens a shift keeps (ollama's
   * num_keep, llama-server's n_keep; -1: the whole prompt), have_keep: given. */
  int shift, n_keep, have_keep;
  int n_discard; /* llama-server's: what a shift drops after n_keep (0: half the rest) */
  /* ollama's options.num_ctx (0: not given): the request's context, where it is smaller than the
   * server's */
  int num_ctx;
  /* llama-server's /infill (infill 1): the code before and after the gap (prompt, "" when not
   * given, follows the prefix), and other files' chunks, names (NULL: "tmp") and texts, in
   * root; infill 2: a completion's suffix (OpenAI's, ollama's), the prompt as the prefix */
  int infill;
  const char *input_prefix, *input_suffix;
  const char **extra_names, **extra_texts; /* [n_extra] */
  int n_extra;
  /* llama-server's own completion endpoint (/completion, /completions): its answer's shape,
   * its field names (n_predict, n_probs, seed -1, logit_bias as [[id, bias], ...]) */
  int native;
  /* Anthropic's Messages API (/v1/messages): its answers' and errors' shape; system as a
   * top-level field, stop_sequences (in stop) */
  int anthropic;
  int counting; /* Anthropic's count_tokens, OpenAI's input_tokens: the prompt alone is wanted */
  /* OpenAI's Responses API (/v1/responses, api_responses.h): read as its chat request; its
   * answers' shape (serve_responses.c) */
  int responses;
  /* Anthropic's thinking: its type enabled (1) or disabled (0), -1 not given; budget_tokens
   * given (mkc has no budget) */
  int thinking, thinking_budget;
  int ignore_eos; /* llama-server's ignore_eos: end-of-generation tokens banned (biased -inf) */
  const char *system;
  /* the template's reasoning: OpenAI's reasoning_effort or ollama's think as
   * a level ("low", ...; NULL: not given); ollama's think as true or false
   * (-1: not given) */
  const char *reasoning_effort;
  int think;
  /* llama-server's reasoning_format: 1 + enum mkc_reasoning_format (0: not given) */
  int reasoning_format;
  /* ollama's format "json", OpenAI's response_format json_object: the
   * answer is constrained to a JSON object (exec/constrain.h); with a
   * schema (ollama's format as one, OpenAI's json_schema), to what it
   * validates */
  int json_format;
  struct mkc_schema *schema;
  /* llama-server's grammar (GBNF, util/gbnf.h): the answer is a sentence of it (json_format is
   * then set too: the same constraint) */
  struct mkc_gbnf *grammar;
  /* llama.cpp's samplers the kernel lacks (exec/sample_chain.h), as llama-server and ollama
   * name them: typical_p, top_n_sigma, xtc_probability, xtc_threshold, dynatemp_range,
   * dynatemp_exponent, mirostat, mirostat_tau, mirostat_eta, dry_multiplier, dry_base,
   * dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers; more_set: a bit per field
   * given (in mkc_sampling_more_options order; the breakers the bit past them) */
  mkc_sampling_more more;
  unsigned more_set;
  /* llama-server's samplers (names, or a string of letters) when followed: the chain's part */
  int have_samplers;
  unsigned samplers;
  /* ollama's options mkc does not follow (num_ctx, tfs_z, ...), for the log:
   * names joined by ", ", cut with "..." when long; "" when none */
  char unfollowed[160];
  int *context;
  int n_context;
  void *root;       /* the cJSON tree */
  void *converted;  /* Anthropic's messages and tools as OpenAI's (api_anthropic.h) */
  int *origin;      /* Anthropic's: per message, the client's index (-1: the system field) */
  const char *body; /* while parsing: the JSON text (tools and arguments are written from it) */
  size_t body_len;
} mkc_api_req;

enum {
  MKC_API_TEMPERATURE = 1u << 0,
  MKC_API_TOP_P = 1u << 1,
  MKC_API_MIN_P = 1u << 2,
  MKC_API_PRESENCE = 1u << 3,
  MKC_API_FREQUENCY = 1u << 4,
  MKC_API_REPEAT = 1u << 5,
  MKC_API_TOP_K = 1u << 6,
  MKC_API_REPEAT_LAST_N = 1u << 7,
};

/* name added to r->unfollowed, the fields the log line names as not followed (", " between;
 * a list that outgrows it ends in "..."). */
void mkc_api_note_unfollowed(mkc_api_req *r, const char *name);

/* Parses body[0..n) as a chat (chat != 0) or completion request. 0, or -1
 * with why filled (the message a 400 answer carries); *r is then freed. */
int mkc_api_parse(const char *body, size_t n, int chat, mkc_api_req *r, char *why, size_t cap);

/* Anthropic's POST /v1/messages: model, max_tokens (required), messages (their content a
 * string or text, thinking, tool_use and tool_result blocks), system (a string or text
 * blocks), tools and tool_choice (api_anthropic.h), stop_sequences, temperature, top_p, top_k,
 * stream; other blocks are refused, thinking and the rest named on the log line. 0, or -1
 * with why filled. */
int mkc_api_parse_anthropic(const char *body, size_t n, mkc_api_req *r, char *why, size_t cap);
/* The same for POST /v1/messages/count_tokens: max_tokens not required (then -1). */
int mkc_api_parse_anthropic_count(const char *body, size_t n, mkc_api_req *r, char *why,
                                  size_t cap);

/* OpenAI's POST /v1/responses (api_responses.h): its body read as the chat request it
 * converts to, responses set; an error in a converted message names it as "input, read as chat
 * messages: messages[k]...". counting: for /v1/responses/input_tokens (responses set) or, with
 * chat_body, /v1/chat/completions/input_tokens (a chat body as it is). 0, or -1 with why. */
int mkc_api_parse_responses(const char *body, size_t n, int counting, int chat_body, mkc_api_req *r,
                            char *why, size_t cap);

/* The same for llama-server's own /completion (and /completions): the
 * prompt (text or token ids), n_predict (-1: no bound), n_probs, seed (-1:
 * drawn), logit_bias also as [[id, bias], ...] (bias false: banned), and the
 * rest as a completion request's. */
int mkc_api_parse_native(const char *body, size_t n, mkc_api_req *r, char *why, size_t cap);
/* llama-server's POST /infill: its /completion's fields, with input_prefix and input_suffix
 * (strings, required), input_extra ([{"filename", "text"}], optional) and prompt (a string,
 * optional) instead of a prompt to complete. */
int mkc_api_parse_infill(const char *body, size_t n, mkc_api_req *r, char *why, size_t cap);

/* The same for ollama's /api/chat (chat != 0) and /api/generate: the sampling
 * fields, num_predict and stop in "options", a stream unless "stream":
 * false. */
int mkc_api_parse_ollama(const char *body, size_t n, int chat, mkc_api_req *r, char *why,
                         size_t cap);

/* llama-server's /tokenize ({"content", "add_special" (false), "parse_special"
 * (true), "with_pieces" (false)}) and /detokenize ({"tokens": [ids]}). */
typedef struct mkc_api_tokens {
  const char *content; /* tokenize */
  int add_special, parse_special, with_pieces;
  int *ids; /* detokenize (malloc'd) */
  int n_ids;
  void *root;
} mkc_api_tokens;
int mkc_api_parse_tokens(const char *body, size_t n, int detokenize, mkc_api_tokens *t, char *why,
                         size_t cap);
void mkc_api_tokens_free(mkc_api_tokens *t);

/* A JSON list of token ids (whole numbers >= 0) -> *ids (malloc'd; the
 * caller frees it, on failure too) and *n. 0, or -1 with why naming `name`. */
int mkc_api_read_ids(const struct cJSON *a, const char *name, int **ids, int *n, char *why,
                     size_t cap);

/* base with the request's sampling fields put over it (the seed too, when
 * given). */
mkc_sampling mkc_api_sampling(const mkc_api_req *r, mkc_sampling base);
/* The same for the samplers the kernel lacks (r->more's fields given). */
mkc_sampling_more mkc_api_sampling_more(const mkc_api_req *r, mkc_sampling_more base);

void mkc_api_req_free(mkc_api_req *r);

/* The answers r asks for: its prompts (a list's, else 1) times its n. */
int mkc_api_answers(const mkc_api_req *r);
/* Makes prompt k of r's list its prompt (or prompt_ids). 0, or -1 when out of memory. */
int mkc_api_select_prompt(mkc_api_req *r, int k);

/* {"error": {"message": msg, "type": type}}, malloc'd (NULL when out of
 * memory). */
char *mkc_api_error_json(const char *msg, const char *type);

/* text[0..n) as a JSON string (cJSON raw): every byte kept, a NUL included
 * (as \u0000; cJSON's own strings end at the first). NULL when out of memory. */
struct cJSON *mkc_json_text(const char *text, size_t n);

#endif
