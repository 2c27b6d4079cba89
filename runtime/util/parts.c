/* See parts.h. */
#include "parts.h"

#include <pthread.h>

void mkc_run_parts(void *(*run)(void *), void *parts, size_t part_size, int n) {
  pthread_t thread[MKC_PARTS_MAX];
  unsigned started = 0;
  char *at = parts;
  if (n > MKC_PARTS_MAX) n = MKC_PARTS_MAX;
  for (int t = 1; t < n; t++)
    if (pthread_create(&thread[t], NULL, run, at + (size_t)t * part_size) == 0) started |= 1u << t;
  if (n > 0) run(at);
  for (int t = 1; t < n; t++) /* a part whose thread did not start: here */
    started >> t & 1 ? (void)pthread_join(thread[t], NULL) : (void)run(at + (size_t)t * part_size);
}
