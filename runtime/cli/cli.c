/* See cli.h. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/graph.h"

int mkc_cli_usage_error_in(const char *cmd, const char *fmt, const char *arg) {
  fprintf(stderr, "mkc: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run `mkc%s%s --help` for usage)\n", cmd ? " " : "", cmd ? cmd : "");
  return 2;
}

int mkc_cli_usage_error(const char *fmt, const char *arg) {
  return mkc_cli_usage_error_in(NULL, fmt, arg);
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

int mkc_parse_seed(const char *s, unsigned long long *v) {
  char *end;
  errno = 0;
  *v = strtoull(s, &end, 10);
  return !*s || *end || errno || s[0] == '-' ? -1 : 0;
}

int mkc_cli_check_model(const mkc_cli *c, const char *cmd) {
  if (!c->model_path || !(c->preset || c->have_seed || c->graph)) return 0;
  char msg[200];
  snprintf(msg, sizeof msg,
           "%s: -m brings its own graph, preset and weights; drop --preset, --graph and "
           "--random-weights",
           cmd);
  return mkc_cli_usage_error("%s", msg);
}

static int allows(const char *allowed, const char *flag) {
  size_t n = strlen(flag);
  for (const char *p = allowed; (p = strstr(p, flag)); p += n)
    if ((p == allowed || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
  return 0;
}

int mkc_cli_parse(int argc, char **argv, int first, const char *allowed, int want_positional,
                  mkc_cli *c) {
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) {
      if (!want_positional || c->positional)
        return mkc_cli_usage_error("unexpected argument '%s'", a);
      c->positional = a;
      continue;
    }
    /* llama.cpp's long spellings of its short flags */
    if (strcmp(a, "--model") == 0 && allows(allowed, "-m")) a = "-m";
    if (strcmp(a, "--prompt") == 0 && allows(allowed, "-p")) a = "-p";
    if (strcmp(a, "--n-predict") == 0 && allows(allowed, "-n")) a = "-n";
    if ((strcmp(a, "-c") == 0 || strcmp(a, "--ctx-size") == 0) && allows(allowed, "--ctx"))
      a = "--ctx";
    if (!allows(allowed, a)) return mkc_cli_usage_error("unknown option '%s'", argv[i]);
    if (i + 1 >= argc) return mkc_cli_usage_error("%s needs a value", a);
    const char *v = argv[++i];
    long x;
    if (strcmp(a, "--preset") == 0)
      c->preset = v;
    else if (strcmp(a, "--graph") == 0)
      c->graph = v;
    else if (strcmp(a, "-o") == 0)
      c->out = v;
    else if (strcmp(a, "--prompt-ids") == 0)
      c->prompt_ids = v;
    else if (strcmp(a, "--backend") == 0)
      c->backend = v;
    else if (strcmp(a, "--kernel") == 0)
      c->kernel_dir = v;
    else if (strcmp(a, "--arch") == 0)
      c->archs = v;
    else if (strcmp(a, "-m") == 0)
      c->model_path = v;
    else if (strcmp(a, "--kv-dtype") == 0) {
      if (mkc_kv_dtype_from_name(v) < 0)
        return mkc_cli_usage_error("--kv-dtype: expected bf16, f16 or f32, got '%s'", v);
      c->kv_dtype = v;
    } else if (strcmp(a, "-p") == 0)
      c->prompt = v;
    else if (strcmp(a, "--temp") == 0) {
      char *end;
      errno = 0;
      c->temp = strtod(v, &end);
      if (!*v || *end || errno || !(c->temp >= 0) || c->temp > 100)
        return mkc_cli_usage_error("--temp: expected a number in 0..100, got '%s'", v);
    } else if (strcmp(a, "--seed") == 0) {
      if (mkc_parse_seed(v, &c->sample_seed) != 0)
        return mkc_cli_usage_error("--seed: expected a non-negative integer, got '%s'", v);
    } else if (strcmp(a, "--random-weights") == 0) {
      if (mkc_parse_seed(v, &c->seed) != 0)
        return mkc_cli_usage_error(
            "--random-weights: expected a non-negative integer seed, got '%s'", v);
      c->have_seed = 1;
    } else {
      long lo = 0, hi = INT_MAX / 2;
      if (strcmp(a, "--draft-max") == 0)
        hi = 31;
      else if (strcmp(a, "--ctx") == 0)
        lo = 1, hi = 1 << 20;
      else if (strcmp(a, "--blocks") == 0)
        lo = 1, hi = 1024;
      else if (strcmp(a, "-n") == 0)
        lo = -1; /* llama.cpp's -1: until end of generation or a full context */
      if (parse_int(a, v, lo, hi, &x)) return 2;
      if (strcmp(a, "--draft-max") == 0)
        c->draft_max = (int)x;
      else if (strcmp(a, "--ctx") == 0)
        c->max_ctx = (int)x;
      else if (strcmp(a, "--blocks") == 0)
        c->blocks = (int)x;
      else if (strcmp(a, "-n") == 0)
        c->n_gen = (int)x, c->have_n = 1;
    }
  }
  return 0;
}
