/* Inside the tokenizers: the vocabulary tables every loader fills the same
 * way (mkc_tok_build), and the pieces of encoding shared by the files:
 * tokenizer.c (build, lookups, special tokens, encode), from_gguf.c,
 * from_json.c (loaders), merge.c (the merge loop),
 * spm.c, bpe.c (the two models), pretokenize.c (the
 * splits), detok.c (pieces and the streaming detokenizer). */
#ifndef MKC_TOKENIZER_IMPL_H
#define MKC_TOKENIZER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* Token types (GGUF tokenizer.ggml.token_type, SentencePiece's numbering). */
enum mkc_tok_type {
  MKC_TOK_UNDEFINED = 0,
  MKC_TOK_NORMAL = 1,
  MKC_TOK_UNKNOWN = 2,
  MKC_TOK_CONTROL = 3,
  MKC_TOK_USER_DEFINED = 4,
  MKC_TOK_UNUSED = 5,
  MKC_TOK_BYTE = 6,
};

enum mkc_tok_mode {
  MKC_TOK_SPM,        /* "▁" for spaces, merges by token score, <0xXX> byte fallback */
  MKC_TOK_SPM_MERGES, /* the same with a merges list (Llama-2's tokenizer.json) */
  MKC_TOK_BPE,        /* byte-level: bytes as printable characters, merges by rank */
};

enum mkc_tok_pre {
  MKC_PRE_NONE,
  MKC_PRE_GPT2,
  MKC_PRE_LLAMA3,
  MKC_PRE_QWEN2,
  MKC_PRE_SMOLLM,
  MKC_PRE_TEKKEN,
  MKC_PRE_GPT4O
};

/* A token's text may be at most this long, so one piece fits MKC_DETOK_MAX. */
#define MKC_TOKEN_MAX_BYTES 1024

typedef struct mkc_tok_str {
  const char *s;
  size_t n;
} mkc_tok_str;

/* What a loader found; mkc_tok_build checks and copies it. */
typedef struct mkc_tok_spec {
  const char *source; /* file or folder, for messages */
  int mode, pre;
  int n_vocab;
  const mkc_tok_str *tokens; /* [n_vocab] */
  const float *scores;       /* [n_vocab], or NULL (all 0) */
  const uint8_t *types;      /* [n_vocab] enum mkc_tok_type, or NULL (all normal) */
  int n_merges;
  const mkc_tok_str *merges;        /* [n_merges][2]: left, right */
  const char *merges_name;          /* "tokenizer.ggml.merges", for messages */
  int bos, eos, unk, pad, eot, eom; /* -1: none; checked < n_vocab by the loader */
  int fim[MKC_FIM_COUNT];           /* the file's fill-in-the-middle tokens (-1: none) */
  int add_bos;                      /* 0, 1, or -1: the mode's default */
  int add_eos;                      /* 0, 1, or -1 (0): llama.cpp appends EOS to a text */
  int end_token;        /* with add_eos, the token appended (-1: eos): TemplateProcessing's last */
  int add_space_prefix; /* SentencePiece: 0, 1, or -1 (1) */
  int ignore_merges;    /* a pre-token that is a token is kept whole (Llama-3) */
  /* Byte-level BPE: a character that is no token becomes unk (HF with
   * model.unk_token; fuse_unk: one for a run of them in a word); else it
   * is dropped (llama.cpp, HF without unk_token). */
  int unk_chars, fuse_unk;
} mkc_tok_spec;

struct mkc_tokenizer {
  char *source;
  int mode, pre;
  char kind[32];
  int n_vocab;
  char *text;          /* every token's text, back to back */
  uint32_t *text_off;  /* [n_vocab + 1]: token i is text[text_off[i] .. text_off[i+1]) */
  float *score;        /* [n_vocab] */
  uint8_t *type;       /* [n_vocab] enum mkc_tok_type */
  uint8_t *eog;        /* [n_vocab] end of generation */
  char *piece;         /* what each token prints, back to back */
  uint32_t *piece_off; /* [n_vocab + 1] */
  int32_t *slots;      /* open addressing over text: token ids, -1 empty */
  uint32_t slot_mask;
  uint64_t *merge_key; /* open addressing over (left id, right id); 0 empty */
  int32_t *merge_rank, *merge_id;
  uint32_t merge_mask;
  int n_merges;
  int bos, eos, unk, pad, eot, eom;
  int fim[MKC_FIM_COUNT]; /* the file's, else found by their texts (fim.c); -1 none */
  int add_bos, add_space_prefix, ignore_merges;
  int eos_after;           /* the token a text ends with (embeddings), or -1 */
  int unk_chars, fuse_unk; /* as in mkc_tok_spec */
  int byte_token[256];     /* SPM: <0xXX>; BPE: the token of the byte's character; -1 none */
  /* Control, unknown and user-defined tokens by first byte, longest first:
   * special[special_first[b] .. special_first[b+1]) start with byte b. */
  int32_t *special;
  uint32_t special_first[257];
};

mkc_tokenizer *mkc_tok_build(const mkc_tok_spec *spec);
/* The FIM tokens the file did not name, found by the texts llama.cpp knows them by (fim.c). */
void mkc_tok_find_fim(mkc_tokenizer *t);
/* The id of the token with text s[0..n) of any type, or -1. */
int mkc_tok_lookup(const mkc_tokenizer *t, const char *s, size_t n);
/* The same, only for the types plain text may become (normal, undefined,
 * user-defined). */
int mkc_tok_text_id(const mkc_tokenizer *t, const char *s, size_t n);
/* Rank and result of merging (left, right), or -1. */
int mkc_tok_merge_rank(const mkc_tokenizer *t, int left, int right, int *result);
static inline const char *mkc_tok_text(const mkc_tokenizer *t, int id, size_t *n) {
  *n = t->text_off[id + 1] - t->text_off[id];
  return t->text + t->text_off[id];
}

/* A growing list of ids: encode's output. */
typedef struct mkc_tok_ids {
  int *v;
  size_t n, cap;
} mkc_tok_ids;
/* Functions on the encode path return 0, -1 after a message, or
 * MKC_TOK_NOMEM (no message yet: encode prints it). */
#define MKC_TOK_NOMEM (-2)
int mkc_tok_push(mkc_tok_ids *out, int id);

/* The merge loop over one word: n symbols, each a span of text, linked in
 * order; pairs merge best first until none can. A symbol merged into its
 * left neighbour is left with len 0. */
typedef struct mkc_tok_sym {
  uint32_t start, len; /* bytes of the word's text */
  int32_t id;          /* the token, or -1 when the span is none */
  int32_t prev, next;  /* neighbours, -1 at the ends */
} mkc_tok_sym;

/* Scratch reused across the words of one encode call. */
typedef struct mkc_tok_work {
  mkc_tok_sym *syms;
  size_t cap_syms;
  void *heap;
  size_t cap_heap;
  char *buf; /* a word's transformed text */
  size_t cap_buf;
} mkc_tok_work;
void mkc_tok_work_free(mkc_tok_work *w);
/* Grows *p (elements of elem bytes) to hold need; 0, or -1 when out of memory. */
int mkc_tok_reserve(void **p, size_t *cap, size_t need, size_t elem);

/* Merges syms[0..n) (linked 0 -> n-1) over text. By score (SentencePiece:
 * the pair whose joined text is the highest-scoring token) or by rank (the
 * merges list). Afterwards follow next from syms[0]. 0 or MKC_TOK_NOMEM. */
int mkc_tok_merge(const mkc_tokenizer *t, mkc_tok_work *w, const char *text, int n, int by_score);

/* One run of plain text between special tokens, appended to out.
 * SentencePiece adds its space before every run (as llama.cpp does). */
int mkc_tok_encode_spm(const mkc_tokenizer *t, mkc_tok_work *w, const char *text, size_t n,
                       mkc_tok_ids *out);
int mkc_tok_encode_bpe(const mkc_tokenizer *t, mkc_tok_work *w, const char *text, size_t n,
                       mkc_tok_ids *out);

/* Splits text[0..n) into pre-tokens as the pattern of pre does and calls
 * word for each, in order. Returns 0, the first nonzero word() result, or
 * MKC_TOK_NOMEM. */
int mkc_pretokenize(int pre, const char *text, size_t n,
                    int (*word)(void *ctx, const char *s, size_t n), void *ctx);

/* Fills t->piece and t->piece_off from the token texts; 0, or -1 when out
 * of memory. */
int mkc_tok_build_pieces(mkc_tokenizer *t);
/* Byte-level BPE: the character standing for byte b (GPT-2's printable map). */
uint32_t mkc_bpe_byte_char(int b);
/* The byte a character stands for, or -1. */
int mkc_bpe_char_byte(int32_t cp);

/* The HF loader on tokenizer.json text already read (config, the text of
 * tokenizer_config.json, may be NULL): for tests and fuzzing. Messages name
 * DIR/tokenizer.json and DIR/tokenizer_config.json. */
mkc_tokenizer *mkc_tok_from_json(const char *json, size_t n, const char *config, size_t config_n,
                                 const char *dir);

#endif
