/* Entry format (little-endian):
 *   "MKCCUBIN" | u64 checksum | u64 cubin size | u64 log size | cubin | log
 * checksum = FNV-1a 64 of everything after it. Written to a temp name and
 * renamed, so readers see a whole entry or none; a torn or flipped entry
 * fails the checksum and is rebuilt. */
#include "kcache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/files.h"
#include "util/hash.h"
#include "nvrtc.h"
#include "util/version.h"

static const char MAGIC[8] = {'M', 'K', 'C', 'C', 'U', 'B', 'I', 'N'};
enum { HEADER = 32 };

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

int mkc_kcache_path(const char *key, char *out, size_t cap) {
  char dir[4096];
  if (mkc_cache_dir("cuda", dir, sizeof dir) != 0) return -1;
  int n = snprintf(out, cap, "%s/%s.cubin", dir, key);
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Loads a whole, checksummed entry; 1 on success, 0 when absent, -1 when corrupt (why set). */
static int load_entry(const char *path, mkc_compiled *out, const char **why) {
  size_t size;
  unsigned char *buf = mkc_read_file(path, &size);
  if (!buf) return 0;
  int rc = -1;
  if (size < HEADER || memcmp(buf, MAGIC, sizeof MAGIC) != 0) {
    *why = "bad header";
    goto done;
  }
  uint64_t sum = get_u64(buf + 8), n_cubin = get_u64(buf + 16), n_log = get_u64(buf + 24);
  if (n_cubin == 0 || n_cubin > size || n_log > size || HEADER + n_cubin + n_log != size) {
    *why = "sizes do not match the file (torn write?)";
    goto done;
  }
  if (mkc_fnv1a(MKC_FNV_OFFSET, buf + 16, size - 16) != sum) {
    *why = "checksum mismatch";
    goto done;
  }
  out->cubin = malloc(n_cubin);
  out->log = malloc(n_log + 1);
  if (!out->cubin || !out->log) {
    *why = "out of memory";
    goto done;
  }
  memcpy(out->cubin, buf + HEADER, n_cubin);
  memcpy(out->log, buf + HEADER + n_cubin, n_log);
  out->log[n_log] = '\0';
  out->cubin_size = n_cubin;
  rc = 1;
done:
  free(buf);
  return rc;
}

static int store_entry(const char *path, const mkc_compiled *c) {
  unsigned char header[HEADER];
  size_t n_log = strlen(c->log);
  memcpy(header, MAGIC, sizeof MAGIC);
  put_u64(header + 16, c->cubin_size);
  put_u64(header + 24, n_log);
  uint64_t sum = mkc_fnv1a(MKC_FNV_OFFSET, header + 16, 16);
  sum = mkc_fnv1a(sum, c->cubin, c->cubin_size);
  sum = mkc_fnv1a(sum, c->log, n_log);
  put_u64(header + 8, sum);
  const void *parts[] = {header, c->cubin, c->log};
  size_t sizes[] = {HEADER, c->cubin_size, n_log};
  return mkc_write_atomic(path, parts, sizes, 3);
}

int mkc_kcache_compile(const char *source, const char *name, const char *arch, int driver_version,
                       mkc_compiled *out) {
  memset(out, 0, sizeof *out);
  char arch_opt[64], path[4200];
  const char *opts[MKC_NVRTC_MAX_OPTIONS];
  int n_opts = mkc_nvrtc_options(arch, opts, arch_opt, sizeof arch_opt);
  char no_nvrtc[512];
  int version = mkc_nvrtc_version(no_nvrtc, sizeof no_nvrtc);
  if (version < 0) {
    fprintf(stderr, "mkc: error: nvrtc: %s\n", no_nvrtc);
    return -1;
  }
  uint64_t h = mkc_fnv1a_str(MKC_FNV_OFFSET, source);
  h = mkc_fnv1a_str(h, name); /* diagnostics and line info carry it */
  for (int i = 0; i < n_opts; i++) h = mkc_fnv1a_str(h, opts[i]);
  h = mkc_fnv1a(h, &version, sizeof version);
  h = mkc_fnv1a(h, &driver_version, sizeof driver_version);
  h = mkc_fnv1a_str(h, arch);
  h = mkc_fnv1a_str(h, MKC_VERSION);
  snprintf(out->key, sizeof out->key, "%016llx", (unsigned long long)h);
  if (mkc_kcache_path(out->key, path, sizeof path) != 0) return -1;

  const char *why = NULL;
  int got = load_entry(path, out, &why);
  if (got == 1) {
    out->from_cache = 1;
  } else {
    if (got < 0)
      fprintf(stderr, "mkc: warning: kernel cache entry %s is corrupt (%s): rebuilding it\n", path,
              why);
    free(out->cubin);
    free(out->log);
    out->cubin = NULL;
    out->log = NULL;
    /* A cold compile of a large kernel takes NVRTC tens of seconds: say so. */
    char dir[4096];
    if (mkc_cache_dir("cuda", dir, sizeof dir) != 0) snprintf(dir, sizeof dir, "the kernel cache");
    fprintf(stderr,
            "mkc: compiling %s for %s with NVRTC %d.%d (once: cached in %s afterwards)...\n", name,
            arch, version / 1000, version % 1000 / 10, dir);
    double t0 = mkc_seconds();
    mkc_nvrtc_output nv;
    if (mkc_nvrtc_compile(source, name, arch, 0, &nv) != 0) {
      mkc_nvrtc_output_free(&nv);
      return -1;
    }
    fprintf(stderr, "mkc: compiled %s for %s in %.1f s\n", name, arch, mkc_seconds() - t0);
    out->cubin = nv.cubin;
    out->cubin_size = nv.cubin_size;
    out->log = nv.log ? nv.log : calloc(1, 1);
    free(nv.ptx);
    if (store_entry(path, out) != 0) fprintf(stderr, "mkc: warning: the kernel was not cached\n");
    const char *keep = getenv("MKC_KEEP_SOURCE");
    if (keep && strcmp(keep, "1") == 0) {
      char src_path[4300];
      snprintf(src_path, sizeof src_path, "%.*s.cu", (int)(strlen(path) - strlen(".cubin")), path);
      const void *parts[] = {source};
      size_t sizes[] = {strlen(source)};
      mkc_write_atomic(src_path, parts, sizes, 1);
    }
  }
  if (mkc_ptxas_parse(out->log, "mkc_step", &out->ptxas) != 0)
    fprintf(stderr, "mkc: warning: no ptxas report for mkc_step in the NVRTC log of %s\n", name);
  return 0;
}

void mkc_compiled_free(mkc_compiled *c) {
  free(c->cubin);
  free(c->log);
  memset(c, 0, sizeof *c);
}
