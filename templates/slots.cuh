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
 * included; several slots share the T <= MKC_T_MAX decode path.
 *
 * Paged (mkc gen --kv-pages N, MKC_KV_PAGES): the slots share one pool of N
 * pages of MKC_KV_PAGE positions (every layer's K and V rows of them; a
 * layer's per-head block is the pool's rows, page after page). Slot s's
 * position p is at row table[s][p / MKC_KV_PAGE] * MKC_KV_PAGE + p %
 * MKC_KV_PAGE; the host fills the page tables (scratch, MKC_SLOT_PAGES ints
 * per slot) before the step. Every step then goes through the row map, and
 * a step takes at most MKC_T_MAX inputs (no tiled prompt chunks). */
#ifndef MKC_SLOTS
#define MKC_SLOTS 0 /* a plain kernel: one sequence, in state */
#endif
#define MKC_SLOT_N (MKC_SLOTS > 0 ? MKC_SLOTS : 1)
#ifndef MKC_KV_PAGES
#define MKC_KV_PAGES 0 /* not paged */
#endif

typedef struct mkc_rowmap {
  int single;            /* >= 0: the only slot with inputs; -1: several */
  int first[MKC_SLOT_N]; /* a slot's first row in the step */
  int count[MKC_SLOT_N]; /* its rows (0: not in this step) */
  int spos[MKC_SLOT_N];  /* its pos when the step began */
  int pos[MKC_T_MAX], slot[MKC_T_MAX], tok[MKC_T_MAX]; /* per row, with several slots */
  const int *table; /* paged: the slots' page tables, MKC_SLOT_PAGES each */
} mkc_rowmap;

/* Row t's position: a plain step's pos + t, or its slot's. */
MKC_DEVICE int mkc_row_pos(const mkc_rowmap *rows, int pos, int t) {
  return MKC_SLOTS > 0 && rows ? rows->pos[t] : pos + t;
}

/* Where row t's position p is in a kv head's block of kv_rows rows, in KV
 * elements: a ring's row p % kv_rows, in its slot's cache when there are
 * several; or, paged, its slot's page's row. */
MKC_DEVICE long mkc_kv_at(const mkc_rowmap *rows, int t, int p, int kv_rows, int head_dim) {
#if MKC_KV_PAGES > 0
  (void)kv_rows;
  int page = rows->table[rows->slot[t] * MKC_SLOT_PAGES + p / MKC_KV_PAGE];
  return ((long)page * MKC_KV_PAGE + p % MKC_KV_PAGE) * head_dim;
#elif MKC_SLOTS > 0
  return (rows ? (long)rows->slot[t] * MKC_KV_SLOT : 0) + (long)(p % kv_rows) * head_dim;
#else
  (void)rows;
  (void)t;
  return (long)(p % kv_rows) * head_dim;
#endif
}

/* Checks every slot's inputs as mkc_step_begin does one sequence's and maps
 * the rows. A slot that fails gets the status and sits the step out; so does
 * every slot when several together pass t_max (a prompt chunk runs alone).
 * Every block reads the same state and maps the same rows. Returns the
 * step's rows, 0: nothing to run. */
MKC_DEVICE int mkc_slots_begin(mkc_state *st, int vocab, int max_ctx, int t_max, int t_chunk,
                               mkc_rowmap *rm) {
  int rows = 0, active = 0, last = -1;
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
  }
  rm->single = active == 1 && MKC_KV_PAGES == 0 ? last : -1; /* paged: always the row map */
  if (rm->single < 0 && rows > t_max) {
    for (int s = 0; s < MKC_SLOT_N; s++)
      if (rm->count[s] > 0) {
        rm->count[s] = 0;
        mkc_step_refused(st + s, MKC_STATUS_BAD_INPUT);
      }
    return 0;
  }
  if (rm->single < 0)
    for (int s = 0; s < MKC_SLOT_N; s++)
      for (int t = 0; t < rm->count[s]; t++) {
        int r = rm->first[s] + t;
        rm->pos[r] = rm->spos[s] + t;
        rm->slot[r] = s;
        rm->tok[r] = st[s].inputs[t];
      }
  return rows;
}
