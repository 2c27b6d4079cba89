/* mkc quantize --prune-layers: layers left out of the output and the rest renumbered, as
 * llama.cpp's remap_layer does it (the first "blk.N." in a name names its layer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quantize_cmd.h"

/* The layer of a name holding "blk." digits "." (the first such), and where its digits are and
 * end; 0 for a name of no layer. */
static int layer_of(const char *name, long *layer, size_t *at, size_t *end) {
  for (const char *p = strstr(name, "blk."); p; p = strstr(p + 1, "blk.")) {
    const char *d = p + 4, *e = d;
    while (*e >= '0' && *e <= '9') e++;
    if (e == d || *e != '.' || e - d > 9) continue;
    *layer = strtol(d, NULL, 10);
    *at = (size_t)(d - name);
    *end = (size_t)(e - name);
    return 1;
  }
  return 0;
}

int mkc_quantize_prune(const int *prune, int n_prune, int n_layer, const mkc_gguf *f,
                       uint64_t *order, uint64_t *n, char **renamed) {
  for (int i = 0; i < n_prune; i++)
    if (prune[i] >= n_layer) {
      fprintf(stderr,
              "mkc: error: quantize: --prune-layers: layer %d: the model has %d (0 to %d)\n",
              prune[i], n_layer, n_layer - 1);
      return -1;
    }
  if (n_prune >= n_layer) {
    fprintf(stderr, "mkc: error: quantize: --prune-layers: every one of the %d layers\n", n_layer);
    return -1;
  }
  uint64_t kept = 0;
  for (uint64_t k = 0; k < *n; k++) {
    const char *name = f->tensors[order[k]].name;
    long layer;
    size_t at, end;
    int shift = 0; /* the pruned layers below this one */
    if (layer_of(name, &layer, &at, &end)) {
      while (shift < n_prune && prune[shift] < layer) shift++;
      if (shift < n_prune && prune[shift] == layer) continue; /* left out */
    }
    renamed[kept] = NULL;
    order[kept] = order[k];
    if (shift) {
      size_t size = strlen(name) + 1;
      if (!(renamed[kept] = malloc(size))) {
        fprintf(stderr, "mkc: error: quantize: out of memory\n");
        return -1;
      }
      snprintf(renamed[kept], size, "%.*s%ld%s", (int)at, name, layer - shift, name + end);
    }
    kept++;
  }
  *n = kept;
  return n_layer - n_prune;
}
