/* llama-perplexity's files of log-probabilities (formats/logits_file.h):
 * a row holds every token's log-probability to within half a level of its
 * scale (the quantization's rounding), worked out here in long double from
 * the logits; tokens more than 16 below the largest sit at level 0; the
 * returned negative log-likelihood is the token's; equal logits give scale
 * 0. The header is read back as written, and a file whose size is not what
 * its counts make, or whose counts are not positive, is refused with why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/logits_file.h"

/* logits with spread `spread` (a uniform draw from [-spread / 2, spread / 2]) */
static void draw(float *logits, int n, float spread, unsigned *seed) {
  for (int i = 0; i < n; i++) logits[i] = spread * ((float)rand_r(seed) / RAND_MAX - 0.5f);
}

/* Every token's decoded log-probability within half a level of the true one (above 16 below
 * the largest logit; level 0 under it), and the returned NLL the token's. */
static void check_row(const char *name, const float *logits, int n, int tok) {
  uint16_t *row = calloc(mkc_logits_row_len(n) + 2, sizeof *row);
  row[mkc_logits_row_len(n)] = 0xbeef; /* past the row: untouched */
  double nll = mkc_logits_row_encode(logits, n, tok, row);
  long double max = logits[0], sum = 0;
  for (int i = 1; i < n; i++)
    if (logits[i] > max) max = logits[i];
  for (int i = 0; i < n; i++) sum += expl(logits[i] - max);
  long double norm = max + logl(sum);
  float scale, lo;
  mkc_logits_row_params(row, &scale, &lo);
  double worst = 0;
  int bad_low = 0, bad_pad = 0;
  for (int i = 0; i < n; i++) {
    long double lp = logits[i] - norm;
    if (logits[i] <= max - 16) {
      bad_low += row[4 + i] != 0;
      continue;
    }
    double err = fabs((double)(scale * row[4 + i] + lo - lp));
    if (err > worst) worst = err;
  }
  for (size_t i = 4 + (size_t)n; i < mkc_logits_row_len(n); i++) bad_pad += row[i] != 0;
  /* half a level, and float's rounding of the level's product and sum (a few ulps of 16) */
  double tol = scale / 2 + 4e-6;
  CHECK(worst <= tol, "%s: every log-probability within half a level (%.3g, worst %.3g)", name, tol,
        worst);
  CHECK(bad_low == 0 && bad_pad == 0 && row[mkc_logits_row_len(n)] == 0xbeef,
        "%s: level 0 under 16 below the largest, zero padding, nothing written past the row", name);
  CHECK_NEAR(nll, (double)(norm - logits[tok]), 2e-5, "%s: the token's negative log-likelihood",
             name);
  free(row);
}

static void rows(void) {
  unsigned seed = 7;
  float logits[1001];
  draw(logits, 256, 2.0f, &seed);
  check_row("256 logits spread over 2", logits, 256, 17);
  draw(logits, 1001, 12.0f, &seed); /* odd: a padding element */
  check_row("1001 logits spread over 12 (an odd vocabulary)", logits, 1001, 1000);
  draw(logits, 1001, 40.0f, &seed); /* many under 16 below the largest */
  check_row("1001 logits spread over 40 (past the 16 the levels span)", logits, 1001, 3);
  for (int i = 0; i < 10; i++) logits[i] = 1.5f;
  uint16_t row[14];
  double nll = mkc_logits_row_encode(logits, 10, 4, row);
  float scale, lo;
  mkc_logits_row_params(row, &scale, &lo);
  int zero = 1;
  for (int i = 4; i < 14; i++) zero &= row[i] == 0;
  CHECK(scale == 0 && zero && fabs(lo + log(10)) < 1e-6 && fabs(nll - log(10)) < 1e-6,
        "ten equal logits: scale 0, every level 0, each log-probability -ln 10 (%g, %g)", lo, nll);
}

static void heads(void) {
  unsigned char b[64];
  mkc_logits_head h;
  char why[200];
  CHECK_INT((long long)mkc_logits_row_len(256), 260, "row of 256 tokens: 260 u16");
  CHECK_INT((long long)mkc_logits_row_len(49153), 49158, "row of 49153 tokens: 49158 u16");
  mkc_logits_head_write(b, 64, 256, 3);
  uint64_t size = 20 + 4 * 64 * 3 + 3 * 31 * 260 * 2;
  CHECK(mkc_logits_head_parse(b, 20, size, &h, why, sizeof why) == 0 && h.n_ctx == 64 &&
            h.n_vocab == 256 && h.n_chunk == 3 && h.rows == 31 && h.row_len == 260 &&
            h.tokens == 20 && h.data == 20 + 4 * 64 * 3,
        "a header read back: its counts, 31 rows a chunk, the offsets");
  static const struct {
    const char *name;
    int n_ctx, n_vocab, n_chunk;
    long long size_delta;
    size_t n;
    const char *why;
  } BAD[] = {
      {"a byte short", 64, 256, 3, -1, 20,
       "49147 bytes, where 3 chunks of 64 tokens with a vocabulary of 256 make 49148"},
      {"a byte over", 64, 256, 3, 1, 20,
       "49149 bytes, where 3 chunks of 64 tokens with a vocabulary of 256 make 49148"},
      {"chunks of 2 tokens", 2, 256, 3, 0, 20,
       "a context of 2 tokens, which scores nothing (3 at least)"},
      {"no chunks", 64, 256, 0, 0, 20,
       "256 tokens in the vocabulary and 0 chunks: both must be positive"},
      {"a negative vocabulary", 64, -5, 3, 0, 20,
       "-5 tokens in the vocabulary and 3 chunks: both must be positive"},
      {"a header cut short", 64, 256, 3, 0, 12, "cut short: 12 bytes, where the header is 20"},
      {"more than 2^31 - 1 tokens", 2000000000, 5, 2, 0, 20,
       "2 chunks of 2000000000 tokens: more than 2^31 - 1 tokens in all"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
    mkc_logits_head_write(b, BAD[i].n_ctx, BAD[i].n_vocab, BAD[i].n_chunk);
    uint64_t n = BAD[i].size_delta ? size + BAD[i].size_delta : i >= 6 ? 1000 : size;
    int rc = mkc_logits_head_parse(b, BAD[i].n, n, &h, why, sizeof why);
    CHECK(rc == -1 && strncmp(why, BAD[i].why, strlen(BAD[i].why)) == 0, "refused: %s (%s)",
          BAD[i].name, why);
  }
  memcpy(b, "_logitz_", 8);
  CHECK(mkc_logits_head_parse(b, 20, size, &h, why, sizeof why) == -1 &&
            strstr(why, "not a file of log-probabilities"),
        "refused: another magic (%s)", why);
}

int main(void) {
  rows();
  heads();
  return check_done();
}
