/* mkc serve's embedding endpoints (serve/embed_api.h), one request at a
 * time: each input's tokens (BOS, the text, EOS where the model's file asks)
 * through exec/embed.h on the server's session, or with --parallel as
 * sequences of the slot scheduler, answered in the shape of the API asked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/batch.h"
#include "exec/embed.h"
#include "interrupt.h"
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

/* One input on the slots: its pooled rows' sum so far. */
typedef struct pooled {
  mkc_embedder *e;
  double *acc;
  int fed, n, pooling;
} pooled;

/* The scheduler's call after a step fed n of the input's tokens in slot `slot`. */
static int pool_rows(void *ctx, mkc_slots *p, int slot, int n) {
  pooled *a = ctx;
  for (int t = 0; t < n; t++, a->fed++)
    if (mkc_embed_pools(a->pooling, a->fed, a->n)) {
      if (mkc_slots_hidden(p, slot, t, a->e->row) != 0) return -1;
      mkc_embed_add(a->e, a->e->row, a->acc);
    }
  return 0;
}

static int running(const mkc_batch_seq *q, int n) {
  for (int i = 0; i < n; i++)
    if (q[i].stopped == MKC_BATCH_RUNNING) return 1;
  return 0;
}

/* --parallel: each input a sequence of the slot scheduler beside the requests decoding there,
 * whose steps go on meanwhile (new connections wait, as behind any answer given whole); the
 * pooled sums into acc[n][dim]. 0, or an HTTP status with why filled; *stop after a backend
 * failure (the server stops, as it does when a slot step fails). */
static int on_slots(mkc_server *sv, mkc_embedder *e, int **ids, const int *ns, int n, int pooling,
                    double *acc, int *stop, char *why, size_t cap) {
  mkc_batch_seq *q = calloc((size_t)n, sizeof *q);
  pooled *a = calloc((size_t)n, sizeof *a);
  int status = q && a ? 0 : 500, added = 0;
  if (status) snprintf(why, cap, "out of memory");
  for (int i = 0; !status && i < n; i++) {
    a[i] = (pooled){e, acc + (size_t)i * e->dim, 0, ns[i], pooling};
    q[i] = (mkc_batch_seq){.prompt = ids[i],
                           .n_prompt = ns[i],
                           .opt = {.top_p = 1, .repeat_penalty = 1}, /* greedy: never sampled */
                           .on_hidden = pool_rows,
                           .ctx = &a[i]};
    if (mkc_sched_add(sv->sched, &q[i]) != 0) {
      snprintf(why, cap, "out of memory");
      status = 500;
    } else {
      added++;
    }
  }
  while (!status && running(q, n)) {
    if (mkc_interrupted) {
      snprintf(why, cap, "the server is stopping (Ctrl-C)");
      status = 503;
    } else if (mkc_serve_slots_step(sv) != 0) {
      snprintf(why, cap, "the slots' step failed (the server's log says why); the server stops");
      status = 500;
      *stop = 1;
    }
  }
  for (int i = 0; i < added; i++) {
    if (!status && q[i].stopped == MKC_BATCH_FAILED) {
      snprintf(why, cap,
               "input %d: its hidden states could not be read (the server's log says why)", i);
      status = 500;
    }
    mkc_sched_cancel(sv->sched, &q[i]); /* its slot, or its place in line, goes now */
  }
  mkc_batch_free(q, added);
  free(q);
  free(a);
  return status;
}

int mkc_serve_embed(mkc_server *sv, int fd, const mkc_http_req *req, int kind) {
  char why[400];
  mkc_embed_req r;
  if (mkc_embed_parse(req->body, req->body_len, kind, &r, why, sizeof why) != 0) {
    refuse(fd, kind, 400, why);
    return MKC_SERVE_DONE;
  }
  int status = 0, stop = 0, dim = sv->m->g.dim, out_dim = r.dimensions ? r.dimensions : dim;
  int pooling = mkc_pooling_choose(sv->pooling, sv->m->file.desc.pooling);
  mkc_embedder e = {0};
  float *vecs = NULL;
  double *acc = NULL;
  int **ids = NULL, *ns = NULL;
  long tokens = 0;
  double t0 = mkc_seconds();
  if (pooling < 0) {
    snprintf(why, sizeof why, "the model's pooling (rank) gives no embedding (see the log)");
    status = 501;
  } else if (r.dimensions > dim) {
    snprintf(why, sizeof why, "dimensions %d: the model's embeddings have %d", r.dimensions, dim);
    status = 400;
  } else if (!(vecs = malloc(((size_t)r.n + 1) * dim * sizeof *vecs)) ||
             !(ids = calloc((size_t)r.n + 1, sizeof *ids)) ||
             !(ns = calloc((size_t)r.n + 1, sizeof *ns)) ||
             (sv->slots && !(acc = calloc(((size_t)r.n + 1) * dim, sizeof *acc)))) {
    snprintf(why, sizeof why, "out of memory");
    status = 500;
  } else if (r.n && (sv->slots ? mkc_embedder_init(&e, &sv->m->g, &sv->m->w)
                               : mkc_embedder_open(&e, sv->m->s, &sv->m->w)) != 0) {
    snprintf(why, sizeof why, "the model gives no embeddings (the server's log says why)");
    status = 501;
  }
  for (int i = 0; !status && i < r.n; i++) {
    status = input_tokens(sv, &r, i, &ids[i], &ns[i], why, sizeof why);
    tokens += ns[i];
  }
  /* the session is about to forget what it held for the next completion */
  if (!status && r.n && !sv->slots) sv->n_held = sv->n_valid = 0;
  if (!status && sv->slots)
    status = on_slots(sv, &e, ids, ns, r.n, pooling, acc, &stop, why, sizeof why);
  int normalize = kind == MKC_EMBED_LEGACY ? -1 : 2;
  for (int i = 0; !status && i < r.n; i++) {
    /* vector i at i * out_dim: the embedding's dim values run past it into i + 1's place,
     * which the next input then writes (vecs has room for one whole vector past the last) */
    float *v = vecs + (size_t)i * out_dim;
    int norm = r.dimensions ? -1 : normalize;
    if (acc) {
      mkc_embed_end(&e, acc + (size_t)i * dim, ns[i], pooling, norm, v);
    } else if (mkc_embed(&e, ids[i], ns[i], pooling, norm, v) != 0) {
      snprintf(why, sizeof why, "input %d: the embedding failed (the server's log says why)", i);
      status = 500;
    }
    if (!status && r.dimensions) /* the first values, then normalized: as ollama cuts */
      mkc_embd_normalize(v, out_dim, normalize);
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
  for (int i = 0; ids && i < r.n; i++) free(ids[i]);
  free(ids);
  free(ns);
  free(acc);
  free(vecs);
  mkc_embed_req_free(&r);
  return stop ? MKC_SERVE_STOP : MKC_SERVE_DONE;
}
