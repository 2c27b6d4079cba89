/* CPU backend: emitted source -> host C compiler -> cached .so -> dlopen ->
 * mkc_step run by every emulated thread of the SIMT emulator. */
#include "backend.h"
#include "util/files.h"
#include "util/hash.h"
#include "mkc_state.h"
#include "simt.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void (*mkc_step_fn)(const unsigned short *weights, float *scratch, void *kv,
                            struct mkc_state *state);

struct mkc_cpu_kernel {
  void *dl;
  mkc_step_fn step;
  char *name;
};

static int cache_dir(char *out, size_t cap) { return mkc_cache_dir("cpu", out, cap); }

/* s in single quotes for sh. */
static char *shell_quote(const char *s) {
  char *q = malloc(strlen(s) * 4 + 3), *p = q;
  if (!q) return NULL;
  *p++ = '\'';
  for (; *s; s++) {
    if (*s == '\'') {
      memcpy(p, "'\\''", 4);
      p += 4;
    } else
      *p++ = *s;
  }
  *p++ = '\'';
  *p = '\0';
  return q;
}

static char *compile_command(const char *cc, const char *inc, const char *src, const char *out) {
  char *cmd;
  if (asprintf(&cmd, "%s -std=gnu11 -O2 -fPIC -shared -x c -DMKC_CPU -I%s %s -o %s -lm", cc, inc,
               src, out) < 0)
    return NULL;
  return cmd;
}

/* Through a temporary name and a rename, so a reader (or a racing writer of
 * the same content) never sees a half-written file. */
static int write_atomic(const char *path, const char *text) {
  const void *parts[1] = {text};
  size_t sizes[1] = {strlen(text)};
  return mkc_write_atomic_quiet(path, parts, sizes, 1);
}

/* Runs cmd through sh with stderr merged into stdout; returns the exit status
 * (-1 if it could not run) and the output in *log. */
static int run_captured(const char *cmd, char **log) {
  *log = NULL;
  char *full;
  if (asprintf(&full, "%s 2>&1", cmd) < 0) return -1;
  FILE *p = popen(full, "r");
  free(full);
  if (!p) return -1;
  size_t len = 0, cap = 0, n;
  char *buf = NULL, chunk[4096];
  while ((n = fread(chunk, 1, sizeof chunk, p)) > 0) {
    if (len + n + 1 > cap) {
      char *nb = realloc(buf, cap = (len + n + 1) * 2);
      if (!nb) break;
      buf = nb;
    }
    memcpy(buf + len, chunk, n);
    len += n;
  }
  if (buf) buf[len] = '\0';
  *log = buf;
  int st = pclose(p);
  return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* quiet: a cache entry that fails to load is rebuilt, not reported. */
static mkc_cpu_kernel *load(const char *so_path, const char *name, int quiet) {
  void *dl = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *why = dlerror();
    if (quiet) return NULL;
    fprintf(stderr, "mkc: error: cpu backend: loading %s (%s): %s%s\n", name, so_path, why,
            strstr(why, "mkc_simt") ? " (the host binary must be linked with -rdynamic)" : "");
    return NULL;
  }
  mkc_cpu_kernel *k = calloc(1, sizeof *k);
  void *sym = dlsym(dl, "mkc_step");
  if (!k || !sym || !(k->name = strdup(name))) {
    if (!sym)
      fprintf(stderr, "mkc: error: cpu backend: %s defines no mkc_step\n", name);
    else
      fputs("mkc: error: cpu backend: out of memory\n", stderr);
    free(k);
    dlclose(dl);
    return NULL;
  }
  k->dl = dl;
  k->step = (mkc_step_fn)sym;
  return k;
}

mkc_cpu_kernel *mkc_cpu_kernel_open(const char *source, const char *name,
                                    const char *templates_dir) {
  mkc_cpu_kernel *k = NULL;
  char *text = NULL, *prelude = NULL, *state_h = NULL, *inc = NULL, *key_cmd = NULL;
  char *src_q = NULL, *tmp_q = NULL, *cmd = NULL, *log = NULL;
  char dir[4096], path[4200], so[4200], tmp[4300];
  int oom = 1; /* until the allocations are done */

  /* Diagnostics before the source's own #line directives name the kernel. */
  char *name_esc = malloc(strlen(name) * 2 + 1), *e = name_esc;
  if (!name_esc) goto out;
  for (const char *s = name; *s; s++) {
    if (*s == '"' || *s == '\\') *e++ = '\\';
    *e++ = *s;
  }
  *e = '\0';
  if (asprintf(&text, "#line 1 \"%s\"\n%s", name_esc, source) < 0) {
    text = NULL;
    goto out;
  }

  snprintf(path, sizeof path, "%s/prelude_cpu.h", templates_dir);
  if (!(prelude = mkc_read_file(path, NULL))) {
    fprintf(stderr, "mkc: error: cpu backend: cannot read %s: %s\n", path, strerror(errno));
    oom = 0;
    goto out;
  }
  snprintf(path, sizeof path, "%s/mkc_state.h", templates_dir);
  if (!(state_h = mkc_read_file(path, NULL)) && !(state_h = strdup(""))) goto out;

  const char *cc = getenv("MKC_CC");
  if (!cc || !*cc) cc = getenv("CC");
  if (!cc || !*cc) cc = "cc";
  if (!(inc = shell_quote(templates_dir))) goto out;
  if (!(key_cmd = compile_command(cc, inc, "SOURCE", "OUTPUT"))) goto out;
  oom = 0;

  uint64_t h = MKC_FNV_OFFSET;
  h = mkc_fnv1a_str(h, text);
  h = mkc_fnv1a_str(h, prelude);
  h = mkc_fnv1a_str(h, state_h);
  h = mkc_fnv1a_str(h, key_cmd);

  if (cache_dir(dir, sizeof dir) != 0) goto out;
  snprintf(so, sizeof so, "%s/%016llx.so", dir, (unsigned long long)h);
  if (access(so, R_OK) == 0 && (k = load(so, name, 1))) goto out;

  snprintf(path, sizeof path, "%s/%016llx.c", dir, (unsigned long long)h);
  if (write_atomic(path, text) != 0) {
    fprintf(stderr, "mkc: error: cpu backend: cannot write %s: %s\n", path, strerror(errno));
    goto out;
  }
  mkc_temp_path(so, tmp, sizeof tmp); /* fits: so is a short name in dir, tmp is larger */
  oom = !(src_q = shell_quote(path)) || !(tmp_q = shell_quote(tmp)) ||
        !(cmd = compile_command(cc, inc, src_q, tmp_q));
  if (oom) goto out;
  int status = run_captured(cmd, &log);
  if (status != 0) {
    if (log) fputs(log, stderr);
    fprintf(stderr, "mkc: error: cpu backend: compiling %s failed (command: %s)\n", name, cmd);
    unlink(tmp);
    goto out;
  }
  if (rename(tmp, so) != 0) {
    fprintf(stderr, "mkc: error: cpu backend: cannot rename %s to %s: %s\n", tmp, so,
            strerror(errno));
    unlink(tmp);
    goto out;
  }
  k = load(so, name, 0);
out:
  if (oom) fputs("mkc: error: cpu backend: out of memory\n", stderr);
  free(name_esc);
  free(text);
  free(prelude);
  free(state_h);
  free(inc);
  free(key_cmd);
  free(src_q);
  free(tmp_q);
  free(cmd);
  free(log);
  return k;
}

typedef struct step_args {
  mkc_step_fn step;
  const void *weights;
  float *scratch;
  void *kv;
  struct mkc_state *state;
} step_args;

static void run_step(void *arg) {
  const step_args *a = arg;
  a->step(a->weights, a->scratch, a->kv, a->state);
}

int mkc_cpu_kernel_launch(mkc_cpu_kernel *k, int blocks, int threads, size_t smem_bytes,
                          const void *weights, float *scratch, void *kv, struct mkc_state *state) {
  if (blocks > MKC_MAX_BLOCKS) {
    fprintf(stderr, "mkc: error: cpu backend: %s: %d blocks, at most %d\n", k->name, blocks,
            MKC_MAX_BLOCKS);
    return -1;
  }
  step_args a = {k->step, weights, scratch, kv, state};
  return mkc_simt_launch(blocks, threads, smem_bytes, run_step, &a);
}

void mkc_cpu_kernel_close(mkc_cpu_kernel *k) {
  if (!k) return;
  dlclose(k->dl);
  free(k->name);
  free(k);
}
