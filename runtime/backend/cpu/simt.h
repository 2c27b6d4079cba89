/* SIMT emulator: runs a CUDA-style kernel on the CPU. Every block is an OS
 * thread and all blocks run at once, so a grid barrier built from atomics and
 * spinning works; the threads of a block are fibers switched at barriers and
 * shuffles. The kernel side of the interface is templates/prelude_cpu.h. */
#ifndef MKC_SIMT_H
#define MKC_SIMT_H

#include <stddef.h>

typedef void (*mkc_simt_entry)(void *arg);

/* Runs entry(arg) once per emulated thread: `blocks` x `threads` (threads a
 * multiple of 32, >= 32), with `smem_bytes` of per-block dynamic shared memory,
 * filled with garbage (0xA5 bytes) first. Launches are serialized. Returns 0,
 * or -1 after printing "mkc: error: ..." (bad arguments, or a kernel that
 * reached a barrier with only part of its block or warp). With MKC_SIMT_SEED=N
 * in the environment the launch runs on the checking schedule (simt.c):
 * random warp and lane orders, and one block at a time in a random order,
 * all drawn from N, so that a missing barrier shows and shows again. */
int mkc_simt_launch(int blocks, int threads, size_t smem_bytes, mkc_simt_entry entry, void *arg);

#endif
