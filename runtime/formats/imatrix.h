/* Importance matrices as llama-imatrix writes them, for `mkc quantize
 * --imatrix`: per weight matrix, the mean square of the input each of its
 * columns meets (per expert for an experts' tensor). Two formats:
 *
 *   GGUF (llama.cpp since 2025): tensors NAME.in_sum2 (F32, the inputs'
 *     squares summed, ne[0] columns by ne[1] experts) and NAME.counts (F32,
 *     the inputs counted, one per expert); metadata imatrix.datasets (string
 *     array), imatrix.chunk_count and imatrix.chunk_size (u32).
 *   legacy .dat: i32 entries; per entry i32 name length, the name, i32 calls,
 *     i32 values, the values (f32, the mean square times calls); then,
 *     optionally, i32 chunks and i32 length plus the dataset's name.
 *
 * The values kept are the means llama-quantize uses: sum / count per expert
 * (1 where an expert saw no input), a legacy value / calls; beside them the
 * file's own numbers, which `mkc imatrix --in-file` adds up. */
#ifndef MKC_IMATRIX_H
#define MKC_IMATRIX_H

#include <stddef.h>

typedef struct mkc_imatrix_entry {
  char *name;    /* the weight's tensor name, "blk.0.attn_q.weight" */
  float *values; /* [n]: columns, expert by expert */
  size_t n;
  /* as the file holds them: GGUF's in_sum2 [n] and counts [mats] (an expert's slice n / mats
   * columns); a .dat's values (the means times the calls) and its calls, mats 1 */
  float *sums, *counts;
  size_t mats;
} mkc_imatrix_entry;

typedef struct mkc_imatrix {
  mkc_imatrix_entry *entries; /* [n], sorted by name */
  size_t n;
  char *dataset;   /* the first dataset's name, or NULL */
  char **datasets; /* [n_datasets]: every dataset's name (a .dat's one, if it has it) */
  size_t n_datasets;
  int chunks;     /* chunks it was computed on (0: not recorded) */
  int chunk_size; /* GGUF's imatrix.chunk_size (0 in a .dat) */
  int legacy;     /* 1: the .dat format */
} mkc_imatrix;

/* Parses size bytes (name for messages). 0, or -1 after "mkc: error: NAME: ..." on any defect:
 * truncation, counts or lengths the bytes cannot hold, a GGUF without the three metadata keys,
 * sums without counts (or the reverse), types other than F32, counts that do not divide the
 * sums, negative or non-finite values, a name twice, no entries. */
int mkc_imatrix_parse(const void *data, size_t size, const char *name, mkc_imatrix *im);
int mkc_imatrix_load(const char *path, mkc_imatrix *im);
void mkc_imatrix_free(mkc_imatrix *im);

/* The entry for a tensor, or NULL. */
const mkc_imatrix_entry *mkc_imatrix_find(const mkc_imatrix *im, const char *name);

/* Drops the entries whose names contain any of the n strings (keep 0), or keeps only those
 * (keep 1): llama-quantize's --exclude-weights and --include-weights. */
void mkc_imatrix_filter(mkc_imatrix *im, const char *const *names, int n, int keep);

/* What `mkc imatrix` collects, as llama-imatrix writes it: per weight matrix (per slice of it:
 * an expert of a 3-d _exps tensor) the sum over the inputs it met of each column's input squared,
 * and how many inputs that was. */
typedef struct mkc_imatrix_sums {
  size_t n;
  char **names;  /* [n] the matrices' tensor names */
  int *cols;     /* [n] their columns */
  int *mats;     /* [n] their slices: the experts of an _exps tensor, else 1 */
  double **sums; /* [n][mats * cols], slice after slice */
  long **counts; /* [n][mats] */
} mkc_imatrix_sums;

/* What a written matrix records beside its entries. */
typedef struct mkc_imatrix_meta {
  const char *const *datasets; /* GGUF's imatrix.datasets */
  size_t n_datasets;
  const char *dat_dataset; /* the one a .dat names (NULL: none) */
  int chunks, chunk_size;
} mkc_imatrix_meta;

/* Writes s to path (atomically): llama-imatrix's GGUF (legacy 0: general.type "imatrix",
 * imatrix.datasets, imatrix.chunk_count and imatrix.chunk_size; per matrix NAME.in_sum2
 * [mats][cols] and NAME.counts [mats][1], F32) or its .dat (legacy 1: the means times the calls,
 * a call a chunk, then chunks and the dataset). 0, or -1 after a message. */
int mkc_imatrix_write(const char *path, const mkc_imatrix_sums *s, int legacy,
                      const mkc_imatrix_meta *m);

#endif
