/* mkc perplexity: how well a model predicts a text, as llama.cpp's
 * llama-perplexity measures it (a quantization's cost, an adapter's effect):
 * the text's tokens in chunks of the context, each read from a fresh cache
 * (its first token BOS where the model adds one), and each token of a
 * chunk's second half scored by the log-probability the logits before it
 * give it; the perplexity is e to the mean negative log-likelihood. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "loaded.h"
#include "tokenizer/tokenizer.h"
#include "util/clock.h"

static const char USAGE[] =
    "usage: mkc perplexity -m MODEL -f FILE [-c N] [--chunks N] [options]\n"
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
    "  --prompt-ids IDS       the tokens themselves (1,2,3), the only form with --preset\n"
    "  -c, --ctx N            each chunk's tokens (default: the model's context,\n"
    "                         capped at 4096); the text must hold two chunks at least\n"
    "  --chunks N             at most N chunks (default: all the text holds)\n"
    "  --draft-max K          the scored half goes K + 1 tokens a step (default 7)\n"
    "  --backend B, -ngl N, --kv-dtype T, --ubatch N, -t/--threads N, --dequant,\n"
    "  --lora FILE, --lora-scaled FILE:SCALE: as for run\n";

static int check_flags(const mkc_cli *c) {
  if (!!c->prompt + !!c->prompt_file + !!c->prompt_ids != 1)
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
  if (c->prompt_ids) return mkc_parse_ids(c->prompt_ids, m->g.vocab, n, "--prompt-ids");
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

/* -log p(tok) under logits (vocab of them), as llama-perplexity works it out: the largest
 * subtracted, the sum of the exponentials in double. */
static double nll_of(const float *logits, int vocab, int tok) {
  float max = logits[0];
  for (int i = 1; i < vocab; i++)
    if (logits[i] > max) max = logits[i];
  double sum = 0;
  for (int i = 0; i < vocab; i++) sum += expf(logits[i] - max);
  return -(logits[tok] - max - log(sum));
}

/* One chunk, toks[0..n) (its first already BOS where it should be), from an empty cache: the
 * negative log-likelihoods of its second half's tokens added to *nll and their squares to
 * *nll2. 0, or -1 after a message. */
static int score_chunk(mkc_session *s, const mkc_graph *g, const int *toks, int n, double *nll,
                       double *nll2) {
  mkc_session_reset(s);
  int first = n / 2, pos = 0;
  mkc_step_result r;
  while (pos < n - 1) { /* the last token's logits score nothing */
    /* the first half as prompt chunks (no logits wanted), then steps whose every input's are */
    int k = pos < first ? mkc_session_prompt_inputs(s, first - pos) : n - 1 - pos;
    if (pos >= first && k > g->t_max) k = g->t_max;
    if (mkc_session_step(s, toks + pos, k, k - 1, &r) != 0) return -1;
    if (r.status != MKC_STATUS_OK) {
      fprintf(stderr, "mkc: error: perplexity: the step at position %d was refused (status %d)\n",
              pos, r.status);
      return -1;
    }
    for (int t = 0; pos >= first && t < k; t++) {
      const float *logits = mkc_session_logits(s, t);
      if (!logits) {
        fprintf(stderr, "mkc: error: perplexity: no logits at position %d\n", pos + t);
        return -1;
      }
      double v = nll_of(logits, g->vocab, toks[pos + t + 1]);
      *nll += v, *nll2 += v * v;
    }
    pos += k;
  }
  return 0;
}

int mkc_cmd_perplexity(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE, .n_chunks = -1, .draft_max = 7};
  int rc = mkc_cli_parse(argc, argv, 2,
                         "--graph --preset --random-weights --prompt-ids --backend --ubatch --ctx "
                         "--blocks -m -p -f --kv-dtype --dequant --escape --no-escape --draft-max "
                         "--chunks",
                         0, &c);
  if (rc == MKC_CLI_HELP) return 0;
  if (rc || (rc = mkc_cli_unescape(&c)) || (rc = check_flags(&c))) return rc;
  mkc_loaded_model m;
  int n = 0, *toks = NULL;
  rc = 1;
  if (mkc_loaded_plan(&c, &m) != 0) goto done;
  if (!(toks = text_tokens(&c, &m, &n)) && n != 0) goto done; /* an empty text: too short */
  int n_ctx = m.g.max_ctx, max_chunks = n / n_ctx;
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
  int chunks = c.n_chunks < 0 || c.n_chunks > max_chunks ? max_chunks : c.n_chunks;
  if (mkc_loaded_cpu_guard(&c, &m, (double)chunks * n_ctx, "perplexity") != 0 ||
      mkc_loaded_start(&c, &m) != 0)
    goto done;
  const mkc_tokenizer *tok = m.file.tok;
  int bos = tok && mkc_tokenizer_add_bos(tok) ? mkc_tokenizer_bos(tok) : -1;
  fprintf(stderr,
          "mkc: perplexity: %d tokens, %d chunks of %d (the last %d of each scored), %d a step, "
          "%s backend\n",
          n, chunks, n_ctx, n_ctx - n_ctx / 2 - 1, m.g.t_max, mkc_session_backend(m.s));
  double nll = 0, nll2 = 0, t0 = mkc_seconds();
  long count = 0;
  for (int i = 0; i < chunks; i++) {
    int *chunk = toks + (size_t)i * n_ctx, was = chunk[0];
    if (bos >= 0) chunk[0] = bos; /* each chunk reads from BOS, as llama-perplexity's */
    int failed = score_chunk(m.s, &m.g, chunk, n_ctx, &nll, &nll2) != 0;
    chunk[0] = was;
    if (failed) goto done;
    count += n_ctx - n_ctx / 2 - 1;
    if (i == 0)
      fprintf(stderr, "mkc: perplexity: %.2f s a chunk, about %.1f minutes in all\n",
              mkc_seconds() - t0, (mkc_seconds() - t0) * chunks / 60);
    printf("[%d]%.4f,", i + 1, exp(nll / count));
    fflush(stdout);
  }
  double mean = nll / count, var = nll2 / count - mean * mean, ppl = exp(mean);
  if (var > 0 && count > 1)
    printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", ppl, sqrt(var / (count - 1)) * ppl);
  else
    printf("\nFinal estimate: PPL = %.4f (no spread to estimate an error from)\n", ppl);
  fprintf(stderr, "mkc: perplexity: %ld tokens scored in %.3f s\n", count, mkc_seconds() - t0);
  rc = 0;
done:
  free(toks);
  mkc_loaded_close(&m);
  return rc;
}
