/* mkc run --batch FILE: one prompt per line, decoded together on a slot
 * kernel (exec/batch.h), each completion printed on its own line, in the
 * file's order; with --format, each a JSON document chosen on the host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stages.h"
#include "commands.h"
#include "draft_source.h"
#include "exec/batch.h"
#include "exec/decode.h"
#include "json_format.h"
#include "loaded.h"
#include "run_batch.h"

#include "logprobs.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"

#define DEFAULT_SLOTS 4

/* The file's lines as prompts: text through the model's tokenizer, or
 * comma-separated token ids. NULL + file:line message. */
static mkc_batch_seq *read_prompts(const mkc_cli *c, const mkc_loaded_model *m, int *n) {
  char *text = mkc_read_file(c->batch_file, NULL);
  if (!text) {
    fprintf(stderr, "mkc: error: cannot read %s\n", c->batch_file);
    return NULL;
  }
  int cap = 1;
  for (const char *q = text; *q; q++) cap += *q == '\n';
  mkc_batch_seq *seqs = calloc((size_t)cap, sizeof *seqs);
  const mkc_tokenizer *tok = c->model_path ? m->file.tok : NULL;
  *n = 0;
  int line = 0, ok = seqs != NULL;
  for (char *at = text; ok && *at;) {
    char *end = strchr(at, '\n'), *next = end ? end + 1 : at + strlen(at);
    if (end) *end = 0;
    size_t len = strlen(at);
    if (len && at[len - 1] == '\r') at[--len] = 0;
    line++;
    char where[4200];
    snprintf(where, sizeof where, "%s:%d", c->batch_file, line);
    if (len == 0) {
      fprintf(stderr, "%s: error: an empty line: each line is a prompt\n", where);
      ok = 0;
      break;
    }
    int *ids = NULL, n_ids = 0;
    if (tok) {
      n_ids = mkc_tokenizer_encode(tok, at, len, mkc_tokenizer_add_bos(tok), 1, &ids);
      if (n_ids < 1) fprintf(stderr, "%s: error: the prompt gives no tokens\n", where);
    } else {
      ids = mkc_parse_ids(at, m->g.vocab, &n_ids, where);
    }
    if (!ids || n_ids < 1) {
      free(ids);
      ok = 0;
      break;
    }
    if (n_ids > m->g.max_ctx) {
      fprintf(stderr, "%s: error: a prompt of %d tokens; the context holds %d (--ctx)\n", where,
              n_ids, m->g.max_ctx);
      free(ids);
      ok = 0;
      break;
    }
    seqs[*n].prompt = ids;
    seqs[*n].n_prompt = n_ids;
    (*n)++;
    at = next;
  }
  free(text);
  if (ok && *n == 0) {
    fprintf(stderr, "%s: error: no prompts\n", c->batch_file);
    ok = 0;
  }
  if (!ok && seqs) {
    for (int i = 0; i < *n; i++) free((void *)seqs[i].prompt);
    free(seqs);
    seqs = NULL;
  }
  return seqs;
}

/* A completion on one line: the text with newlines and backslashes escaped
 * (\n, \\), or the ids. */
static void print_completion(const mkc_tokenizer *tok, const mkc_batch_seq *q) {
  if (!tok) {
    for (int i = 0; i < q->n_out; i++) printf(i ? " %d" : "%d", q->out[i]);
    printf("\n");
    return;
  }
  mkc_detok d;
  mkc_detok_init(&d, tok, 0);
  char buf[512];
  for (int i = 0; i <= q->n_out; i++) {
    size_t len = i < q->n_out ? mkc_detok_push(&d, q->out[i], buf, sizeof buf)
                              : mkc_detok_flush(&d, buf, sizeof buf);
    for (size_t j = 0; j < len; j++) {
      if (buf[j] == '\n')
        fputs("\\n", stdout);
      else if (buf[j] == '\\')
        fputs("\\\\", stdout);
      else
        putchar(buf[j]);
    }
  }
  printf("\n");
}

/* --logprobs N: the line's tokens' log-probabilities on stderr as run prints them, after a line
 * naming the prompt (stdout flushed first, so a terminal shows them under its completion). */
static void print_logprobs(const mkc_tokenizer *tok, const mkc_batch_seq *q, const char *file,
                           int line, int n_top) {
  fflush(stdout);
  fprintf(stderr, "mkc: run --batch: %s:%d: %d tokens' log-probabilities\n", file, line, q->n_out);
  for (int i = 0; q->lp && i < q->n_out; i++)
    mkc_print_token(tok, 0, q->out[i], &q->lp[i], q->top_ids + (size_t)i * MKC_LOGPROBS_MAX,
                    q->top_lps + (size_t)i * MKC_LOGPROBS_MAX, n_top);
}

int mkc_slot_kernel_flags(mkc_cli *c, int slots, const char *cmd) {
  int k = c->draft_max;
  /* the kernel's rows: every slot's last token and drafts in one step; past MKC_T_CAP a wide
   * step, on the tiled path (templates/slots.cuh), whose prompt chunks must hold those rows */
  int rows = slots * (k + 1);
  if (rows > MKC_CHUNK_CAP || (c->ubatch && c->ubatch < rows && rows > MKC_T_CAP)) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "%s: %d slots of 1 + %d drafts are more than the %d rows a step takes; "
             "lower --slots or --draft-max%s",
             cmd, slots, k, rows > MKC_CHUNK_CAP ? MKC_CHUNK_CAP : c->ubatch,
             rows > MKC_CHUNK_CAP ? "" : ", or raise --ubatch");
    return mkc_cli_usage_error("%s", msg);
  }
  if (rows > MKC_T_CAP && c->max_ctx && c->max_ctx < rows) { /* a wide step's rows are a chunk's */
    char msg[200];
    snprintf(msg, sizeof msg,
             "%s: %d slots of 1 + %d drafts make steps of %d rows, more than the %d "
             "positions of --ctx; lower --slots or --draft-max, or raise --ctx",
             cmd, slots, k, rows, c->max_ctx);
    return mkc_cli_usage_error("%s", msg);
  }
  c->slots = slots;
  c->draft_max = (rows < MKC_T_CAP ? rows : MKC_T_CAP) - 1;
  c->step_rows = rows;
  if (!c->ubatch && rows > 128) c->ubatch = rows; /* past codegen's default chunk (--ubatch) */
  if (!c->kv_pages) c->kv_pages = -1;             /* paged: the bytes held follow the tokens */
  return 0;
}

/* A batch line's token through its reverse prompts (-r): nonzero ends the line there. */
static int reverse_stop(void *ctx, int id) { return mkc_reverse_push(ctx, id); }

int mkc_run_batch(const mkc_cli *cli, const mkc_sampling *opt, unsigned long long seed) {
  mkc_cli c = *cli;
  int k = c.draft_max,
      rc = mkc_slot_kernel_flags(&c, c.slots ? c.slots : DEFAULT_SLOTS, "run --batch");
  if (rc) return rc;
  int slots = c.slots;
  mkc_loaded_model m;
  mkc_draft_source ds = {0}; /* -md, --draft-layers: a draft pool */
  mkc_batch_seq *seqs = NULL;
  mkc_slots *p = NULL;
  mkc_constraint *json = NULL;
  mkc_format_rules rules = {0};
  double *stage_ns = NULL;        /* --stages: the decode steps' sums, per stage */
  mkc_reverse *rev = NULL;        /* -r: each line's */
  int *stops = NULL, n_stops = 0; /* the end-of-generation tokens */
  int n = 0;
  rc = 1;
  if (mkc_json_format_rules(&c, &rules) != 0 || mkc_loaded_plan(&c, &m) != 0 ||
      mkc_draft_source_plan(&c, &m, &ds) != 0 || !(seqs = read_prompts(&c, &m, &n)))
    goto done;
  /* tokens per line: -n, else to the end of generation (-m) or 16 */
  int n_predict = c.have_n ? c.n_gen : (c.model_path ? -1 : 16);
  double tokens = 0;
  for (int i = 0; i < n; i++)
    tokens += seqs[i].n_prompt + (n_predict >= 0 ? n_predict : m.g.max_ctx / 4);
  if (mkc_loaded_cpu_guard(&c, &m, tokens, "run --batch") != 0 || mkc_loaded_weights(&c, &m) != 0)
    goto done;
  p = mkc_slots_open(mkc_loaded_backend(&c), &m.g, &m.src, &m.w, c.blocks);
  if (!p || mkc_draft_source_start_slots(&c, &m, &ds, mkc_loaded_backend(&c)) != 0) goto done;
  const mkc_tokenizer *tok = c.model_path ? m.file.tok : NULL;
  /* every end-of-generation token stops a line (the slots check them on the host) */
  if (tok && !c.ignore_eos && !(stops = mkc_tokenizer_eog_all(tok, &n_stops)) && n_stops < 0)
    goto done;
  /* JSON output: each line's own document over one sorted vocabulary */
  if (mkc_host_choice_on(&c) && !(json = mkc_host_choice_open(tok, m.g.vocab))) goto done;
  for (int i = 0; i < n; i++) {
    seqs[i].n_predict = n_predict;
    seqs[i].opt = *opt;
    seqs[i].shift = c.context_shift;
    seqs[i].n_keep = mkc_shift_keep(c.n_keep, mkc_tokenizer_added_bos(m.file.tok), seqs[i].prompt,
                                    seqs[i].n_prompt);
    /* line i samples with seed + i: what `mkc run --seed` that gives alone */
    unsigned long long s = seed + (unsigned long long)i;
    seqs[i].opt.seed_lo = (unsigned)s;
    seqs[i].opt.seed_hi = (unsigned)(s >> 32);
    if (!json) continue;
    if (!(seqs[i].constraint = mkc_constraint_share(json))) goto done;
    if (mkc_json_format_start(seqs[i].constraint, &rules, c.ignore_eos ? NULL : tok, s) != 0)
      goto done;
  }
  mkc_batch_opts o = {.drafts = k,
                      .adaptive = c.draft_adaptive,
                      .draft_min = c.draft_min,
                      .stops = stops,
                      .n_stops = n_stops,
                      .drafter = ds.pool};
  if (c.stages && !(stage_ns = calloc((size_t)m.g.n_stages + 1, sizeof *stage_ns))) {
    fprintf(stderr, "mkc: error: run --batch --stages: out of memory\n");
    goto done;
  }
  o.stage_ns = stage_ns;
  if (c.n_reverse && !(rev = calloc((size_t)n, sizeof *rev))) {
    fprintf(stderr, "mkc: error: run --batch -r: out of memory\n");
    goto done;
  }
  for (int i = 0; rev && i < n; i++) {
    if (mkc_reverse_open(&rev[i], tok, c.reverse, c.n_reverse) != 0) goto done;
    seqs[i].on_token = reverse_stop;
    seqs[i].ctx = &rev[i];
  }
  mkc_batch_stats st;
  if (mkc_batch_run(p, seqs, n, &o, &st) != 0) goto done;
  int failed = 0;
  for (int i = 0; i < n; i++) {
    print_completion(tok, &seqs[i]);
    if (opt->logprobs > 0) print_logprobs(tok, &seqs[i], c.batch_file, i + 1, opt->logprobs);
    if (seqs[i].stopped == MKC_BATCH_FAILED && !failed++)
      fprintf(stderr, "mkc: error: run --batch: %s:%d: its JSON could not go on (above)\n",
              c.batch_file, i + 1);
  }
  fflush(stdout);
  double mib = 1024.0 * 1024.0;
  char more[200];
  mkc_cli_more_words(&c, more, sizeof more);
  fprintf(stderr,
          "mkc: run --batch: %d prompts on %d slots (%s), %s %s: generated %ld tokens in %.3f s "
          "(%.1f tok/s aggregate; decode steps: %ld tokens in %.3f s, %.1f tok/s over %d steps) "
          "over %d steps (%d of them a long prompt's chunk alone), at "
          "most %d slots busy; drafted %ld, accepted %ld; %s%s; prompt positions shared: %ld; KV: "
          "at most %.3f MiB held of a pool of %.3f MiB (%d pages of %d positions; whole caches "
          "would be %.3f MiB)\n",
          n, slots, mkc_slots_describe(p), c.model_path ? "model" : "preset",
          c.model_path ? c.model_path : m.g.preset, st.generated, st.seconds,
          st.seconds > 0 ? st.generated / st.seconds : 0.0, st.decode_tokens, st.decode_seconds,
          st.decode_seconds > 0 ? st.decode_tokens / st.decode_seconds : 0.0, st.decode_steps,
          st.steps, st.solo_steps, st.most_busy, st.drafted, st.accepted,
          opt->temp > 0 ? "sampled" : "greedy", more, st.shared, st.kv_peak / mib,
          mkc_slots_kv_total(p) / mib, m.g.kv_pages, MKC_KV_PAGE,
          mkc_slots_kv_total(p) / mib / m.g.kv_pages * m.g.slot_pages * slots);
  if (c.draft_adaptive && st.depth_hi >= st.depth_lo)
    fprintf(stderr, "mkc: run --batch: adaptive depth %d..%d (each slot its own)\n", st.depth_lo,
            st.depth_hi);
  if (ds.pool)
    fprintf(stderr, "mkc: run --batch: drafts from %s: %ld steps of its own slot kernel\n",
            mkc_slot_drafter_name(ds.pool), mkc_slot_drafter_steps(ds.pool));
  if (c.context_shift) {
    long shifts = 0, fed = 0;
    for (int i = 0; i < n; i++) shifts += seqs[i].shifts, fed += seqs[i].shift_fed;
    fprintf(stderr, "mkc: run --batch: context shifts: %ld (%ld tokens fed again)\n", shifts, fed);
  }
  rc = failed ? 1 : 0;
  if (stage_ns && st.stage_steps > 0) { /* the table after the completions, on stdout */
    long mid = 0; /* the sequences' mean midpoint: where attention's bytes are counted */
    for (int i = 0; i < n; i++) mid += seqs[i].n_prompt + seqs[i].n_out / 2;
    printf("\nStages of the decode steps, block 0's clock over %d steps (%s); bytes for %d slots "
           "x %d inputs at position %ld, the sequences' mean midpoint:\n\n",
           st.stage_steps, mkc_slots_describe(p), st.most_busy, k + 1, mid / n);
    mkc_stage_col col = {"us", stage_ns, st.stage_steps};
    if (mkc_stages_print(&m.g, m.src.source, st.most_busy * (k + 1), (int)(mid / n), &col, 1,
                         -1.0) != 0)
      rc = 1;
  } else if (stage_ns) {
    fprintf(stderr, "mkc: error: run --batch --stages: no decode step ran (only prompts)\n");
    rc = 1;
  }
done:
  for (int i = 0; rev && i < n; i++) mkc_reverse_close(&rev[i]);
  free(rev);
  free(stage_ns);
  free(stops);
  mkc_slots_close(p);
  if (seqs) {
    mkc_batch_free(seqs, n);
    for (int i = 0; i < n; i++) {
      free((void *)seqs[i].prompt);
      mkc_constraint_close(seqs[i].constraint);
    }
    free(seqs);
  }
  mkc_constraint_close(json);
  mkc_format_rules_free(&rules);
  mkc_draft_source_close(&ds);
  mkc_loaded_close(&m);
  return rc;
}
