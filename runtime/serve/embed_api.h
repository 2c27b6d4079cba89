/* The embedding requests mkc serve takes, read from their JSON bodies:
 *  - ollama's POST /api/embed: {"input": text or [texts], "truncate" (true),
 *    "dimensions"}; answers {"embeddings": [[...]]}, each of norm 1;
 *  - ollama's older POST /api/embeddings: {"prompt": text}; answers
 *    {"embedding": [...]}, not normalized;
 *  - OpenAI's POST /v1/embeddings: {"input": text, [texts], [ids] or [[ids]],
 *    "encoding_format" ("float" or "base64"), "dimensions"}; answers
 *    {"object": "list", "data": [{"embedding", "index"}], "usage"}, norm 1.
 * Other fields (model, options, keep_alive, user) are ignored, as the clients
 * send them. */
#ifndef MKC_EMBED_API_H
#define MKC_EMBED_API_H

#include <stddef.h>

enum mkc_embed_kind { MKC_EMBED_OLLAMA, MKC_EMBED_LEGACY, MKC_EMBED_OPENAI };

typedef struct mkc_embed_req {
  int kind;           /* enum mkc_embed_kind */
  int n;              /* inputs (0: ollama's empty input, answered with no vectors) */
  const char **texts; /* [n]: each input's text (into the JSON), or NULL for ids */
  int **ids;          /* [n]: OpenAI's token-id inputs (malloc'd), or NULL */
  int *n_ids;         /* [n] */
  int truncate;       /* a text past the context: cut (ollama's default) or refused */
  int dimensions;     /* 0: every value; else the first `dimensions`, normalized again */
  int base64;         /* OpenAI: each vector as base64 of little-endian float32 */
  void *root;         /* the cJSON tree */
} mkc_embed_req;

/* 0, or -1 with why filled (a 400 answer's message); *r is then freed. */
int mkc_embed_parse(const char *body, size_t n, int kind, mkc_embed_req *r, char *why, size_t cap);
void mkc_embed_req_free(mkc_embed_req *r);

/* v[0..n) as base64 of its little-endian float32 bytes (OpenAI's
 * encoding_format "base64"), malloc'd; NULL when out of memory. */
char *mkc_embed_base64(const float *v, int n);

#endif
