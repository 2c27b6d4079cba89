/* Work cut into independent parts, run at once: part 0 on the calling thread, each other part on
 * a thread of its own (or, where no thread starts, on the caller's after part 0). */
#ifndef MKC_PARTS_H
#define MKC_PARTS_H

#include <stddef.h>

#define MKC_PARTS_MAX 32

/* run(&parts[i]) for each of the n (at most MKC_PARTS_MAX) parts of part_size bytes at parts;
 * returns once every part has run. */
void mkc_run_parts(void *(*run)(void *), void *parts, size_t part_size, int n);

#endif
