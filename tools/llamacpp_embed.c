/* llama.cpp as an embedding oracle: MODEL POOLING ID... feeds the ids (no BOS
 * added) as one batch with embeddings on and POOLING (mean, cls or last), and
 * prints the sequence's pooled vector, not normalized, on one line. Linked
 * against the libllama that tools/embed_llamacpp_fixture.sh builds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llama.h"
int main(int argc, char **argv) {
  if (argc < 4) return 1;
  enum llama_pooling_type pool = strcmp(argv[2], "mean") == 0  ? LLAMA_POOLING_TYPE_MEAN
                                 : strcmp(argv[2], "cls") == 0 ? LLAMA_POOLING_TYPE_CLS
                                                               : LLAMA_POOLING_TYPE_LAST;
  llama_backend_init();
  struct llama_model *m = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (!m) return 1;
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512, cp.n_batch = 512, cp.n_ubatch = 512, cp.n_threads = 1, cp.n_threads_batch = 1;
  cp.embeddings = 1, cp.pooling_type = pool;
  struct llama_context *ctx = llama_init_from_model(m, cp);
  if (!ctx) return 2;
  int n = argc - 3;
  struct llama_batch b = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; i++) {
    b.token[i] = atoi(argv[3 + i]), b.pos[i] = i, b.n_seq_id[i] = 1, b.seq_id[i][0] = 0;
    b.logits[i] = 1;
  }
  b.n_tokens = n;
  if (llama_decode(ctx, b)) return 3;
  const float *e = llama_get_embeddings_seq(ctx, 0);
  if (!e) return 4;
  int dim = llama_model_n_embd(m);
  for (int i = 0; i < dim; i++) printf(i ? " %.9g" : "%.9g", e[i]);
  printf("\n");
  llama_batch_free(b);
  return 0;
}
