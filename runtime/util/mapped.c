/* See mapped.h. The guard is a SIGBUS handler installed only while a read
 * runs: a fault inside the guarded mapping jumps back to mkc_mapped_read
 * (sigsetjmp), any other SIGBUS faults again with the default action, as
 * it would have without the guard. */
#include "mapped.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"

typedef struct guard {
  sigjmp_buf env;
  const uint8_t *lo, *hi;
  struct guard *outer;
} guard;

static __thread guard *active;

static void on_sigbus(int sig, siginfo_t *info, void *uctx) {
  (void)uctx;
  const uint8_t *at = info->si_addr;
  for (guard *g = active; g; g = g->outer)
    if (at >= g->lo && at < g->hi) siglongjmp(g->env, 1);
  signal(sig, SIG_DFL); /* not a guarded read: returning faults again, unguarded */
}

static int64_t mtime_ns(const struct stat *st) {
  return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

void mkc_mapped_test_pause(const char *env) {
  static const char *done[8];
  const char *fifo = getenv(env);
  if (!fifo || !*fifo) return;
  for (int i = 0; i < 8; i++) {
    if (done[i] && strcmp(done[i], env) == 0) return;
    if (!done[i]) {
      done[i] = env;
      break;
    }
  }
  int fd = open(fifo, O_RDONLY | O_CLOEXEC); /* returns once a writer opens it */
  char buf[64];
  while (fd >= 0 && read(fd, buf, sizeof buf) > 0) continue;
  if (fd >= 0) close(fd);
}

int mkc_mapped_open(const char *path, mkc_mapped *m) {
  *m = (mkc_mapped){NULL, 0, -1, 0};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return mkc_error_in(path, "cannot open: %s", strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return mkc_error_in(path, "not a regular file");
  }
  m->size = (size_t)st.st_size;
  m->mtime_ns = mtime_ns(&st);
  if (m->size > 0) { /* mmap refuses length 0 */
    void *base = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
      close(fd);
      return mkc_error_in(path, "cannot map: %s", strerror(errno));
    }
    m->base = base;
  }
  m->fd = fd;
  mkc_mapped_test_pause("MKC_TEST_PAUSE_AFTER_MAP");
  return 0;
}

void mkc_mapped_close(mkc_mapped *m) {
  if (m->base) munmap((void *)m->base, m->size);
  if (m->fd >= 0) close(m->fd);
  *m = (mkc_mapped){NULL, 0, -1, 0};
}

static int changed(const mkc_mapped *m, const char *path) {
  struct stat st;
  if (fstat(m->fd, &st) == 0 && (size_t)st.st_size == m->size && mtime_ns(&st) == m->mtime_ns)
    return 0;
  return mkc_error_in(path, "truncated or changed while reading (%zu bytes when opened, %lld now)",
                      m->size, fstat(m->fd, &st) == 0 ? (long long)st.st_size : -1LL);
}

int mkc_mapped_read(const mkc_mapped *m, const char *path, int (*read)(void *ctx), void *ctx) {
  if (m->fd < 0) return read(ctx);
  guard g = {.lo = m->base, .hi = m->base ? m->base + m->size : NULL, .outer = active};
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &old);
  volatile int rc = -1, faulted = 0; /* live across the jump */
  if (sigsetjmp(g.env, 1) == 0) {
    active = &g;
    rc = read(ctx);
  } else {
    faulted = 1;
  }
  active = g.outer;
  sigaction(SIGBUS, &old, NULL);
  if (faulted || rc == 0) {
    if (changed(m, path)) return -1;
    if (faulted) /* the size and time are back as they were: still no bytes we can trust */
      return mkc_error_in(path, "truncated or changed while reading (a page could not be read)");
  }
  return rc;
}

typedef struct copy_job {
  void *dst;
  const void *src;
  size_t n;
} copy_job;

static int copy(void *ctx) {
  copy_job *job = ctx;
  if (job->n) memcpy(job->dst, job->src, job->n);
  return 0;
}

int mkc_mapped_copy(const mkc_mapped *m, const char *path, void *dst, const void *src, size_t n) {
  copy_job job = {dst, src, n};
  return mkc_mapped_read(m, path, copy, &job);
}
