/* A gated delta-rule layer's recurrence (Qwen3-Next's linear attention, its
 * "gated DeltaNet"), in double, one input at a time: the reference
 * executor's RECURRENT node (exec/reference.c). No kernel emits it yet
 * (docs/DECISIONS.md, "recurrent state"). Keys and values have the same
 * number of heads. */
#ifndef MKC_DELTA_RULE_H
#define MKC_DELTA_RULE_H

typedef struct mkc_delta_shape {
  int heads, k_dim, v_dim; /* per head: k_dim keys, v_dim values; the state is k_dim x v_dim */
  int conv;                /* the causal convolution's width, in inputs */
} mkc_delta_shape;

/* The convolution's channels: q, k and v, one after another. */
int mkc_delta_channels(const mkc_delta_shape *s);
/* Doubles of one head set's state: heads x k_dim x v_dim. */
int mkc_delta_state_size(const mkc_delta_shape *s);

/* The short causal convolution over the last s->conv inputs, then SiLU:
 * rows[j] is the input j - (conv - 1) before this one (rows[conv - 1] this
 * input's), NULL where that position does not exist (before the sequence);
 * w is [channels][conv]. Writes y [channels]. */
void mkc_delta_conv(const mkc_delta_shape *s, const double *const *rows, const double *w,
                    double *y);

/* One input through the recurrence. qkv [channels] is the convolution's
 * output; gates [2 * heads]: a, then b; a_log and dt_bias [heads]. Per head,
 * with q and k scaled to unit length (q then by 1 / sqrt(k_dim)):
 *   decay = exp(-exp(a_log) * softplus(a + dt_bias)), beta = sigmoid(b),
 *   S = decay S;  S += k (beta (v - S^T k))^T;  o = S^T q.
 * prev: the state before this input (NULL: zeros), state: after it (may be
 * prev). Writes o [heads * v_dim]. */
void mkc_delta_step(const mkc_delta_shape *s, const double *qkv, const double *gates,
                    const double *a_log, const double *dt_bias, const double *prev, double *state,
                    double *o);

#endif
