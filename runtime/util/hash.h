/* 64-bit FNV-1a: the one hash behind cache keys, checksums and source
 * hashes (codegen/util.lua computes the same function in Lua). */
#ifndef MKC_HASH_H
#define MKC_HASH_H

#include <stddef.h>
#include <stdint.h>

#define MKC_FNV_OFFSET 0xcbf29ce484222325ull

/* Continues hash h over n bytes; start with MKC_FNV_OFFSET. */
uint64_t mkc_fnv1a(uint64_t h, const void *data, size_t n);

/* Continues h over s and its terminating NUL, so ("ab","c") and ("a","bc") differ. */
uint64_t mkc_fnv1a_str(uint64_t h, const char *s);

#endif
