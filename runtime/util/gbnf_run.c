/* The GBNF matcher (gbnf.h). A way of reading the text so far is a stack of
 * places in the rules: its top is the character class to match next, and
 * each node below it the place to go on from once the rule above ends (a
 * rule read last in its sequence returns straight to the node below, so a
 * repetition does not deepen the stack). The stacks share their lower nodes
 * (a node is a place and the node below it), and equal nodes are made once,
 * so two ways that reach the same stack are one way from then on.
 *
 * A state is the set of its ways' tops (sorted node numbers), and a
 * character under way in UTF-8. States are made once and kept, and so is
 * what each byte leads to from each: the vocabulary walk (exec/constrain.c)
 * reads most bytes in states it has met before (inside a string, every
 * letter leads back to the same state), so most of its steps are one look
 * in a table. Nodes and states are only added; a commit that finds them
 * grown past their bounds keeps only what the answer so far stands on. */
#include <stdlib.h>
#include <string.h>

#include "gbnf_rules.h"
#include "utf8.h"

#define NODES_KEPT (1u << 22) /* past these at a commit: start the tables over */
#define STATES_KEPT (1u << 20)

typedef struct node {
  int32_t place; /* an element: a class, a rule to read, or a sequence's end */
  int32_t below; /* the node to go on from after this rule; -1: the root's end */
} node;

typedef struct state {
  uint32_t tops, n_tops; /* tops[tops ..]: nodes at a class, ascending */
  uint32_t cp;           /* a character under way: its bits so far, */
  uint8_t lo, hi, left;  /* the next byte's range and the bytes still to come */
  uint8_t ends;          /* whether a sentence ends here */
} state;

/* an open-addressed table of uint32 values + 1 (0: free) */
typedef struct table {
  uint32_t *slot, cap, used;
} table;

struct mkc_gbnf_run {
  const mkc_gbnf *g;
  node *nodes;
  uint32_t *mark; /* per node: the pass it was last met in */
  uint32_t n_nodes, cap_nodes, pass;
  table node_ix; /* nodes by (place, below) */
  state *states;
  uint32_t n_states, cap_states;
  uint32_t *tops, n_tops, cap_tops;
  table state_ix; /* states by content */
  /* what byte b leads to from state s: keys[k] = s * 256 + b + 1, to[k] = state + 1, 0 refused */
  uint32_t *move_key, *move_to, move_cap, move_used;
  uint32_t start; /* the state before any byte */
  int32_t *levels;
  uint32_t cap_levels;
  /* the state being made */
  uint32_t *made;
  uint32_t n_made, cap_made;
  int ends, depth, overflow;
  uint32_t epoch; /* bumped when the tables start over (states renumbered) */
};

static uint32_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  return (uint32_t)(h ^ h >> 33);
}

static uint32_t node_hash(int32_t place, int32_t below) {
  return mix((uint64_t)(uint32_t)place << 32 | (uint32_t)below);
}

static uint32_t state_hash(const uint32_t *tops, uint32_t n, uint32_t cp, uint32_t left) {
  uint64_t h = (uint64_t)cp << 8 | left;
  for (uint32_t i = 0; i < n; i++) h = mix(h ^ tops[i]) + i;
  return mix(h);
}

static int grow_array(void **p, uint32_t *cap, uint32_t need, size_t size) {
  if (need <= *cap) return 0;
  uint32_t n = *cap ? *cap : 256;
  while (n < need) n *= 2;
  void *q = realloc(*p, (size_t)n * size);
  if (!q) return -1;
  *p = q, *cap = n;
  return 0;
}

/* ---- the tables ---- */

static int table_reset(table *t, uint32_t cap) {
  uint32_t *s = calloc(cap, sizeof *s);
  if (!s) return -1;
  free(t->slot);
  t->slot = s, t->cap = cap, t->used = 0;
  return 0;
}

static int rehash_nodes(mkc_gbnf_run *r, uint32_t cap) {
  if (table_reset(&r->node_ix, cap) != 0) return -1;
  for (uint32_t i = 0; i < r->n_nodes; i++) {
    uint32_t k = node_hash(r->nodes[i].place, r->nodes[i].below) & (cap - 1);
    while (r->node_ix.slot[k]) k = (k + 1) & (cap - 1);
    r->node_ix.slot[k] = i + 1;
  }
  r->node_ix.used = r->n_nodes;
  return 0;
}

static int rehash_states(mkc_gbnf_run *r, uint32_t cap) {
  if (table_reset(&r->state_ix, cap) != 0) return -1;
  for (uint32_t i = 0; i < r->n_states; i++) {
    const state *s = &r->states[i];
    uint32_t k = state_hash(r->tops + s->tops, s->n_tops, s->cp, s->left) & (cap - 1);
    while (r->state_ix.slot[k]) k = (k + 1) & (cap - 1);
    r->state_ix.slot[k] = i + 1;
  }
  r->state_ix.used = r->n_states;
  return 0;
}

static int moves_reset(mkc_gbnf_run *r, uint32_t cap) {
  uint32_t *k = calloc(cap, sizeof *k), *t = malloc(cap * sizeof *t);
  if (!k || !t) {
    free(k), free(t);
    return -1;
  }
  free(r->move_key), free(r->move_to);
  r->move_key = k, r->move_to = t, r->move_cap = cap, r->move_used = 0;
  return 0;
}

/* The slot of key s * 256 + b in the moves. */
static uint32_t move_slot(const mkc_gbnf_run *r, uint32_t key) {
  uint32_t k = mix(key) & (r->move_cap - 1);
  while (r->move_key[k] && r->move_key[k] != key) k = (k + 1) & (r->move_cap - 1);
  return k;
}

static void move_put(mkc_gbnf_run *r, uint32_t key, uint32_t to) {
  if (2 * (r->move_used + 1) > r->move_cap) {
    uint32_t old_cap = r->move_cap, *old_key = r->move_key, *old_to = r->move_to;
    r->move_key = r->move_to = NULL;
    if (moves_reset(r, old_cap * 2) != 0) { /* keep the old table, unchanged */
      r->move_key = old_key, r->move_to = old_to, r->move_cap = old_cap;
      return;
    }
    for (uint32_t i = 0; i < old_cap; i++)
      if (old_key[i]) {
        uint32_t k = move_slot(r, old_key[i]);
        r->move_key[k] = old_key[i], r->move_to[k] = old_to[i], r->move_used++;
      }
    free(old_key), free(old_to);
  }
  uint32_t k = move_slot(r, key);
  r->move_used += !r->move_key[k];
  r->move_key[k] = key, r->move_to[k] = to;
}

/* ---- nodes and the ways on from them ---- */

/* The node (place, below), made when new; -1 when out of memory. */
static int32_t node_of(mkc_gbnf_run *r, int32_t place, int32_t below) {
  if (2 * (r->node_ix.used + 1) > r->node_ix.cap && rehash_nodes(r, 2 * r->node_ix.cap) != 0)
    return -1;
  uint32_t k = node_hash(place, below) & (r->node_ix.cap - 1);
  for (; r->node_ix.slot[k]; k = (k + 1) & (r->node_ix.cap - 1)) {
    const node *n = &r->nodes[r->node_ix.slot[k] - 1];
    if (n->place == place && n->below == below) return (int32_t)(r->node_ix.slot[k] - 1);
  }
  if (r->n_nodes == r->cap_nodes) {
    uint32_t cap = r->cap_nodes;
    if (grow_array((void **)&r->nodes, &cap, r->n_nodes + 1, sizeof *r->nodes) != 0) return -1;
    cap = r->cap_nodes;
    if (grow_array((void **)&r->mark, &cap, r->n_nodes + 1, sizeof *r->mark) != 0) return -1;
    r->cap_nodes = cap;
  }
  r->nodes[r->n_nodes] = (node){place, below};
  r->mark[r->n_nodes] = 0;
  r->node_ix.slot[k] = r->n_nodes + 1;
  r->node_ix.used++;
  return (int32_t)r->n_nodes++;
}

/* Every way on from element `place` with `below` under it, to a class (a
 * top of the state being made) or past the root's end; -1 on overflow. */
static int reach(mkc_gbnf_run *r, int32_t place, int32_t below) {
  int32_t t = node_of(r, place, below);
  if (t < 0 || ++r->depth > MKC_GBNF_DEPTH_MAX) return -1;
  int rc = 0;
  if (r->mark[t] != r->pass) {
    r->mark[t] = r->pass;
    const gb_elem *e = &r->g->elems[place];
    if (e->kind == GB_CHARS) {
      if (r->n_made >= MKC_GBNF_STACKS_MAX ||
          grow_array((void **)&r->made, &r->cap_made, r->n_made + 1, sizeof *r->made) != 0)
        rc = -1;
      else
        r->made[r->n_made++] = (uint32_t)t;
    } else if (e->kind == GB_END) {
      if (below < 0)
        r->ends = 1;
      else
        rc = reach(r, r->nodes[below].place, r->nodes[below].below);
    } else {
      /* where to go after the rule: its sequence's end returns straight to below */
      int32_t back = r->g->elems[place + 1].kind == GB_END ? below : node_of(r, place + 1, below);
      const gb_rule *rule = &r->g->rules[e->a];
      rc = back < 0 && r->g->elems[place + 1].kind != GB_END ? -1 : 0;
      for (uint32_t a = 0; a < rule->n_alts && rc == 0; a++)
        rc = reach(r, (int32_t)r->g->alts[rule->first_alt + a], back);
    }
  }
  r->depth--;
  return rc;
}

static void begin_made(mkc_gbnf_run *r) {
  r->n_made = 0, r->ends = 0, r->depth = 0;
  if (++r->pass == 0) { /* wrapped: every mark is stale */
    memset(r->mark, 0, r->n_nodes * sizeof *r->mark);
    r->pass = 1;
  }
}

static int by_value(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The state of tops[0..n) (sorted here) and s's character under way: its number, made when new;
 * -1 when out of memory. */
static int32_t state_of(mkc_gbnf_run *r, uint32_t *tops, uint32_t n, state s) {
  if (n > 1) qsort(tops, n, sizeof *tops, by_value);
  if (2 * (r->state_ix.used + 1) > r->state_ix.cap && rehash_states(r, 2 * r->state_ix.cap) != 0)
    return -1;
  uint32_t k = state_hash(tops, n, s.cp, s.left) & (r->state_ix.cap - 1);
  for (; r->state_ix.slot[k]; k = (k + 1) & (r->state_ix.cap - 1)) {
    const state *o = &r->states[r->state_ix.slot[k] - 1];
    if (o->n_tops == n && o->cp == s.cp && o->left == s.left && o->lo == s.lo && o->hi == s.hi &&
        o->ends == s.ends && (n == 0 || !memcmp(r->tops + o->tops, tops, n * sizeof *tops)))
      return (int32_t)(r->state_ix.slot[k] - 1);
  }
  if (grow_array((void **)&r->states, &r->cap_states, r->n_states + 1, sizeof *r->states) != 0 ||
      grow_array((void **)&r->tops, &r->cap_tops, r->n_tops + n + 1, sizeof *r->tops) != 0)
    return -1;
  if (n) memcpy(r->tops + r->n_tops, tops, n * sizeof *tops);
  s.tops = r->n_tops, s.n_tops = n;
  r->n_tops += n;
  r->states[r->n_states] = s;
  r->state_ix.slot[k] = r->n_states + 1;
  r->state_ix.used++;
  return (int32_t)r->n_states++;
}

static int in_class(const mkc_gbnf *g, const gb_elem *e, uint32_t lo, uint32_t hi) {
  for (uint32_t i = 0; i < e->b; i++) {
    const gb_range *x = &g->ranges[e->a + i];
    if (x->lo > hi) return 0; /* sorted */
    if (x->hi >= lo) return 1;
  }
  return 0;
}

/* Whether some top of state f takes a code point in lo..hi. */
static int any_top(const mkc_gbnf_run *r, const state *f, uint32_t lo, uint32_t hi) {
  for (uint32_t i = 0; i < f->n_tops; i++)
    if (in_class(r->g, &r->g->elems[r->nodes[r->tops[f->tops + i]].place], lo, hi)) return 1;
  return 0;
}

/* The state byte c leads to from state `from`: its number, -1 refused, -2 overflow. */
static int32_t move(mkc_gbnf_run *r, uint32_t from, unsigned char c) {
  state f = r->states[from], to = {0};
  uint32_t cp, left;
  if (f.left == 0) { /* a character's first byte */
    int more = mkc_utf8_lead(c, &cp, &to.lo, &to.hi);
    if (more < 0) return -1;
    left = (uint32_t)more;
  } else {
    if (c < f.lo || c > f.hi) return -1;
    left = f.left - 1u;
    cp = f.cp << 6 | (c & 0x3Fu);
    to.lo = 0x80, to.hi = 0xBF;
  }
  if (left > 0) { /* some top must take a character that begins so: the next byte in to.lo..hi */
    uint32_t rest = 6 * (left - 1), any = (1u << rest) - 1;
    uint32_t lo = (cp << 6 | (to.lo & 0x3Fu)) << rest,
             hi = (cp << 6 | (to.hi & 0x3Fu)) << rest | any;
    if (!any_top(r, &f, lo, hi)) return -1;
    to.cp = cp, to.left = (uint8_t)left;
    /* the same tops, copied out first: making the state may move r->tops */
    if (grow_array((void **)&r->made, &r->cap_made, f.n_tops + 1, sizeof *r->made) != 0) return -2;
    if (f.n_tops) memcpy(r->made, r->tops + f.tops, f.n_tops * sizeof *r->made);
    int32_t id = state_of(r, r->made, f.n_tops, to);
    return id < 0 ? -2 : id;
  }
  begin_made(r);
  int rc = 0;
  for (uint32_t i = 0; i < f.n_tops && rc == 0; i++) {
    node top = r->nodes[r->tops[f.tops + i]];
    if (in_class(r->g, &r->g->elems[top.place], cp, cp)) rc = reach(r, top.place + 1, top.below);
  }
  if (rc != 0) return -2;
  if (r->n_made == 0 && !r->ends) return -1;
  to.ends = (uint8_t)r->ends, to.lo = to.hi = 0;
  int32_t id = state_of(r, r->made, r->n_made, to);
  return id < 0 ? -2 : id;
}

/* ---- the reading ---- */

static int levels_for(mkc_gbnf_run *r, int n) {
  return grow_array((void **)&r->levels, &r->cap_levels, (uint32_t)n, sizeof *r->levels);
}

/* Everything dropped but state `keep`'s nodes and the start; returns keep's new number (-1 when
 * out of memory). */
static int32_t start_over(mkc_gbnf_run *r, int32_t keep);

/* The tables, fresh, and the start state. 0, or -1 when out of memory. */
static int open_tables(mkc_gbnf_run *r) {
  r->n_nodes = r->n_states = r->n_tops = 0;
  if (rehash_nodes(r, 1024) != 0 || rehash_states(r, 1024) != 0 || moves_reset(r, 4096) != 0 ||
      levels_for(r, 16) != 0)
    return -1;
  begin_made(r);
  const gb_rule *root = &r->g->rules[r->g->root];
  int rc = 0;
  for (uint32_t a = 0; a < root->n_alts && rc == 0; a++)
    rc = reach(r, (int32_t)r->g->alts[root->first_alt + a], -1);
  if (rc != 0) return -1;
  int32_t id = state_of(r, r->made, r->n_made, (state){.ends = (uint8_t)r->ends});
  if (id < 0) return -1;
  r->start = (uint32_t)id;
  r->levels[0] = id;
  return 0;
}

static int32_t start_over(mkc_gbnf_run *r, int32_t keep) {
  r->epoch++;
  /* keep's tops and character under way, out of the tables */
  state k = r->states[keep];
  uint32_t n = k.n_tops, *tops = malloc(((size_t)n + 1) * sizeof *tops);
  node *stacks = NULL;
  uint32_t n_stack = 0, cap_stack = 0;
  if (!tops) return -1;
  /* each top's stack from the bottom, so it can be made again node by node */
  uint32_t *len = malloc(((size_t)n + 1) * sizeof *len);
  int ok = len != NULL;
  for (uint32_t i = 0; i < n && ok; i++) {
    uint32_t from = n_stack;
    for (int32_t x = (int32_t)r->tops[k.tops + i]; x >= 0 && ok; x = r->nodes[x].below) {
      ok = grow_array((void **)&stacks, &cap_stack, n_stack + 1, sizeof *stacks) == 0;
      if (ok) stacks[n_stack++] = r->nodes[x];
    }
    len[i] = n_stack - from;
  }
  int32_t id = -1;
  if (ok && open_tables(r) == 0) {
    uint32_t at = 0;
    ok = 1;
    for (uint32_t i = 0; i < n && ok; i++) {
      int32_t below = -1;
      for (uint32_t j = len[i]; j-- > 0 && ok;)
        ok = (below = node_of(r, stacks[at + j].place, below)) >= 0;
      tops[i] = (uint32_t)below;
      at += len[i];
    }
    if (ok) id = state_of(r, tops, n, k);
  }
  free(tops), free(stacks), free(len);
  return id;
}

mkc_gbnf_run *mkc_gbnf_run_open(const mkc_gbnf *g) {
  mkc_gbnf_run *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->g = g;
  if (open_tables(r) != 0) {
    mkc_gbnf_run_close(r);
    return NULL;
  }
  return r;
}

void mkc_gbnf_run_close(mkc_gbnf_run *r) {
  if (!r) return;
  free(r->nodes), free(r->mark), free(r->node_ix.slot), free(r->states), free(r->tops);
  free(r->state_ix.slot), free(r->move_key), free(r->move_to), free(r->levels), free(r->made);
  free(r);
}

void mkc_gbnf_run_restart(mkc_gbnf_run *r) {
  r->levels[0] = (int32_t)r->start;
  r->overflow = 0;
}

int mkc_gbnf_run_byte(mkc_gbnf_run *r, int lv, unsigned char c) {
  if (levels_for(r, lv + 2) != 0) {
    r->overflow = 1;
    return -1;
  }
  uint32_t from = (uint32_t)r->levels[lv], key = from * 256u + c + 1u;
  int keyed = from < (1u << 23); /* the key fits 32 bits (commits keep far fewer states) */
  uint32_t k = keyed ? move_slot(r, key) : 0;
  int32_t to;
  if (keyed && r->move_key[k] == key)
    to = (int32_t)r->move_to[k] - 1;
  else if ((to = move(r, from, c)) >= -1 && keyed)
    move_put(r, key, (uint32_t)(to + 1));
  if (to == -2) r->overflow = 1;
  if (to < 0) return -1;
  r->levels[lv + 1] = to;
  return 0;
}

int mkc_gbnf_run_can_end(const mkc_gbnf_run *r, int level) {
  const state *s = &r->states[r->levels[level]];
  return s->ends && s->left == 0;
}

int mkc_gbnf_run_can_go_on(const mkc_gbnf_run *r, int level) {
  return r->states[r->levels[level]].n_tops > 0;
}

int mkc_gbnf_run_overflowed(const mkc_gbnf_run *r) { return r->overflow; }

unsigned long long mkc_gbnf_run_state(const mkc_gbnf_run *r, int level) {
  return (unsigned long long)r->epoch << 32 | (uint32_t)r->levels[level];
}

void mkc_gbnf_run_commit(mkc_gbnf_run *r, int lv) {
  int32_t s = r->levels[lv];
  r->levels[0] = s;
  if (r->n_nodes <= NODES_KEPT && r->n_states <= STATES_KEPT) return;
  int32_t id = start_over(r, s);
  if (id < 0)
    r->overflow = 1;
  else
    r->levels[0] = id;
}
