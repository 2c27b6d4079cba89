/* mkc: the command line. `gen` writes the megakernel for a graph and preset;
 * `run` decodes with it on random weights (cpu backend) or with the
 * reference executor (ref backend). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_host.h"
#include "commands.h"
#include "decode.h"
#include "session.h"
#include "weights.h"

static const char USAGE[] =
    "usage:\n"
    "  mkc gen GRAPH --preset P [--draft-max K] [--ctx N] -o FILE.cu\n"
    "  mkc run [--graph GRAPH] --preset P --random-weights SEED -n N [--draft-max K]\n"
    "          [--prompt-ids 1,2,3] [--backend cpu|ref] [--ctx N] [--blocks B]\n"
    "\n"
    "gen writes the one-kernel CUDA source of a step (FILE \"-\": stdout).\n"
    "run prints the generated token ids on stdout and a stats line on stderr.\n"
    "GRAPH defaults to graphs/llama.lua in the mkc tree.\n";

typedef struct cli {
  const char *graph, *preset, *out, *prompt_ids, *backend;
  int draft_max, max_ctx, n_gen, blocks, have_seed;
  unsigned long long seed;
} cli;

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "mkc: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run `mkc --help` for usage)\n");
  return 2;
}

/* A whole-string integer in [lo, hi], or -1 with a message. */
static int parse_int(const char *flag, const char *s, long lo, long hi, long *v) {
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (!*s || *end || errno || x < lo || x > hi) {
    fprintf(stderr, "mkc: error: %s: expected an integer in %ld..%ld, got '%s'\n", flag, lo, hi, s);
    return -1;
  }
  *v = x;
  return 0;
}

static int parse_args(int argc, char **argv, int first, cli *c, int want_positional) {
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) {
      if (!want_positional || c->graph) return usage_error("unexpected argument '%s'", a);
      c->graph = a;
      continue;
    }
    if (i + 1 >= argc) return usage_error("%s needs a value", a);
    const char *v = argv[++i];
    long x;
    if (strcmp(a, "--preset") == 0)
      c->preset = v;
    else if (strcmp(a, "--graph") == 0 && !want_positional)
      c->graph = v;
    else if (strcmp(a, "-o") == 0 && want_positional)
      c->out = v;
    else if (strcmp(a, "--draft-max") == 0) {
      if (parse_int(a, v, 0, 31, &x)) return 2;
      c->draft_max = (int)x;
    } else if (strcmp(a, "--ctx") == 0) {
      if (parse_int(a, v, 1, 1 << 20, &x)) return 2;
      c->max_ctx = (int)x;
    } else if (strcmp(a, "-n") == 0 && !want_positional) {
      if (parse_int(a, v, 0, INT_MAX / 2, &x)) return 2;
      c->n_gen = (int)x;
    } else if (strcmp(a, "--blocks") == 0 && !want_positional) {
      if (parse_int(a, v, 1, 1024, &x)) return 2;
      c->blocks = (int)x;
    } else if (strcmp(a, "--random-weights") == 0 && !want_positional) {
      char *end;
      errno = 0;
      c->seed = strtoull(v, &end, 10);
      if (!*v || *end || errno || v[0] == '-')
        return usage_error("--random-weights: expected a non-negative integer seed, got '%s'", v);
      c->have_seed = 1;
    } else if (strcmp(a, "--prompt-ids") == 0 && !want_positional)
      c->prompt_ids = v;
    else if (strcmp(a, "--backend") == 0 && !want_positional)
      c->backend = v;
    else
      return usage_error("unknown option '%s'", a);
  }
  return 0;
}

static int write_text(const char *path, const char *text) {
  FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
  if (!f) {
    fprintf(stderr, "mkc: error: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  int bad = fputs(text, f) < 0;
  bad |= f == stdout ? fflush(f) != 0 : fclose(f) != 0;
  if (bad) fprintf(stderr, "mkc: error: writing %s failed\n", path);
  return bad ? -1 : 0;
}

static int cmd_gen(int argc, char **argv) {
  cli c = {0};
  int rc = parse_args(argc, argv, 2, &c, 1);
  if (rc) return rc;
  if (!c.graph)
    return usage_error("%s",
                       "gen: which graph? (mkc gen graphs/llama.lua --preset tiny -o tiny.cu)");
  if (!c.preset) return usage_error("%s", "gen: --preset is required");
  if (!c.out) return usage_error("%s", "gen: -o FILE is required (\"-\" for stdout)");
  mkc_gen_opts o = {c.graph, c.preset, c.draft_max, c.max_ctx, 0};
  mkc_graph g;
  mkc_kernel_src src;
  if (mkc_codegen(&o, &g, &src) != 0) return 1;
  rc = write_text(c.out, src.source) ? 1 : 0;
  if (!rc && strcmp(c.out, "-") != 0)
    fprintf(stderr, "mkc: wrote %s (%s, preset %s: %d stages, T <= %d, max_ctx %d)\n", c.out,
            src.file_name, g.preset, g.n_phases, g.t_max, g.max_ctx);
  mkc_kernel_src_free(&src);
  mkc_graph_free(&g);
  return rc;
}

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

static int cmd_run(int argc, char **argv) {
  cli c = {.n_gen = -1};
  int rc = parse_args(argc, argv, 2, &c, 0);
  if (rc) return rc;
  if (!c.preset) return usage_error("%s", "run: --preset is required");
  if (!c.have_seed)
    return usage_error("%s", "run: --random-weights SEED is required (model files come later)");
  if (c.n_gen < 0) return usage_error("%s", "run: -n N (tokens to generate) is required");
  enum mkc_backend_kind kind = MKC_BACKEND_CPU;
  if (c.backend && strcmp(c.backend, "ref") == 0)
    kind = MKC_BACKEND_REF;
  else if (c.backend && strcmp(c.backend, "cpu") != 0)
    return usage_error("--backend: expected cpu or ref, got '%s'", c.backend);
  char graph_path[4200];
  if (!c.graph)
    snprintf(graph_path, sizeof graph_path, "%s/graphs/llama.lua", mkc_home());
  else
    snprintf(graph_path, sizeof graph_path, "%s", c.graph);

  mkc_gen_opts o = {graph_path, c.preset, c.draft_max, c.max_ctx, 0};
  mkc_graph g;
  mkc_kernel_src src;
  if (mkc_codegen(&o, &g, &src) != 0) return 1;
  rc = 1;
  mkc_weights w = {0};
  mkc_session *s = NULL;
  int n_prompt = 0, *prompt = parse_ids(c.prompt_ids ? c.prompt_ids : "1", g.vocab, &n_prompt);
  int *out = malloc((size_t)(c.n_gen + 1) * sizeof *out);
  if (!prompt || !out) goto done;
  if ((long)n_prompt + c.n_gen - 1 > g.max_ctx) {
    fprintf(
        stderr,
        "mkc: error: %d prompt tokens + %d generated need %d positions but the context holds %d "
        "(use --ctx)\n",
        n_prompt, c.n_gen, n_prompt + c.n_gen - 1, g.max_ctx);
    goto done;
  }
  if (mkc_weights_random(&w, &g, c.seed) != 0) goto done;
  s = mkc_session_open(kind, &g, &src, &w, c.blocks);
  if (!s) goto done;
  mkc_decode_stats st;
  if (mkc_decode(s, &g, prompt, n_prompt, c.n_gen, c.draft_max, out, &st) != 0) goto done;
  for (int i = 0; i < st.generated; i++) printf(i ? " %d" : "%d", out[i]);
  printf("\n");
  fflush(stdout);
  double gen_s = st.seconds - st.prompt_seconds;
  fprintf(stderr,
          "mkc: %s backend, preset %s: prompt %d tokens in %.3f s; generated %d tokens in %.3f s "
          "(%.1f tok/s); "
          "drafted %ld, accepted %ld, acceptance %.1f%%, %.2f tokens/step over %d steps\n",
          kind == MKC_BACKEND_REF ? "ref" : "cpu", g.preset, n_prompt, st.prompt_seconds,
          st.generated, gen_s, gen_s > 0 ? st.generated / gen_s : 0.0, st.drafted, st.accepted,
          st.drafted ? 100.0 * st.accepted / st.drafted : 0.0,
          st.gen_steps ? (double)st.generated / st.gen_steps : 0.0, st.gen_steps);
  rc = 0;
done:
  mkc_session_close(s);
  mkc_weights_free(&w);
  free(prompt);
  free(out);
  mkc_kernel_src_free(&src);
  mkc_graph_free(&g);
  return rc;
}

/* Subcommands: those in other files are declared in commands.h. */
static const struct {
  const char *name;
  int (*fn)(int argc, char **argv);
} COMMANDS[] = {
    {"gen", cmd_gen},
    {"run", cmd_run},
};

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(USAGE, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  char names[256] = "";
  for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++) {
    if (strcmp(argv[1], COMMANDS[i].name) == 0) return COMMANDS[i].fn(argc, argv);
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", COMMANDS[i].name);
  }
  fprintf(stderr, "mkc: error: unknown command '%s' (expected one of: %s)\n(run `mkc --help` for usage)\n",
          argv[1], names);
  return 2;
}
