/* mkc quantize's parts: the options its command line sets (cmd_quantize.c), the plan of what it
 * writes, the writing (quantize_write.c) and --prune-layers' renaming (quantize_prune.c). */
#ifndef MKC_CLI_QUANTIZE_CMD_H
#define MKC_CLI_QUANTIZE_CMD_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/gguf.h"
#include "formats/imatrix.h"
#include "formats/quant_mix.h"

#define MAX_OVERRIDES 1024 /* --tensor-type and --tensor-type-file's lines */
#define MAX_NAMES 64       /* --include-weights, --exclude-weights, --override-kv */
#define MAX_PRUNE 4096     /* --prune-layers */

typedef struct override {
  regex_t re;
  uint32_t type;
} quantize_override;

typedef struct quantize_options {
  const char *in, *out, *imatrix;
  char out_buf[4200]; /* out when made from IN and TYPE */
  const mkc_quant_ftype *ft;
  int threads, requantize, dry_run, keep_split;
  size_t max_buffer;             /* --max-buffer-size, bytes */
  int prune[MAX_PRUNE], n_prune; /* --prune-layers, ascending, each once */
  quantize_override ov[MAX_OVERRIDES];
  int n_ov;
  const char *names[MAX_NAMES]; /* --include-weights or --exclude-weights */
  int n_names, include, exclude;
  const char *kv[MAX_NAMES]; /* --override-kv */
  int n_kv;
  mkc_imatrix im;
} quantize_options;

/* What is written: n tensors (--prune-layers leaves some out) in llama.cpp's order (with
 * --keep-split: by file, then place in it), the file's tensor order[k] as names[k] in type
 * types[k] (fell[k]: the type the rules gave where its rows are not whole blocks of it), of
 * bytes[k] bytes. */
typedef struct quantize_plan {
  const quantize_options *o;
  const mkc_gguf *f;
  const uint64_t *order;
  const char *const *names;
  const uint32_t *types, *fell;
  const uint64_t *bytes;
  uint64_t n;
} quantize_plan;

/* The importance values tensor t takes: its columns times its slices (the experts: a part of
 * the matrix each); 0 for a tensor of no rows. */
uint64_t mkc_quantize_imatrix_size(const mkc_gguf_tensor *t);

/* Entry k's fallback (if any) and progress line, as llama-quantize prints them. */
void mkc_quantize_report(const quantize_plan *p, uint64_t k);

/* The output: one file, or with --keep-split one per file of IN (OUT-00001-of-0000N.gguf, ...,
 * each with split.no, split.count and split.tensors.count, the first with the metadata: IN's,
 * general.file_type ftype, block_count blocks unless -1). 0, or -1 after a message. */
int mkc_quantize_write(const quantize_plan *p, const char *arch, int ftype, int blocks);

/* --prune-layers (prune[n_prune], ascending) on a model of n_layer layers: the tensors of those
 * layers taken out of order (*n of them), the others' layer numbers closed up (blk.5. after
 * pruning 3 is blk.4.), renamed[k] the new name of order[k] (allocated) or NULL where it keeps
 * its own. The layers kept, or -1 after a message. */
int mkc_quantize_prune(const int *prune, int n_prune, int n_layer, const mkc_gguf *f,
                       uint64_t *order, uint64_t *n, char **renamed);

#endif
