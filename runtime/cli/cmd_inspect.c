/* `mkc inspect`: the command line over runtime/inspect/inspect.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "inspect/inspect.h"
#include "inspect/libclang.h"

static const char USAGE[] =
    "usage:\n"
    "  mkc inspect KERNEL.cu [--gpu ID] [--arch sm_XY|none] [--tokens T] [--pos P] [--blocks B]\n"
    "                        [--json | --stage N|NAME]\n"
    "  mkc inspect --check KERNEL.cu...\n"
    "  mkc inspect --diff A.cu B.cu [--gpu ID] [--arch sm_XY|none] [--tokens T] [--pos P]\n"
    "\n"
    "Outlines an emitted kernel stage by stage (graph nodes, work, smem, global traffic,\n"
    "FLOPs, sync), with ptxas resources (--arch, default the GPU's or sm_90; none skips\n"
    "NVRTC) and a roofline floor for --gpu (default h100). --stage prints one stage's\n"
    "source (a number, a kind, or part of a node label such as blk.3.ffn_up.weight).\n"
    "--check fails on any clang warning. --diff exits 0 when the kernels do the same\n"
    "work, 1 when they differ. Report format: docs/INSPECT.md.\n";

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

int mkc_cmd_inspect(int argc, char **argv) {
  mkc_inspect_opts o = {.pos = -1, .arch = ""};
  const char *files[64], *stage = NULL;
  int n_files = 0, json = 0, check = 0, diff = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(USAGE, stdout);
      return 0;
    }
    if (strcmp(a, "--json") == 0) {
      json = 1;
      continue;
    }
    if (strcmp(a, "--check") == 0) {
      check = 1;
      continue;
    }
    if (strcmp(a, "--diff") == 0) {
      diff = 1;
      continue;
    }
    if (a[0] != '-') {
      if (n_files == 64) return usage_error("%s", "too many files");
      files[n_files++] = a;
      continue;
    }
    if (i + 1 >= argc) return usage_error("%s needs a value", a);
    const char *v = argv[++i];
    if (strcmp(a, "--gpu") == 0)
      o.gpu = v;
    else if (strcmp(a, "--arch") == 0)
      o.arch = strcmp(v, "none") == 0 ? NULL : v;
    else if (strcmp(a, "--stage") == 0)
      stage = v;
    else if (strcmp(a, "--tokens") == 0) {
      if (parse_count(a, v, 1, 32, &o.tokens)) return 2;
    } else if (strcmp(a, "--pos") == 0) {
      if (parse_count(a, v, 0, INT_MAX / 2, &o.pos)) return 2;
    } else if (strcmp(a, "--blocks") == 0) {
      if (parse_count(a, v, 1, 1 << 20, &o.blocks)) return 2;
    } else
      return usage_error("unknown option '%s'", a);
  }
  if (check + diff + (json || stage) > 1)
    return usage_error("%s", "--check, --diff and --json/--stage do not combine");
  if (json && stage) return usage_error("%s", "--json gives the whole report; drop --stage");
  if (n_files == 0) return usage_error("%s", "which kernel? (mkc inspect llama.tiny.cu)");
  if (diff && n_files != 2) return usage_error("%s", "--diff takes two kernel files");
  if (!diff && !check && n_files != 1) return usage_error("%s", "one kernel file at a time");
  if (need_libclang() != 0) return 1;

  if (check) {
    int bad = 0;
    for (int i = 0; i < n_files; i++) {
      int n = mkc_inspect_check(files[i]);
      if (n < 0) return 1;
      if (n)
        fprintf(stderr, "mkc: inspect --check: %s: %d warning%s\n", files[i], n, n == 1 ? "" : "s");
      else
        printf("%s: no warnings (clang -Wall -Wextra -Wshadow-all -Wconversion, device side)\n",
               files[i]);
      bad += n > 0;
    }
    return bad ? 1 : 0;
  }

  if (diff) {
    mkc_inspect_report a = {0}, b = {0};
    int rc = 2;
    if (mkc_inspect_open(files[0], &o, &a) == 0 && mkc_inspect_open(files[1], &o, &b) == 0) {
      int n = mkc_inspect_diff(&a, &b, stdout);
      rc = n < 0 ? 2 : n > 0;
    }
    mkc_inspect_close(&a);
    mkc_inspect_close(&b);
    return rc;
  }

  mkc_inspect_report r;
  int rc = 1;
  if (mkc_inspect_open(files[0], &o, &r) == 0) {
    if (json) {
      mkc_inspect_print_json(&r, stdout);
      rc = r.n_mismatches ? 1 : 0;
    } else if (stage) {
      rc = mkc_inspect_print_stage(&r, stage, stdout) ? 0 : 1;
      if (rc)
        fprintf(stderr,
                "mkc: error: inspect: no stage is '%s' (a number 1..%d, a kind, or part of a node "
                "label)\n",
                stage, r.n_stages);
    } else {
      mkc_inspect_print(&r, stdout);
      rc = r.n_mismatches ? 1 : 0;
    }
    if (r.n_mismatches)
      fprintf(stderr, "mkc: inspect: %s: %d mismatch%s between the codegen metadata and the code\n",
              files[0], r.n_mismatches, r.n_mismatches == 1 ? "" : "es");
  }
  mkc_inspect_close(&r);
  return rc;
}
