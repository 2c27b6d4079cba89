/* Recurrent layers (issue 16, item 4): the gated delta rule
 * (exec/delta_rule.h) and graphs/llama.lua's hybrid-tiny (three recurrent
 * layers, then one with attention) on the reference executor, the only
 * executor that runs them so far. Checked here:
 *   - the rule against what a delta rule must do, computed here apart from
 *     it: with no decay and full write strength it stores a value under an
 *     orthonormal key and a second write replaces it (plain linear attention
 *     would add); with no write it only decays, by the gates' closed form; a
 *     partial write from zeros is beta k v^T; the causal convolution is a
 *     weighted sum of the rows it has, then SiLU;
 *   - codegen refuses the op for a kernel, at its graph line, and gives the
 *     reference the graph alone (no source, no stages); the reference
 *     re-checks the node's sizes and that a layer has one cache;
 *   - the state carries the history: two histories that differ only at
 *     position 0 leave different states at position 5;
 *   - rollback is lossless: steps of five inputs whose drafts are partly
 *     right and partly wrong emit plain greedy decoding's tokens, and every
 *     accepted input's logits are those of a reference fed only the accepted
 *     tokens, one at a time, never rolled back; a planted stale state (the
 *     one after the last rejected draft) is caught;
 *   - snapshots: restored over another branch, decoding goes on as a fresh
 *     session on that prefix. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/decode.h"
#include "exec/delta_rule.h"
#include "exec/reference.h"
#include "exec/snapshot.h"
#include "fixture.h"

#define N_PLAIN 48
#define BIG 1000.0 /* gates past saturation: exp(-BIG) is 0 in double */

static double max_abs_diff(const double *a, const double *b, int n) {
  double m = 0;
  for (int i = 0; i < n; i++)
    if (!(fabs(a[i] - b[i]) <= m)) m = fabs(a[i] - b[i]);
  return m;
}

/* qkv for head count H = 1: q, k (both k_dim), v (v_dim). */
static void set_qkv(double *qkv, int dk, int dv, const double *q, const double *k,
                    const double *v) {
  memcpy(qkv, q, (size_t)dk * sizeof *q);
  memcpy(qkv + dk, k, (size_t)dk * sizeof *k);
  memcpy(qkv + 2 * dk, v, (size_t)dv * sizeof *v);
}

static void rule_oracles(void) {
  enum { DK = 8, DV = 6 };
  mkc_delta_shape s = {1, DK, DV, 4};
  double qkv[2 * DK + DV], state[DK * DV], o[DV], e[4][DK] = {{0}}, v[4][DV];
  for (int i = 0; i < 4; i++) {
    e[i][2 * i + 1] = 3.0; /* orthogonal keys; the rule scales them to unit length */
    for (int j = 0; j < DV; j++) v[i][j] = sin(1.0 + 7 * i + j);
  }
  double no_decay_a_log = -BIG, dt_bias = 0.0, full_write[2] = {0.0, BIG};
  /* a key of length 3 scaled as the rule scales it: by 1 / sqrt(9 + 1e-6) (its l2norm's eps) */
  double c2 = 9.0 / (9.0 + 1e-6);
  /* four writes, then a query for each key: c2 v / sqrt(k_dim) (q is scaled by it too) */
  for (int i = 0; i < 4; i++) {
    set_qkv(qkv, DK, DV, e[i], e[i], v[i]);
    mkc_delta_step(&s, qkv, full_write, &no_decay_a_log, &dt_bias, i ? state : NULL, state, o);
  }
  double worst = 0, zero[DV] = {0}, want[DV];
  for (int i = 0; i < 4; i++) {
    double scratch[DK * DV], no_write[2] = {0.0, -BIG};
    set_qkv(qkv, DK, DV, e[i], e[i], zero);
    mkc_delta_step(&s, qkv, no_write, &no_decay_a_log, &dt_bias, state, scratch, o);
    for (int j = 0; j < DV; j++) want[j] = c2 * v[i][j] / sqrt((double)DK);
    double d = max_abs_diff(o, want, DV);
    if (d > worst) worst = d;
  }
  CHECK(worst < 1e-12, "no decay, full writes: each of 4 orthogonal keys recalls its value (%.2g)",
        worst);
  /* a second write under key 0 replaces its value: the delta rule writes v2 - c2 v, so the key
   * recalls c2 (v2 + (1 - c2) v), where a sum (linear attention) would recall c2 (v2 + v) */
  double v2[DV];
  for (int j = 0; j < DV; j++) v2[j] = cos(3.0 + j);
  set_qkv(qkv, DK, DV, e[0], e[0], v2);
  mkc_delta_step(&s, qkv, full_write, &no_decay_a_log, &dt_bias, state, state, o);
  for (int j = 0; j < DV; j++) want[j] = c2 * (v2[j] + (1.0 - c2) * v[0][j]) / sqrt((double)DK);
  CHECK(max_abs_diff(o, want, DV) < 1e-12, "a second write under a key replaces its value (%.2g)",
        max_abs_diff(o, want, DV));

  /* no write: the state only decays, by exp(-exp(A_log) softplus(a + dt_bias)) */
  double a_log = 0.3, dt = 0.1, gates[2] = {0.2, -BIG}, before[DK * DV], after[DK * DV];
  memcpy(before, state, sizeof state);
  mkc_delta_step(&s, qkv, gates, &a_log, &dt, before, after, o);
  double decay = exp(-exp(0.3) * log(1.0 + exp(0.3))), dev = 0;
  for (int i = 0; i < DK * DV; i++)
    if (fabs(after[i] - decay * before[i]) > dev) dev = fabs(after[i] - decay * before[i]);
  CHECK(dev < 1e-15 && decay < 0.5, "no write: the state decays by %.6f, the gates' closed form",
        decay);

  /* from zeros a write of strength beta is beta k v^T; a query reads (q . k) beta v */
  double q[DK], k[DK], kn = 0, qn = 0, qk = 0, b = 0.4;
  for (int i = 0; i < DK; i++) {
    q[i] = cos(0.5 * i), k[i] = sin(0.7 * i + 0.2);
    kn += k[i] * k[i], qn += q[i] * q[i];
  }
  for (int i = 0; i < DK; i++) qk += q[i] / sqrt(qn + 1e-6) * k[i] / sqrt(kn + 1e-6);
  double beta = 1.0 / (1.0 + exp(-b)), g2[2] = {0.0, b};
  set_qkv(qkv, DK, DV, q, k, v[1]);
  mkc_delta_step(&s, qkv, g2, &a_log, &dt, NULL, state, o);
  for (int j = 0; j < DV; j++) want[j] = qk / sqrt((double)DK) * beta * v[1][j];
  CHECK(max_abs_diff(o, want, DV) < 1e-12,
        "from zeros: a write of strength %.3f reads back "
        "(q.k) beta v (%.2g)",
        beta, max_abs_diff(o, want, DV));

  /* the convolution: channel c is silu(sum_j w[c][j] x_j) over the rows that exist */
  int ch = mkc_delta_channels(&s);
  double rows[4][2 * DK + DV], w[(2 * DK + DV) * 4], y[2 * DK + DV], dc = 0;
  for (int c = 0; c < ch; c++)
    for (int j = 0; j < 4; j++) rows[j][c] = sin(c + 3.0 * j), w[c * 4 + j] = cos(c * 0.3 + j);
  const double *window[4] = {NULL, rows[1], rows[2], rows[3]}; /* the first position's before */
  mkc_delta_conv(&s, window, w, y);
  for (int c = 0; c < ch; c++) {
    double x = 0;
    for (int j = 1; j < 4; j++) x += w[c * 4 + j] * rows[j][c];
    double d = fabs(y[c] - x / (1.0 + exp(-x)));
    if (d > dc) dc = d;
  }
  CHECK(ch == 2 * DK + DV && dc < 1e-15,
        "the convolution: silu of the weighted rows that exist (%d channels, %.2g)", ch, dc);
}

/* hybrid-tiny's graph for the reference (reference_only) and random weights. */
static int open_hybrid(fixture *f, int draft_max) {
  memset(f, 0, sizeof *f);
  mkc_gen_opts o = {.graph_path = MKC_SOURCE_DIR "/graphs/llama.lua",
                    .preset = "hybrid-tiny",
                    .draft_max = draft_max,
                    .reference_only = 1};
  if (mkc_codegen(&o, &f->g, &f->src) != 0) return -1;
  return mkc_weights_random(&f->w, &f->g, 11);
}

static void codegen_refuses(void) {
  mkc_gen_opts o = {.graph_path = MKC_SOURCE_DIR "/graphs/llama.lua", .preset = "hybrid-tiny"};
  mkc_graph g;
  mkc_kernel_src src;
  check_stderr_begin();
  int rc = mkc_codegen(&o, &g, &src);
  char *msg = check_stderr_end();
  CHECK(rc == -1 && strstr(msg, "graphs/llama.lua:") &&
            strstr(msg, ": error: recurrent (gated_delta): no kernel emits this op yet") &&
            strstr(msg, "--backend ref"),
        "a kernel of hybrid-tiny is refused at the recurrence's graph line, naming --backend ref");
  free(msg);
  if (rc == 0) {
    mkc_graph_free(&g);
    mkc_kernel_src_free(&src);
  }
}

/* The reference checks what it runs: a layer with both an attention and a recurrent node, and a
 * recurrent node whose sizes disagree with its inputs, are refused with the node named. */
static void ref_checks(fixture *fx) {
  mkc_graph *g = &fx->g;
  int att = -1, rec = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    if (g->nodes[i].op == MKC_OP_ATTENTION) att = i;
    if (g->nodes[i].op == MKC_OP_RECURRENT && rec < 0) rec = i;
  }
  if (!CHECK(att > rec && rec >= 0, "hybrid-tiny: a recurrent node, then an attention node"))
    return;
  int layer = g->nodes[att].layer, v_dim = g->nodes[rec].v_dim;
  g->nodes[att].layer = g->nodes[rec].layer;
  check_stderr_begin();
  mkc_ref *r = mkc_ref_open(g, &fx->w);
  char *msg = check_stderr_end();
  CHECK(!r && strstr(msg, ": error: node ") && strstr(msg, "already has recurrent node"),
        "attention on a recurrent layer's number: refused");
  free(msg);
  mkc_ref_close(r);
  g->nodes[att].layer = layer;
  g->nodes[rec].v_dim = v_dim + 1;
  check_stderr_begin();
  r = mkc_ref_open(g, &fx->w);
  msg = check_stderr_end();
  CHECK(!r && strstr(msg, "(recurrent): mixed [") && strstr(msg, "expected mixed [heads (2 k_dim"),
        "a recurrent node with v_dim one too many: refused with its sizes");
  free(msg);
  mkc_ref_close(r);
  g->nodes[rec].v_dim = v_dim;
}

/* The recurrent layers' state rows of r at position p: layer l's, or NULL. */
static const double *state_row(mkc_ref *r, int l, int p, int *n) {
  const double *states = mkc_ref_kv_cache(r, l, 1, n);
  return states ? states + (size_t)p * *n : NULL;
}

static void state_carries(const fixture *fx) {
  const mkc_graph *g = &fx->g;
  mkc_ref *a = mkc_ref_open(g, &fx->w), *b = mkc_ref_open(g, &fx->w);
  double *logits = malloc((size_t)g->vocab * sizeof *logits);
  int ok = a && b && logits, n_rec = 0, differ = 0;
  for (int p = 0; ok && p < 6; p++) {
    ok = mkc_ref_step(a, p == 0 ? 7 : 20 + p, logits) == 0 &&
         mkc_ref_step(b, p == 0 ? 9 : 20 + p, logits) == 0;
  }
  for (int i = 0; ok && i < g->n_nodes; i++) {
    if (g->nodes[i].op != MKC_OP_RECURRENT) continue;
    int n, m;
    const double *sa = state_row(a, g->nodes[i].layer, 5, &n),
                 *sb = state_row(b, g->nodes[i].layer, 5, &m);
    n_rec++;
    differ += sa && sb && n == m && max_abs_diff(sa, sb, n) > 1e-6;
  }
  CHECK(ok && n_rec == 3 && differ == 3,
        "two histories that differ at position 0 only: all %d recurrent layers' states at "
        "position 5 differ",
        n_rec);
  free(logits);
  mkc_ref_close(a);
  mkc_ref_close(b);
}

/* Greedy from token 1 at position 0, one input a step: N_PLAIN tokens. */
static int plain_greedy(const fixture *fx, int *plain) {
  mkc_session *s = mkc_session_open(MKC_BACKEND_REF, &fx->g, &fx->src, &fx->w, 0);
  int last = 1, n = 0;
  mkc_step_result r;
  while (s && n < N_PLAIN && mkc_session_step(s, &last, 1, 0, &r) == 0 && r.status == MKC_STATUS_OK)
    plain[n++] = last = r.out[0];
  mkc_session_close(s);
  return n;
}

/* Steps of t_max inputs: the last token, then drafts of which a random number
 * are plain's next tokens and the rest wrong. Each accepted input's logits are
 * compared with a reference fed the accepted tokens one at a time. plant: after
 * the first step that rejects, the first recurrent layer's state at the new
 * pos - 1 becomes the state after the last rejected draft (a rollback that did
 * not happen). Returns the worst logit difference; *same: tokens are plain's. */
static double scripted(const fixture *fx, const int *plain, int plant, int *same, int *rejected) {
  const mkc_graph *g = &fx->g;
  mkc_session *s = mkc_session_open(MKC_BACKEND_REF, g, &fx->src, &fx->w, 0);
  mkc_ref *oracle = mkc_ref_open(g, &fx->w);
  double *want = malloc((size_t)g->vocab * sizeof *want), worst = 0;
  int emitted = 0, last = 1, planted = !plant, rec_layer = -1;
  unsigned rng = 777;
  *same = s && oracle && want, *rejected = 0;
  for (int i = 0; i < g->n_nodes && rec_layer < 0; i++)
    if (g->nodes[i].op == MKC_OP_RECURRENT) rec_layer = g->nodes[i].layer;
  while (*same && emitted + g->t_max <= N_PLAIN) {
    int in[MKC_T_CAP], T = g->t_max, right = (int)((rng = rng * 1103515245u + 12345u) >> 16) % T;
    in[0] = last;
    for (int t = 1; t < T; t++)
      in[t] = t <= right ? plain[emitted + t - 1] : (plain[emitted + t - 1] + 1 + t) % g->vocab;
    int pos = mkc_session_pos(s);
    mkc_step_result r;
    if (mkc_session_step(s, in, T, 0, &r) != 0 || r.status != MKC_STATUS_OK) {
      *same = 0;
      break;
    }
    for (int t = 0; t < r.n_out; t++) {
      *same &= r.out[t] == plain[emitted + t];
      if (mkc_ref_step(oracle, in[t], want) != 0) *same = 0;
      const float *got = mkc_session_logits(s, t);
      for (int i = 0; i < g->vocab; i++)
        if (!(fabs((double)got[i] - (double)(float)want[i]) <= worst))
          worst = fabs((double)got[i] - (double)(float)want[i]);
    }
    *rejected += T - 1 - r.n_accepted;
    if (!planted && r.n_accepted < T - 1) {
      int n;
      double *states = mkc_ref_kv_cache(mkc_session_ref(s), rec_layer, 1, &n);
      memcpy(states + (size_t)(mkc_session_pos(s) - 1) * n, states + (size_t)(pos + T - 1) * n,
             (size_t)n * sizeof *states);
      planted = 1;
    }
    emitted += r.n_out;
    last = r.out[r.n_out - 1];
  }
  free(want);
  mkc_ref_close(oracle);
  mkc_session_close(s);
  return worst;
}

static void rollback(const fixture *fx) {
  int plain[N_PLAIN], same, rejected;
  if (!CHECK_INT(plain_greedy(fx, plain), N_PLAIN, "plain greedy decoding, one input a step"))
    return;
  double worst = scripted(fx, plain, 0, &same, &rejected);
  CHECK(same && rejected > 10 && worst == 0,
        "steps of %d inputs, %d drafts rejected: plain's tokens, and every accepted input's "
        "logits exactly a reference's fed only the accepted tokens (worst %.3g)",
        fx->g.t_max, rejected, worst);
  worst = scripted(fx, plain, 1, &same, &rejected);
  CHECK(worst > 1e-6, "planted: a state not rolled back moves the logits by %.3g", worst);
}

/* A fresh ref session's greedy continuation of hist[0..n): n_gen tokens. */
static int fresh_decode(const fixture *fx, const int *hist, int n, int n_gen, int *out) {
  mkc_session *s = mkc_session_open(MKC_BACKEND_REF, &fx->g, &fx->src, &fx->w, 0);
  mkc_decode_stats st;
  int rc = s ? mkc_decode(s, &fx->g, hist, n, n_gen, 0, out, &st) : -1;
  mkc_session_close(s);
  return rc == 0 && st.generated == n_gen ? 0 : -1;
}

static void snapshots(const fixture *fx) {
  const mkc_graph *g = &fx->g;
  static const int prompt[] = {3, 1, 4, 1, 5, 9, 2, 6};
  int hist[64], out[32], want[32], branch[16];
  mkc_decode_stats st;
  mkc_decode_opts o = {.draft_max = 4};
  mkc_session *s = mkc_session_open(MKC_BACKEND_REF, g, &fx->src, &fx->w, 0);
  mkc_kv_snap *snap = NULL;
  int ok = s && mkc_decode(s, g, prompt, 8, 24, 0, out, &st) == 0 && st.generated == 24;
  memcpy(hist, prompt, sizeof prompt);
  memcpy(hist + 8, out, 24 * sizeof *out);
  snap = ok ? mkc_kv_snapshot(s, 0) : NULL;
  /* another branch from position 10, then back to 25 of the first */
  memcpy(branch, hist, 10 * sizeof *branch);
  for (int i = 0; i < 3; i++) branch[10 + i] = (hist[10 + i] + 7) % g->vocab;
  ok = snap && mkc_decode_more(s, g, branch, 13, 10, 20, &o, out, &st) == 0 &&
       mkc_session_pos(s) > 25;
  int target = 25, rc = ok ? mkc_kv_restore(s, snap, target) : -2;
  ok = rc == 0 && mkc_session_pos(s) == target &&
       mkc_decode_more(s, g, hist, target + 1, target, 16, &o, out, &st) == 0 && st.fed == 1 &&
       fresh_decode(fx, hist, target + 1, 16, want) == 0;
  CHECK(ok && memcmp(out, want, 16 * sizeof *out) == 0,
        "a snapshot of [0, 31) restored to 25 over another branch: decoding on (16 tokens, "
        "fed 1) is a fresh session's on that prefix");
  mkc_kv_snapshot_free(snap);
  mkc_session_close(s);
}

int main(void) {
  rule_oracles();
  codegen_refuses();
  fixture fx;
  if (CHECK(open_hybrid(&fx, 4) == 0 && fx.g.t_max == 5,
            "hybrid-tiny for the reference, drafts up to 4")) {
    ref_checks(&fx);
    state_carries(&fx);
    rollback(&fx);
    snapshots(&fx);
  }
  fixture_close(&fx);
  return check_done();
}
