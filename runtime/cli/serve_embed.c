/* mkc serve's embedding endpoints (serve/embed_api.h) on the server's
 * session, one request at a time: each input's tokens (BOS, the text, EOS
 * where the model's file asks) through exec/embed.h, answered in the shape of
 * the API asked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/embed.h"
#include "serve.h"
#include "serve/embed_api.h"
#include "tokenizer/tokenizer.h"
#include "util/clock.h"

/* An error in the API's own shape. */
static void refuse(int fd, int kind, int status, const char *why) {
  if (kind == MKC_EMBED_OPENAI)
    mkc_respond_error(fd, status, why);
  else
    mkc_respond_ollama_error(fd, status, why);
}

/* Input i's tokens (malloc'd) into *ids, cut to the context when the request
 * allows it. 0, or an HTTP status with why filled. */
static int input_tokens(const mkc_server *sv, const mkc_embed_req *r, int i, int **ids, int *n,
                        char *why, size_t cap) {
  const mkc_graph *g = &sv->m->g;
  const mkc_tokenizer *tok = sv->m->file.tok;
  *ids = NULL, *n = 0;
  if (r->texts[i]) {
    if (!tok) {
      snprintf(why, cap,
               "input %d is text, but %s has no tokenizer: send token ids to /v1/embeddings", i,
               sv->name);
      return 400;
    }
    if ((*n = mkc_tokenizer_encode_framed(tok, r->texts[i], strlen(r->texts[i]), ids)) < 0) {
      snprintf(why, cap, "input %d could not be tokenized (the server's log says why)", i);
      return 400;
    }
  } else {
    *n = r->n_ids[i];
    if (!(*ids = malloc((size_t)*n * sizeof **ids))) {
      snprintf(why, cap, "out of memory");
      return 500;
    }
    memcpy(*ids, r->ids[i], (size_t)*n * sizeof **ids);
    for (int k = 0; k < *n; k++)
      if ((*ids)[k] >= g->vocab) {
        snprintf(why, cap, "input %d: token %d is outside the vocabulary (%d tokens)", i, (*ids)[k],
                 g->vocab);
        return 400;
      }
  }
  if (*n == 0) {
    snprintf(why, cap, "input %d is empty: it has no token to embed", i);
    return 400;
  }
  if (*n > g->max_ctx) {
    if (!r->truncate) {
      snprintf(why, cap, "input %d is %d tokens, but the context holds %d%s", i, *n, g->max_ctx,
               r->kind == MKC_EMBED_OLLAMA ? " (\"truncate\": true cuts it)" : "");
      return 400;
    }
    *n = g->max_ctx; /* ollama's truncate: the text's start */
  }
  return 0;
}

/* v[0..n) as a JSON array, 9 significant digits (a float's round trip). */
static cJSON *vector_json(const float *v, int n) {
  char *s = malloc((size_t)n * 18 + 3), *p = s;
  if (!s) return NULL;
  *p++ = '[';
  for (int i = 0; i < n; i++) p += sprintf(p, i ? ",%.9g" : "%.9g", (double)v[i]);
  *p++ = ']';
  *p = '\0';
  cJSON *o = cJSON_CreateRaw(s);
  free(s);
  return o;
}

/* The answer for the vectors vecs[n][dim] (normalized as the API wants). */
static cJSON *answer(const mkc_server *sv, const mkc_embed_req *r, float *vecs, int dim,
                     long tokens, double seconds) {
  cJSON *o = cJSON_CreateObject();
  if (r->kind == MKC_EMBED_LEGACY) {
    cJSON_AddItemToObject(o, "embedding", r->n ? vector_json(vecs, dim) : cJSON_CreateArray());
    return o;
  }
  if (r->kind == MKC_EMBED_OLLAMA) {
    cJSON_AddStringToObject(o, "model", sv->name);
    cJSON *list = cJSON_AddArrayToObject(o, "embeddings");
    for (int i = 0; i < r->n; i++)
      cJSON_AddItemToArray(list, vector_json(vecs + (size_t)i * dim, dim));
    cJSON_AddNumberToObject(o, "total_duration", (double)(long long)(seconds * 1e9));
    cJSON_AddNumberToObject(o, "load_duration", 0);
    cJSON_AddNumberToObject(o, "prompt_eval_count", (double)tokens);
    return o;
  }
  cJSON_AddStringToObject(o, "object", "list");
  cJSON *data = cJSON_AddArrayToObject(o, "data");
  for (int i = 0; i < r->n; i++) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "object", "embedding");
    cJSON_AddNumberToObject(d, "index", i);
    if (r->base64) {
      char *b = mkc_embed_base64(vecs + (size_t)i * dim, dim);
      cJSON_AddStringToObject(d, "embedding", b ? b : "");
      free(b);
    } else {
      cJSON_AddItemToObject(d, "embedding", vector_json(vecs + (size_t)i * dim, dim));
    }
    cJSON_AddItemToArray(data, d);
  }
  cJSON_AddStringToObject(o, "model", sv->name);
  cJSON *usage = cJSON_AddObjectToObject(o, "usage");
  cJSON_AddNumberToObject(usage, "prompt_tokens", (double)tokens);
  cJSON_AddNumberToObject(usage, "total_tokens", (double)tokens);
  return o;
}

int mkc_serve_embed(mkc_server *sv, int fd, const mkc_http_req *req, int kind) {
  char why[400];
  mkc_embed_req r;
  if (mkc_embed_parse(req->body, req->body_len, kind, &r, why, sizeof why) != 0) {
    refuse(fd, kind, 400, why);
    return MKC_SERVE_DONE;
  }
  int status = 0, dim = sv->m->g.dim, out_dim = r.dimensions ? r.dimensions : dim;
  int pooling = mkc_pooling_choose(sv->pooling, sv->m->file.desc.pooling);
  mkc_embedder e = {0};
  float *vecs = NULL;
  long tokens = 0;
  double t0 = mkc_seconds();
  if (sv->slots) {
    snprintf(why, sizeof why,
             "embeddings run one request at a time: this server decodes on "
             "slots (--parallel), which keep no hidden states");
    status = 501;
  } else if (pooling < 0) {
    snprintf(why, sizeof why, "the model's pooling (rank) gives no embedding (see the log)");
    status = 501;
  } else if (r.dimensions > dim) {
    snprintf(why, sizeof why, "dimensions %d: the model's embeddings have %d", r.dimensions, dim);
    status = 400;
  } else if (!(vecs = malloc(((size_t)r.n + 1) * dim * sizeof *vecs))) {
    snprintf(why, sizeof why, "out of memory");
    status = 500;
  } else if (r.n && mkc_embedder_open(&e, sv->m->s, &sv->m->w) != 0) {
    snprintf(why, sizeof why, "the model gives no embeddings (the server's log says why)");
    status = 501;
  }
  /* the session is about to forget what it held for the next completion */
  if (!status && r.n) sv->n_held = sv->n_valid = 0;
  int normalize = kind == MKC_EMBED_LEGACY ? -1 : 2;
  for (int i = 0; !status && i < r.n; i++) {
    int *ids, n;
    status = input_tokens(sv, &r, i, &ids, &n, why, sizeof why);
    /* vector i at i * out_dim: the embedding's dim values run past it into i + 1's place,
     * which the next input then writes (vecs has room for one whole vector past the last) */
    float *v = vecs + (size_t)i * out_dim;
    if (!status && mkc_embed(&e, ids, n, pooling, r.dimensions ? -1 : normalize, v) != 0) {
      snprintf(why, sizeof why, "input %d: the embedding failed (the server's log says why)", i);
      status = 500;
    }
    if (!status && r.dimensions) /* the first values, then normalized: as ollama cuts */
      mkc_embd_normalize(v, out_dim, normalize);
    tokens += n;
    free(ids);
  }
  mkc_embedder_close(&e);
  double seconds = mkc_seconds() - t0;
  if (status) {
    refuse(fd, kind, status, why);
    fprintf(stderr, "mkc: POST %s: %d: %s\n", req->path, status, why);
  } else {
    mkc_respond_json(fd, 200, answer(sv, &r, vecs, out_dim, tokens, seconds));
    sv->counts.prompt_tokens += tokens;
    sv->counts.prompt_seconds += seconds;
    fprintf(stderr, "mkc: POST %s: %d input%s, %ld tokens, pooling %s, in %.3f s\n", req->path, r.n,
            r.n == 1 ? "" : "s", tokens, mkc_pooling_name(pooling), seconds);
  }
  free(vecs);
  mkc_embed_req_free(&r);
  return MKC_SERVE_DONE;
}
