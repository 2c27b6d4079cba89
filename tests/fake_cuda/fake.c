/* See fake.h. */
#include "fake.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int fake_injected;

void fake_trace(const char *fmt, ...) {
  const char *path = getenv("MKC_FAKE_CUDA_TRACE");
  if (!path || !*path) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

int fake_should_fail(const char *env, const char *call) {
  static int calls;
  calls++;
  const char *at = getenv(env);
  if (!at || atoi(at) != calls) return 0;
  fake_injected = 1;
  fprintf(stderr, "fake cuda: injected: %s fails (call %d, %s)\n", call, calls, env);
  return 1;
}
