/* llama.cpp's flags that ask for nothing mkc could do otherwise: threads and CPU placement,
 * memory mapping, devices and offloading, batch sizes, attention kernels, logs; and llama-server's
 * batching, endpoints it enables, jinja, HTTP threads and timeouts, cache reuse. A command line
 * copied from llama-cli or llama-server keeps working: each such flag (and its value) is taken,
 * and a note says it is not followed and why. */
#ifndef MKC_LLAMA_FLAGS_H
#define MKC_LLAMA_FLAGS_H

/* If argv[*i] is one of those flags (llama-server's own too where serve): its value taken too
 * (*i moved past it), the note printed, and 1 returned; 2 after a usage error (a value missing);
 * else 0. */
int mkc_llama_flag_skip(int argc, char **argv, int *i, int serve);

#endif
