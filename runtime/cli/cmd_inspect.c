/* `mkc inspect`: the command line over runtime/inspect/inspect.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "inspect/inspect.h"
#include "inspect/libclang.h"

static const char USAGE[] =
    "usage: mkc inspect KERNEL.cu [--gpu ID] [--arch sm_XY|none] [--tokens T]\n"
    "                          [--pos P] [--blocks B] [--json | --stage N|NAME]\n"
    "       mkc inspect --check KERNEL.cu...\n"
    "       mkc inspect --diff A.cu B.cu [--gpu ID] [--arch sm_XY|none]\n"
    "                          [--tokens T] [--pos P]\n"
    "\n"
    "Outlines an emitted kernel stage by stage (graph nodes, work, smem, global\n"
    "traffic, FLOPs, sync), with ptxas resources (--arch, default the GPU's or sm_90;\n"
    "none skips NVRTC) and a roofline floor for --gpu (default h100). --stage prints\n"
    "one stage's source (a number, a kind, or part of a node label such as\n"
    "blk.3.ffn_up.weight). --check fails on any clang warning. --diff exits 0 when\n"
    "the kernels do the same work, 1 when they differ. Report format:\n"
    "docs/INSPECT.md.\n";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "mkc: error: inspect: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run `mkc inspect --help` for usage)\n");
  return 2;
}

static int parse_count(const char *flag, const char *s, long lo, long hi, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi) {
    fprintf(stderr, "mkc: error: inspect: %s: expected an integer in %ld..%ld, got '%s'\n", flag,
            lo, hi, s);
    return -1;
  }
  *out = (int)v;
  return 0;
}

static int need_libclang(void) {
  char why[512];
  if (mkc_clang_load(why, sizeof why) == 0) return 0;
  fprintf(stderr, "mkc: error: inspect needs libclang: %s\n", why);
  return -1;
}

/* What the command line asks for. */
typedef struct inspect_args {
  mkc_inspect_opts o;
  const char *files[64], *stage;
  int n_files, json, check, diff, help;
} inspect_args;

/* A flag that takes a value; returns 0 or the usage error's exit status. */
static int parse_valued(const char *flag, const char *v, inspect_args *a) {
  if (strcmp(flag, "--gpu") == 0)
    a->o.gpu = v;
  else if (strcmp(flag, "--arch") == 0)
    a->o.arch = strcmp(v, "none") == 0 ? NULL : v;
  else if (strcmp(flag, "--stage") == 0)
    a->stage = v;
  else if (strcmp(flag, "--tokens") == 0) {
    if (parse_count(flag, v, 1, 32, &a->o.tokens)) return 2;
  } else if (strcmp(flag, "--pos") == 0) {
    if (parse_count(flag, v, 0, INT_MAX / 2, &a->o.pos)) return 2;
  } else if (strcmp(flag, "--blocks") == 0) {
    if (parse_count(flag, v, 1, 1 << 20, &a->o.blocks)) return 2;
  } else
    return usage_error("unknown option '%s'", flag);
  return 0;
}

/* Reads the command line into a (a->help: --help was given); returns 0 or the
 * usage error's exit status. */
static int parse_args(int argc, char **argv, inspect_args *a) {
  memset(a, 0, sizeof *a);
  a->o.pos = -1;
  a->o.arch = "";
  for (int i = 2; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      a->help = 1;
      return 0;
    }
    if (strcmp(arg, "--json") == 0)
      a->json = 1;
    else if (strcmp(arg, "--check") == 0)
      a->check = 1;
    else if (strcmp(arg, "--diff") == 0)
      a->diff = 1;
    else if (arg[0] != '-') {
      if (a->n_files == 64) return usage_error("%s", "too many files");
      a->files[a->n_files++] = arg;
    } else if (i + 1 >= argc)
      return usage_error("%s needs a value", arg);
    else {
      int rc = parse_valued(arg, argv[++i], a);
      if (rc) return rc;
    }
  }
  if (a->check + a->diff + (a->json || a->stage) > 1)
    return usage_error("%s", "--check, --diff and --json/--stage do not combine");
  if (a->json && a->stage) return usage_error("%s", "--json gives the whole report; drop --stage");
  if (a->n_files == 0) return usage_error("%s", "which kernel? (mkc inspect llama.tiny.cu)");
  if (a->diff && a->n_files != 2) return usage_error("%s", "--diff takes two kernel files");
  if (!a->diff && !a->check && a->n_files != 1)
    return usage_error("%s", "one kernel file at a time");
  return 0;
}

static int run_check(const inspect_args *a) {
  int bad = 0;
  for (int i = 0; i < a->n_files; i++) {
    int n = mkc_inspect_check(a->files[i]);
    if (n < 0) return 1;
    if (n)
      fprintf(stderr, "mkc: inspect --check: %s: %d warning%s\n", a->files[i], n,
              n == 1 ? "" : "s");
    else
      printf("%s: no warnings (clang -Wall -Wextra -Wshadow-all -Wconversion, device side)\n",
             a->files[i]);
    bad += n > 0;
  }
  return bad ? 1 : 0;
}

static int run_diff(const inspect_args *a) {
  mkc_inspect_report x = {0}, y = {0};
  int rc = 2;
  if (mkc_inspect_open(a->files[0], &a->o, &x) == 0 &&
      mkc_inspect_open(a->files[1], &a->o, &y) == 0) {
    int n = mkc_inspect_diff(&x, &y, stdout);
    rc = n < 0 ? 2 : n > 0;
  }
  mkc_inspect_close(&x);
  mkc_inspect_close(&y);
  return rc;
}

/* The outline, the JSON report or one stage's source. */
static int run_report(const inspect_args *a) {
  mkc_inspect_report r;
  int rc = 1;
  if (mkc_inspect_open(a->files[0], &a->o, &r) == 0) {
    if (a->json) {
      mkc_inspect_print_json(&r, stdout);
      rc = r.n_mismatches ? 1 : 0;
    } else if (a->stage) {
      rc = mkc_inspect_print_stage(&r, a->stage, stdout) ? 0 : 1;
      if (rc)
        fprintf(stderr,
                "mkc: error: inspect: no stage is '%s' (a number 1..%d, a kind, or part of a node "
                "label)\n",
                a->stage, r.n_stages);
    } else {
      mkc_inspect_print(&r, stdout);
      rc = r.n_mismatches ? 1 : 0;
    }
    if (r.n_mismatches)
      fprintf(stderr, "mkc: inspect: %s: %d mismatch%s between the codegen metadata and the code\n",
              a->files[0], r.n_mismatches, r.n_mismatches == 1 ? "" : "es");
  }
  mkc_inspect_close(&r);
  return rc;
}

/* A model file (GGUF by its magic, a Hugging Face folder or safetensors)
 * named where a kernel belongs: 1 after saying what to run instead. */
static int model_not_kernel(const char *path) {
  struct stat st;
  size_t n = strlen(path);
  int model = (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) ||
              (n > 12 && strcmp(path + n - 12, ".safetensors") == 0);
  char magic[4] = {0};
  FILE *f = model ? NULL : fopen(path, "rb");
  if (f) {
    model = fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
    fclose(f);
  }
  if (!model) return 0;
  fprintf(stderr,
          "mkc: error: inspect: %s is a model file, not a kernel: `mkc info -m %s` says what it "
          "holds; `mkc gen -m %s -o model.cu` writes its kernel to inspect\n",
          path, path, path);
  return 1;
}

int mkc_cmd_inspect(int argc, char **argv) {
  inspect_args a;
  for (int i = 2; i + 1 < argc; i++)
    if (strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "--model") == 0)
      return model_not_kernel(argv[i + 1])
                 ? 2
                 : usage_error(
                       "%s", "inspect reads kernels: -m has no place here (use mkc info -m MODEL)");
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;
  if (a.help) {
    fputs(USAGE, stdout);
    return 0;
  }
  for (int i = 0; i < a.n_files; i++)
    if (model_not_kernel(a.files[i])) return 2;
  if (need_libclang() != 0) return 1;
  if (a.check) return run_check(&a);
  if (a.diff) return run_diff(&a);
  return run_report(&a);
}
