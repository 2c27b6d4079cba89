/* mkc embed: texts -> embedding vectors (exec/embed.h), as llama.cpp's
 * llama-embedding gives them: each line of the text one input, one JSON
 * array a line on stdout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "exec/embed.h"
#include "loaded.h"
#include "tokenizer/tokenizer.h"
#include "util/clock.h"
#include "util/files.h"

static const char USAGE[] =
    "usage: mkc embed -m MODEL -p TEXT [options]\n"
    "       mkc embed --preset P --random-weights SEED --prompt-ids IDS [options]\n"
    "\n"
    "Prints an embedding of each line of the text (-p TEXT or -f FILE; a last\n"
    "empty line after a final newline is no text), one JSON array of floats a\n"
    "line, in order. The vector is the model's final norm output (what its LM\n"
    "head reads) pooled over the text's tokens, then normalized, as llama.cpp's\n"
    "embeddings and ollama's /api/embed give it. Each text is tokenized with\n"
    "BOS (and EOS where the model's file asks for it).\n"
    "  -m, --model MODEL      GGUF file, Hugging Face folder, or a model's file name\n"
    "                         in the model directory\n"
    "  -p TEXT, -f FILE       the texts, one a line (-p's \\n is a newline, as its\n"
    "                         other escapes are in run; --no-escape: backslashes as\n"
    "                         written)\n"
    "  --prompt-ids IDS       one text as token ids (1,2,3), the only form with\n"
    "                         --preset\n"
    "  --pooling P            mean, cls (the first token's) or last; default: what\n"
    "                         the model's file says (ARCH.pooling_type), else last,\n"
    "                         as ollama does for generation models\n"
    "  --embd-normalize N     -1 none, 0 scaled to int16's range, 1 taxicab,\n"
    "                         2 euclidean (the default), N > 2 the N-norm\n"
    "  -c, --ctx N            the context: a text may hold up to N tokens\n"
    "  --backend B, -ngl N, --kernel DIR, --kv-dtype T, --ubatch N, -t/--threads N,\n"
    "  --dequant: as for run\n";

/* The texts: -p's or -f's lines (a final newline ends the last one). */
static char **read_lines(const mkc_cli *c, int *n) {
  char *text;
  size_t len;
  if (c->prompt) {
    text = strdup(c->prompt);
    len = text ? strlen(text) : 0;
  } else if (!(text = mkc_read_file(c->prompt_file, &len))) {
    fprintf(stderr, "mkc: error: -f %s: %s\n", c->prompt_file, strerror(errno));
    return NULL;
  }
  if (text && strlen(text) != len) {
    fprintf(stderr, "mkc: error: -f %s: a NUL byte at offset %zu: the texts must be text\n",
            c->prompt_file, strlen(text));
    free(text);
    return NULL;
  }
  if (!text) return NULL;
  if (len && text[len - 1] == '\n') text[--len] = '\0';
  int count = 1;
  for (size_t i = 0; i < len; i++) count += text[i] == '\n';
  char **lines = calloc((size_t)count + 1, sizeof *lines);
  if (!lines) {
    free(text);
    return NULL;
  }
  lines[0] = text; /* lines[0] owns the buffer */
  for (int k = 1; k < count; k++) {
    char *nl = strchr(lines[k - 1], '\n');
    *nl = '\0';
    lines[k] = nl + 1;
  }
  *n = count;
  return lines;
}

static int check_flags(const mkc_cli *c) {
  if (!!c->prompt + !!c->prompt_file + !!c->prompt_ids != 1)
    return mkc_cli_usage_error("%s", "embed: give the texts as -p TEXT, -f FILE or --prompt-ids: "
                                     "one of them");
  if (c->pooling && mkc_pooling_parse(c->pooling) < 0)
    return mkc_cli_usage_error("embed: --pooling: expected mean, cls or last, got '%s'",
                               c->pooling);
  int rc = mkc_cli_check_model(c, "embed");
  if (rc) return rc;
  if (c->model_path) return 0;
  if (c->prompt || c->prompt_file)
    return mkc_cli_usage_error("%s", "embed: a text needs a model with a tokenizer (-m)");
  if (!c->preset && !c->kernel_dir)
    return mkc_cli_usage_error("%s", "embed: -m FILE, --preset or --kernel DIR is required");
  if (!c->have_seed)
    return mkc_cli_usage_error("%s", "embed: --random-weights SEED is required without -m");
  return 0;
}

/* One text's tokens: BOS, the text, EOS as the tokenizer says. NULL after a message. */
static int *text_tokens(const mkc_tokenizer *tok, const char *text, int line, int *n) {
  int *ids = NULL;
  if ((*n = mkc_tokenizer_encode_framed(tok, text, strlen(text), &ids)) < 0) return NULL;
  if (*n == 0) {
    fprintf(stderr, "mkc: error: text %d is empty: it has no token to embed\n", line);
    free(ids);
    return NULL;
  }
  return ids;
}

static void print_vector(const float *v, int n) {
  putchar('[');
  for (int i = 0; i < n; i++) printf(i ? ",%.9g" : "%.9g", (double)v[i]);
  puts("]");
}

int mkc_cmd_embed(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE, .embd_normalize = MKC_EMBD_NORMALIZE_DEFAULT};
  int rc = mkc_cli_parse(argc, argv, 2,
                         "--graph --preset --random-weights --prompt-ids --backend --ubatch --ctx "
                         "--blocks --kernel -m -p -f --kv-dtype --dequant --pooling "
                         "--embd-normalize --escape --no-escape",
                         0, &c);
  if (rc == MKC_CLI_HELP) return 0;
  if (rc || (rc = mkc_cli_unescape(&c)) || (rc = check_flags(&c))) return rc;
  mkc_loaded_model m;
  mkc_embedder e = {0};
  char **lines = NULL;
  int n_lines = 1, **ids = NULL, *n_ids = NULL; /* each text's tokens */
  float *vec = NULL;
  rc = 1;
  if (mkc_loaded_plan(&c, &m) != 0) goto done;
  int pooling = mkc_pooling_choose(c.pooling ? mkc_pooling_parse(c.pooling) : MKC_POOL_UNSET,
                                   c.model_path ? m.file.desc.pooling : MKC_POOL_UNSET);
  if (pooling < 0) goto done;
  if (!c.prompt_ids && !m.file.tok) {
    fprintf(stderr, "mkc: error: %s has no tokenizer: give the text as --prompt-ids\n",
            c.model_path);
    goto done;
  }
  if (!c.prompt_ids && !(lines = read_lines(&c, &n_lines))) goto done;
  if (!(vec = malloc((size_t)m.g.dim * sizeof *vec)) ||
      !(ids = calloc((size_t)n_lines, sizeof *ids)) ||
      !(n_ids = calloc((size_t)n_lines, sizeof *n_ids)))
    goto done;
  double total = 0; /* the texts' tokens, for the guard against an hours-long cpu run */
  for (int k = 0; k < n_lines; k++) {
    if (!(ids[k] = lines ? text_tokens(m.file.tok, lines[k], k + 1, &n_ids[k])
                         : mkc_parse_ids(c.prompt_ids, m.g.vocab, &n_ids[k], "--prompt-ids")))
      goto done;
    total += n_ids[k];
  }
  if (mkc_loaded_cpu_guard(&c, &m, total, "embed") != 0 || mkc_loaded_start(&c, &m) != 0 ||
      mkc_embedder_open(&e, m.s, &m.w) != 0)
    goto done;
  double t0 = mkc_seconds();
  long tokens = 0;
  for (int k = 0; k < n_lines; k++) {
    if (n_ids[k] > m.g.max_ctx) {
      fprintf(stderr,
              "mkc: error: text %d is %d tokens but the context holds %d: nothing more was run "
              "(use --ctx %d)\n",
              k + 1, n_ids[k], m.g.max_ctx, n_ids[k]);
      goto done;
    }
    if (mkc_embed(&e, ids[k], n_ids[k], pooling, c.embd_normalize, vec) != 0) goto done;
    print_vector(vec, m.g.dim);
    tokens += n_ids[k];
  }
  fflush(stdout);
  fprintf(stderr,
          "mkc: embed: %d text%s, %ld tokens, %d values each, pooling %s, %s, %.3f s (%s)\n",
          n_lines, n_lines == 1 ? "" : "s", tokens, m.g.dim, mkc_pooling_name(pooling),
          c.embd_normalize < 0    ? "not normalized"
          : c.embd_normalize == 0 ? "scaled to int16"
          : c.embd_normalize == 2 ? "euclidean norm 1"
                                  : "p-norm 1",
          mkc_seconds() - t0, mkc_session_backend(m.s));
  rc = 0;
done:
  mkc_embedder_close(&e);
  free(vec);
  for (int k = 0; ids && k < n_lines; k++) free(ids[k]);
  free(ids);
  free(n_ids);
  if (lines) free(lines[0]);
  free(lines);
  mkc_loaded_close(&m);
  return rc;
}
