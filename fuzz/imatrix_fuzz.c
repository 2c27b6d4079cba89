/* libFuzzer target for `mkc quantize --imatrix` files (formats/imatrix.h), GGUF or llama-imatrix's
 * .dat, the input as a whole file: any bytes parse or are refused with a message, never read past
 * the input; a parsed matrix has entries, sorted, each name once and found by name, each with
 * values that are finite means of squares (>= 0), and the file's own sums and counts (finite, >=
 * 0, the counts a whole share of the sums), and its datasets named.
 * Seeds in fuzz/corpus/imatrix: llama-imatrix's two files for blocks-tiny, its GGUF of moe-tiny's
 * experts, and cut ones. A parsed matrix's --show-statistics report (cli/imatrix_stats.h) is
 * written, or refused with a message, without a crash. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/imatrix_stats.h"
#include "formats/imatrix.h"

static void check(int ok) {
  if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* a copy of exactly size bytes: reading past it is a heap overflow ASan sees */
  unsigned char *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  mkc_imatrix im;
  if (mkc_imatrix_parse(copy, size, "fuzz", &im) == 0) {
    check(im.n >= 1 && im.chunks >= 0);
    for (size_t i = 0; i < im.n; i++) {
      const mkc_imatrix_entry *e = &im.entries[i];
      check(e->name && e->n >= 1 && mkc_imatrix_find(&im, e->name) == e);
      check(i == 0 || strcmp(im.entries[i - 1].name, e->name) < 0);
      for (size_t k = 0; k < e->n; k++) check(isfinite(e->values[k]) && e->values[k] >= 0);
      check(e->mats >= 1 && e->n % e->mats == 0 && e->sums && e->counts);
      for (size_t k = 0; k < e->n; k++) check(isfinite(e->sums[k]) && e->sums[k] >= 0);
      for (size_t k = 0; k < e->mats; k++) check(isfinite(e->counts[k]) && e->counts[k] >= 0);
    }
    check(im.chunk_size >= 0 && (im.n_datasets == 0) == (im.datasets == NULL));
    for (size_t i = 0; i < im.n_datasets; i++) check(im.datasets[i] != NULL);
    FILE *null = fopen("/dev/null", "w");
    if (null) {
      int rc = mkc_imatrix_show_statistics(&im, "fuzz", 512, null);
      check(rc == 0 || rc == -1);
      fclose(null);
    }
    mkc_imatrix_free(&im);
  } else
    check(im.n == 0 && !im.entries && !im.dataset && !im.datasets);
  free(copy);
  return 0;
}
