/* `mkc inspect --diff a.cu b.cu`: the two kernels stage by stage. Stages are
 * matched by kind and graph nodes (longest common subsequence), so a stage
 * added or removed shows as such and the rest still pair up; a matched pair
 * is "changed" when its calls, work, traffic, smem or sync differ. */
#include "inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ARENA[MKC_ARENA_COUNT] = {"weights", "scratch", "kv"};

static void stage_key(const mkc_stage *s, char *out, size_t size) {
  int n = snprintf(out, size, "%s", s->meta.kind);
  for (int k = 0; k < s->meta.n_nodes && n > 0 && (size_t)n < size; k++)
    n += snprintf(out + n, size - (size_t)n, "|%s", s->meta.labels[k]);
}

static void arg_text(const mkc_arg *a, char *out, size_t size) {
  switch (a->kind) {
  case MKC_ARG_INT:
    snprintf(out, size, "%lld", a->value);
    break;
  case MKC_ARG_FLOAT:
    snprintf(out, size, "%.9g", a->fvalue);
    break;
  case MKC_ARG_NULL:
    snprintf(out, size, "null");
    break;
  case MKC_ARG_BUFFER:
    snprintf(out, size, "%s + %lld", a->base, a->value);
    break;
  case MKC_ARG_NAME:
    snprintf(out, size, "%s", a->base);
    break;
  default:
    snprintf(out, size, "(expression)");
    break;
  }
}

static void qty_text(mkc_qty q, char *out, size_t size) {
  int n = 0;
  const long long v[4] = {q.c, q.t, q.ctx, q.att};
  static const char *const unit[4] = {"", "*t", "*ctx", "*att"};
  out[0] = 0;
  for (int i = 0; i < 4; i++)
    if (v[i]) n += snprintf(out + n, size - (size_t)n, "%s%lld%s", n ? "+" : "", v[i], unit[i]);
  if (!n) snprintf(out, size, "0");
}

/* Appends "; what" to the change list of a stage pair. */
static void note(char *buf, size_t size, const char *what) {
  size_t n = strlen(buf);
  if (n + 3 < size) snprintf(buf + n, size - n, "%s%s", n ? "; " : "", what);
}

/* Items, flops, sync and smem of two matched stages. */
static void compare_work(const mkc_stage *x, const mkc_stage *y, char *out, size_t size) {
  char a[96], b[96], msg[400];
  const mkc_stage_meta *m = &x->meta, *n = &y->meta;
  if (!(m->items.c == n->items.c && m->items.t == n->items.t) || strcmp(m->unit, n->unit) != 0) {
    qty_text(m->items, a, sizeof a);
    qty_text(n->items, b, sizeof b);
    snprintf(msg, sizeof msg, "items %s -> %s (one %s each)", a, b, n->unit);
    note(out, size, msg);
  }
  if (memcmp(&m->flops, &n->flops, sizeof m->flops) != 0) {
    qty_text(m->flops, a, sizeof a);
    qty_text(n->flops, b, sizeof b);
    snprintf(msg, sizeof msg, "flops %s -> %s", a, b);
    note(out, size, msg);
  }
  if (strcmp(x->ast.sync, y->ast.sync) != 0) {
    snprintf(msg, sizeof msg, "sync %s -> %s", x->ast.sync, y->ast.sync);
    note(out, size, msg);
  }
  if (m->smem_bytes != n->smem_bytes) {
    snprintf(msg, sizeof msg, "smem %ld B -> %ld B", m->smem_bytes, n->smem_bytes);
    note(out, size, msg);
  }
  for (int k = 0; k < m->n_smem && k < n->n_smem; k++)
    if (m->smem[k].offset != n->smem[k].offset || m->smem[k].bytes != n->smem[k].bytes) {
      snprintf(msg, sizeof msg, "smem %s %ld+%ld -> %ld+%ld", m->smem[k].name, m->smem[k].offset,
               m->smem[k].bytes, n->smem[k].offset, n->smem[k].bytes);
      note(out, size, msg);
    }
}

/* Global ranges, paired by direction and name. */
static void compare_regions(const mkc_stage_meta *m, const mkc_stage_meta *n, char *out,
                            size_t size) {
  char a[96], b[96], msg[400];
  for (int k = 0; k < m->n_regions; k++) {
    const mkc_region *g = &m->regions[k], *h = NULL;
    for (int j = 0; j < n->n_regions; j++)
      if (n->regions[j].write == g->write && strcmp(n->regions[j].name, g->name) == 0)
        h = &n->regions[j];
    if (!h) {
      snprintf(msg, sizeof msg, "no longer %s %s (%s)", g->write ? "writes" : "reads",
               ARENA[g->arena], g->name);
      note(out, size, msg);
      continue;
    }
    if (g->arena != h->arena || g->offset != h->offset) {
      snprintf(msg, sizeof msg, "%s %s moved %s+%lld -> %s+%lld", g->write ? "write" : "read",
               g->name, ARENA[g->arena], g->offset, ARENA[h->arena], h->offset);
      note(out, size, msg);
    }
    if (memcmp(&g->bytes, &h->bytes, sizeof g->bytes) != 0) {
      qty_text(g->bytes, a, sizeof a);
      qty_text(h->bytes, b, sizeof b);
      snprintf(msg, sizeof msg, "%s %s: %s -> %s bytes", g->write ? "write" : "read", g->name, a,
               b);
      note(out, size, msg);
    }
  }
  for (int j = 0; j < n->n_regions; j++) {
    int found = 0;
    for (int k = 0; k < m->n_regions; k++)
      found |= n->regions[j].write == m->regions[k].write &&
               strcmp(n->regions[j].name, m->regions[k].name) == 0;
    if (!found) {
      snprintf(msg, sizeof msg, "now %s %s (%s)", n->regions[j].write ? "writes" : "reads",
               ARENA[n->regions[j].arena], n->regions[j].name);
      note(out, size, msg);
    }
  }
}

/* The calls themselves: names and every argument. */
static void compare_calls(const mkc_stage *x, const mkc_stage *y, char *out, size_t size) {
  char a[96], b[96], msg[400];
  if (x->ast.n_calls != y->ast.n_calls) {
    snprintf(msg, sizeof msg, "%d calls -> %d", x->ast.n_calls, y->ast.n_calls);
    note(out, size, msg);
  }
  for (int c = 0; c < x->ast.n_calls && c < y->ast.n_calls; c++) {
    const mkc_call *p = &x->ast.calls[c], *q = &y->ast.calls[c];
    if (strcmp(p->name, q->name) != 0) {
      snprintf(msg, sizeof msg, "call %s -> %s", p->name, q->name);
      note(out, size, msg);
      continue;
    }
    for (int k = 0; k < p->n_args || k < q->n_args; k++) {
      static const mkc_arg none = {0};
      arg_text(k < p->n_args ? &p->args[k] : &none, a, sizeof a);
      arg_text(k < q->n_args ? &q->args[k] : &none, b, sizeof b);
      if (strcmp(a, b) != 0) {
        snprintf(msg, sizeof msg, "%s argument %d: %s -> %s", p->name, k + 1, a, b);
        note(out, size, msg);
      }
    }
  }
}

/* The differences between two matched stages, as text; empty when none. */
static void compare(const mkc_stage *x, const mkc_stage *y, char *out, size_t size) {
  out[0] = 0;
  compare_work(x, y, out, size);
  compare_regions(&x->meta, &y->meta, out, size);
  compare_calls(x, y, out, size);
}

static int header_diff(const mkc_inspect_report *a, const mkc_inspect_report *b, FILE *f) {
  const mkc_inspect_header *x = &a->header, *y = &b->header;
  int n = 0;
#define FIELD(name, fmt, what)                                                                     \
  if (x->name != y->name) {                                                                        \
    fprintf(f, "  %-26s " fmt " -> " fmt "\n", what, x->name, y->name);                            \
    n++;                                                                                           \
  }
  FIELD(draft_max, "%d", "draft_max");
  FIELD(t_max, "%d", "T max (tokens per step)");
  FIELD(max_ctx, "%d", "max_ctx");
  FIELD(threads, "%d", "threads per block");
  FIELD(n_stages, "%d", "stages");
  FIELD(n_grid_barriers, "%d", "grid barriers");
  FIELD(n_flow_waits, "%d", "flow waits");
  FIELD(scratch_floats, "%lld", "scratch floats");
  FIELD(kv_elems, "%lld", "KV elements");
  FIELD(weight_elems, "%lld", "weight elements");
  FIELD(smem_bytes, "%lld", "smem bytes per block");
#undef FIELD
  if (strcmp(x->kv_dtype, y->kv_dtype) != 0) {
    fprintf(f, "  %-26s %s -> %s\n", "KV type", x->kv_dtype, y->kv_dtype);
    n++;
  }
  if (strcmp(x->graph, y->graph) != 0 || strcmp(x->preset, y->preset) != 0) {
    fprintf(f, "  %-26s %s %s -> %s %s\n", "graph", x->graph, x->preset, y->graph, y->preset);
    n++;
  }
  const mkc_resources *p = &a->res, *q = &b->res;
  if (p->available && q->available) { /* deliberately alike FIELD, with the change's sign */
#define RES(name, fmt, what)                                                                       \
  if (p->name != q->name) {                                                                        \
    fprintf(f, "  %-26s " fmt " -> " fmt " (%+ld)\n", what, p->name, q->name,                      \
            (long)q->name - (long)p->name);                                                        \
    n++;                                                                                           \
  }
    RES(registers, "%d", "registers");
    RES(spill_store_bytes, "%ld", "spill stores (bytes)");
    RES(spill_load_bytes, "%ld", "spill loads (bytes)");
    RES(stack_bytes, "%ld", "stack (bytes)");
    RES(smem_static_bytes, "%ld", "static smem (bytes)");
    RES(barriers, "%d", "barriers");
#undef RES
  } else {
    fprintf(f, "  resources not compared: %s\n", !p->available ? p->why : q->why);
  }
  return n;
}

int mkc_inspect_diff(const mkc_inspect_report *a, const mkc_inspect_report *b, FILE *f) {
  int na = a->n_stages, nb = b->n_stages;
  char ka[2048], kb[2048];
  /* LCS table over stage keys */
  int *lcs = calloc((size_t)(na + 1) * (size_t)(nb + 1), sizeof *lcs);
  char **keys_b = calloc((size_t)nb + 1, sizeof *keys_b);
  if (!lcs || !keys_b) {
    free(lcs);
    free(keys_b);
    return -1;
  }
  for (int j = 0; j < nb; j++) {
    stage_key(&b->stages[j], kb, sizeof kb);
    keys_b[j] = strdup(kb);
  }
#define L(i, j) lcs[(size_t)(i) * (size_t)(nb + 1) + (size_t)(j)]
  for (int i = na - 1; i >= 0; i--) {
    stage_key(&a->stages[i], ka, sizeof ka);
    for (int j = nb - 1; j >= 0; j--)
      L(i, j) = strcmp(ka, keys_b[j]) == 0
                    ? L(i + 1, j + 1) + 1
                    : (L(i + 1, j) > L(i, j + 1) ? L(i + 1, j) : L(i, j + 1));
  }
  fprintf(f, "--- %s (%s %s)\n+++ %s (%s %s)\n", a->path, a->header.graph, a->header.preset,
          b->path, b->header.graph, b->header.preset);
  int changes = header_diff(a, b, f);
  int i = 0, j = 0;
  char what[4096];
  while (i < na || j < nb) {
    if (i < na && j < nb) stage_key(&a->stages[i], ka, sizeof ka);
    if (i < na && j < nb && strcmp(ka, keys_b[j]) == 0) {
      compare(&a->stages[i], &b->stages[j], what, sizeof what);
      if (what[0]) {
        fprintf(f, "~ stage %d -> %d %s: %s\n", i + 1, j + 1, a->stages[i].meta.kind, what);
        changes++;
      }
      i++, j++;
    } else if (j < nb && (i == na || L(i, j + 1) >= L(i + 1, j))) {
      fprintf(f, "+ stage %d %s (%s)\n", j + 1, b->stages[j].meta.kind,
              b->stages[j].meta.n_nodes ? b->stages[j].meta.labels[0] : "no graph node");
      changes++, j++;
    } else {
      fprintf(f, "- stage %d %s (%s)\n", i + 1, a->stages[i].meta.kind,
              a->stages[i].meta.n_nodes ? a->stages[i].meta.labels[0] : "no graph node");
      changes++, i++;
    }
  }
#undef L
  if (!changes) fprintf(f, "no change: %d stages, same work, traffic, smem, syncs and calls\n", na);
  for (int k = 0; k < nb; k++) free(keys_b[k]);
  free(keys_b);
  free(lcs);
  return changes;
}
