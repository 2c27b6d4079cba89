/* The fake driver's streams: work queued until a synchronization, captured
 * into graphs, replayed; the legacy NULL stream's work queued apart and
 * checked against non-blocking streams' for races; cooperative launches run
 * on the host's CPU backend. */
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
    unsigned char *d = device_bytes(o->call, o->dev, o->bytes);
    if (!d) return E_ILLEGAL_ADDRESS;
    memcpy(d, o->data, o->bytes);
    return OK;
  }
  case OP_DTOH: {
    unsigned char *d = device_bytes(o->call, o->dev, o->bytes);
    if (!d) return E_ILLEGAL_ADDRESS;
    memcpy(o->host, d, o->bytes);
    return OK;
  }
  case OP_DTOD: {
    unsigned char *d = device_bytes(o->call, o->dev, o->bytes),
                  *s = device_bytes(o->call, o->src, o->bytes);
    if (!d || !s) return E_ILLEGAL_ADDRESS;
    memmove(d, s, o->bytes);
    return OK;
  }
  case OP_MEMSET: {
    unsigned char *d = device_bytes(o->call, o->dev, o->bytes);
    if (!d) return E_ILLEGAL_ADDRESS;
    memset(d, o->value, o->bytes);
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

static CUresult run_list(op_list *l) {
  CUresult r = OK;
  for (int i = 0; i < l->n && r == OK; i++) r = run_op(&l->ops[i]);
  list_clear(l);
  return r;
}

CUresult drain(struct CUstream_st *s) { return run_list(&s->pending); }

/* ---- the legacy NULL stream against mkc's non-blocking stream ----
 *
 * As the driver API documents it ("API synchronization behavior", "Stream
 * synchronization behavior"): cuMemsetD8 and cuMemcpyDtoD are asynchronous
 * with respect to the host, and cuMemcpyHtoD from pageable memory returns once
 * the bytes are staged, before the device has written them. All three run on
 * the legacy NULL stream, which waits for blocking streams and which blocking
 * streams wait for, but which is not ordered at all with a stream created
 * CU_STREAM_NON_BLOCKING. So the fake queues them on drv.legacy, run by what
 * waits for the legacy stream (cuCtxSynchronize, cuStreamSynchronize(NULL), a
 * synchronous cuMemcpyDtoH, cuMemFree, the context's end), and reports a race
 * either way round: a legacy call touching memory that queued work of a
 * non-blocking stream uses (sync_call), and work queued on a non-blocking
 * stream touching memory that a queued legacy call uses (enqueue), where one
 * of the two writes. Launches read and write the whole of each argument's
 * allocation; copies and memsets touch their byte ranges. */

typedef struct span {
  CUdeviceptr lo, hi;
  int write;
} span;

/* The device memory o touches, as at most N_ARGS spans; their number. */
static int spans(const op *o, span *out) {
  switch (o->kind) {
  case OP_HTOD:
  case OP_MEMSET:
    out[0] = (span){o->dev, o->dev + o->bytes, 1};
    return 1;
  case OP_DTOH:
    out[0] = (span){o->dev, o->dev + o->bytes, 0};
    return 1;
  case OP_DTOD:
    out[0] = (span){o->dev, o->dev + o->bytes, 1};
    out[1] = (span){o->src, o->src + o->bytes, 0};
    return 2;
  case OP_LAUNCH: {
    int n = 0;
    for (int i = 0; i < N_ARGS; i++) {
      alloc *a = find_alloc(o->args[i], 0);
      if (a) out[n++] = (span){a->dev, a->dev + a->size, 1};
    }
    return n;
  }
  }
  return 0;
}

/* Whether a and b touch a common byte, at least one of them writing it. */
static int conflict(const op *a, const op *b) {
  span sa[N_ARGS], sb[N_ARGS];
  int na = spans(a, sa), nb = spans(b, sb);
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++)
      if ((sa[i].write || sb[j].write) && sa[i].lo < sb[j].hi && sb[j].lo < sa[i].hi) return 1;
  return 0;
}

static const op *first_conflict(const op_list *l, const op *o) {
  for (int i = 0; i < l->n; i++)
    if (conflict(&l->ops[i], o)) return &l->ops[i];
  return NULL;
}

CUresult drain_legacy(void) { return run_list(&drv.legacy); }

/* Queues o on s, or records it when s is capturing. */
CUresult enqueue(const char *call, struct CUstream_st *s, const op *o) {
  if (!s) {
    misuse(call, "the legacy default stream: mkc works on its own stream");
    return E_INVALID_HANDLE;
  }
  CUresult r = need_live(call, s, K_STREAM);
  if (r) return r;
  if (s->capturing) {
    if (o->kind == OP_HTOD || o->kind == OP_DTOH) {
      /* Captured copies of pageable host memory are refused by the driver. */
      misuse(call, "a copy from or to pageable host memory while the stream is capturing");
      s->invalidated = 1;
      return E_CAPTURE_UNSUPPORTED;
    }
    return list_push(&s->graph->ops, o) == 0 ? OK : E_OUT_OF_MEMORY;
  }
  if (!(s->flags & 1)) {
    /* A blocking stream waits for the legacy stream's earlier work. */
    if ((r = drain_legacy())) return r;
  } else {
    const op *l = first_conflict(&drv.legacy, o);
    if (l) {
      misuse(call,
             "touches memory that %s on the legacy NULL stream also uses, with nothing "
             "synchronized since: on a GPU the two race (that call returned before the device "
             "was done, and a non-blocking stream does not wait for the legacy stream)",
             l->call);
      return E_ILLEGAL_STATE;
    }
  }
  return list_push(&s->pending, o) == 0 ? OK : E_OUT_OF_MEMORY;
}

/* Synchronous calls, which run on the legacy NULL stream: refused while a
 * stream captures (mkc captures in thread-local mode), and a race with work
 * queued on a non-blocking stream that touches what o touches (o NULL: a
 * call that touches no memory). Blocking streams' queued work comes first. */
CUresult sync_call(const char *call, const op *o) {
  for (int i = 0; i < drv.n_live; i++) {
    if (drv.live[i].kind != K_STREAM) continue;
    struct CUstream_st *s = drv.live[i].p;
    if (s->capturing) {
      misuse(call, "a synchronous call while a stream is capturing");
      s->invalidated = 1;
      return E_CAPTURE_UNSUPPORTED;
    }
  }
  for (int i = 0; o && i < drv.n_live; i++) {
    if (drv.live[i].kind != K_STREAM) continue;
    struct CUstream_st *s = drv.live[i].p;
    const op *q = first_conflict(&s->pending, o);
    if (!(s->flags & 1)) {
      CUresult r = drain(s);
      if (r) return r;
    } else if (q) {
      misuse(call,
             "touches memory that %s queued on stream %p uses, with nothing synchronized "
             "since: on a GPU the two race (the legacy NULL stream does not wait for a "
             "non-blocking stream)",
             q->call, (void *)s);
      return E_ILLEGAL_STATE;
    }
  }
  return OK;
}

/* A synchronous call that returns before the device is done: o checked,
 * then queued on the legacy stream. */
CUresult legacy_call(const char *call, const op *o) {
  CUresult r = sync_call(call, o);
  if (r) return r;
  return list_push(&drv.legacy, o) == 0 ? OK : E_OUT_OF_MEMORY;
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
  st->flags = flags;
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
  if (r) return r;
  if (!s) { /* the legacy stream */
    if ((r = sync_call("cuStreamSynchronize", NULL))) return r;
    return drain_legacy();
  }
  if ((r = need_live("cuStreamSynchronize", s, K_STREAM))) return r;
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
  op o = {.kind = OP_LAUNCH,
          .call = "cuLaunchCooperativeKernel",
          .func = f,
          .grid = gx,
          .block = bx,
          .smem = smem};
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
