/* The decode matvec's ring (MKC_CP_RING, templates/matvec.cuh): weight
 * chunks copied turns ahead into shared memory (cp.async on the GPU; on the
 * cpu backend a copy that lands at once) and read back from there. Run on the
 * emulator's checking schedule, where every lane runs its own share of the
 * dot products (the path the GPU takes; otherwise the emulator sums a warp's
 * rows in one call and no ring is used), on a preset wide enough that a lane
 * takes more turns per row than the ring holds (576 columns: 72 chunks, 3
 * turns for some lanes; 1320: 165 chunks, 6), so the ring's slots are reused.
 * Checked against the same kernel without the ring: the same chunks added in
 * the same order, so the same logits bit for bit at every input of every
 * step; and against the reference within 1e-4. Planted bugs (a turn's copy
 * into another turn's slot, the ring laid over the stage's own shared memory,
 * a slot read for the wrong row) must change them. The same for the
 * tensor-core decode matmuls' ring (MKC_MMA_DECODE=1), whose groups are
 * batches of MKC_MMA_UNROLL k-steps. What the CPU cannot show: a wait that
 * lets a copy still in flight be read (here every copy has landed). make
 * test-gpu runs this on cuda (without the planted bugs: each is a compile),
 * where the copies are asynchronous. */
#include "check.h"
#include "fixture.h"

#define TOL 1e-4

static const char WIDE[] =
    "\n-- test_cp_ring: rows of 72 and 165 chunks (turns past the ring's), Q/K/V biases\n"
    "preset \"ring-wide\" {\n"
    "  dim = 576, n_layers = 1, n_heads = 9, n_kv_heads = 3, head_dim = 64, ffn = 1320,\n"
    "  vocab = 300, rope_theta = 10000, rope_layout = \"neox\", norm_eps = 1e-5,\n"
    "  tied = false, max_ctx = 64, qkv_bias = true, qk_norm = false,\n"
    "  rope_scaling = \"none\", sliding_window = \"none\", linear_attention = \"none\",\n"
    "}\n";

static char graph[4200];

/* graphs/llama.lua with the preset above, as build/test_cp_ring.lua: a fixed
 * path, so the kernels' text (which names its graph) is the same on every run
 * and tests/gpu/prime.sh can compile the GPU's ahead. 0 or -1. */
static int write_graph(void) {
  char src[4200];
  snprintf(src, sizeof src, "%s/graphs/llama.lua", mkc_home());
  snprintf(graph, sizeof graph, "%s/build/test_cp_ring.lua", mkc_home());
  FILE *in = fopen(src, "rb"), *out = fopen(graph, "wb");
  if (!in || !out) {
    if (in) fclose(in);
    if (out) fclose(out);
    return -1;
  }
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
  fputs(WIDE, out);
  fclose(in);
  return fclose(out) == 0 ? 0 : -1;
}

typedef struct kernel {
  mkc_graph g;
  mkc_kernel_src src;
} kernel;

/* The preset's kernel (T <= 5) with MKC_CP_RING=ring (0: unset). Its KV in
 * f32: a bf16 cache's rounding midpoints would need the reference to follow
 * the kernel's K/V (test_kernel does that); here the ring is what is tested. */
static int generate(kernel *k, int ring) {
  char v[16];
  snprintf(v, sizeof v, "%d", ring);
  if (ring)
    setenv("MKC_CP_RING", v, 1);
  else
    unsetenv("MKC_CP_RING");
  mkc_gen_opts o = {.graph_path = graph, .preset = "ring-wide", .draft_max = 4, .kv_dtype = "f32"};
  memset(k, 0, sizeof *k);
  int rc = mkc_codegen(&o, &k->g, &k->src);
  unsetenv("MKC_CP_RING");
  return rc;
}

static void kernel_free(kernel *k) {
  mkc_kernel_src_free(&k->src);
  mkc_graph_free(&k->g);
}

/* What one run over the fixed inputs gives: the logits of every input. */
#define N_IN 44
typedef struct run {
  float *logits; /* N_IN x vocab */
  int ok;
} run;

/* The inputs, known tokens, in chunks of 1 to 5 (T <= t_max: the decode path,
 * not the tiled one). */
static run run_inputs(enum mkc_backend_kind kind, const kernel *k, const mkc_weights *w) {
  run r = {calloc((size_t)N_IN * k->g.vocab, sizeof(float)), 0};
  mkc_session *s = mkc_session_open(kind, &k->g, &k->src, w, 3);
  if (!s || !r.logits) goto out;
  int in[N_IN];
  for (int i = 0; i < N_IN; i++) in[i] = (i * 37 + 11) % k->g.vocab;
  for (int pos = 0, c = 0; pos < N_IN; c++) {
    int T = 1 + c % 5;
    if (T > N_IN - pos) T = N_IN - pos;
    mkc_step_result res;
    if (mkc_session_step(s, in + pos, T, T - 1, &res) != 0 || res.status != MKC_STATUS_OK) goto out;
    for (int t = 0; t < T; t++)
      memcpy(r.logits + (size_t)(pos + t) * k->g.vocab, mkc_session_logits(s, t),
             (size_t)k->g.vocab * sizeof(float));
    pos += T;
  }
  r.ok = 1;
out:
  mkc_session_close(s);
  return r;
}

/* Inputs whose logits differ in any bit from base's. */
static int differing(const run *a, const run *base, int vocab) {
  int n = 0;
  for (int i = 0; i < N_IN; i++)
    n += memcmp(a->logits + (size_t)i * vocab, base->logits + (size_t)i * vocab,
                (size_t)vocab * sizeof(float)) != 0;
  return n;
}

static double worst_err(const run *a, const run *ref, int vocab) {
  double worst = 0;
  for (int i = 0; i < N_IN; i++) {
    double e = rel_err(a->logits + (size_t)i * vocab, ref->logits + (size_t)i * vocab, vocab);
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

/* The ring's kernel with `from` replaced by `to` (a planted bug) must differ from base. */
static void planted(const char *shape, const kernel *ring, const mkc_weights *w, const run *base,
                    const char *what, const char *from, const char *to) {
  kernel k = *ring; /* the graph shared, the text a copy */
  k.src.source = strdup(ring->src.source);
  if (!k.src.source || fixture_plant(&k.src, from, to) != 0) {
    CHECK(0, "%s: plant %s in the kernel", shape, what);
    free(k.src.source);
    return;
  }
  run r = run_inputs(test_backend(), &k, w);
  int d = r.ok ? differing(&r, base, ring->g.vocab) : N_IN;
  CHECK(d > 0, "%s: planted bug (%s) changes the logits of %d of %d inputs", shape, what, d, N_IN);
  free(r.logits);
  free(k.src.source);
}

/* ring pieces a thread, with the CPU build's cflags (NULL: its default shape); mma: both kernels
 * with MKC_MMA_DECODE=1 (the tensor-core matmuls' ring, a batch of k-steps a group). */
static void check_shape(int ring_pieces, const char *cflags, int plant, int mma) {
  char shape[96];
  snprintf(shape, sizeof shape, "MKC_CP_RING %d, %s", ring_pieces,
           test_backend() == MKC_BACKEND_CUDA ? (mma ? "cuda, MKC_MMA_DECODE 1" : "cuda")
           : mma                              ? "MKC_MMA_DECODE 1"
           : cflags                           ? "MKC_ROWS 4 (the GPU's)"
                                              : "MKC_ROWS 8 (the CPU's)");
  if (mma) setenv("MKC_MMA_DECODE", "1", 1);
  if (cflags)
    setenv("MKC_CPU_CFLAGS", cflags, 1);
  else
    unsetenv("MKC_CPU_CFLAGS");
  kernel base = {0}, ring = {0};
  mkc_weights w = {0};
  if (generate(&base, 0) != 0 || generate(&ring, ring_pieces) != 0 ||
      mkc_weights_random(&w, &base.g, 5) != 0) {
    CHECK(0, "%s: generate the kernels", shape);
    goto done;
  }
  char def[64];
  snprintf(def, sizeof def, "#define MKC_CP_RING %d /*", ring_pieces);
  CHECK(strstr(ring.src.source, def) && !strstr(base.src.source, "#define MKC_CP_RING_OFF "),
        "%s: the knob emits the ring's size, and only with it", shape);
  CHECK(ring.g.smem_bytes >= base.g.smem_bytes, "%s: shared memory %zu bytes (%zu without)", shape,
        ring.g.smem_bytes, base.g.smem_bytes);
  run b = run_inputs(test_backend(), &base, &w), r = run_inputs(test_backend(), &ring, &w),
      ref = run_inputs(MKC_BACKEND_REF, &base, &w);
  if (CHECK(b.ok && r.ok && ref.ok,
            "%s: %d inputs in steps of 1 to 5 without the ring, with it, on ref", shape, N_IN)) {
    CHECK_INT(differing(&r, &b, base.g.vocab), 0,
              "%s: every input's logits are the ring-less kernel's, bit for bit", shape);
    double e = worst_err(&r, &ref, base.g.vocab);
    CHECK(e <= TOL, "%s: logits within %g of the reference (worst %.3g)", shape, TOL, e);
    if (plant && mma) {
      planted(shape, &ring, &w, &b, "a batch's copy into the next batch's slot",
              "mkc_mma_cp(lane, b % groups, wp, nt, q,",
              "mkc_mma_cp(lane, (b + 1) % groups, wp, nt, q,");
      planted(shape, &ring, &w, &b, "the ring over the stages' own shared memory",
              "#define MKC_CP_RING_OFF ", "#define MKC_CP_RING_OFF 0 + 0 * ");
    } else if (plant) {
      planted(shape, &ring, &w, &b, "a turn's copy into the next turn's slot",
              "mkc_cp_rows(lane, i % turns, w, nrows, c0 + 32 * turns, n_chunks);",
              "mkc_cp_rows(lane, (i + 1) % turns, w, nrows, c0 + 32 * turns, n_chunks);");
      planted(shape, &ring, &w, &b, "the ring over the stages' own shared memory",
              "#define MKC_CP_RING_OFF ", "#define MKC_CP_RING_OFF 0 + 0 * ");
      planted(shape, &ring, &w, &b, "a slot read for the wrong row",
              "mkc_load_shared_u4(mkc_cp_piece(lane, i % turns * nrows + r))",
              "mkc_load_shared_u4(mkc_cp_piece(lane, i % turns * nrows + (r + 1) % nrows))");
    }
  }
  free(b.logits);
  free(r.logits);
  free(ref.logits);
done:
  mkc_weights_free(&w);
  kernel_free(&ring);
  kernel_free(&base);
  unsetenv("MKC_CPU_CFLAGS");
  unsetenv("MKC_MMA_DECODE");
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  if (write_graph() != 0) {
    CHECK(0, "write the test graph");
    return check_done();
  }
  if (test_backend() == MKC_BACKEND_CUDA) { /* make test-gpu: the GPU's copies and waits */
    check_shape(16, NULL, 0, 0);
    check_shape(32, NULL, 0, 0);
    check_shape(16, NULL, 0, 1);
    return check_done();
  }
  /* the checking schedule: every lane runs its own share (the GPU's path) */
  setenv("MKC_SIMT_SEED", "11", 1);
  check_shape(16, "-O1 -DMKC_ROWS=4", 1, 0); /* 4 turns of 4 rows; gate/up: 2 of 8 */
  check_shape(8, "-O1 -DMKC_ROWS=4", 1, 0);  /* 2 turns of 4 rows; gate/up without the ring */
  check_shape(32, NULL, 1, 0);               /* 4 turns of 8 rows; gate/up: 2 of 16 */
  check_shape(16, NULL, 1, 1); /* tensor cores: 4 batches of one n-tile; gate/up: 2 of two */
  return check_done();
}
