/* Decode state shared by the megakernel and the host: one definition for both sides.
 * The kernel owns `pos`; the host writes only the inputs of the next step. */
#ifndef MKC_STATE_H
#define MKC_STATE_H

#define MKC_T_CAP 32        /* most input tokens a decode step can take: 1 + drafts */
#define MKC_CHUNK_CAP 512   /* most input tokens a prompt chunk can take (all fixed: tiled) */
#define MKC_MAX_BLOCKS 1024 /* grid size cap: per-block argmax partials are planned for it */
#define MKC_ROUNDS_MAX 16   /* most draft-and-verify rounds one launch runs (--rounds) */
#define MKC_ROUND_STOPS 8   /* token ids a launch of rounds stops at (end of generation) */
#define MKC_CANDS_K 64      /* top-k up to this takes the candidates stage (templates/sample.cuh) */
#define MKC_SLOTS_CAP 64    /* most sequences a slot kernel's step serves (templates/slots.cuh) */
#define MKC_KV_PAGE 16      /* positions per page of a paged slot kernel's KV pool (--kv-pages) */

enum mkc_status {
  MKC_STATUS_OK = 0,
  MKC_STATUS_CTX_FULL = 1,  /* pos + n_inputs would pass the KV cache: nothing was written */
  MKC_STATUS_BAD_INPUT = 2, /* n_inputs/n_fixed out of range or a token id outside the vocab */
  MKC_STATUS_NONFINITE = 3  /* no finite logit: NaN or inf reached the LM head */
};

#define MKC_HIST_CAP 256 /* repeat_last_n's cap: the penalties look this far back at most */
#define MKC_BIAS_CAP 128 /* most tokens a request's logit bias names (--logit-bias, logit_bias) */
#define MKC_LOGPROBS_MAX 20
/* Per input position, in the kernel's scratch when logprobs > 0: max logit,
 * log normalizer, 1 / temperature, the emitted token's log-probability, then
 * MKC_LOGPROBS_MAX top ids (ints) and their log-probabilities. */
#define MKC_LP_STRIDE 64
#define MKC_LP_EMITTED 3
#define MKC_LP_IDS 4
#define MKC_LP_VALS (MKC_LP_IDS + MKC_LOGPROBS_MAX)

/* One round of a launch that runs several (round_max > 1): what the step of
 * that round took and emitted, as the state's fields say for a single step. */
typedef struct mkc_round {
  int n_in;       /* its inputs T: the last emitted token, then drafts */
  int n_out;      /* tokens emitted: accepted + 1 */
  int n_accepted; /* drafts accepted */
  int status;     /* enum mkc_status */
  int out_tokens[MKC_T_CAP];
} mkc_round;

/* Sampling options, written by the host once per request (not per step) and
 * read by the sampler stage (templates/sample.cuh) and the reference. */
typedef struct mkc_sampling {
  float temp;           /* <= 0: greedy (argmax); the other fields are then ignored */
  int top_k;            /* <= 0: off */
  float top_p;          /* >= 1: off */
  float min_p;          /* <= 0: off */
  float repeat_penalty; /* 1 (or 0, as zeroed options hold): off; llama.cpp: l > 0 ? l / rp : l * rp
                         */
  float presence_penalty;        /* 0: off (logit -= presence if the token occurs) */
  float frequency_penalty;       /* 0: off (logit -= frequency * count) */
  int repeat_last_n;             /* the penalties look at the last N tokens, 0..MKC_HIST_CAP */
  unsigned int seed_lo, seed_hi; /* the Philox key */
  int logprobs;                  /* 0..MKC_LOGPROBS_MAX: top-N log-probabilities per token */
  /* llama.cpp's --logit-bias, OpenAI's logit_bias: bias[k] is added to token bias_id[k]'s logit
   * where the LM head writes it, before the greedy choice, the penalties and the sampler see it
   * (-inf: never chosen). Ids ascending, each once. It applies greedy too: not part of
   * MKC_SAMPLING_ON, and kept when the rest is off. */
  int n_bias;
  int bias_id[MKC_BIAS_CAP];
  float bias[MKC_BIAS_CAP];
} mkc_sampling;

/* Whether the options send a step through the sampler: a temperature, a
 * penalty or log-probabilities. All-zero options (a fresh or reset state) are
 * plain greedy decoding: a repeat penalty of 0 counts as none. The one
 * definition for the kernel (templates/sample.cuh) and the host. */
#define MKC_SAMPLING_ON(o)                                                                         \
  ((o)->temp > 0.0f || ((o)->repeat_penalty > 0.0f && (o)->repeat_penalty != 1.0f) ||              \
   (o)->presence_penalty != 0.0f || (o)->frequency_penalty != 0.0f || (o)->logprobs > 0)

typedef struct mkc_state {
  /* kernel-owned */
  int pos;                /* tokens whose K/V rows are valid in the cache */
  int n_accepted;         /* drafts accepted by the last step */
  int n_out;              /* tokens emitted by the last step: accepted + 1 */
  int status;             /* enum mkc_status of the last step */
  int step;               /* steps run */
  unsigned barrier_count; /* grid barrier: blocks arrived in this generation */
  unsigned barrier_gen;   /* grid barrier: generation, bumped by the last arriver */
  /* kernel-written each step */
  int out_tokens[MKC_T_CAP]; /* greedy choices after the fixed inputs: n_out of them */
  /* rounds in one launch (round_max > 1), last: the host reads back n_rounds of them */
  int n_rounds;
  int round_go; /* another round runs (mkc_round_next), set before the barrier that starts it */
  mkc_round rounds[MKC_ROUNDS_MAX];
  /* host-written before each step, last: the host copies these in and reads back only what is
   * above (offsetof round_max; the rounds only when it ran them), so a prompt chunk's inputs cost
   * no decode step a byte */
  /* Rounds (templates/rounds.cuh): after the step below, up to round_max - 1 more steps in the
   * same launch, each on the last emitted token and up to round_drafts drafts that prompt lookup
   * finds in the history, until round_budget tokens are emitted, a round emits one of
   * round_stops or the context is full. 0 or 1: the one step. */
  int round_max, round_drafts, round_budget, n_round_stops;
  int round_stops[MKC_ROUND_STOPS];
  /* Self-speculation in the kernel (templates/rounds.cuh): rounds draft with the first
   * draft_layers layers (0: by prompt lookup); draft_left drafts are still to be made for the
   * next round (the host sets the first round's), draft_n made so far. */
  int draft_layers, draft_left, draft_n;
  unsigned flow_count; /* flow waits (templates/common.cuh): arrivals this launch, from 0 */
  int n_inputs;        /* T: inputs[0] is the last known token, then fixed tokens, then drafts */
  int n_fixed; /* inputs[1..n_fixed] are known (prompt) and accepted unconditionally; a step of
                  T > t_max inputs (a prompt chunk, templates/gemm.cuh) has n_fixed = T - 1 */
  int inputs[MKC_CHUNK_CAP];
  /* host-written once per request, past what a step copies in or out: its 1 KB of biases cost
   * no step a byte */
  mkc_sampling sampling;
} mkc_state;

#endif
