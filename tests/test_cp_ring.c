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
#include "logit_runs.h"

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

/* The preset's kernel (T <= 5) with MKC_CP_RING=ring (0: unset). Its KV in
 * f32: a bf16 cache's rounding midpoints would need the reference to follow
 * the kernel's K/V (test_kernel does that); here the ring is what is tested. */
static int generate(gen_kernel *k, int ring) {
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

/* 44 known inputs in steps of 1 to 5 (T <= t_max: the decode path, not the tiled one). */
static int step_size(int c) { return 1 + c % 5; }
static const logit_plan PLAN = {.n = 44, .mul = 37, .add = 11, .step_size = step_size};

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
  gen_kernel base = {0}, ring = {0};
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
  logit_run b = logit_run_of(&PLAN, test_backend(), &base, &w),
            r = logit_run_of(&PLAN, test_backend(), &ring, &w),
            ref = logit_run_of(&PLAN, MKC_BACKEND_REF, &base, &w);
  if (CHECK(b.ok && r.ok && ref.ok,
            "%s: %d inputs in steps of 1 to 5 without the ring, with it, on ref", shape, PLAN.n)) {
    CHECK_INT(logit_runs_differing(&PLAN, &r, &b, base.g.vocab), 0,
              "%s: every input's logits are the ring-less kernel's, bit for bit", shape);
    double e = logit_runs_worst(&PLAN, &r, &ref, base.g.vocab);
    CHECK(e <= TOL, "%s: logits within %g of the reference (worst %.3g)", shape, TOL, e);
    if (plant && mma) {
      logit_runs_planted(&PLAN, shape, &ring, &w, &b, "a batch's copy into the next batch's slot",
                         "mkc_mma_cp(lane, b % groups, wp, nt, q,",
                         "mkc_mma_cp(lane, (b + 1) % groups, wp, nt, q,");
      logit_runs_planted(&PLAN, shape, &ring, &w, &b, "the ring over the stages' own shared memory",
                         "#define MKC_CP_RING_OFF ", "#define MKC_CP_RING_OFF 0 + 0 * ");
    } else if (plant) {
      logit_runs_planted(
          &PLAN, shape, &ring, &w, &b, "a turn's copy into the next turn's slot",
          "mkc_cp_rows(lane, i % turns, w, nrows, c0 + 32 * turns, n_chunks);",
          "mkc_cp_rows(lane, (i + 1) % turns, w, nrows, c0 + 32 * turns, n_chunks);");
      logit_runs_planted(&PLAN, shape, &ring, &w, &b, "the ring over the stages' own shared memory",
                         "#define MKC_CP_RING_OFF ", "#define MKC_CP_RING_OFF 0 + 0 * ");
      logit_runs_planted(
          &PLAN, shape, &ring, &w, &b, "a slot read for the wrong row",
          "mkc_load_shared_u4(mkc_cp_piece(lane, i % turns * nrows + r))",
          "mkc_load_shared_u4(mkc_cp_piece(lane, i % turns * nrows + (r + 1) % nrows))");
    }
  }
  logit_run_free(&b);
  logit_run_free(&r);
  logit_run_free(&ref);
done:
  mkc_weights_free(&w);
  gen_kernel_free(&ring);
  gen_kernel_free(&base);
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
