/* Read-only file mappings whose readers survive the file changing under
 * them. A mapped file that another process truncates raises SIGBUS at the
 * next read of a page past its new end; mkc_mapped_read turns that into an
 * error message, and afterwards checks that the file's size and
 * modification time are still those it was mapped with. */
#ifndef MKC_MAPPED_H
#define MKC_MAPPED_H

#include <stddef.h>
#include <stdint.h>

typedef struct mkc_mapped {
  const uint8_t *base; /* the whole file; NULL when empty or not mapped */
  size_t size;
  int fd;           /* kept open for the check after each read; -1 if none */
  int64_t mtime_ns; /* when mapped */
} mkc_mapped;

/* Maps path whole (private, read-only), then mkc_mapped_test_pause
 * ("MKC_TEST_PAUSE_AFTER_MAP"). 0, or -1 after "mkc: error: PATH: cannot
 * open / not a regular file / cannot map". */
int mkc_mapped_open(const char *path, mkc_mapped *m);
void mkc_mapped_close(mkc_mapped *m);

/* Returns read(ctx). A SIGBUS on a page of m during the call, or a file
 * whose size or modification time is no longer what it was when mapped,
 * gives "mkc: error: PATH: truncated or changed while reading (N bytes when
 * opened, M now)" and -1. With nothing mapped it only calls read. */
int mkc_mapped_read(const mkc_mapped *m, const char *path, int (*read)(void *ctx), void *ctx);

/* For the tests, so they can change a file at a known moment: when the
 * environment variable env names a FIFO, the first call with that env waits
 * until a writer has opened and closed it. Readers call it with
 * "MKC_TEST_PAUSE_BEFORE_TENSORS" before reading tensor data, and LoRA
 * adapters with "MKC_TEST_PAUSE_BEFORE_ADAPTER" before reading theirs;
 * perplexity with "MKC_TEST_PAUSE_AFTER_CHUNK" after its first chunk. */
void mkc_mapped_test_pause(const char *env);

/* memcpy(dst, src, n) read as mkc_mapped_read does (src in m's mapping, or
 * anywhere when nothing is mapped). 0 or -1. */
int mkc_mapped_copy(const mkc_mapped *m, const char *path, void *dst, const void *src, size_t n);

#endif
