/* Fill-in-the-middle tokens. Most GGUF files do not name them
 * (tokenizer.ggml.fim_*_token_id came late), and tokenizer.json never does,
 * so each is found by the texts the code models give it, the texts llama.cpp
 * looks for (its vocabulary loader), in its order. */
#include <string.h>

#include "impl.h"

/* Each FIM token's texts, NULL-ended (DeepSeek's use full-width bars and U+2581, CodeLlama's
 * U+2581, SentencePiece's space). */
static const char *const TEXTS[MKC_FIM_COUNT][10] = {
    [MKC_FIM_PRE] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
                     "▁<PRE>", "<|code_prefix|>", "<|prefix|>", NULL},
    [MKC_FIM_SUF] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
                     "▁<SUF>", "<|code_suffix|>", "<|suffix|>", NULL},
    [MKC_FIM_MID] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
                     "▁<MID>", "<|code_middle|>", "<|middle|>", NULL},
    [MKC_FIM_PAD] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL},
    [MKC_FIM_REP] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL},
    [MKC_FIM_SEP] = {"<|file_sep|>", NULL},
};

void mkc_tok_find_fim(mkc_tokenizer *t) {
  for (int k = 0; k < MKC_FIM_COUNT; k++)
    for (int i = 0; t->fim[k] < 0 && TEXTS[k][i]; i++)
      t->fim[k] = mkc_tok_lookup(t, TEXTS[k][i], strlen(TEXTS[k][i]));
}

int mkc_tokenizer_fim(const mkc_tokenizer *t, int which) {
  return t && which >= 0 && which < MKC_FIM_COUNT ? t->fim[which] : -1;
}
