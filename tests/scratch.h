/* A scratch folder for one test program: scratch_open("name") makes
 * $TMPDIR/mkc-test-name-XXXXXX, tmp_path("file") names a path in it (eight
 * at a time stay valid), scratch_close() removes it. */
#ifndef MKC_SCRATCH_H
#define MKC_SCRATCH_H

#include <stdio.h>
#include <stdlib.h>

static char tmp_dir[256];

static inline const char *tmp_path(const char *name) {
  static char paths[8][512];
  static int next;
  char *p = paths[next++ % 8];
  snprintf(p, sizeof paths[0], "%s/%s", tmp_dir, name);
  return p;
}

static inline int scratch_open(const char *name) {
  snprintf(tmp_dir, sizeof tmp_dir, "%s/mkc-test-%s-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
  if (mkdtemp(tmp_dir)) return 0;
  perror("mkdtemp");
  return -1;
}

static inline void scratch_close(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
}

#endif
