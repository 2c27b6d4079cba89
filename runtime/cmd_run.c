/* mkc run: decode token ids with the megakernel (cuda or cpu backend) or
 * the reference executor, on seeded random weights. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "decode.h"

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

int mkc_cmd_run(int argc, char **argv) {
  mkc_cli c = {.n_gen = -1};
  int rc =
      mkc_cli_parse(argc, argv, 2,
                    "--graph --preset --random-weights -n --draft-max --prompt-ids --backend --ctx "
                    "--blocks --kernel",
                    0, &c);
  if (rc) return rc;
  if (!c.preset && !c.kernel_dir)
    return mkc_cli_usage_error("%s", "run: --preset (or --kernel DIR) is required");
  if (c.preset && c.kernel_dir)
    return mkc_cli_usage_error("%s", "run: --kernel DIR brings its own preset; drop --preset");
  if (!c.have_seed)
    return mkc_cli_usage_error("%s",
                               "run: --random-weights SEED is required (model files come later)");
  if (c.n_gen < 0) return mkc_cli_usage_error("%s", "run: -n N (tokens to generate) is required");
  if (c.backend && strcmp(c.backend, "cpu") && strcmp(c.backend, "ref") &&
      strcmp(c.backend, "cuda") && strcmp(c.backend, "auto"))
    return mkc_cli_usage_error("--backend: expected cuda, cpu, ref or auto, got '%s'", c.backend);

  mkc_model m;
  int n_prompt = 0, *prompt = NULL, *out = NULL;
  rc = 1;
  if (mkc_model_plan(&c, &m) != 0) goto done;
  prompt = parse_ids(c.prompt_ids ? c.prompt_ids : "1", m.g.vocab, &n_prompt);
  out = malloc((size_t)(c.n_gen + 1) * sizeof *out);
  if (!prompt || !out) goto done;
  if ((long)n_prompt + c.n_gen - 1 > m.g.max_ctx) {
    fprintf(
        stderr,
        "mkc: error: %d prompt tokens + %d generated need %d positions but the context holds %d "
        "(use --ctx)\n",
        n_prompt, c.n_gen, n_prompt + c.n_gen - 1, m.g.max_ctx);
    goto done;
  }
  if (mkc_model_start(&c, &m) != 0) goto done;
  mkc_decode_stats st;
  if (mkc_decode(m.s, &m.g, prompt, n_prompt, c.n_gen, c.draft_max, out, &st) != 0) goto done;
  for (int i = 0; i < st.generated; i++) printf(i ? " %d" : "%d", out[i]);
  printf("\n");
  fflush(stdout);
  double gen_s = st.seconds - st.prompt_seconds;
  fprintf(
      stderr,
      "mkc: %s backend (%s), preset %s: prompt %d tokens in %.3f s; generated %d tokens in %.3f s "
      "(%.1f tok/s); drafted %ld, accepted %ld, acceptance %.1f%%, %.2f tokens/step over %d "
      "steps\n",
      mkc_session_backend(m.s), mkc_session_describe(m.s), m.g.preset, n_prompt, st.prompt_seconds,
      st.generated, gen_s, gen_s > 0 ? st.generated / gen_s : 0.0, st.drafted, st.accepted,
      st.drafted ? 100.0 * st.accepted / st.drafted : 0.0,
      st.gen_steps ? (double)st.generated / st.gen_steps : 0.0, st.gen_steps);
  rc = 0;
done:
  mkc_model_close(&m);
  free(prompt);
  free(out);
  return rc;
}
