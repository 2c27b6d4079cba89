/* Reading a chunk for its scores (chunk_score.h). */
#include "chunk_score.h"

#include <math.h>

int mkc_chunk_score(mkc_session *s, int t_max, const int *toks, int n, int n_fed, int first,
                    const char *what, mkc_chunk_row_fn row, void *ctx) {
  mkc_session_reset(s);
  mkc_step_result r;
  for (int pos = 0, k; pos < n_fed; pos += k) {
    /* prompt chunks up to `first` (no logits wanted), then steps whose every input's are */
    k = pos < first ? mkc_session_prompt_inputs(s, first - pos) : n_fed - pos;
    if (pos >= first && k > t_max) k = t_max;
    if (mkc_session_step(s, toks + pos, k, k - 1, &r) != 0) return -1;
    if (r.status != MKC_STATUS_OK) {
      fprintf(stderr, "mkc: error: %s: the step at position %d was refused (%s)\n", what, pos,
              mkc_status_name(r.status));
      return -1;
    }
    for (int t = 0; pos >= first && t < k && pos + t < n - 1; t++) {
      const float *logits = mkc_session_logits(s, t);
      if (!logits) {
        fprintf(stderr, "mkc: error: %s: no logits at position %d\n", what, pos + t);
        return -1;
      }
      if (row(ctx, logits, toks[pos + t + 1]) != 0) return -1;
    }
  }
  return 0;
}

void mkc_ppl_print_running(FILE *out, int chunk, double nll, long count) {
  fprintf(out, "[%d]%.4f,", chunk, exp(nll / count));
}

void mkc_ppl_print_final(FILE *out, double nll, double nll2, long count) {
  double mean = nll / count, var = nll2 / count - mean * mean, ppl = exp(mean);
  if (var > 0 && count > 1)
    fprintf(out, "\nFinal estimate: PPL = %.4f +/- %.5f\n", ppl, sqrt(var / (count - 1)) * ppl);
  else
    fprintf(out, "\nFinal estimate: PPL = %.4f (no spread to estimate an error from)\n", ppl);
}
