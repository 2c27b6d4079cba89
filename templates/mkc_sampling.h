/* Sampling options, written by the host once per request and read by the
 * kernel's sampler stage (and by the reference oracle). Data only. */
#ifndef MKC_SAMPLING_H
#define MKC_SAMPLING_H
#define MKC_HIST_CAP 256 /* the penalty history: at most this many recent tokens */
#define MKC_LOGPROBS_MAX 20
typedef struct mkc_sampling {
  float temp;                    /* <= 0: greedy (argmax); the other fields are then ignored */
  int top_k;                     /* <= 0: off */
  float top_p;                   /* >= 1: off */
  float min_p;                   /* <= 0: off */
  float repeat_penalty;          /* 1: off (llama.cpp: logit > 0 ? logit / rp : logit * rp) */
  float presence_penalty;        /* 0: off (logit -= presence if the token occurs) */
  float frequency_penalty;       /* 0: off (logit -= frequency * count) */
  int repeat_last_n;             /* the penalties look at the last N tokens, 0..MKC_HIST_CAP */
  unsigned int seed_lo, seed_hi; /* the Philox key */
  int logprobs; /* 0..MKC_LOGPROBS_MAX: top-N log-probabilities per emitted token */
} mkc_sampling;
#endif
