/* mkc run: decode with the megakernel (cuda or cpu backend) or the reference
 * executor: a model file (-m) and a text prompt streamed back as text, or
 * seeded random weights and token ids. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "loaded.h"
#include "commands.h"
#include "exec/decode.h"
#include "tokenizer/tokenizer.h"

/* "1,2,3" -> ids, each in [0, vocab); NULL + message on bad input. */
static int *parse_ids(const char *s, int vocab, int *n) {
  int cap = 1;
  for (const char *p = s; *p; p++) cap += *p == ',';
  int *ids = malloc((size_t)cap * sizeof *ids);
  if (!ids) return NULL;
  *n = 0;
  const char *p = s;
  for (;;) {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno || (*end && *end != ',')) {
      fprintf(stderr, "mkc: error: --prompt-ids: expected comma-separated token ids, got '%s'\n",
              s);
      free(ids);
      return NULL;
    }
    if (v < 0 || v >= vocab) {
      fprintf(stderr, "mkc: error: --prompt-ids: token %ld is outside the vocabulary (0..%d)\n", v,
              vocab - 1);
      free(ids);
      return NULL;
    }
    ids[(*n)++] = (int)v;
    if (!*end) break;
    p = end + 1;
  }
  return ids;
}

/* Text mode: each generated token is detokenized and printed as soon as it
 * is known; an end-of-generation token stops the run unprinted. */
typedef struct stream {
  const mkc_tokenizer *tok;
  mkc_detok detok;
  int eog; /* generation ended on such a token */
} stream;

static int on_token(void *ctx, int id) {
  stream *st = ctx;
  if (mkc_tokenizer_is_eog(st->tok, id)) {
    st->eog = 1;
    return 1;
  }
  char buf[MKC_DETOK_MAX];
  size_t n = mkc_detok_push(&st->detok, id, buf, sizeof buf);
  fwrite(buf, 1, n, stdout);
  fflush(stdout);
  return 0;
}

/* The prompt as token ids: -p TEXT through the model's tokenizer, else
 * --prompt-ids, else token 1. */
static int *prompt_tokens(const mkc_cli *c, const mkc_loaded_model *m, int *n) {
  if (!c->prompt) return parse_ids(c->prompt_ids ? c->prompt_ids : "1", m->g.vocab, n);
  const mkc_tokenizer *tok = m->file.tok;
  if (!tok) {
    fprintf(stderr, "mkc: error: %s has no tokenizer: give the prompt as --prompt-ids\n",
            c->model_path);
    return NULL;
  }
  int *ids = NULL;
  *n = mkc_tokenizer_encode(tok, c->prompt, strlen(c->prompt), mkc_tokenizer_add_bos(tok), 1, &ids);
  if (*n < 0) return NULL;
  if (*n == 0) {
    fprintf(stderr, "mkc: error: -p: the prompt is empty: at least one token is needed\n");
    free(ids);
    return NULL;
  }
  return ids;
}

static int check_flags(const mkc_cli *c) {
  if (c->backend && strcmp(c->backend, "cpu") && strcmp(c->backend, "ref") &&
      strcmp(c->backend, "cuda") && strcmp(c->backend, "auto"))
    return mkc_cli_usage_error("--backend: expected cuda, cpu, ref or auto, got '%s'", c->backend);
  if (c->kernel_dir && c->kv_dtype)
    return mkc_cli_usage_error("%s", "run: --kernel DIR brings its own KV type; drop --kv-dtype");
  if (c->prompt && c->prompt_ids)
    return mkc_cli_usage_error("%s", "run: give the prompt as -p TEXT or --prompt-ids, not both");
  int rc = mkc_cli_check_model(c, "run");
  if (rc) return rc;
  if (c->model_path) {
    if (!c->prompt && !c->prompt_ids)
      return mkc_cli_usage_error("%s", "run: -p TEXT (or --prompt-ids) is required with -m");
    return 0;
  }
  if (c->prompt)
    return mkc_cli_usage_error("%s", "run: -p TEXT needs a model with a tokenizer (-m)");
  if (!c->preset && !c->kernel_dir)
    return mkc_cli_usage_error("%s", "run: -m FILE, --preset or --kernel DIR is required");
  if (c->preset && c->kernel_dir)
    return mkc_cli_usage_error("%s", "run: --kernel DIR brings its own preset; drop --preset");
  if (!c->have_seed)
    return mkc_cli_usage_error("%s", "run: --random-weights SEED is required without -m");
  if (!c->have_n || c->n_gen < 0)
    return mkc_cli_usage_error("%s", "run: -n N (tokens to generate) is required");
  return 0;
}

/* The stats line on stderr: backend, prompt and generation speed, drafts. */
static void print_stats(const mkc_cli *c, const mkc_loaded_model *m, int n_prompt,
                        const mkc_decode_stats *st, int eog) {
  double gen_s = st->seconds - st->prompt_seconds;
  fprintf(stderr,
          "mkc: %s backend (%s), %s %s: prompt %d tokens in %.3f s; generated %d tokens in %.3f s "
          "(%.1f tok/s); drafted %ld, accepted %ld, acceptance %.1f%%, %.2f tokens/step over %d "
          "steps%s\n",
          mkc_session_backend(m->s), mkc_session_describe(m->s), c->model_path ? "model" : "preset",
          c->model_path ? c->model_path : m->g.preset, n_prompt, st->prompt_seconds, st->generated,
          gen_s, gen_s > 0 ? st->generated / gen_s : 0.0, st->drafted, st->accepted,
          st->drafted ? 100.0 * st->accepted / st->drafted : 0.0,
          st->gen_steps ? (double)st->generated / st->gen_steps : 0.0, st->gen_steps,
          eog            ? "; stopped at end of generation"
          : st->ctx_full ? "; stopped: context full"
                         : "");
}

int mkc_cmd_run(int argc, char **argv) {
  mkc_cli c = {0};
  int rc = mkc_cli_parse(argc, argv, 2,
                         "--graph --preset --random-weights -n --draft-max --prompt-ids --backend "
                         "--ctx --blocks --kernel -m -p --temp --seed --kv-dtype",
                         0, &c);
  if (rc || (rc = check_flags(&c))) return rc;

  mkc_loaded_model m;
  int n_prompt = 0, *prompt = NULL, *out = NULL;
  rc = 1;
  if (mkc_loaded_plan(&c, &m) != 0) goto done;
  prompt = prompt_tokens(&c, &m, &n_prompt);
  if (!prompt) goto done;
  if (n_prompt > m.g.max_ctx) {
    fprintf(stderr,
            "mkc: error: the prompt is %d tokens but the context holds %d: nothing was run (use "
            "--ctx %d or a shorter prompt)\n",
            n_prompt, m.g.max_ctx, n_prompt + (c.have_n && c.n_gen > 0 ? c.n_gen - 1 : 0));
    goto done;
  }
  /* -n -1 (the default with -m): until end of generation or a full context */
  int open_ended = !c.have_n || c.n_gen < 0;
  int n_gen = open_ended ? m.g.max_ctx - n_prompt + 1 : c.n_gen;
  if (!open_ended && (long)n_prompt + n_gen - 1 > m.g.max_ctx) {
    fprintf(
        stderr,
        "mkc: error: %d prompt tokens + %d generated need %d positions but the context holds %d "
        "(use --ctx)\n",
        n_prompt, n_gen, n_prompt + n_gen - 1, m.g.max_ctx);
    goto done;
  }
  out = malloc((size_t)(n_gen + 1) * sizeof *out);
  if (!out || mkc_loaded_start(&c, &m) != 0) goto done;

  stream text = {.tok = c.prompt ? m.file.tok : NULL};
  mkc_decode_opts o = {.draft_max = c.draft_max, .temp = c.temp, .seed = c.sample_seed};
  if (text.tok) {
    mkc_detok_init(&text.detok, text.tok, 0);
    o.on_token = on_token;
    o.ctx = &text;
    /* The prompt as the model reads it, then the completion: one stream, so a
     * character or SentencePiece's leading space spanning the two comes out
     * right. */
    char buf[MKC_DETOK_MAX];
    for (int i = 0; i < n_prompt; i++)
      fwrite(buf, 1, mkc_detok_push_shown(&text.detok, prompt[i], buf, sizeof buf), stdout);
    fflush(stdout);
  }
  mkc_decode_stats st;
  if (mkc_decode_with(m.s, &m.g, prompt, n_prompt, n_gen, &o, out, &st) != 0) goto done;
  if (text.tok) {
    char tail[MKC_DETOK_MAX];
    fwrite(tail, 1, mkc_detok_flush(&text.detok, tail, sizeof tail), stdout);
  } else {
    for (int i = 0; i < st.generated; i++) printf(i ? " %d" : "%d", out[i]);
  }
  printf("\n");
  fflush(stdout);
  print_stats(&c, &m, n_prompt, &st, text.eog);
  rc = 0;
done:
  mkc_loaded_close(&m);
  free(prompt);
  free(out);
  return rc;
}
