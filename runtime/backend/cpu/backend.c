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

static void out_of_memory(void) { fputs("mkc: error: cpu backend: out of memory\n", stderr); }

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

/* $MKC_CPU_CFLAGS, else optimized for this machine: the kernel is built where
 * it runs (the cache key holds the whole command), and -march=native lets the
 * prelude's vector types use the widest SIMD there is. errno is never read.
 * -O2, not -O3: the same decode speed in half the compile time
 * (docs/DECISIONS.md). */
static const char *optimize_flags(void) {
  const char *f = getenv("MKC_CPU_CFLAGS");
  return f && *f ? f : "-O2 -march=native -fno-math-errno";
}

static char *compile_command(const char *cc, const char *inc, const char *src, const char *out) {
  char *cmd;
  if (asprintf(&cmd, "%s -std=gnu11 %s -fPIC -shared -x c -DMKC_CPU -I%s %s -o %s -lm", cc,
               optimize_flags(), inc, src, out) < 0)
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
      out_of_memory();
    free(k);
    dlclose(dl);
    return NULL;
  }
  k->dl = dl;
  k->step = (mkc_step_fn)sym;
  return k;
}

/* $MKC_CC, else $CC, else "cc". */
static const char *compiler(void) {
  const char *cc = getenv("MKC_CC");
  if (!cc || !*cc) cc = getenv("CC");
  return cc && *cc ? cc : "cc";
}

/* The source as compiled: a #line first, so diagnostics before the source's
 * own #line directives name the kernel. NULL when out of memory. */
static char *kernel_text(const char *source, const char *name) {
  char *name_esc = malloc(strlen(name) * 2 + 1), *e = name_esc, *text;
  if (!name_esc) return NULL;
  for (const char *s = name; *s; s++) {
    if (*s == '"' || *s == '\\') *e++ = '\\';
    *e++ = *s;
  }
  *e = '\0';
  if (asprintf(&text, "#line 1 \"%s\"\n%s", name_esc, source) < 0) text = NULL;
  free(name_esc);
  return text;
}

/* h folded with every template the text #includes by name from
 * templates_dir (a generated kernel splices its templates into the text; a
 * test's kernel may include them instead, and an edited template must not
 * reuse an old build). */
static uint64_t hash_includes(uint64_t h, const char *text, const char *templates_dir) {
  static const char INC[] = "#include \"";
  for (const char *at = strstr(text, INC); at; at = strstr(at + 1, INC)) {
    const char *name = at + sizeof INC - 1, *end = strchr(name, '"');
    if (!end || end - name > 200) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%.*s", templates_dir, (int)(end - name), name);
    char *body = mkc_read_file(path, NULL);
    h = mkc_fnv1a_str(h, body ? body : "");
    free(body);
  }
  return h;
}

/* What of a kernel's source its cache key covers: the source less the
 * header comment codegen writes first (the graph's path, the hashes, the
 * plan's sizes) and less the kernel's name in its own #line directives,
 * which say how the kernel was asked for, not what it compiles to. So the
 * same kernel generated from a preset and from a model file, or in another
 * directory, is one cache entry and one compile; only an assert's message in
 * the kernel's own lines would name the first. */
static uint64_t hash_source(uint64_t h, const char *source, const char *name) {
  static const char MARK[] = " -- generated: do not edit.";
  const char *eol = strchr(source, '\n'), *end = strstr(source, "*/"), *mark = strstr(source, MARK);
  if (strncmp(source, "/* ", 3) == 0 && eol && end && end > eol && mark && mark < eol)
    source = end + 2;
  size_t name_len = strlen(name);
  for (const char *line = source; *line;) {
    const char *next = strchr(line, '\n');
    size_t len = next ? (size_t)(next - line + 1) : strlen(line);
    const char *quote = memchr(line, '"', len);
    /* #line N "name": the name left out */
    if (len > 6 && strncmp(line, "#line ", 6) == 0 && quote &&
        (size_t)(line + len - quote) >= name_len + 2 && strncmp(quote + 1, name, name_len) == 0 &&
        quote[name_len + 1] == '"')
      h = mkc_fnv1a(h, line, (size_t)(quote - line));
    else
      h = mkc_fnv1a(h, line, len);
    line += len;
  }
  return h;
}

/* FNV-1a over the source (hash_source), the prelude and mkc_state.h it
 * includes, the templates it includes, and the compiler command line. -1 +
 * message when the prelude cannot be read. */
static int cache_key(const char *source, const char *name, const char *templates_dir,
                     const char *key_cmd, uint64_t *key) {
  char path[4200];
  snprintf(path, sizeof path, "%s/prelude_cpu.h", templates_dir);
  char *prelude = mkc_read_file(path, NULL);
  if (!prelude) {
    fprintf(stderr, "mkc: error: cpu backend: cannot read %s: %s\n", path, strerror(errno));
    return -1;
  }
  snprintf(path, sizeof path, "%s/mkc_state.h", templates_dir);
  char *state_h = mkc_read_file(path, NULL);
  uint64_t h = MKC_FNV_OFFSET;
  h = hash_source(h, source, name);
  h = mkc_fnv1a_str(h, prelude);
  h = mkc_fnv1a_str(h, state_h ? state_h : "");
  h = hash_includes(h, source, templates_dir);
  h = mkc_fnv1a_str(h, key_cmd);
  free(prelude);
  free(state_h);
  *key = h;
  return 0;
}

/* The cache entry of key: "so" the library, "c" the source it is built from. */
static void entry_path(const char *dir, uint64_t key, const char *ext, char *out, size_t cap) {
  snprintf(out, cap, "%s/%016llx.%s", dir, (unsigned long long)key, ext);
}

/* Compiles text into the cache entry of key, with the source beside it; the
 * library is written to a temporary name and renamed into place. 0, or -1
 * after printing why (the compiler's output first). */
static int build(const char *text, const char *name, const char *cc, const char *inc,
                 const char *dir, uint64_t key) {
  char src[4200], so[4200], tmp[4300];
  char *src_q = NULL, *tmp_q = NULL, *cmd = NULL, *log = NULL;
  int rc = -1;
  entry_path(dir, key, "c", src, sizeof src);
  entry_path(dir, key, "so", so, sizeof so);
  if (write_atomic(src, text) != 0) {
    fprintf(stderr, "mkc: error: cpu backend: cannot write %s: %s\n", src, strerror(errno));
    return -1;
  }
  mkc_temp_path(so, tmp, sizeof tmp); /* fits: so is a short name in dir, tmp is larger */
  if (!(src_q = shell_quote(src)) || !(tmp_q = shell_quote(tmp)) ||
      !(cmd = compile_command(cc, inc, src_q, tmp_q))) {
    out_of_memory();
  } else if (run_captured(cmd, &log) != 0) {
    if (log) fputs(log, stderr);
    fprintf(stderr, "mkc: error: cpu backend: compiling %s failed (command: %s)\n", name, cmd);
    unlink(tmp);
  } else if (rename(tmp, so) != 0) {
    fprintf(stderr, "mkc: error: cpu backend: cannot rename %s to %s: %s\n", tmp, so,
            strerror(errno));
    unlink(tmp);
  } else {
    rc = 0;
  }
  free(src_q);
  free(tmp_q);
  free(cmd);
  free(log);
  return rc;
}

mkc_cpu_kernel *mkc_cpu_kernel_open(const char *source, const char *name,
                                    const char *templates_dir) {
  mkc_cpu_kernel *k = NULL;
  const char *cc = compiler();
  char *text = kernel_text(source, name), *inc = NULL, *key_cmd = NULL;
  char dir[4096], so[4200];
  uint64_t key;
  if (!text || !(inc = shell_quote(templates_dir)) ||
      !(key_cmd = compile_command(cc, inc, "SOURCE", "OUTPUT"))) {
    out_of_memory();
    goto out;
  }
  if (cache_key(source, name, templates_dir, key_cmd, &key) != 0 || cache_dir(dir, sizeof dir) != 0)
    goto out;
  entry_path(dir, key, "so", so, sizeof so);
  if (access(so, R_OK) == 0 && (k = load(so, name, 1))) goto out;
  if (build(text, name, cc, inc, dir, key) == 0) k = load(so, name, 0);
out:
  free(text);
  free(inc);
  free(key_cmd);
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
