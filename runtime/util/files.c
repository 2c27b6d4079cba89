/* See files.h. */
#include "files.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mkc_mkdir_p(char *path) {
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char c = *p;
    *p = '\0';
    int rc = mkdir(path, 0755);
    *p = c;
    if (rc != 0 && errno != EEXIST) return -1;
    if (!c) return 0;
  }
}

int mkc_user_cache_path(const char *sub, char *out, size_t cap) {
  const char *d;
  int n;
  if ((d = getenv("XDG_CACHE_HOME")) && *d)
    n = snprintf(out, cap, "%s/mkc/%s", d, sub);
  else if ((d = getenv("HOME")) && *d)
    n = snprintf(out, cap, "%s/.cache/mkc/%s", d, sub);
  else
    return -1;
  return n < 0 || (size_t)n >= cap ? -2 : 0;
}

int mkc_cache_dir(const char *sub, char *out, size_t cap) {
  const char *d = getenv("MKC_CACHE_DIR");
  int rc;
  if (d && *d) {
    int n = snprintf(out, cap, "%s/%s", d, sub);
    rc = n < 0 || (size_t)n >= cap ? -2 : 0;
  } else {
    rc = mkc_user_cache_path(sub, out, cap);
  }
  if (rc == -1) {
    fputs("mkc: error: no cache directory: set MKC_CACHE_DIR or HOME\n", stderr);
    return -1;
  }
  if (rc == -2) {
    fputs("mkc: error: the cache directory's path is too long\n", stderr);
    return -1;
  }
  if (mkc_mkdir_p(out) != 0) {
    fprintf(stderr, "mkc: error: cannot create the cache directory %s: %s\n", out, strerror(errno));
    return -1;
  }
  return 0;
}

void *mkc_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  do {
    if (cap - len < 65536) {
      char *nb = realloc(buf, cap = cap * 2 + 65536 + 1);
      if (!nb) {
        free(buf);
        fclose(f);
        errno = ENOMEM;
        return NULL;
      }
      buf = nb;
    }
    n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
  } while (n > 0);
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    errno = EIO;
    return NULL;
  }
  buf[len] = '\0';
  if (size) *size = len;
  return buf;
}

int mkc_temp_path(const char *path, char *tmp, size_t cap) {
  static unsigned counter;
  int n = snprintf(tmp, cap, "%s.%ld.%u.tmp", path, (long)getpid(),
                   __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
  if (n < 0 || (size_t)n >= cap) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return 0;
}

/* -1 with errno set; *at is the file the failure concerns. */
FILE *mkc_atomic_open(const char *path, char *tmp, size_t cap) {
  if (mkc_temp_path(path, tmp, cap) != 0) {
    if (cap) tmp[0] = '\0'; /* no name: path is the one to blame */
    return NULL;
  }
  return fopen(tmp, "wb");
}

int mkc_atomic_commit(FILE *f, const char *tmp, const char *path) {
  errno = 0;
  int bad = ferror(f) != 0;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    int err = errno ? errno : EIO; /* a stream's error sets none */
    unlink(tmp);
    errno = err;
    return -1;
  }
  return 0;
}

void mkc_atomic_abandon(FILE *f, const char *tmp) {
  int err = errno;
  fclose(f);
  unlink(tmp);
  errno = err;
}

static int write_parts(const char *path, const void *const *parts, const size_t *sizes, int n_parts,
                       const char **at) {
  static __thread char tmp[4200];
  *at = path;
  FILE *f = mkc_atomic_open(path, tmp, sizeof tmp);
  if (!f) {
    if (tmp[0]) *at = tmp;
    return -1;
  }
  int bad = 0;
  for (int i = 0; i < n_parts; i++) bad |= sizes[i] && fwrite(parts[i], 1, sizes[i], f) != sizes[i];
  if (bad) return mkc_atomic_abandon(f, tmp), -1;
  return mkc_atomic_commit(f, tmp, path);
}

int mkc_write_atomic_quiet(const char *path, const void *const *parts, const size_t *sizes,
                           int n_parts) {
  const char *at;
  return write_parts(path, parts, sizes, n_parts, &at);
}

int mkc_write_atomic(const char *path, const void *const *parts, const size_t *sizes, int n_parts) {
  const char *at;
  if (write_parts(path, parts, sizes, n_parts, &at) == 0) return 0;
  fprintf(stderr, "mkc: error: cannot write %s: %s\n", at, strerror(errno));
  return -1;
}

int mkc_error_in(const char *what, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mkc: error: %s: ", what);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return -1;
}
