/* llama.cpp as an oracle: MODEL N ID... feeds the ids (no BOS added) as one
 * batch, then decodes N tokens greedily, one a step, and prints each step's
 * choice and its log-probability, and the runner-up and its
 * ("ID LOGPROB ID2 LOGPROB2"). MKC_N_CTX: the context (256). Linked against the libllama that
 * tools/gemma_llamacpp_fixture.sh builds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "llama.h"
int main(int argc, char **argv) {
  int n_gen = atoi(argv[2]);
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  struct llama_model *m = llama_model_load_from_file(argv[1], mp);
  if (!m) return 1;
  struct llama_context_params cp = llama_context_default_params();
  const char *n_ctx = getenv("MKC_N_CTX"); /* llama.cpp pads it to a multiple of 256 */
  cp.n_ctx = n_ctx ? atoi(n_ctx) : 256, cp.n_threads = 1, cp.n_threads_batch = 1;
  cp.n_batch = cp.n_ubatch = cp.n_ctx;
  struct llama_context *ctx = llama_init_from_model(m, cp);
  int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
  llama_token toks[1024];
  int n = 0;
  if (argc - 3 + n_gen > 1024) return 3;
  for (int i = 3; i < argc; i++) toks[n++] = atoi(argv[i]);
  for (int step = 0; step < n_gen; step++) {
    struct llama_batch b = step == 0 ? llama_batch_get_one(toks, n) : llama_batch_get_one(&toks[n - 1], 1);
    if (llama_decode(ctx, b)) return 2;
    float *l = llama_get_logits_ith(ctx, -1);
    double mx = -1e30, mx2 = -1e30, s = 0;
    int best = 0, second = 0;
    for (int i = 0; i < nv; i++) if (l[i] > mx) mx = l[i], best = i;
    for (int i = 0; i < nv; i++) if (i != best && l[i] > mx2) mx2 = l[i], second = i;
    for (int i = 0; i < nv; i++) s += exp(l[i] - mx);
    printf("%d %.6f %d %.6f\n", best, -log(s), second, mx2 - mx - log(s));
    toks[n++] = best;
  }
  return 0;
}
