/* Slots (mkc gen --slots B): one step serves up to B sequences. The kernel's
 * state is then an array of B mkc_state, one per slot, each with its own pos,
 * inputs, sampling options and results; state[0] also holds the launch's
 * counters (flow_count, the barrier). A slot with n_inputs 0 sits the step
 * out. Each slot has its own KV cache (MKC_KV_SLOT elements, the plain
 * kernel's layout) and token history.
 *
 * The step's rows are the slots' inputs one after another, so every stage
 * that streams weights reads each byte once for all of them. Only RoPE, the
 * KV append and attention care whose a row is (mkc_rowmap); the sampler and
 * the accept run once per slot on that slot's rows. With one slot taking part
 * the step is the plain kernel's on that slot's cache, prompt chunks
 * included. Several slots share a step of up to MKC_STEP_ROWS rows, each slot
 * at most MKC_T_MAX of them: up to MKC_T_MAX rows in all the decode path's,
 * more a wide step on the tiled path (templates/gemm.cuh; mkc gen
 * --step-rows), whose LM head gives every row its logits.
 *
 * Every block's thread 0 maps the rows into the block's shared memory, ahead
 * of the stages' (MKC_ROWMAP_BYTES): the map does not grow a thread's stack.
 *
 * Paged (mkc gen --kv-pages N, MKC_KV_PAGES): the slots share one pool of N
 * pages of MKC_KV_PAGE positions (every layer's K and V rows of them; a
 * layer's per-head block is the pool's rows, page after page). Slot s's
 * position p is at row table[s][p / MKC_KV_PAGE] * MKC_KV_PAGE + p %
 * MKC_KV_PAGE; the host fills the page tables (scratch, MKC_SLOT_PAGES ints
 * per slot) before the step. Every step then goes through the row map, and
 * a prompt chunk's K/V rows go through its slot's table too. A sliding
 * window's layer keeps its positions there as a global layer does (no ring)
 * and reads its window of them. */
#ifndef MKC_SLOTS
#define MKC_SLOTS 0 /* a plain kernel: one sequence, in state */
#endif
#define MKC_SLOT_N (MKC_SLOTS > 0 ? MKC_SLOTS : 1)
#ifndef MKC_KV_PAGES
#define MKC_KV_PAGES 0 /* not paged */
#endif
#ifndef MKC_STEP_ROWS
#define MKC_STEP_ROWS MKC_T_MAX /* a step's rows: a plain kernel's inputs */
#endif

typedef struct mkc_rowmap {
  int single;            /* >= 0: the only slot with inputs; -1: several */
  int first[MKC_SLOT_N]; /* a slot's first row in the step */
  int count[MKC_SLOT_N]; /* its rows (0: not in this step) */
  int spos[MKC_SLOT_N];  /* its pos when the step began */
  int pos[MKC_STEP_ROWS], slot[MKC_STEP_ROWS], tok[MKC_STEP_ROWS]; /* per row */
  int rows;                                                        /* the step's: 0, none */
  const int *table; /* paged: the slots' page tables, MKC_SLOT_PAGES each */
} mkc_rowmap;
#if MKC_SLOTS > 0
typedef char mkc_rowmap_fits[sizeof(mkc_rowmap) <= MKC_ROWMAP_BYTES ? 1 : -1]; /* codegen's room */
#endif

/* Row t's position: a plain step's pos + t, or its slot's. */
MKC_DEVICE int mkc_row_pos(const mkc_rowmap *rows, int pos, int t) {
  if (MKC_SLOTS == 0 || !rows) return pos + t;
  return rows->single >= 0 ? rows->spos[rows->single] + t : rows->pos[t];
}

/* Row t's slot (a mapped step's). */
MKC_DEVICE int mkc_row_slot(const mkc_rowmap *rows, int t) {
  return rows->single >= 0 ? rows->single : rows->slot[t];
}

/* Whether any row of the step has a logit bias to look up (st 0: none), read once before an LM
 * head's rows, so that a step with none spends nothing a row on it. */
MKC_DEVICE int mkc_step_logit_biased(const mkc_state *st, const mkc_rowmap *rows) {
  if (!st) return 0;
  if (MKC_SLOTS == 0 || !rows) return st->sampling.n_bias > 0;
  for (int s = 0; s < MKC_SLOT_N; s++)
    if (rows->count[s] > 0 && st[s].sampling.n_bias > 0) return 1;
  return 0;
}

/* The logit bias of token id at the step's row t: its slot's request's (mkc_sampling's bias; a
 * plain kernel's rows are all state's, rows 0), 0 where none is set or st is 0 (a matmul that is
 * no LM head). The ids are ascending: a binary search. */
MKC_DEVICE float mkc_row_logit_bias(const mkc_state *st, const mkc_rowmap *rows, int t, int id) {
  if (!st) return 0.0f;
  const mkc_sampling *o = &st[MKC_SLOTS > 0 && rows ? mkc_row_slot(rows, t) : 0].sampling;
  int lo = 0, hi = o->n_bias;
  while (lo < hi) {
    int mid = (lo + hi) >> 1;
    if (o->bias_id[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < o->n_bias && o->bias_id[lo] == id ? o->bias[lo] : 0.0f;
}

/* Where row t's position p is in a kv head's block of kv_rows rows, in KV
 * elements: a ring's row p % kv_rows, in its slot's cache when there are
 * several; or, paged, its slot's page's row. */
MKC_DEVICE long mkc_kv_at(const mkc_rowmap *rows, int t, int p, int kv_rows, int head_dim) {
#if MKC_KV_PAGES > 0
  (void)kv_rows;
  int page = rows->table[mkc_row_slot(rows, t) * MKC_SLOT_PAGES + p / MKC_KV_PAGE];
  return ((long)page * MKC_KV_PAGE + p % MKC_KV_PAGE) * head_dim;
#elif MKC_SLOTS > 0
  return (rows ? (long)mkc_row_slot(rows, t) * MKC_KV_SLOT : 0) + (long)(p % kv_rows) * head_dim;
#else
  (void)rows;
  (void)t;
  return (long)(p % kv_rows) * head_dim;
#endif
}

/* Checks every slot's inputs as mkc_step_begin does one sequence's and maps
 * the rows into rm, the block's shared memory. A slot that fails gets the
 * status and sits the step out. Several slots take part only with at most
 * MKC_T_MAX inputs each and MKC_STEP_ROWS in all (a prompt chunk runs alone);
 * past that every slot in the step is refused. Every block reads the same
 * state and maps the same rows. Returns the step's rows, 0: nothing to run. */
MKC_DEVICE int mkc_slots_begin(mkc_state *st, int vocab, int max_ctx, int t_max, int t_chunk,
                               const int *table, mkc_rowmap *rm) {
  if (mkc_tid() == 0) {
    int rows = 0, active = 0, last = -1, chunk = 0;
    for (int s = 0; s < MKC_SLOT_N; s++) {
      mkc_state *q = st + s;
      int T = q->n_inputs;
      rm->first[s] = rows;
      rm->count[s] = 0;
      rm->spos[s] = q->pos;
      if (T == 0) continue;
      int status = mkc_inputs_status(q, vocab, max_ctx, t_max, t_chunk);
      if (status == MKC_STATUS_OK && (q->round_max > 1 || q->draft_left > 0))
        status = MKC_STATUS_BAD_INPUT; /* a slot kernel runs no rounds */
      if (status != MKC_STATUS_OK) {
        mkc_step_refused(q, status);
        continue;
      }
      rm->count[s] = T;
      rows += T;
      active++;
      last = s;
      chunk |= T > t_max;
    }
    rm->single = active == 1 ? last : -1;
    if (active > 1 && (chunk || rows > MKC_STEP_ROWS)) {
      for (int s = 0; s < MKC_SLOT_N; s++)
        if (rm->count[s] > 0) {
          rm->count[s] = 0;
          mkc_step_refused(st + s, MKC_STATUS_BAD_INPUT);
        }
      rows = 0;
    }
    /* the per-row map, with several slots (one slot's rows are its spos + t) */
    if (rm->single < 0)
      for (int s = 0; s < MKC_SLOT_N; s++)
        for (int t = 0; t < rm->count[s]; t++) {
          int r = rm->first[s] + t;
          rm->pos[r] = rm->spos[s] + t;
          rm->slot[r] = s;
          rm->tok[r] = st[s].inputs[t];
        }
    rm->rows = rows;
    rm->table = table;
  }
  mkc_sync_block(); /* the map is the block's */
  return rm->rows;
}
