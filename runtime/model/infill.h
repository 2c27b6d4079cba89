/* Fill-in-the-middle prompts (llama-server's /infill): the code before and
 * after a gap, and chunks of other files, laid out around the model's FIM
 * markers in the repository-level form Qwen2.5-Coder was trained on, as
 * llama-server lays them out:
 *   [extra: <repo>myproject\n <sep>name\n text ... <sep>filename\n]
 *   [BOS] <pre> prefix prompt <suf> suffix <mid>
 * or, suffix first (llama-server's --spm-infill, for models trained so):
 *   [BOS] <suf> suffix <pre> prefix prompt <mid>
 * (without a file separator each chunk is preceded by "\n\n--- snippet
 * ---\n\n"). Parts that do not fit are cut as llama-server cuts them: the
 * prefix keeps its last 3/4 of a batch, the suffix its first 1/4 (less the
 * prompt and two markers), the extra chunks their last tokens, up to what the
 * context leaves after a batch and twice the answer's tokens. */
#ifndef MKC_INFILL_H
#define MKC_INFILL_H

#include <stddef.h>

#include "tokenizer/tokenizer.h"

typedef struct mkc_infill {
  const char *prefix, *suffix; /* the code around the gap */
  const char *prompt;          /* after the prefix (control tokens read); "" or NULL: none */
  const char *const *extra_names, *const *extra_texts; /* [n_extra]: a chunk's file and text */
  int n_extra;
  int n_batch;   /* the batch the prefix and suffix share */
  int n_predict; /* the answer's tokens the context keeps room for */
  int n_ctx;
  int spm; /* suffix, prefix, middle */
} mkc_infill;

/* The FIM markers t lacks, named ("prefix", "suffix, middle", ...) into buf,
 * or 0 when it has all three (then the model can fill in). */
int mkc_infill_missing(const mkc_tokenizer *t, char *buf, size_t cap);

/* The prompt's tokens (malloc'd) in *ids: their count, or -1 after a message
 * (the model lacks a marker; out of memory). */
int mkc_infill_prompt(const mkc_tokenizer *t, const mkc_infill *in, int **ids);

#endif
