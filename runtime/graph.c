/* Names and cleanup for the graph view (runtime/graph.h). */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

const char *mkc_op_name(int op) {
  static const char *const names[MKC_OP_COUNT] = {
      [MKC_OP_TOKENS] = "tokens",       [MKC_OP_WEIGHT] = "weight", [MKC_OP_EMBED] = "embed",
      [MKC_OP_RMSNORM] = "rmsnorm",     [MKC_OP_MATMUL] = "matmul", [MKC_OP_ROPE] = "rope",
      [MKC_OP_ATTENTION] = "attention", [MKC_OP_ADD] = "add",       [MKC_OP_SWIGLU] = "swiglu",
      [MKC_OP_LOGITS] = "logits",
  };
  return op >= 0 && op < MKC_OP_COUNT && names[op] ? names[op] : "unknown";
}

/* Frees the members only: the struct itself may live on the stack. */
void mkc_graph_free(mkc_graph *g) {
  if (!g) return;
  for (int i = 0; g->weights && i < g->n_weights; i++) free(g->weights[i].name);
  free(g->weights);
  free(g->nodes);
  free(g->graph_path);
  free(g->preset);
  memset(g, 0, sizeof *g);
}
