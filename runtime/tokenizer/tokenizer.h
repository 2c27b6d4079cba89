/* Tokenizers from a model's own metadata: SentencePiece-style BPE ("llama"
 * in GGUF, Llama-2's tokenizer.json) and byte-level BPE ("gpt2" in GGUF,
 * tokenizer.json with a ByteLevel pre-tokenizer), with the pre-tokenizer
 * splits of GPT-2, Llama-3, Qwen2 and SmolLM written by hand. Encoding:
 * special tokens, pre-tokenizer, merges (highest score or lowest rank first,
 * leftmost on ties), byte fallback. Decoding streams: bytes come out only as
 * whole UTF-8 characters. */
#ifndef MKC_TOKENIZER_H
#define MKC_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "formats/gguf.h"

typedef struct mkc_tokenizer mkc_tokenizer;

/* From GGUF metadata: tokenizer.ggml.model ("llama" or "gpt2"), .pre
 * ("default", "gpt2"/"gpt-2", "llama-bpe"/"llama3", "qwen2", "smollm"),
 * .tokens, .scores, .token_type, .merges, the bos/eos/unknown/padding/eot/eom
 * ids, .add_bos_token, .add_space_prefix. NULL after "mkc: error: PATH: ..."
 * for missing or inconsistent metadata or an unsupported model or pre. */
mkc_tokenizer *mkc_tokenizer_from_gguf(const mkc_gguf *f);
/* From a Hugging Face folder: DIR/tokenizer.json (model.type "BPE" with a
 * byte-level pre-tokenizer, or SentencePiece-style with byte_fallback as
 * Llama-2 ships it; added_tokens are special tokens) and, when present,
 * DIR/tokenizer_config.json for bos_token, eos_token and add_bos_token.
 * NULL after a message. */
mkc_tokenizer *mkc_tokenizer_from_hf(const char *dir);
void mkc_tokenizer_free(mkc_tokenizer *t);

/* "spm", "spm (merges)", "bpe (gpt2)", "bpe (llama3)", "bpe (qwen2)",
 * "bpe (smollm)". */
const char *mkc_tokenizer_kind(const mkc_tokenizer *t);
int mkc_tokenizer_n_vocab(const mkc_tokenizer *t);
int mkc_tokenizer_bos(const mkc_tokenizer *t); /* -1 if none */
int mkc_tokenizer_eos(const mkc_tokenizer *t); /* -1 if none */
/* Fill-in-the-middle's tokens (code models: Qwen2.5-Coder, StarCoder, CodeLlama, ...): the
 * prefix, suffix and middle markers, the pad, and the repository and file separators of its
 * repository-level form. */
enum {
  MKC_FIM_PRE,
  MKC_FIM_SUF,
  MKC_FIM_MID,
  MKC_FIM_PAD,
  MKC_FIM_REP,
  MKC_FIM_SEP,
  MKC_FIM_COUNT
};
/* The model's FIM token which (MKC_FIM_*): the file's tokenizer.ggml.fim_*_token_id, else the
 * token with one of the texts llama.cpp finds it by; -1: none. */
int mkc_tokenizer_fim(const mkc_tokenizer *t, int which);
/* Whether encode should prepend BOS by default (the model's add_bos_token). */
int mkc_tokenizer_add_bos(const mkc_tokenizer *t);
/* The BOS id that encoding adds, or -1 (none added; t NULL: no tokenizer). */
int mkc_tokenizer_added_bos(const mkc_tokenizer *t);
/* The token the model's file puts after a text, or -1: EOS where it says
 * add_eos_token, or the special token tokenizer.json's TemplateProcessing ends
 * a text with (embedding models that pool the last token read it there);
 * encode never adds it. */
int mkc_tokenizer_eos_after(const mkc_tokenizer *t);
/* A whole text as the model's file says it is framed (llama.cpp's
 * add_special): BOS where the model adds it, the text (control tokens
 * parsed), then mkc_tokenizer_eos_after's token. The count and *ids as
 * mkc_tokenizer_encode gives them, or -1 after a message. */
int mkc_tokenizer_encode_framed(const mkc_tokenizer *t, const char *text, size_t len, int **ids);
/* End of generation: eos, eot, eom, and control tokens named <|eot_id|>,
 * <|im_end|>, <|endoftext|>, <|end_of_text|>, <|end|>, <end_of_turn>, ...;
 * but not <|end|> where <|return|> and <|call|> are tokens too (gpt-oss's
 * harmony: <|end|> closes one message of an answer). */
int mkc_tokenizer_is_eog(const mkc_tokenizer *t, int id);
/* The end-of-generation ids, lowest first: the first cap into ids; returns how many it wrote
 * (mkc_tokenizer_eog_all: every one). */
int mkc_tokenizer_eog_ids(const mkc_tokenizer *t, int *ids, int cap);
/* All of them, in a new array (free it) with their count in *n; NULL with *n = 0 where there are
 * none, NULL with *n = -1 after a message where memory ran out. */
int *mkc_tokenizer_eog_all(const mkc_tokenizer *t, int *n);
/* The id of the token whose text is exactly s[0..n), or -1. */
int mkc_tokenizer_find(const mkc_tokenizer *t, const char *s, size_t n);

/* text[0..len) (any bytes; need not be valid UTF-8) -> ids. add_bos:
 * prepend BOS (if the model has one). parse_special: text spelling a
 * control token (e.g. "<|im_start|>") becomes that token; user-defined
 * tokens always do. Ill-formed UTF-8 is read as U+FFFD (one per maximal
 * subpart); byte-level BPE drops a byte whose character is no token (as
 * llama.cpp and Hugging Face do) unless the tokenizer.json names an unknown
 * token for it. Returns the count, with the ids in *ids (malloc'd,
 * caller frees; NULL when the count is 0), or -1 after a message. */
int mkc_tokenizer_encode(const mkc_tokenizer *t, const char *text, size_t len, int add_bos,
                         int parse_special, int **ids);

/* Streaming detokenizer. Push ids, get bytes that are only ever whole UTF-8
 * characters: a character split over byte tokens is held until complete, an
 * ill-formed sequence comes out as U+FFFD. Control tokens print nothing
 * unless show_special; ids outside the vocabulary print nothing.
 * SentencePiece: the first piece that prints loses one leading space (the
 * one encode added). Each push or flush writes at most MKC_DETOK_MAX bytes;
 * with cap >= MKC_DETOK_MAX nothing is ever cut (a smaller cap cuts the
 * output at a character boundary). */
#define MKC_DETOK_MAX 4096
typedef struct mkc_detok {
  const mkc_tokenizer *t;
  int show_special;
  int started;              /* a piece has printed (SentencePiece's leading space) */
  int n_pending;            /* 0..3 */
  unsigned char pending[4]; /* the start of a character not yet complete */
} mkc_detok;

void mkc_detok_init(mkc_detok *d, const mkc_tokenizer *t, int show_special);
/* Bytes written to out. */
size_t mkc_detok_push(mkc_detok *d, int id, char *out, size_t cap);
/* The same, showing a control token's text whatever show_special says: a
 * prompt echoed as the model reads it (<|im_start|> included). */
size_t mkc_detok_push_shown(mkc_detok *d, int id, char *out, size_t cap);
/* Ends the stream: a character still incomplete comes out as U+FFFD. */
size_t mkc_detok_flush(mkc_detok *d, char *out, size_t cap);

/* What every token prints, back to back: token id's bytes are
 * pieces[(*off)[id] .. (*off)[id + 1]) (byte-level BPE's bytes, SentencePiece's
 * spaces and bytes; a control token's text). */
const char *mkc_tokenizer_pieces(const mkc_tokenizer *t, const uint32_t **off);
/* Whether token id is text an answer may hold: not a control, unknown or
 * unused token (which print nothing) and not one that ends generation. */
int mkc_tokenizer_is_text(const mkc_tokenizer *t, int id);

/* ids[0..n) -> malloc'd NUL-terminated text (the detokenizer, flushed), or
 * NULL when out of memory. */
char *mkc_tokenizer_decode(const mkc_tokenizer *t, const int *ids, int n, int show_special);

#endif
