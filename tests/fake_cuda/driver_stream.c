/* The fake driver's streams: work queued until a synchronization, captured
 * into graphs, replayed; cooperative launches run on the host's CPU backend. */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* Operations: queued on streams, recorded in graphs, run in order. */

int list_push(op_list *l, const op *o) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 8;
    op *ops = realloc(l->ops, (size_t)cap * sizeof *ops);
    if (!ops) return -1;
    l->ops = ops;
    l->cap = cap;
  }
  l->ops[l->n] = *o;
  if (o->data) {
    if (!(l->ops[l->n].data = malloc(o->bytes))) return -1;
    memcpy(l->ops[l->n].data, o->data, o->bytes);
  }
  l->n++;
  return 0;
}

void list_clear(op_list *l) {
  for (int i = 0; i < l->n; i++) free(l->ops[i].data);
  free(l->ops);
  memset(l, 0, sizeof *l);
}

int list_copy(op_list *to, const op_list *from) {
  for (int i = 0; i < from->n; i++)
    if (list_push(to, &from->ops[i]) != 0) return -1;
  return 0;
}

static CUresult run_op(const op *o) {
  switch (o->kind) {
  case OP_HTOD: {
    unsigned char *d = device_bytes("cuMemcpyHtoDAsync_v2 (run)", o->dev, o->bytes);
    if (!d) return E_ILLEGAL_ADDRESS;
    memcpy(d, o->data, o->bytes);
    return OK;
  }
  case OP_DTOH: {
    unsigned char *d = device_bytes("cuMemcpyDtoHAsync_v2 (run)", o->dev, o->bytes);
    if (!d) return E_ILLEGAL_ADDRESS;
    memcpy(o->host, d, o->bytes);
    return OK;
  }
  case OP_LAUNCH: {
    void *p[N_ARGS];
    for (int i = 0; i < N_ARGS; i++) {
      alloc *a = find_alloc(o->args[i], 0);
      if (!a) {
        misuse("mkc_step (run)", "argument %d (0x%llx) is not device memory", i, o->args[i]);
        return E_ILLEGAL_ADDRESS;
      }
      p[i] = a->host + (o->args[i] - a->dev);
    }
    if (!o->func->mod->kernel) return E_INVALID_HANDLE;
    int r = host.launch(o->func->mod->kernel, (int)o->grid, (int)o->block, o->smem, p[0], p[1],
                        p[2], p[3]);
    return r == 0 ? OK : E_LAUNCH_FAILED;
  }
  }
  return E_UNKNOWN;
}

CUresult drain(struct CUstream_st *s) {
  CUresult r = OK;
  for (int i = 0; i < s->pending.n && r == OK; i++) r = run_op(&s->pending.ops[i]);
  list_clear(&s->pending);
  return r;
}

/* Queues o on s, or records it when s is capturing. */
CUresult enqueue(const char *call, struct CUstream_st *s, const op *o) {
  if (!s) {
    misuse(call, "the legacy default stream: mkc works on its own stream");
    return E_INVALID_HANDLE;
  }
  CUresult r = need_live(call, s, K_STREAM);
  if (r) return r;
  if (s->capturing) {
    if (o->kind != OP_LAUNCH) {
      /* Captured copies of pageable host memory are refused by the driver. */
      misuse(call, "a copy from or to pageable host memory while the stream is capturing");
      s->invalidated = 1;
      return E_CAPTURE_UNSUPPORTED;
    }
    return list_push(&s->graph->ops, o) == 0 ? OK : E_OUT_OF_MEMORY;
  }
  return list_push(&s->pending, o) == 0 ? OK : E_OUT_OF_MEMORY;
}

/* Synchronous calls: refused while a stream captures (mkc captures in
 * thread-local mode), and a race with queued work on the same memory. */
CUresult sync_call(const char *call, CUdeviceptr dev) {
  alloc *a = find_alloc(dev, 0);
  for (int i = 0; i < drv.n_live; i++) {
    if (drv.live[i].kind != K_STREAM) continue;
    struct CUstream_st *s = drv.live[i].p;
    if (s->capturing) {
      misuse(call, "a synchronous call while a stream is capturing");
      s->invalidated = 1;
      return E_CAPTURE_UNSUPPORTED;
    }
    for (int j = 0; a && j < s->pending.n; j++) {
      const op *o = &s->pending.ops[j];
      int touches = o->kind != OP_LAUNCH && find_alloc(o->dev, 0) == a;
      for (int k = 0; o->kind == OP_LAUNCH && k < N_ARGS; k++)
        touches |= find_alloc(o->args[k], 0) == a;
      if (touches) {
        misuse(call,
               "touches memory that unsynchronized work on stream %p uses: on a GPU the two "
               "race (the legacy stream does not wait for a non-blocking stream)",
               (void *)s);
        return E_ILLEGAL_STATE;
      }
    }
  }
  return OK;
}

API CUresult cuStreamCreate(struct CUstream_st **s, unsigned flags) {
  ENTER("cuStreamCreate", " %u", flags);
  CUresult r = need_ctx("cuStreamCreate");
  if (r) return r;
  if (flags > 1) return E_INVALID_VALUE;
  struct CUstream_st *st = calloc(1, sizeof *st);
  if (!st || live_add(st, K_STREAM) != 0) {
    free(st);
    return E_OUT_OF_MEMORY;
  }
  *s = st;
  return OK;
}

API CUresult cuStreamDestroy_v2(struct CUstream_st *s) {
  ENTER("cuStreamDestroy_v2", );
  CUresult r = need_ctx("cuStreamDestroy_v2");
  if (r || (r = need_live("cuStreamDestroy_v2", s, K_STREAM))) return r;
  if (s->capturing) {
    misuse("cuStreamDestroy_v2", "the stream is capturing");
    return E_ILLEGAL_STATE;
  }
  drain(s); /* queued work still completes */
  live_remove(live_find(s, K_STREAM));
  free(s);
  return OK;
}

API CUresult cuStreamSynchronize(struct CUstream_st *s) {
  ENTER("cuStreamSynchronize", );
  CUresult r = need_ctx("cuStreamSynchronize");
  if (r || (r = need_live("cuStreamSynchronize", s, K_STREAM))) return r;
  if (s->capturing) {
    misuse("cuStreamSynchronize", "the stream is capturing");
    s->invalidated = 1;
    return E_CAPTURE_UNSUPPORTED;
  }
  return drain(s);
}

API CUresult cuLaunchCooperativeKernel(struct CUfunc_st *f, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                       struct CUstream_st *s, void **params) {
  ENTER("cuLaunchCooperativeKernel", " %u %u %u", gx, bx, smem);
  CUresult r = need_ctx("cuLaunchCooperativeKernel");
  if (r || (r = need_func("cuLaunchCooperativeKernel", f))) return r;
  if (gy != 1 || gz != 1 || by != 1 || bz != 1 || gx < 1 || bx < 1 || bx > 1024 || !params) {
    misuse("cuLaunchCooperativeKernel", "mkc_step takes a 1-D grid of 1-D blocks and 4 params");
    return E_INVALID_VALUE;
  }
  if ((int)smem > dynamic_smem_limit(f)) {
    misuse("cuLaunchCooperativeKernel", "%u bytes of dynamic shared memory; the function allows %d",
           smem, dynamic_smem_limit(f));
    return E_INVALID_VALUE;
  }
  if (env_int("MKC_FAKE_CUDA_NO_COOP", 0)) return E_NOT_SUPPORTED;
  if (gx > (unsigned)(blocks_per_sm(f, (int)bx, smem) * env_int("MKC_FAKE_CUDA_SMS", 2)))
    return E_COOPERATIVE_LAUNCH_TOO_LARGE;
  if (s && live_find(s, K_STREAM) >= 0 && s->capturing &&
      env_int("MKC_FAKE_CUDA_NO_COOP_CAPTURE", 0)) {
    s->invalidated = 1;
    return E_CAPTURE_UNSUPPORTED;
  }
  /* The driver copies the arguments at the call; so does the fake. */
  op o = {.kind = OP_LAUNCH, .func = f, .grid = gx, .block = bx, .smem = smem};
  for (int i = 0; i < N_ARGS; i++) {
    if (!params[i]) return E_INVALID_VALUE;
    memcpy(&o.args[i], params[i], sizeof o.args[i]);
  }
  return enqueue("cuLaunchCooperativeKernel", s, &o);
}

API CUresult cuStreamBeginCapture_v2(struct CUstream_st *s, int mode) {
  ENTER("cuStreamBeginCapture_v2", " %d", mode);
  CUresult r = need_ctx("cuStreamBeginCapture_v2");
  if (r || (r = need_live("cuStreamBeginCapture_v2", s, K_STREAM))) return r;
  if (mode < 0 || mode > 2) return E_INVALID_VALUE;
  if (s->capturing) return E_ILLEGAL_STATE;
  if (s->pending.n) {
    /* Allowed by the driver, but nothing mkc means to do. */
    misuse("cuStreamBeginCapture_v2", "the stream has unsynchronized work");
  }
  struct CUgraph_st *g = calloc(1, sizeof *g);
  if (!g) return E_OUT_OF_MEMORY;
  s->capturing = 1;
  s->invalidated = 0;
  s->graph = g;
  return OK;
}

/* Ends the capture whatever it returns, as the driver does; an injected
 * failure too. */
API CUresult cuStreamEndCapture(struct CUstream_st *s, struct CUgraph_st **graph) {
  fake_trace("cuStreamEndCapture");
  int fail = fake_should_fail("MKC_FAKE_CUDA_FAIL_AT", "cuStreamEndCapture");
  CUresult r = need_ctx("cuStreamEndCapture");
  if (r || (r = need_live("cuStreamEndCapture", s, K_STREAM))) return r;
  if (!s->capturing) return E_CAPTURE_UNMATCHED;
  struct CUgraph_st *g = s->graph;
  s->capturing = 0;
  s->graph = NULL;
  *graph = NULL;
  if (fail || s->invalidated) {
    list_clear(&g->ops);
    free(g);
    return fail ? E_UNKNOWN : E_CAPTURE_INVALIDATED;
  }
  if (live_add(g, K_GRAPH) != 0) {
    list_clear(&g->ops);
    free(g);
    return E_OUT_OF_MEMORY;
  }
  *graph = g;
  return OK;
}

API CUresult cuGraphInstantiateWithFlags(struct CUgraphExec_st **exec, struct CUgraph_st *g,
                                         unsigned long long flags) {
  ENTER("cuGraphInstantiateWithFlags", " %llu", flags);
  CUresult r = need_ctx("cuGraphInstantiateWithFlags");
  if (r || (r = need_live("cuGraphInstantiateWithFlags", g, K_GRAPH))) return r;
  if (flags != 0) return E_INVALID_VALUE;
  struct CUgraphExec_st *e = calloc(1, sizeof *e);
  if (!e || list_copy(&e->ops, &g->ops) != 0 || live_add(e, K_EXEC) != 0) {
    if (e) list_clear(&e->ops);
    free(e);
    return E_OUT_OF_MEMORY;
  }
  *exec = e;
  return OK;
}

API CUresult cuGraphLaunch(struct CUgraphExec_st *e, struct CUstream_st *s) {
  ENTER("cuGraphLaunch", );
  CUresult r = need_ctx("cuGraphLaunch");
  if (r || (r = need_live("cuGraphLaunch", e, K_EXEC))) return r;
  if (s && live_find(s, K_STREAM) >= 0 && s->capturing) {
    misuse("cuGraphLaunch", "launching a graph into a capturing stream");
    return E_CAPTURE_UNSUPPORTED;
  }
  for (int i = 0; i < e->ops.n; i++)
    if ((r = enqueue("cuGraphLaunch", s, &e->ops.ops[i])) != OK) return r;
  return OK;
}

API CUresult cuGraphExecDestroy(struct CUgraphExec_st *e) {
  ENTER("cuGraphExecDestroy", );
  CUresult r = need_ctx("cuGraphExecDestroy");
  if (r || (r = need_live("cuGraphExecDestroy", e, K_EXEC))) return r;
  live_remove(live_find(e, K_EXEC));
  list_clear(&e->ops);
  free(e);
  return OK;
}

API CUresult cuGraphDestroy(struct CUgraph_st *g) {
  ENTER("cuGraphDestroy", );
  CUresult r = need_ctx("cuGraphDestroy");
  if (r || (r = need_live("cuGraphDestroy", g, K_GRAPH))) return r;
  live_remove(live_find(g, K_GRAPH));
  list_clear(&g->ops);
  free(g);
  return OK;
}
