/* mkc perplexity: how well a model predicts a text, as llama.cpp's
 * llama-perplexity measures it (a quantization's cost, an adapter's effect):
 * the text's tokens in chunks of the context, each read from a fresh cache
 * (its first token BOS where the model adds one), and each token of a
 * chunk's second half scored by the log-probability the logits before it
 * give it; the perplexity is e to the mean negative log-likelihood. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "choice_score.h"
#include "chunk_score.h"
#include "cli.h"
#include "commands.h"
#include "interrupt.h"
#include "formats/logits_file.h"
#include "kld.h"
#include "loaded.h"
#include "tokenizer/tokenizer.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/mapped.h"

static const char USAGE[] =
    "usage: mkc perplexity -m MODEL -f FILE [-c N] [--chunks N] [options]\n"
    "       mkc perplexity -m MODEL --kl-divergence --kl-divergence-base FILE\n"
    "       mkc perplexity -m MODEL --hellaswag|--winogrande|--multiple-choice\n"
    "                      -f DATASET\n"
    "       mkc perplexity --preset P --random-weights SEED --prompt-ids IDS -c N\n"
    "\n"
    "The text's perplexity, as llama.cpp's llama-perplexity computes it: the\n"
    "tokens (BOS first where the model adds one) in chunks of N, each read from\n"
    "an empty cache with its first token BOS, the second half of each scored.\n"
    "Prints the running estimate after each chunk ([1]9.1234,[2]...) and the\n"
    "final one, PPL = X +/- the standard error, on stdout.\n"
    "  -m, --model MODEL      GGUF file, Hugging Face folder, or a model's file name\n"
    "                         in the model directory\n"
    "  -f FILE, -p TEXT       the text (control tokens' spellings are text)\n"
    "  --prompt-ids IDS       the tokens themselves (1,2,3), the one form --preset\n"
    "                         takes\n"
    "  -c, --ctx N            each chunk's tokens (default: the model's context,\n"
    "                         capped at 4096); the text must hold two chunks at least\n"
    "  --chunks N             at most N chunks (default: all the text holds)\n"
    "  --ppl-stride S         windows of N that start S apart, the last S tokens of\n"
    "                         each scored, no BOS put first (llama-perplexity's\n"
    "                         windows, with -b no larger than its -c, are that -c\n"
    "                         plus S / 2 rounded up to 256: give that as -c for its\n"
    "                         numbers)\n"
    "  --ppl-output-type 1    a line a chunk: its start, the estimate (and, without\n"
    "                         a stride, the mean NLL and its standard error)\n"
    "  --draft-max K          the scored half goes K + 1 tokens a step (default 7)\n"
    "  --kl-divergence-base FILE  also write each scored position's log-probabilities\n"
    "                         to FILE (llama-perplexity's file; --save-all-logits)\n"
    "  --kl-divergence        compare with FILE's instead (its text, its chunks): the\n"
    "                         two perplexities, the KL divergence, the difference in\n"
    "                         the text's tokens' probabilities, the same top token\n"
    "  --hellaswag            llama-perplexity's HellaSwag score of -f FILE (its\n"
    "                         hellaswag_val_full.txt: 6 lines a task)\n"
    "  --hellaswag-tasks N    N of its tasks, chosen as llama-perplexity chooses them\n"
    "                         (default 400)\n"
    "  --winogrande           llama-perplexity's Winogrande score of -f FILE (a CSV:\n"
    "                         INDEX,SENTENCE,CHOICE1,CHOICE2,ANSWER)\n"
    "  --winogrande-tasks N   N of its tasks, chosen as llama-perplexity chooses them\n"
    "                         (default 0: all, in order)\n"
    "  --multiple-choice      llama-perplexity's multiple-choice score of -f FILE\n"
    "                         (its binary ARC, MMLU or TruthfulQA files)\n"
    "  --multiple-choice-tasks N  N of its tasks, chosen as llama-perplexity chooses\n"
    "                         them (default 0: all, in order)\n"
    "  --backend B, -ngl N, --kv-dtype T, --ubatch N, -t/--threads N, --dequant,\n"
    "  --lora FILE, --lora-scaled FILE:SCALE: as for run\n";

static int check_flags(const mkc_cli *c) {
  int choice = c->hellaswag + c->winogrande + c->multiple_choice;
  if (choice + (c->kl_base || c->kl_divergence) + !!c->ppl_stride > 1)
    return mkc_cli_usage_error("%s", "perplexity: --hellaswag, --winogrande, --multiple-choice, "
                                     "--kl-divergence(-base) and --ppl-stride are different "
                                     "measures: one at a time");
  if (choice && !c->prompt_file)
    return mkc_cli_usage_error("%s", "perplexity: --hellaswag, --winogrande and --multiple-choice "
                                     "read their tasks from -f FILE: give it");
  if (c->kl_divergence && !c->kl_base)
    return mkc_cli_usage_error("%s", "perplexity: --kl-divergence compares with the "
                                     "log-probabilities of --kl-divergence-base FILE: give it");
  if (c->kl_divergence && (c->prompt || c->prompt_file || c->prompt_ids))
    return mkc_cli_usage_error("%s", "perplexity: --kl-divergence reads its text from "
                                     "--kl-divergence-base's file: give no -f, -p or --prompt-ids");
  if (!c->kl_divergence && !!c->prompt + !!c->prompt_file + !!c->prompt_ids != 1)
    return mkc_cli_usage_error("%s", "perplexity: give the text as -f FILE, -p TEXT or "
                                     "--prompt-ids: one of them");
  if (c->n_chunks == 0 || c->n_chunks < -1)
    return mkc_cli_usage_error("%s", "perplexity: --chunks N needs N >= 1 (-1: all)");
  int rc = mkc_cli_check_model(c, "perplexity");
  if (rc || c->model_path) return rc;
  if (c->prompt || c->prompt_file)
    return mkc_cli_usage_error("%s", "perplexity: a text needs a model with a tokenizer (-m)");
  if (!c->preset) return mkc_cli_usage_error("%s", "perplexity: -m FILE or --preset is required");
  if (!c->have_seed)
    return mkc_cli_usage_error("%s", "perplexity: --random-weights SEED is required without -m");
  return 0;
}

/* The text's tokens, BOS first where the model adds one; NULL after a message. */
static int *text_tokens(const mkc_cli *c, const mkc_loaded_model *m, int *n) {
  if (c->prompt_ids) {
    int *ids = mkc_parse_ids(c->prompt_ids, m->g.vocab, n, "--prompt-ids");
    if (!ids) *n = -1; /* said why: not an empty text */
    return ids;
  }
  const mkc_tokenizer *tok = m->file.tok;
  if (!tok) {
    fprintf(stderr, "mkc: error: %s has no tokenizer: give the text as --prompt-ids\n",
            c->model_path);
    return NULL;
  }
  char *text = mkc_cli_prompt_text(c);
  int *ids = NULL;
  *n = text ? mkc_tokenizer_encode(tok, text, strlen(text), mkc_tokenizer_add_bos(tok), 0, &ids)
            : -1;
  free(text);
  return *n < 0 ? NULL : ids;
}

/* Where each scored position goes: the sums of its negative log-likelihood; with
 * --kl-divergence-base, its row of log-probabilities written to the file (save), or read from
 * it and compared with (kl). */
typedef struct scorer {
  int vocab;
  double nll, nll2;
  FILE *save, *base; /* at most one */
  const char *path;  /* the file's, for messages */
  int chunk;         /* 1-based, for messages */
  uint16_t *row;
  size_t row_len;
  mkc_kld kld;
} scorer;

/* One scored position (mkc_chunk_row_fn): the logits before the text's token tok. 0, or -1
 * after a message. */
static int score_row(void *ctx, const float *logits, int tok) {
  scorer *sc = ctx;
  if (sc->base) {
    if (fread(sc->row, sizeof *sc->row, sc->row_len, sc->base) != sc->row_len)
      return mkc_error_in(sc->path, "chunk %d's log-probabilities cut short (changed while read?)",
                          sc->chunk);
    mkc_kld_add(&sc->kld, logits, sc->vocab, sc->row, tok);
    return 0;
  }
  double v;
  if (sc->save) {
    v = mkc_logits_row_encode(logits, sc->vocab, tok, sc->row);
    if (fwrite(sc->row, sizeof *sc->row, sc->row_len, sc->save) != sc->row_len)
      return mkc_error_in(sc->path, "cannot write: %s", strerror(errno));
  } else {
    v = mkc_token_nll(logits, sc->vocab, tok);
  }
  sc->nll += v, sc->nll2 += v * v;
  return 0;
}

/* The running estimates' line after chunk `chunk` (1-based) starting at token `start`, and the
 * closing one. */
static void print_chunk(const mkc_cli *c, const scorer *sc, int chunk, int start, long count) {
  double mean = sc->nll / count, var = sc->nll2 / count - mean * mean;
  if (sc->base) {
    if (chunk == 1) mkc_kld_print_head(stdout);
    mkc_kld_print_chunk(&sc->kld, chunk, stdout);
  } else if (c->ppl_output_type == 0) {
    mkc_ppl_print_running(stdout, chunk, sc->nll, count);
  } else if (c->ppl_stride) {
    printf("%8d  %.4f\n", start, exp(mean));
  } else { /* llama-perplexity's: the mean NLL and its standard error */
    printf("%8d  %.4f  %f  %f\n", start, exp(mean), mean,
           var > 0 && count > 1 ? sqrt(var / (count - 1)) : var);
  }
  fflush(stdout);
}

static void print_final(scorer *sc, long count) {
  if (sc->base) {
    printf("\n");
    mkc_kld_print_report(&sc->kld, stdout);
    return;
  }
  mkc_ppl_print_final(stdout, sc->nll, sc->nll2, count);
}

int mkc_cmd_perplexity(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE, .n_chunks = -1, .draft_max = 7, .hellaswag_tasks = 400};
  int rc = mkc_cli_parse(argc, argv, 2,
                         "--graph --preset --random-weights --prompt-ids --backend --ubatch --ctx "
                         "--blocks -m -p -f --kv-dtype --dequant --escape --no-escape --draft-max "
                         "--chunks --kl-divergence-base --kl-divergence --ppl-stride "
                         "--ppl-output-type --hellaswag --hellaswag-tasks --winogrande "
                         "--winogrande-tasks --multiple-choice --multiple-choice-tasks",
                         0, &c);
  if (rc == MKC_CLI_HELP) return 0;
  if (rc || (rc = mkc_cli_unescape(&c)) || (rc = check_flags(&c))) return rc;
  mkc_loaded_model m;
  mkc_logits_head h;
  scorer sc = {0};
  char tmp[4200] = "";
  int n = 0, *toks = NULL, n_ctx;
  rc = 1;
  if (c.kl_divergence) {
    if (!(sc.base = mkc_kld_open_base(c.kl_base, &h, &toks))) return 1;
    if (c.max_ctx == 0) c.max_ctx = h.n_ctx; /* its chunks, unless a larger context is asked */
  }
  if (mkc_loaded_plan(&c, &m) != 0) goto done;
  if (c.hellaswag || c.winogrande || c.multiple_choice) {
    /* a rough count of tokens read: a HellaSwag task's four candidates are some 150, a
     * Winogrande file's every task is read, about one token in four of its bytes */
    struct stat st;
    double tokens = c.hellaswag                                      ? c.hellaswag_tasks * 150.0
                    : c.winogrande && c.winogrande_tasks             ? c.winogrande_tasks * 60.0
                    : c.multiple_choice && c.mc_tasks                ? c.mc_tasks * 200.0
                    : c.prompt_file && stat(c.prompt_file, &st) == 0 ? st.st_size / 4.0
                                                                     : 0;
    if (mkc_loaded_cpu_guard(&c, &m, tokens, "perplexity") == 0 && mkc_loaded_start(&c, &m) == 0)
      rc = c.hellaswag    ? mkc_perplexity_hellaswag(&c, &m)
           : c.winogrande ? mkc_perplexity_winogrande(&c, &m)
                          : mkc_perplexity_multiple_choice(&c, &m);
    goto done;
  }
  if (sc.base) {
    if (mkc_kld_check_base(c.kl_base, &h, toks, &m.g) != 0) goto done;
    n_ctx = h.n_ctx, n = h.n_chunk * h.n_ctx;
  } else {
    if (!(toks = text_tokens(&c, &m, &n)) && n != 0) goto done; /* an empty text: too short */
    n_ctx = m.g.max_ctx;
    if (n_ctx < 3) {
      fprintf(stderr,
              "mkc: error: perplexity: -c %d scores nothing (a chunk's second half but "
              "its last token): give 3 at least\n",
              n_ctx);
      goto done;
    }
    if (n < 2 * n_ctx) {
      fprintf(stderr,
              "mkc: error: perplexity: the text is %d tokens; a context of %d needs %d at least "
              "(two chunks; a smaller -c)\n",
              n, n_ctx, 2 * n_ctx);
      goto done;
    }
  }
  /* chunks one after another, each scored from its middle; or windows `stride` apart, as many
   * as start before the last window's end passes the text's, each scoring its last `stride` */
  int stride = c.ppl_stride, step = stride ? stride : n_ctx;
  if (stride >= n_ctx) {
    fprintf(stderr,
            "mkc: error: perplexity: --ppl-stride %d: a window of %d scores at most %d tokens\n",
            stride, n_ctx, n_ctx - 1);
    goto done;
  }
  int max_chunks = stride ? (n - n_ctx + stride - 1) / stride : n / n_ctx;
  int chunks = c.n_chunks < 0 || c.n_chunks > max_chunks ? max_chunks : c.n_chunks;
  int first = stride ? n_ctx - stride - 1 : n_ctx / 2, rows = n_ctx - 1 - first;
  sc.vocab = m.g.vocab, sc.path = c.kl_base, sc.row_len = mkc_logits_row_len(m.g.vocab);
  if (c.kl_base && !(sc.row = malloc(sc.row_len * sizeof *sc.row))) {
    mkc_error_in(c.kl_base, "out of memory");
    goto done;
  }
  if (sc.base && mkc_kld_open(&sc.kld, (size_t)chunks * rows) != 0) {
    fprintf(stderr, "mkc: error: perplexity: out of memory\n");
    goto done;
  }
  if (mkc_loaded_cpu_guard(&c, &m, (double)chunks * n_ctx, "perplexity") != 0 ||
      mkc_loaded_start(&c, &m) != 0)
    goto done;
  if (c.kl_base && !sc.base &&
      !(sc.save = mkc_kld_open_save(c.kl_base, tmp, sizeof tmp, toks, n_ctx, m.g.vocab, chunks)))
    goto done;
  if (sc.save) mkc_interrupt_install(); /* Ctrl-C ends after a chunk, the temporary removed */
  const mkc_tokenizer *tok = m.file.tok;
  int bos = tok && mkc_tokenizer_add_bos(tok) ? mkc_tokenizer_bos(tok) : -1;
  fprintf(stderr,
          "mkc: perplexity: %d tokens, %d %s of %d (the last %d of each scored), %d a step, "
          "%s backend%s%s\n",
          n, chunks, stride ? "windows" : "chunks", n_ctx, rows, m.g.t_max,
          mkc_session_backend(m.s),
          sc.base   ? "; compared with "
          : sc.save ? "; log-probabilities to "
                    : "",
          c.kl_base ? c.kl_base : "");
  double t0 = mkc_seconds();
  long count = 0;
  for (int i = 0; i < chunks; i++) {
    int *chunk = toks + (size_t)i * step, was = chunk[0];
    /* each chunk reads from BOS, as llama-perplexity's; its windows do not (it puts BOS in
     * after they are read) */
    if (bos >= 0 && !stride) chunk[0] = bos;
    sc.chunk = i + 1;
    int failed = mkc_chunk_score(m.s, m.g.t_max, chunk, n_ctx, n_ctx - 1, first, "perplexity",
                                 score_row, &sc) != 0;
    chunk[0] = was;
    if (failed) goto done;
    count += rows;
    if (i == 0)
      fprintf(stderr, "mkc: perplexity: %.2f s a chunk, about %.1f minutes in all\n",
              mkc_seconds() - t0, (mkc_seconds() - t0) * chunks / 60);
    print_chunk(&c, &sc, i + 1, i * step, count);
    mkc_mapped_test_pause("MKC_TEST_PAUSE_AFTER_CHUNK");
    if (mkc_interrupted) { /* only while saving: the file is not left half written */
      fprintf(stderr, "\nmkc: perplexity: interrupted after %d chunks: %s not written\n", i + 1,
              c.kl_base);
      rc = 130;
      goto done;
    }
  }
  print_final(&sc, count);
  if (sc.save) {
    FILE *f = sc.save;
    sc.save = NULL;
    if (mkc_kld_close_save(f, tmp, c.kl_base) != 0) goto done;
    fprintf(stderr, "mkc: perplexity: the log-probabilities of %ld positions saved to %s\n", count,
            c.kl_base);
  }
  fprintf(stderr, "mkc: perplexity: %ld tokens scored in %.3f s\n", count, mkc_seconds() - t0);
  rc = 0;
done:
  if (sc.save) mkc_atomic_abandon(sc.save, tmp);
  if (sc.base) fclose(sc.base), mkc_kld_close(&sc.kld);
  free(sc.row);
  free(toks);
  mkc_loaded_close(&m);
  return rc;
}
