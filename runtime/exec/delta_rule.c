/* See delta_rule.h. */
#include "delta_rule.h"

#include <math.h>
#include <string.h>

/* As Qwen3-Next's l2norm: x / sqrt(sum x^2 + eps), so a zero vector stays zero. */
#define L2_EPS 1e-6

int mkc_delta_channels(const mkc_delta_shape *s) { return s->heads * (2 * s->k_dim + s->v_dim); }

int mkc_delta_state_size(const mkc_delta_shape *s) { return s->heads * s->k_dim * s->v_dim; }

static double silu(double x) { return x / (1.0 + exp(-x)); }

void mkc_delta_conv(const mkc_delta_shape *s, const double *const *rows, const double *w,
                    double *y) {
  int channels = mkc_delta_channels(s);
  for (int c = 0; c < channels; c++) {
    double sum = 0.0;
    for (int j = 0; j < s->conv; j++)
      if (rows[j]) sum += w[(size_t)c * s->conv + j] * rows[j][c];
    y[c] = silu(sum);
  }
}

/* The factor that scales x [n] to length scale. */
static double unit(const double *x, int n, double scale) {
  double ss = 0.0;
  for (int i = 0; i < n; i++) ss += x[i] * x[i];
  return scale / sqrt(ss + L2_EPS);
}

/* log(1 + e^x) without overflow for large x */
static double softplus(double x) { return x > 20.0 ? x : log1p(exp(x)); }

void mkc_delta_step(const mkc_delta_shape *s, const double *qkv, const double *gates,
                    const double *a_log, const double *dt_bias, const double *prev, double *state,
                    double *o) {
  int H = s->heads, dk = s->k_dim, dv = s->v_dim;
  size_t head_state = (size_t)dk * dv;
  for (int h = 0; h < H; h++) {
    const double *q = qkv + (size_t)h * dk, *k = qkv + (size_t)(H + h) * dk;
    const double *v = qkv + 2 * (size_t)H * dk + (size_t)h * dv;
    double qs = unit(q, dk, 1.0 / sqrt((double)dk)), ks = unit(k, dk, 1.0);
    double decay = exp(-exp(a_log[h]) * softplus(gates[h] + dt_bias[h]));
    double beta = 1.0 / (1.0 + exp(-gates[H + h]));
    double *S = state + h * head_state, *u = o + (size_t)h * dv; /* S: [dk][dv]; u: o, for now */
    const double *P = prev ? prev + h * head_state : NULL;
    for (size_t i = 0; i < head_state; i++) S[i] = P ? decay * P[i] : 0.0;
    for (int j = 0; j < dv; j++) {
      double kv = 0.0; /* S^T k: what the state recalls for this key */
      for (int i = 0; i < dk; i++) kv += S[(size_t)i * dv + j] * k[i] * ks;
      u[j] = beta * (v[j] - kv);
    }
    for (int i = 0; i < dk; i++)
      for (int j = 0; j < dv; j++) S[(size_t)i * dv + j] += k[i] * ks * u[j];
    for (int j = 0; j < dv; j++) {
      double sum = 0.0;
      for (int i = 0; i < dk; i++) sum += S[(size_t)i * dv + j] * q[i] * qs;
      o[(size_t)h * dv + j] = sum;
    }
  }
}
