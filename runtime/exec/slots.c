/* The slots' pool (exec/slots.h): an array of step states, one per slot, that
 * the backend hands the slot kernel as its state. */
#include "slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/stage_timers.h"
#include "exec/prefix.h"
#include "exec/session_impl.h"

struct mkc_slots {
  const mkc_graph *g;
  mkc_backend *b;
  mkc_state *states; /* [g->slots]: the kernel's state array */
  int *tokens;       /* [g->slots][max_ctx]: the tokens each slot's cache holds */
  int *first;        /* [g->slots]: a slot's first row in the last step, -1: it sat out */
  int *ran;          /* [g->slots]: its inputs in the last step */
  /* paged (g->kv_pages > 0): each slot's page table, -1 where no page is
   * held yet, and each page's holders */
  int *table;        /* [g->slots][g->slot_pages] */
  int *refs;         /* [g->kv_pages] */
  int pages_held;    /* pages with a holder */
  mkc_prefix *index; /* the full pages by their tokens, for sharing */
  /* Pages no slot holds that stay indexed (a finished sequence's prefix) until
   * the pool needs them: when their last holder let them go, by a count of
   * releases (0: not kept). The oldest release's pages go first, all of
   * them: a page's holders hold its parent, so its children were let go no
   * later than it was, and go with it or before it. */
  unsigned *released; /* [g->kv_pages] */
  unsigned releases;
  int pages_kept;
};

mkc_slots *mkc_slots_open(enum mkc_backend_kind kind, const mkc_graph *g, const mkc_kernel_src *src,
                          const mkc_weights *w, int blocks) {
  if (g->slots < 1) {
    fprintf(stderr, "mkc: error: the kernel serves one sequence; generate it with --slots B\n");
    return NULL;
  }
  if (kind == MKC_BACKEND_REF) {
    fprintf(stderr, "mkc: error: the ref backend runs no slot kernel (compare each slot with a "
                    "session of its own)\n");
    return NULL;
  }
  mkc_slots *p = calloc(1, sizeof *p);
  size_t n = (size_t)g->slots;
  if (p) {
    p->g = g;
    p->states = calloc(n, sizeof *p->states);
    p->tokens = malloc(n * (size_t)g->max_ctx * sizeof *p->tokens);
    p->first = malloc(n * sizeof *p->first);
    p->ran = calloc(n, sizeof *p->ran);
  }
  int paged = g->kv_pages > 0;
  if (p && paged) {
    p->table = malloc(n * (size_t)g->slot_pages * sizeof *p->table);
    p->refs = calloc((size_t)g->kv_pages, sizeof *p->refs);
    p->index = mkc_prefix_open(g->kv_pages);
    p->released = calloc((size_t)g->kv_pages, sizeof *p->released);
    if (p->table)
      for (size_t i = 0; i < n * (size_t)g->slot_pages; i++) p->table[i] = -1;
  }
  if (!p || !p->states || !p->tokens || !p->first || !p->ran ||
      (paged && (!p->table || !p->refs || !p->index || !p->released))) {
    fprintf(stderr, "mkc: error: out of memory opening %zu slots\n", n);
    mkc_slots_close(p);
    return NULL;
  }
  for (size_t s = 0; s < n; s++) p->first[s] = -1;
  p->b = mkc_session_open_backend(kind, g, src, w, blocks);
  if (!p->b) {
    mkc_slots_close(p);
    return NULL;
  }
  return p;
}

void mkc_slots_close(mkc_slots *p) {
  if (!p) return;
  if (p->b) p->b->ops->close(p->b);
  free(p->states);
  free(p->tokens);
  free(p->first);
  free(p->ran);
  free(p->table);
  free(p->refs);
  mkc_prefix_close(p->index);
  free(p->released);
  free(p);
}

/* A free page (no holder, not kept), the lowest; else the oldest kept ones
 * leave the index and the lowest of them is taken. -1: every page is held. */
static int free_page(mkc_slots *p) {
  const mkc_graph *g = p->g;
  unsigned oldest = 0;
  for (int page = 0; page < g->kv_pages; page++) {
    if (p->refs[page] == 0 && !p->released[page]) return page;
    if (p->released[page] && (!oldest || p->released[page] < oldest)) oldest = p->released[page];
  }
  int first = -1;
  for (int page = 0; oldest && page < g->kv_pages; page++)
    if (p->released[page] == oldest) {
      mkc_prefix_remove(p->index, page);
      p->released[page] = 0;
      p->pages_kept--;
      if (first < 0) first = page;
    }
  return first;
}

/* Paged: the pages slot s's positions [pos, pos + n) need, taken from the
 * pool (free_page). 0, or -1 + message when the pool is out. */
static int hold_pages(mkc_slots *p, int s, int pos, int n) {
  const mkc_graph *g = p->g;
  int *table = p->table + (size_t)s * g->slot_pages;
  for (int i = pos / MKC_KV_PAGE; i <= (pos + n - 1) / MKC_KV_PAGE; i++) {
    if (table[i] >= 0) continue;
    int page = free_page(p);
    if (page < 0) {
      fprintf(stderr,
              "mkc: error: slot %d needs a KV page for position %d, and all %d pages of the pool "
              "are held (--kv-pages)\n",
              s, i * MKC_KV_PAGE, g->kv_pages);
      return -1;
    }
    p->refs[page]++;
    p->pages_held++;
    table[i] = page;
  }
  return 0;
}

/* Slot s's pages from its page `from` on go back to the pool; an indexed one
 * that no slot holds any more is kept (free_page). */
static void release_pages(mkc_slots *p, int s, int from) {
  int *table = p->table + (size_t)s * p->g->slot_pages;
  p->releases++;
  for (int i = from; i < p->g->slot_pages; i++) {
    if (table[i] < 0) continue;
    int page = table[i];
    table[i] = -1;
    if (--p->refs[page] > 0) continue;
    p->pages_held--;
    if (!mkc_prefix_indexed(p->index, page)) continue;
    p->released[page] = p->releases;
    p->pages_kept++;
  }
}

/* n ints into the kernel's float scratch at `offset`, their bits as they are
 * (the page tables, a slot's token history). 0 or -1 + message. */
static int write_ints(mkc_slots *p, size_t offset, const int *v, size_t n) {
  float *rows = malloc(n * sizeof *rows);
  if (!rows) {
    fprintf(stderr, "mkc: error: out of memory writing %zu ints to the kernel\n", n);
    return -1;
  }
  memcpy(rows, v, n * sizeof *v);
  int rc = p->b->ops->write_scratch(p->b, offset, n, rows);
  free(rows);
  return rc;
}

int mkc_slots_count(const mkc_slots *p) { return p->g->slots; }

const mkc_graph *mkc_slots_graph(const mkc_slots *p) { return p->g; }

const char *mkc_slots_describe(const mkc_slots *p) { return p->b->ops->describe(p->b); }

static int bad_slot(const mkc_slots *p, int s) {
  if (s >= 0 && s < p->g->slots) return 0;
  fprintf(stderr, "mkc: error: slot %d: the kernel has slots 0..%d\n", s, p->g->slots - 1);
  return 1;
}

int mkc_slots_set_inputs(mkc_slots *p, int s, const int *inputs, int n, int n_fixed) {
  if (bad_slot(p, s)) return -1;
  const mkc_graph *g = p->g;
  if (n == 0) {
    p->states[s].n_inputs = 0;
    return 0;
  }
  if (n < 0 || n > g->t_chunk || n_fixed < 0 || n_fixed >= n ||
      (n > g->t_max && n_fixed != n - 1)) {
    fprintf(stderr,
            "mkc: error: slot %d: %d inputs (%d known) is no step: up to %d, or a prompt chunk of "
            "up to %d known ones\n",
            s, n, n_fixed, g->t_max, g->t_chunk);
    return -1;
  }
  for (int t = 0; t < n; t++)
    if (inputs[t] < 0 || inputs[t] >= g->vocab) {
      fprintf(stderr, "mkc: error: slot %d: token %d is outside the vocabulary (0..%d)\n", s,
              inputs[t], g->vocab - 1);
      return -1;
    }
  mkc_state *st = &p->states[s];
  st->n_inputs = n;
  st->n_fixed = n_fixed;
  memcpy(st->inputs, inputs, (size_t)n * sizeof *inputs);
  return 0;
}

int mkc_slots_set_sampling(mkc_slots *p, int s, const mkc_sampling *o) {
  if (bad_slot(p, s) || mkc_sampling_check_vocab(o, p->g->vocab) != 0) return -1;
  p->states[s].sampling = *o;
  return p->b->ops->write_sampling ? p->b->ops->write_sampling(p->b, p->states) : 0;
}

int mkc_slots_step(mkc_slots *p) {
  const mkc_graph *g = p->g;
  int rows = 0, active = 0, pos[MKC_SLOTS_CAP];
  for (int s = 0; s < g->slots; s++) {
    mkc_state *st = &p->states[s];
    st->round_max = 0;
    st->draft_layers = st->draft_left = st->draft_n = 0;
    st->flow_count = 0;
    pos[s] = st->pos;
    p->ran[s] = st->n_inputs;
    p->first[s] = st->n_inputs > 0 ? rows : -1;
    rows += st->n_inputs;
    active += st->n_inputs > 0;
  }
  if (active == 0) return 0;
  if (g->kv_pages > 0) {
    int held = 1;
    for (int s = 0; s < g->slots && held; s++)
      held =
          p->ran[s] == 0 || pos[s] + p->ran[s] > g->max_ctx || !hold_pages(p, s, pos[s], p->ran[s]);
    /* the tables where the kernel reads them (-1, a page not held, is read by no step) */
    if (!held ||
        write_ints(p, g->page_table_offset, p->table, (size_t)g->slots * g->slot_pages) != 0) {
      for (int s = 0; s < g->slots; s++) p->states[s].n_inputs = p->ran[s] = 0; /* nothing ran */
      return -1;
    }
  }
  int rc = p->b->ops->step(p->b, p->states);
  for (int s = 0; s < g->slots; s++) {
    mkc_state *st = &p->states[s];
    if (p->ran[s] == 0) continue;
    /* the inputs whose K/V the slot's cache now holds; paged, the pages they filled indexed */
    if (rc == 0 && st->status == MKC_STATUS_OK) {
      int *tokens = p->tokens + (size_t)s * g->max_ctx;
      memcpy(tokens + pos[s], st->inputs, (size_t)(st->pos - pos[s]) * sizeof *st->inputs);
      const int *table = g->kv_pages > 0 ? p->table + (size_t)s * g->slot_pages : NULL;
      for (int i = pos[s] / MKC_KV_PAGE; table && i < st->pos / MKC_KV_PAGE; i++)
        mkc_prefix_add(p->index, i ? table[i - 1] : -1, tokens + i * MKC_KV_PAGE, table[i]);
    }
    st->n_inputs = 0;
    /* paged: pages past pos held for rejected drafts go back to the pool */
    if (g->kv_pages > 0 && rc == 0) release_pages(p, s, (st->pos + MKC_KV_PAGE - 1) / MKC_KV_PAGE);
  }
  return rc == 0 ? 0 : -1;
}

int mkc_slots_result(const mkc_slots *p, int s, mkc_step_result *r) {
  memset(r, 0, sizeof *r);
  if (s < 0 || s >= p->g->slots || p->ran[s] == 0) return 0;
  const mkc_state *st = &p->states[s];
  r->status = st->status;
  if (st->status == MKC_STATUS_OK) {
    r->n_out = st->n_out;
    r->n_accepted = st->n_accepted;
    memcpy(r->out, st->out_tokens, (size_t)st->n_out * sizeof *r->out);
  }
  return 1;
}

const float *mkc_slots_logits(mkc_slots *p, int s, int t) {
  if (s < 0 || s >= p->g->slots || p->ran[s] == 0 || p->states[s].status != MKC_STATUS_OK)
    return NULL;
  /* a chunk past t_max ran alone and kept its last input's logits only, at row 0 */
  if (p->ran[s] > p->g->t_max) return t == p->ran[s] - 1 ? p->b->ops->logits(p->b, 0) : NULL;
  return t >= 0 && t < p->ran[s] ? p->b->ops->logits(p->b, p->first[s] + t) : NULL;
}

int mkc_slots_hidden(mkc_slots *p, int s, int t, float *out) {
  int ran = s >= 0 && s < p->g->slots && p->states[s].status == MKC_STATUS_OK ? p->ran[s] : 0;
  if (t < 0 || t >= ran || !p->b->ops->hidden) {
    fprintf(stderr, "mkc: error: slot %d: no hidden state of input %d (the last step had %d)\n", s,
            t, ran);
    return -1;
  }
  /* the step's rows are the slots' inputs in slot order; a chunk past t_max ran alone: from 0 */
  return p->b->ops->hidden(p->b, -1, p->first[s] + t, out);
}

int mkc_slots_logprobs(mkc_slots *p, int s, int i, float *lp, int *ids, float *lps) {
  const mkc_state *st = s >= 0 && s < p->g->slots ? &p->states[s] : NULL;
  int n = st ? st->sampling.logprobs : 0, t = st ? st->n_fixed + i : -1, row = -1;
  /* a chunk past t_max ran alone and kept its last input's rows only, at row 0 */
  if (n > 0 && p->ran[s] > 0 && st->status == MKC_STATUS_OK && i >= 0 && i < st->n_out)
    row = p->ran[s] > p->g->t_max ? (t == p->ran[s] - 1 ? 0 : -1) : p->first[s] + t;
  if (row < 0 || !p->b->ops->read_scratch) {
    fprintf(stderr,
            "mkc: error: slot %d: no log-probabilities for emitted token %d (logprobs %d)\n", s, i,
            n);
    return -1;
  }
  return mkc_logprobs_read(p->b, p->g, row, n, lp, ids, lps);
}

int mkc_slots_prompt_inputs(const mkc_slots *p, int remaining) {
  return remaining < p->g->t_chunk ? remaining : p->g->t_chunk;
}

int mkc_slots_pos(const mkc_slots *p, int s) { return p->states[s].pos; }

const int *mkc_slots_tokens(const mkc_slots *p, int s) {
  return p->tokens + (size_t)s * p->g->max_ctx;
}

int mkc_slots_clear(mkc_slots *p, int s) {
  if (bad_slot(p, s)) return -1;
  if (p->b->ops->set_slot_pos && p->b->ops->set_slot_pos(p->b, s, 0) != 0) return -1;
  if (p->g->kv_pages > 0) release_pages(p, s, 0);
  p->states[s].pos = 0;
  p->states[s].n_inputs = 0;
  p->ran[s] = 0;
  return 0;
}

int mkc_slots_rewind(mkc_slots *p, int s, int pos) {
  if (bad_slot(p, s)) return -1;
  if (pos < 0 || pos > p->states[s].pos || p->g->kv_pages > 0) {
    fprintf(stderr, "mkc: error: slot %d at pos %d: no rewind to %d%s\n", s, p->states[s].pos, pos,
            p->g->kv_pages > 0 ? " (a paged pool)" : "");
    return -1;
  }
  if (p->b->ops->set_slot_pos && p->b->ops->set_slot_pos(p->b, s, pos) != 0) return -1;
  p->states[s].pos = pos;
  p->states[s].n_inputs = 0;
  p->ran[s] = 0;
  return 0;
}

size_t mkc_slots_kv_used(const mkc_slots *p, int s) {
  const mkc_graph *g = p->g;
  if (g->kv_pages == 0) /* each slot's cache is whole: a slot holding any token uses all of it */
    return p->states[s].pos > 0 ? g->kv_bytes / (size_t)g->slots : 0;
  size_t held = 0;
  for (int i = 0; i < g->slot_pages; i++) held += p->table[(size_t)s * g->slot_pages + i] >= 0;
  return held * (g->kv_bytes / (size_t)g->kv_pages);
}

int mkc_slots_pages_held(const mkc_slots *p) { return p->pages_held; }

int mkc_slots_pages_kept(const mkc_slots *p) { return p->pages_kept; }

int mkc_slots_share(mkc_slots *p, int s, const int *prompt, int n) {
  const mkc_graph *g = p->g;
  if (bad_slot(p, s)) return -1;
  if (g->kv_pages == 0 || p->states[s].pos != 0) return 0;
  int *table = p->table + (size_t)s * g->slot_pages, i = 0;
  /* full pages only, and the prompt's last token left to feed: its logits choose the next */
  for (int parent = -1; (i + 1) * MKC_KV_PAGE <= n - 1; i++) {
    int page = mkc_prefix_find(p->index, parent, prompt + i * MKC_KV_PAGE);
    if (page < 0) break;
    table[i] = page;
    if (p->refs[page]++ == 0) { /* a kept page: held again */
      p->released[page] = 0;
      p->pages_kept--;
      p->pages_held++;
    }
    parent = page;
  }
  int shared = i * MKC_KV_PAGE;
  if (shared == 0) return 0;
  /* the slot starts past them: its pos, its tokens, and the kernel's history of them (the
   * penalties read it) */
  memcpy(p->tokens + (size_t)s * g->max_ctx, prompt, (size_t)shared * sizeof *prompt);
  int rc = write_ints(p, g->history_offset + (size_t)s * g->history_floats, prompt, (size_t)shared);
  if (rc == 0 && p->b->ops->set_slot_pos) rc = p->b->ops->set_slot_pos(p->b, s, shared);
  if (rc != 0) {
    fprintf(stderr, "mkc: error: slot %d: sharing %d positions failed\n", s, shared);
    release_pages(p, s, 0);
    return -1;
  }
  p->states[s].pos = shared;
  return shared;
}

size_t mkc_slots_kv_total(const mkc_slots *p) { return p->g->kv_bytes; }

int mkc_slots_stage_ns(mkc_slots *p, double *ns) { return mkc_backend_stage_ns(p->b, p->g, ns); }

/* Whether slot s's cache keeps every position it holds: paged, or whole caches without rings. */
static int keeps_all(const mkc_slots *p) {
  const mkc_graph *g = p->g;
  for (int i = 0; g->kv_pages == 0 && i < g->n_nodes; i++)
    if (g->nodes[i].op == MKC_OP_ATTENTION && mkc_node_kv_rows(g, &g->nodes[i]) < g->max_ctx)
      return 0;
  return 1;
}

/* A store of n rows for copies to or from a slot; NULL + message (a backend that copies no
 * slot's rows). */
static void *slot_store(mkc_slots *p, int n) {
  const mkc_backend_ops *ops = p->b->ops;
  if (!ops->slot_copy || !ops->store_open) {
    fprintf(stderr, "mkc: error: the %s backend copies no slot's rows\n", ops->name);
    return NULL;
  }
  return ops->store_open(p->b, n);
}

void *mkc_slots_read_rows(mkc_slots *p, int s, size_t *bytes) {
  if (bad_slot(p, s)) return NULL;
  if (!keeps_all(p)) {
    fprintf(stderr,
            "mkc: error: slot %d: its sliding windows keep only their last rows (whole "
            "caches: generate the kernel with --kv-pages)\n",
            s);
    return NULL;
  }
  int n = p->states[s].pos;
  void *store = slot_store(p, n), *host = NULL;
  if (!store) return NULL;
  mkc_kv_slot at = {s, p->table ? p->table + (size_t)s * p->g->slot_pages : NULL};
  if (p->b->ops->slot_copy(p->b, &at, store, 0, NULL, 0, n) == 0)
    host = p->b->ops->store_read(p->b, store, bytes);
  p->b->ops->store_close(p->b, store);
  return host;
}

int mkc_slots_write_rows(mkc_slots *p, int s, const int *tokens, int n, const void *rows,
                         size_t bytes) {
  const mkc_graph *g = p->g;
  if (bad_slot(p, s) || mkc_slots_clear(p, s) != 0) return -1;
  if (n < 0 || n > g->max_ctx) {
    fprintf(stderr, "mkc: error: slot %d: %d positions do not fit a context of %d\n", s, n,
            g->max_ctx);
    return -1;
  }
  if (bytes != mkc_kv_store_bytes(g, n)) {
    fprintf(stderr, "mkc: error: slot %d: %zu bytes are not the rows of %d positions (%zu)\n", s,
            bytes, n, mkc_kv_store_bytes(g, n));
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= g->vocab) {
      fprintf(stderr, "mkc: error: slot %d: token %d (position %d) is outside the vocabulary\n", s,
              tokens[i], i);
      return -1;
    }
  if (n == 0) return 0;
  unsigned char *host = malloc(bytes);
  void *store = host ? slot_store(p, n) : NULL;
  int rc = -1;
  if (!host) fprintf(stderr, "mkc: error: out of memory for %zu bytes of KV rows\n", bytes);
  if (store && (!g->kv_pages || hold_pages(p, s, 0, n) == 0)) {
    /* the history, last in a store, is the tokens: the penalties index their counts by it */
    memcpy(host, rows, bytes - (size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) {
      int32_t id = tokens[i];
      memcpy(host + bytes - (size_t)(n - i) * sizeof id, &id, sizeof id);
    }
    mkc_kv_slot at = {s, p->table ? p->table + (size_t)s * g->slot_pages : NULL};
    rc = p->b->ops->store_write(p->b, store, host, bytes) == 0 &&
                 p->b->ops->slot_copy(p->b, &at, NULL, 0, store, 0, n) == 0 &&
                 (!p->b->ops->set_slot_pos || p->b->ops->set_slot_pos(p->b, s, n) == 0)
             ? 0
             : -1;
  }
  if (store) p->b->ops->store_close(p->b, store);
  free(host);
  if (rc != 0) {
    mkc_slots_clear(p, s);
    return -1;
  }
  int *held = p->tokens + (size_t)s * g->max_ctx;
  memcpy(held, tokens, (size_t)n * sizeof *tokens);
  p->states[s].pos = n;
  const int *table = g->kv_pages > 0 ? p->table + (size_t)s * g->slot_pages : NULL;
  for (int i = 0; table && i < n / MKC_KV_PAGE; i++)
    mkc_prefix_add(p->index, i ? table[i - 1] : -1, held + i * MKC_KV_PAGE, table[i]);
  return 0;
}

int mkc_slots_forget(mkc_slots *p, int s) {
  if (bad_slot(p, s)) return -1;
  const mkc_graph *g = p->g;
  const int *table = p->table ? p->table + (size_t)s * g->slot_pages : NULL;
  int gone = 0;
  /* the kernel's pos first: a failure there leaves the slot as it was, pages indexed */
  if (p->b->ops->set_slot_pos && p->b->ops->set_slot_pos(p->b, s, 0) != 0) return -1;
  for (int i = 0; table && i < g->slot_pages; i++)
    if (table[i] >= 0 && p->refs[table[i]] == 1) {
      mkc_prefix_remove(p->index, table[i]);
      gone = 1;
    }
  /* An indexed page's parent is indexed (free_page lets children go no later than their
   * parent): the kept pages under those gone (an earlier sequence's further pages) go too,
   * free again, lest a page number used anew for other tokens lead to them. */
  while (gone) {
    gone = 0;
    for (int page = 0; page < g->kv_pages; page++) {
      int parent = mkc_prefix_indexed(p->index, page) ? mkc_prefix_parent(p->index, page) : -1;
      if (parent < 0 || mkc_prefix_indexed(p->index, parent)) continue;
      mkc_prefix_remove(p->index, page);
      if (p->released[page]) {
        p->released[page] = 0;
        p->pages_kept--;
      }
      gone = 1;
    }
  }
  return mkc_slots_clear(p, s);
}
