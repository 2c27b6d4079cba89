/* A main() for the fuzz targets where there is no libFuzzer (GCC, CI): each
 * file named runs once as is, then as MKC_FUZZ_MUTANTS mutants (default 64),
 * each from a fixed seed, so a failure replays exactly. Built with ASan and
 * UBSan (build/sanitize/fuzz_NAME), it is what `make test` runs of the
 * targets; `make fuzz` (clang, libFuzzer) searches far wider.
 * Each input is copied into a buffer of exactly its size, as libFuzzer does,
 * so a read one past the end is a heap overflow the sanitizer sees.
 * A crash names the mutant: `MKC_FUZZ_ONLY=FILE:K` runs that one alone. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* The sanitizers' hook (weak: a build without them has none). */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

enum { INPUT_CAP = 1 << 22 };

static uint64_t rng_state;

static uint64_t next(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static size_t below(size_t n) { return n ? (size_t)(next() % n) : 0; }

/* Values that sit on a parser's edges: counts, lengths and offsets. */
static uint64_t edge_value(size_t size) {
  static const uint64_t v[] = {0,
                               1,
                               2,
                               0x7f,
                               0x80,
                               0xff,
                               0x7fff,
                               0xffff,
                               0x7fffffff,
                               0x80000000,
                               0xffffffff,
                               0x100000000ull,
                               0x7fffffffffffffffull,
                               0x8000000000000000ull,
                               UINT64_MAX};
  size_t k = below(sizeof v / sizeof v[0] + 3);
  if (k < sizeof v / sizeof v[0]) return v[k];
  return k == sizeof v / sizeof v[0] ? size : k == sizeof v / sizeof v[0] + 1 ? size + 1 : size - 1;
}

/* One edit of buf[0..*n) in place (cap bytes of room); returns 0 if none fit. */
static int mutate_once(uint8_t *buf, size_t *n, size_t cap) {
  size_t size = *n;
  switch (below(7)) {
  case 0: /* a bit */
    if (!size) return 0;
    buf[below(size)] ^= (uint8_t)(1u << below(8));
    return 1;
  case 1: /* a byte */
    if (!size) return 0;
    buf[below(size)] = (uint8_t)edge_value(size);
    return 1;
  case 2: { /* a little-endian field of 2, 4 or 8 bytes */
    size_t w = (size_t)2 << below(3);
    if (size < w) return 0;
    uint64_t v = edge_value(size);
    size_t at = below(size - w + 1);
    for (size_t i = 0; i < w; i++) buf[at + i] = (uint8_t)(v >> (8 * i));
    return 1;
  }
  case 3: /* cut the tail */
    if (!size) return 0;
    *n = below(size);
    return 1;
  case 4: { /* drop a span */
    if (size < 2) return 0;
    size_t at = below(size), len = 1 + below(size - at < 64 ? size - at : 64);
    memmove(buf + at, buf + at + len, size - at - len);
    *n = size - len;
    return 1;
  }
  case 5: { /* repeat a span */
    if (!size) return 0;
    size_t at = below(size), len = 1 + below(size - at < 64 ? size - at : 64);
    if (size + len > cap) return 0;
    size_t to = below(size + 1);
    uint8_t span[64];
    memcpy(span, buf + at, len);
    memmove(buf + to + len, buf + to, size - to);
    memcpy(buf + to, span, len);
    *n = size + len;
    return 1;
  }
  default: { /* insert random bytes */
    size_t len = 1 + below(16), to = below(size + 1);
    if (size + len > cap) return 0;
    memmove(buf + to + len, buf + to, size - to);
    for (size_t i = 0; i < len; i++) buf[to + i] = (uint8_t)next();
    *n = size + len;
    return 1;
  }
  }
}

/* Runs bytes[0..n) from a buffer of exactly n bytes. */
static void run_exact(const uint8_t *bytes, size_t n) {
  uint8_t *copy = malloc(n ? n : 1);
  if (!copy) {
    fprintf(stderr, "fuzz replay: out of memory\n");
    exit(2);
  }
  memcpy(copy, bytes, n);
  LLVMFuzzerTestOneInput(copy, n);
  free(copy);
}

static uint8_t *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *buf = malloc(INPUT_CAP);
  size_t got = buf ? fread(buf, 1, INPUT_CAP, f) : 0;
  int too_big = buf && got == INPUT_CAP && fgetc(f) != EOF;
  fclose(f);
  if (!buf || too_big) {
    free(buf);
    errno = too_big ? EFBIG : ENOMEM;
    return NULL;
  }
  *n = got;
  return buf;
}

static uint64_t hash_name(const char *s) { /* FNV-1a: a mutant's seed follows its file's name */
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  return h;
}

static long inputs;
static char current[600]; /* "replay: the input was FILE:K\n", for a crash */

static void say_current(void) {
  if (current[0] && write(2, current, strlen(current)) < 0) current[0] = '\0';
}

static void on_abort(int sig) { /* a target's own check failed (abort) */
  say_current();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* The file as is, then its mutants first..last (one when only is set). */
static int replay(const char *path, long mutants, long only) {
  size_t n;
  uint8_t *seed = read_file(path, &n);
  if (!seed) {
    fprintf(stderr, "fuzz replay: error: %s: %s\n", path, strerror(errno));
    return 1;
  }
  uint8_t *buf = malloc(INPUT_CAP);
  if (!buf) {
    free(seed);
    fprintf(stderr, "fuzz replay: out of memory\n");
    return 1;
  }
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (only < 0) {
    snprintf(current, sizeof current, "fuzz replay: the input was %s as is\n", path);
    run_exact(seed, n);
    inputs++;
  }
  for (long k = only < 0 ? 0 : only; k < (only < 0 ? mutants : only + 1); k++) {
    rng_state = hash_name(base) ^ (uint64_t)k * 0xd1b54a32d192ed03ull;
    size_t m = n;
    memcpy(buf, seed, n);
    for (size_t edits = 1 + below(4), e = 0; e < edits; e++) mutate_once(buf, &m, INPUT_CAP);
    snprintf(current, sizeof current, "fuzz replay: the input was %s:%ld\n", path, k);
    run_exact(buf, m);
    inputs++;
  }
  free(buf);
  free(seed);
  return 0;
}

static int replay_path(const char *path, long mutants, long only) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "fuzz replay: error: %s: %s\n", path, strerror(errno));
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) return replay(path, mutants, only);
  struct dirent **names;
  int count = scandir(path, &names, NULL, alphasort), bad = 0;
  if (count < 0) {
    fprintf(stderr, "fuzz replay: error: %s: %s\n", path, strerror(errno));
    return 1;
  }
  for (int i = 0; i < count; i++) {
    char full[4096];
    if (names[i]->d_name[0] != '.' &&
        snprintf(full, sizeof full, "%s/%s", path, names[i]->d_name) < (int)sizeof full)
      bad |= replay_path(full, mutants, only);
    free(names[i]);
  }
  free(names);
  return bad;
}

static long env_long(const char *name, long fallback) {
  const char *s = getenv(name);
  char *end;
  if (!s || !*s) return fallback;
  long v = strtol(s, &end, 10);
  if (*end || v < 0) {
    fprintf(stderr, "fuzz replay: error: %s must be a whole number, not '%s'\n", name, s);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  long mutants = env_long("MKC_FUZZ_MUTANTS", 64), only = -1;
  const char *one = getenv("MKC_FUZZ_ONLY"); /* FILE:K */
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(say_current);
  signal(SIGABRT, on_abort);
  signal(SIGSEGV, on_abort);
  if (argc < 2 && !(one && *one)) {
    fprintf(stderr, "usage: %s FILE|DIR... (MKC_FUZZ_MUTANTS=N, MKC_FUZZ_ONLY=FILE:K)\n", argv[0]);
    return 2;
  }
  int bad = 0;
  if (one && *one) {
    const char *colon = strrchr(one, ':');
    char *end;
    only = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || *end || only < 0) {
      fprintf(stderr, "fuzz replay: error: MKC_FUZZ_ONLY must be FILE:K, not '%s'\n", one);
      return 2;
    }
    char file[4096];
    snprintf(file, sizeof file, "%.*s", (int)(colon - one), one);
    bad = replay(file, mutants, only);
  } else {
    for (int i = 1; i < argc; i++) bad |= replay_path(argv[i], mutants, only);
  }
  current[0] = '\0';
  if (only >= 0)
    printf("%ld inputs (mutant %ld)\n", inputs, only);
  else
    printf("%ld inputs (%ld mutants per file)\n", inputs, mutants);
  return bad;
}
