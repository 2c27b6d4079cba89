/* mkc imatrix: an importance matrix of a model over a text, as llama.cpp's llama-imatrix
 * computes it, for `mkc quantize --imatrix`: the text's tokens in chunks of the context, each
 * read from an empty cache with its first token BOS (where the model adds one); every matmul of
 * a layer's weight adds its input's squares, column by column, and counts its inputs (an
 * expert's matrix, a slice of its layer's _exps tensor, only those of the inputs that chose it,
 * and the router all of them). Runs on
 * the kernel generated for it (mkc_gen_opts.imatrix: each matmul stage sums its input's squares
 * in scratch, taken after each chunk), or with --backend ref on the reference executor
 * (exec/reference.h: every value in double), a thread a chunk at a time. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunk_score.h"
#include "cli.h"
#include "commands.h"
#include "exec/imatrix_acc.h"
#include "exec/reference.h"
#include "exec/session.h"
#include "imatrix_stats.h"
#include "interrupt.h"
#include "kld.h"
#include "loaded.h"
#include "tokenizer/tokenizer.h"
#include "util/clock.h"
#include "util/mapped.h"

static const char USAGE[] =
    "usage: mkc imatrix -m MODEL -f FILE [-o imatrix.gguf] [-c N] [--chunks N]\n"
    "       mkc imatrix --in-file F [--in-file F...] [-o imatrix.gguf] [-c N]\n"
    "       mkc imatrix --show-statistics --in-file F [-c N]\n"
    "\n"
    "The importance matrix of MODEL over FILE's text, as llama.cpp's llama-imatrix\n"
    "computes it: the text's tokens in chunks of N, each read from an empty cache\n"
    "with its first token BOS (where the model adds one); each layer's matrices\n"
    "sum the squares of their inputs, column by column (each expert those of the\n"
    "inputs routed to it). `mkc quantize --imatrix`\n"
    "(and llama-quantize) weigh each matrix's error by it. Computed by a kernel\n"
    "whose matmul stages sum their inputs' squares as they read them. As\n"
    "llama-imatrix does, it prints the perplexity of the chunks read so far after\n"
    "each ([N]PPL,) and at the end, each chunk's second half scored (in steps of\n"
    "5, for their logits), as mkc perplexity scores it.\n"
    "  -m, --model MODEL      GGUF file, Hugging Face folder, or a model's file name\n"
    "                         in the model directory\n"
    "  -f FILE                the text (control tokens' spellings are text)\n"
    "  --parse-special        ... but for these: each control token's spelling in\n"
    "                         the text is that token\n"
    "  -o FILE                where the matrix goes (default imatrix.gguf)\n"
    "  --output-format F      gguf (the default: llama-imatrix's own) or dat (its\n"
    "                         older format)\n"
    "  -c, --ctx N            each chunk's tokens (default 512); the text must hold\n"
    "                         two chunks at least\n"
    "  --chunks N             at most N chunks (default: all the text holds)\n"
    "  --process-output       output.weight's inputs too (llama-quantize leaves\n"
    "                         the output's type to its own rules)\n"
    "  --no-ppl               no perplexity: each chunk read in prompt steps alone\n"
    "                         (SmolLM2 on the cpu backend: 39 % less time); --ppl:\n"
    "                         the estimates (the default)\n"
    "  --backend B            auto (default: cuda where a GPU answers, else cpu),\n"
    "                         cuda, cpu, or ref: the reference executor, in double,\n"
    "                         a chunk a thread (slow: a model's weights read once a\n"
    "                         token by each thread; for small models and short texts)\n"
    "  --ubatch N, -ub N      the kernel's prompt steps take up to N tokens\n"
    "  -t, --threads N        the cpu backend's threads; ref: chunks read at once\n"
    "                         (default: every core)\n"
    "  --kv-dtype T           bf16 (default), f16 or f32: the cache's values\n"
    "  --lora FILE, --lora-scaled FILE:SCALE: as for run\n"
    "  --in-file F            a matrix (GGUF or .dat) added in, each time given; with\n"
    "                         no -f the files are combined into -o, and no model read\n"
    "  --chunk N              the text's first N chunks skipped\n"
    "  --output-frequency N   -o written every N chunks too (default 10; kernel)\n"
    "  --save-frequency N     a copy, -o.at_CHUNKS, every N chunks (kernel)\n"
    "  --show-statistics      llama-imatrix's report on the one --in-file matrix, on\n"
    "                         stdout: per matrix its columns' mean squared inputs'\n"
    "                         sum, extremes, mean and spread, the share that saw\n"
    "                         any, their entropy, the share over one deviation\n"
    "                         above the mean (ZD), the cosine with the layer\n"
    "                         before's; then per layer, weighted by the columns.\n"
    "                         -c scales a .dat's means back to sums\n"
    "The chunk count recorded is the most inputs a matrix met over -c (default 512),\n"
    "as llama-imatrix counts it, the --in-file matrices' included. Ctrl-C ends the\n"
    "run after the chunk being read and writes the matrix of the chunks read (exit\n"
    "130).\n";

/* The perplexity estimate (llama-imatrix's): positions `from` to the chunk's last but one
 * scored, each chunk's sums kept until those before it are in (the reference's threads end
 * chunks out of order), then added and the running estimate printed. */
typedef struct ppl_sums {
  int from, rows, n_chunks, printed; /* rows: the positions a chunk scores */
  double *nll, *nll2, sum, sum2;
  unsigned char *done;
  long count;
} ppl_sums;

/* The sums of one chunk's scored positions (mkc_chunk_row_fn's ctx). */
typedef struct chunk_nll {
  int vocab;
  double nll, nll2;
} chunk_nll;

static int add_nll(void *ctx, const float *logits, int next) {
  chunk_nll *c = ctx;
  double v = mkc_token_nll(logits, c->vocab, next);
  c->nll += v, c->nll2 += v * v;
  return 0;
}

/* Room for n chunks' sums, positions `from` to n_ctx - 2 scored (from n_ctx: none). 0, or -1
 * after a message. */
static int ppl_open(ppl_sums *p, int n, int from, int n_ctx) {
  *p = (ppl_sums){.from = from, .rows = n_ctx - 1 - from, .n_chunks = n};
  p->nll = calloc((size_t)n, sizeof *p->nll);
  p->nll2 = calloc((size_t)n, sizeof *p->nll2);
  p->done = calloc((size_t)n, 1);
  if (p->nll && p->nll2 && p->done) return 0;
  fprintf(stderr, "mkc: error: imatrix: out of memory\n");
  return -1;
}

static void ppl_close(ppl_sums *p) { free(p->nll), free(p->nll2), free(p->done); }

/* Chunk i's sums; the running estimate after each chunk now in order, on stdout as
 * llama-imatrix prints it. */
static void ppl_add(ppl_sums *p, int i, const chunk_nll *c) {
  p->nll[i] = c->nll, p->nll2[i] = c->nll2, p->done[i] = 1;
  for (; p->printed < p->n_chunks && p->done[p->printed]; p->printed++) {
    p->sum += p->nll[p->printed], p->sum2 += p->nll2[p->printed], p->count += p->rows;
    mkc_ppl_print_running(stdout, p->printed + 1, p->sum, p->count);
    fflush(stdout);
  }
}

/* One thread's chunks: first, first + step, ... below n_chunks. */
typedef struct worker {
  const mkc_graph *g;
  const mkc_weights *w;
  const struct mkc_model_desc *desc;
  const int *toks;
  int n_ctx, bos, first, step, n_chunks, output;
  ppl_sums *ppl; /* shared, under lock */
  mkc_imatrix_acc acc;
  int rc;
  int *done; /* chunks finished by every worker, for the progress line */
  pthread_mutex_t *lock;
  double t0;
} worker;

static void *run_worker(void *arg) {
  worker *k = arg;
  int vocab = k->g->vocab, from = k->ppl->from;
  mkc_ref *r = mkc_ref_open(k->g, k->w);
  double *logits = malloc((size_t)vocab * sizeof *logits);
  float *row = malloc((size_t)vocab * sizeof *row);
  if (!logits || !row) fprintf(stderr, "mkc: error: imatrix: out of memory\n");
  if (!r || !logits || !row || mkc_imatrix_acc_open(&k->acc, k->g, k->output, k->desc) != 0)
    k->rc = -1;
  for (int i = k->first; !k->rc && !mkc_interrupted && i < k->n_chunks; i += k->step) {
    mkc_ref_seek(r, 0); /* an empty cache */
    const int *chunk = k->toks + (size_t)i * k->n_ctx;
    chunk_nll sums = {.vocab = vocab};
    for (int p = 0; p < k->n_ctx && !k->rc; p++) {
      int tok = p == 0 && k->bos >= 0 ? k->bos : chunk[p];
      int scored = p >= from && p < k->n_ctx - 1; /* else no logits: the LM head's time saved */
      if (mkc_ref_step(r, tok, scored ? logits : NULL) != 0) {
        k->rc = -1;
        break;
      }
      mkc_imatrix_acc_add(&k->acc, r);
      if (scored) {
        for (int v = 0; v < vocab; v++) row[v] = (float)logits[v];
        add_nll(&sums, row, chunk[p + 1]);
      }
    }
    if (k->rc) break;
    pthread_mutex_lock(k->lock);
    if (from < k->n_ctx) ppl_add(k->ppl, i, &sums);
    int done = ++*k->done;
    double s = mkc_seconds() - k->t0;
    fprintf(stderr, "mkc: imatrix: %d of %d chunks, %.1f s (about %.1f minutes left)\n", done,
            k->n_chunks, s, s / done * (k->n_chunks - done) / 60);
    pthread_mutex_unlock(k->lock);
  }
  if (r) mkc_ref_close(r);
  free(logits);
  free(row);
  return NULL;
}

static int check_flags(const mkc_cli *c) {
  int rc = mkc_cli_check_model(c, "imatrix");
  if (rc) return rc;
  if (c->show_statistics && (c->n_in_files != 1 || c->prompt_file))
    return mkc_cli_usage_error("%s", "imatrix: --show-statistics reports on one matrix, given "
                                     "by --in-file, and reads no text (no -f)");
  if (!c->prompt_file && !c->n_in_files)
    return mkc_cli_usage_error("%s", "imatrix: -f FILE (the text) is required, or --in-file "
                                     "matrices to combine");
  if (c->prompt_file && !c->model_path)
    return mkc_cli_usage_error("%s", "imatrix: -m MODEL is required");
  if (c->ppl && c->no_ppl) return mkc_cli_usage_error("%s", "imatrix: --ppl or --no-ppl, not both");
  if (c->n_chunks == 0 || c->n_chunks < -1)
    return mkc_cli_usage_error("%s", "imatrix: --chunks N needs N >= 1 (-1: all)");
  if (c->output_format && strcmp(c->output_format, "gguf") != 0 &&
      strcmp(c->output_format, "dat") != 0)
    return mkc_cli_usage_error("imatrix: --output-format: expected gguf or dat, got '%s'",
                               c->output_format);
  return 0;
}

/* Where the matrix goes and what it records (llama-imatrix's): the --in-file matrices' datasets,
 * then the text's; the chunks, the most inputs a matrix met over the chunk size. */
typedef struct output {
  const char *path;
  int legacy, chunk_size, out_freq, save_freq;
  const char **datasets;
  size_t n_datasets;
  const char *text; /* -f, or NULL */
} output;

/* Writes acc to path (NULL: o->path). 0, or -1 after a message. */
static int write_matrix(const output *o, const mkc_imatrix_acc *acc, const char *path) {
  long chunks = mkc_imatrix_acc_most(acc) / o->chunk_size;
  mkc_imatrix_meta meta = {.datasets = o->datasets,
                           .n_datasets = o->n_datasets,
                           /* a .dat names one: the text, else the first --in-file's */
                           .dat_dataset = o->text         ? o->text
                                          : o->n_datasets ? o->datasets[0]
                                                          : NULL,
                           .chunks = chunks > INT32_MAX ? INT32_MAX : (int)chunks,
                           .chunk_size = o->chunk_size};
  return mkc_imatrix_write(path ? path : o->path, &acc->s, o->legacy, &meta);
}

/* After the chunk that made `chunks` (the --in-file ones too): -o every --output-frequency (but
 * after the last, which writes it anyway), a copy every --save-frequency. 0, or -1 after a
 * message. */
static int write_often(const output *o, const mkc_imatrix_acc *acc, long chunks, int last) {
  if (!last && chunks % o->out_freq == 0) {
    if (write_matrix(o, acc, NULL) != 0) return -1;
    fprintf(stderr, "mkc: imatrix: %ld chunks in, written to %s\n", chunks, o->path);
  }
  if (o->save_freq && chunks % o->save_freq == 0) {
    char at[4200];
    snprintf(at, sizeof at, "%s.at_%ld", o->path, chunks);
    if (write_matrix(o, acc, at) != 0) return -1;
    fprintf(stderr, "mkc: imatrix: %ld chunks in, a copy in %s\n", chunks, at);
  }
  return 0;
}

/* The reference's chunks, a thread each at a time, added into acc. 0, or -1 after a message. */
static int run_ref(const mkc_cli *c, mkc_loaded_model *m, const int *toks, int n_ctx, int chunks,
                   int bos, mkc_imatrix_acc *acc, ppl_sums *ppl) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = c->blocks > 0 ? c->blocks : cores < 1 ? 1 : (int)cores;
  if (threads > chunks) threads = chunks;
  int done_chunks = 0, started = 0, rc = -1;
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  worker *k = calloc((size_t)threads, sizeof *k);
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  if (!k || !tid) {
    fprintf(stderr, "mkc: error: imatrix: out of memory\n");
    goto done;
  }
  fprintf(stderr, "mkc: imatrix: %d chunks of %d, on the reference executor, %d threads\n", chunks,
          n_ctx, threads);
  double t0 = mkc_seconds();
  for (int t = 0; t < threads; t++) {
    k[t] = (worker){.g = &m->g,
                    .w = &m->w,
                    .desc = &m->file.desc,
                    .toks = toks,
                    .n_ctx = n_ctx,
                    .bos = bos,
                    .first = t,
                    .step = threads,
                    .n_chunks = chunks,
                    .output = c->process_output,
                    .ppl = ppl,
                    .done = &done_chunks,
                    .lock = &lock,
                    .t0 = t0};
    if (pthread_create(&tid[t], NULL, run_worker, &k[t]) != 0) break;
    started++;
  }
  for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
  int failed = started < threads;
  for (int t = 0; t < started; t++) failed |= k[t].rc != 0;
  if (started < threads) fprintf(stderr, "mkc: error: imatrix: no thread to start\n");
  if (!failed) {
    for (int t = 0; t < threads; t++) mkc_imatrix_acc_merge(acc, &k[t].acc);
    rc = 0;
  }
done:
  for (int t = 0; k && t < threads; t++) mkc_imatrix_acc_free(&k[t].acc);
  free(k);
  free(tid);
  return rc;
}

/* The chunks on the imatrix kernel, one after another: each fed from an empty cache, in prompt
 * steps up to the first scored position, then in steps of the kernel's inputs that give each
 * one's logits (mkc_chunk_score), the sums its steps added then taken (mkc_session_imatrix) into
 * acc, and -o written as often as asked (write_often). 0, or -1 after a message. */
static int run_kernel(mkc_loaded_model *m, int *toks, int n_ctx, int chunks, int bos,
                      mkc_imatrix_acc *acc, const output *o, ppl_sums *ppl) {
  float *sums = malloc((m->g.imatrix_floats ? m->g.imatrix_floats : 1) * sizeof *sums);
  if (!sums) {
    fprintf(stderr, "mkc: error: imatrix: out of memory\n");
    return -1;
  }
  fprintf(stderr, "mkc: imatrix: %d chunks of %d, on the %s backend, %d a step", chunks, n_ctx,
          mkc_session_backend(m->s), mkc_session_prompt_inputs(m->s, ppl->from));
  if (ppl->from < n_ctx)
    fprintf(stderr, " to position %d, then %d a step (the last %d of each scored)\n", ppl->from,
            m->g.t_max, ppl->rows);
  else
    fprintf(stderr, "\n");
  int rc = -1;
  double t0 = mkc_seconds();
  for (int i = 0; i < chunks; i++) {
    int *chunk = toks + (size_t)i * n_ctx, was = chunk[0];
    if (bos >= 0) chunk[0] = bos;
    chunk_nll nll = {.vocab = m->g.vocab};
    int failed = mkc_chunk_score(m->s, m->g.t_max, chunk, n_ctx, n_ctx, ppl->from, "imatrix",
                                 add_nll, &nll) != 0;
    chunk[0] = was;
    if (failed || mkc_session_imatrix(m->s, sums) != 0 ||
        mkc_imatrix_acc_add_kernel(acc, sums, n_ctx) != 0)
      goto done;
    if (ppl->from < n_ctx) ppl_add(ppl, i, &nll);
    double s = mkc_seconds() - t0;
    fprintf(stderr, "mkc: imatrix: %d of %d chunks, %.1f s (about %.1f minutes left)\n", i + 1,
            chunks, s, s / (i + 1) * (chunks - i - 1) / 60);
    mkc_mapped_test_pause("MKC_TEST_PAUSE_AFTER_CHUNK");
    if (mkc_interrupted) break; /* Ctrl-C: the chunks read so far are written */
    if (write_often(o, acc, mkc_imatrix_acc_most(acc) / o->chunk_size, i + 1 == chunks) != 0)
      goto done;
  }
  rc = 0;
done:
  free(sums);
  return rc;
}

/* A copy of name as o's next dataset. 0, or -1 after a message. */
static int add_dataset(output *o, const char *name) {
  const char **sets = realloc(o->datasets, (o->n_datasets + 1) * sizeof *sets);
  char *copy = strdup(name);
  if (sets) o->datasets = sets;
  if (!sets || !copy) {
    free(copy);
    fprintf(stderr, "mkc: error: imatrix: out of memory\n");
    return -1;
  }
  o->datasets[o->n_datasets++] = copy;
  return 0;
}

/* The --in-file matrices into acc, their datasets into o. 0, or -1 after a message. */
static int load_in_files(const mkc_cli *c, mkc_imatrix_acc *acc, output *o) {
  for (int i = 0; i < c->n_in_files; i++) {
    mkc_imatrix im;
    if (mkc_imatrix_load(c->in_files[i], &im) != 0) return -1;
    int rc = mkc_imatrix_acc_load(acc, &im, o->chunk_size);
    for (size_t k = 0; !rc && k < im.n_datasets; k++) rc = add_dataset(o, im.datasets[k]);
    if (!rc) fprintf(stderr, "mkc: imatrix: %s: %zu matrices added in\n", c->in_files[i], im.n);
    mkc_imatrix_free(&im);
    if (rc) return -1;
  }
  return 0;
}

int mkc_cmd_imatrix(int argc, char **argv) {
  /* steps of 5 for the scored positions' logits: T <= 8 (perplexity's) spills on sm_90 */
  mkc_cli c = {.usage = USAGE, .n_chunks = -1, .draft_max = 4};
  int rc = mkc_cli_parse(
      argc, argv, 2,
      "-m -f -o --ctx --chunks --kv-dtype --blocks --lora --lora-scaled "
      "--output-format --process-output --backend --ubatch --in-file --chunk "
      "--output-frequency --save-frequency --no-ppl --ppl --show-statistics --parse-special",
      0, &c);
  if (rc == MKC_CLI_HELP) return 0;
  if (rc || (rc = check_flags(&c))) return rc;
  if (c.max_ctx == 0) c.max_ctx = 512; /* llama-imatrix's default chunk */
  if (c.no_ppl) c.draft_max = 0;       /* prompt steps alone: the smaller kernel */
  int ref = c.backend && strcmp(c.backend, "ref") == 0;
  c.imatrix_kernel = !ref;
  output o = {.path = c.out ? c.out : "imatrix.gguf",
              .legacy = c.output_format && strcmp(c.output_format, "dat") == 0,
              .chunk_size = c.max_ctx,
              .out_freq = c.out_freq ? c.out_freq : 10,
              .save_freq = c.save_freq,
              .text = c.prompt_file};
  mkc_loaded_model m;
  memset(&m, 0, sizeof m);
  mkc_imatrix_acc acc = {0};
  ppl_sums ppl = {0};
  int n = 0, *toks = NULL;
  rc = 1;
  double t0 = mkc_seconds();
  if (c.show_statistics) { /* the one --in-file matrix's report, no model read */
    if (c.model_path)
      fprintf(stderr, "mkc: imatrix: --show-statistics: %s is not read\n", c.model_path);
    mkc_imatrix im;
    if (mkc_imatrix_load(c.in_files[0], &im) != 0) goto done;
    rc = mkc_imatrix_show_statistics(&im, c.in_files[0], c.max_ctx, stdout) != 0;
    mkc_imatrix_free(&im);
    goto done;
  }
  if (!c.prompt_file) { /* the --in-file matrices combined, no model read */
    if (c.model_path) fprintf(stderr, "mkc: imatrix: no -f: %s is not read\n", c.model_path);
    if (mkc_imatrix_acc_open(&acc, NULL, 0, NULL) != 0 || load_in_files(&c, &acc, &o) != 0 ||
        write_matrix(&o, &acc, NULL) != 0)
      goto done;
    fprintf(stderr, "mkc: imatrix: %zu matrices of %d files written to %s\n", acc.s.n, c.n_in_files,
            o.path);
    rc = 0;
    goto done;
  }
  if (mkc_loaded_plan(&c, &m) != 0) goto done;
  const mkc_tokenizer *tok = m.file.tok;
  if (!tok) {
    fprintf(stderr, "mkc: error: imatrix: %s has no tokenizer to read the text with\n",
            c.model_path);
    goto done;
  }
  char *text = mkc_cli_prompt_text(&c);
  n = text ? mkc_tokenizer_encode(tok, text, strlen(text), mkc_tokenizer_add_bos(tok),
                                  c.parse_special, &toks)
           : -1;
  free(text);
  if (n < 0) goto done;
  int n_ctx = m.g.max_ctx, skip = c.i_chunk;
  if (n - (long)skip * n_ctx < 2L * n_ctx) {
    if (skip)
      fprintf(stderr,
              "mkc: error: imatrix: the text is %d tokens; after --chunk %d (%ld tokens) a "
              "context of %d needs %d more at least (two chunks)\n",
              n, skip, (long)skip * n_ctx, n_ctx, 2 * n_ctx);
    else
      fprintf(stderr,
              "mkc: error: imatrix: the text is %d tokens; a context of %d needs %d at least "
              "(two chunks; a smaller -c)\n",
              n, n_ctx, 2 * n_ctx);
    goto done;
  }
  int chunks = (int)((n - (long)skip * n_ctx) / n_ctx);
  if (c.n_chunks > 0 && c.n_chunks < chunks) chunks = c.n_chunks;
  /* the second half of each chunk scored but its last token, as llama-imatrix scores it */
  if (mkc_imatrix_acc_open(&acc, &m.g, c.process_output, &m.file.desc) != 0 ||
      load_in_files(&c, &acc, &o) != 0 ||
      ppl_open(&ppl, chunks, c.no_ppl || n_ctx < 3 ? n_ctx : n_ctx / 2, n_ctx) != 0)
    goto done;
  if (!c.no_ppl && n_ctx < 3)
    fprintf(stderr, "mkc: imatrix: -c %d scores nothing (no perplexity estimate)\n", n_ctx);
  if (add_dataset(&o, c.prompt_file) != 0) goto done;
  if (ref ? mkc_loaded_weights(&c, &m) != 0
          : mkc_loaded_cpu_guard(&c, &m, (double)chunks * n_ctx, "imatrix") != 0 ||
                mkc_loaded_start(&c, &m) != 0)
    goto done;
  int bos = mkc_tokenizer_add_bos(tok) ? mkc_tokenizer_bos(tok) : -1;
  if (skip) fprintf(stderr, "mkc: imatrix: the first %d chunks skipped\n", skip);
  fprintf(stderr, "mkc: imatrix: %d tokens\n", n);
  int *first = toks + (size_t)skip * n_ctx;
  mkc_interrupt_install(); /* Ctrl-C ends after a chunk, the matrix so far written */
  if ((ref ? run_ref(&c, &m, first, n_ctx, chunks, bos, &acc, &ppl)
           : run_kernel(&m, first, n_ctx, chunks, bos, &acc, &o, &ppl)) != 0) {
    if (ppl.printed) printf("\n"); /* the estimates' line ends */
    goto done;
  }
  if (ppl.count) mkc_ppl_print_final(stdout, ppl.sum, ppl.sum2, ppl.count);
  if (ppl.count && mkc_interrupted) /* the reference's later chunks may be in, not an earlier */
    fprintf(stderr, "mkc: imatrix: the estimate is of the first %d chunks\n", ppl.printed);
  if (!acc.s.n) {
    fprintf(stderr, "mkc: error: imatrix: %s has no layer matrices to collect\n", c.model_path);
  } else if (write_matrix(&o, &acc, NULL) == 0) {
    if (mkc_interrupted)
      fprintf(stderr, "\nmkc: imatrix: interrupted: %ld chunks written to %s\n",
              mkc_imatrix_acc_most(&acc) / o.chunk_size, o.path);
    else
      fprintf(stderr, "mkc: imatrix: %zu matrices over %d tokens written to %s in %.1f s\n",
              acc.s.n, chunks * n_ctx, o.path, mkc_seconds() - t0);
    rc = mkc_interrupted ? 130 : 0;
  }
done:
  ppl_close(&ppl);
  mkc_imatrix_acc_free(&acc);
  for (size_t i = 0; i < o.n_datasets; i++) free((char *)o.datasets[i]);
  free(o.datasets);
  free(toks);
  mkc_loaded_close(&m);
  return rc;
}
