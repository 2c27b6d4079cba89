/* MKC_T1_PATH=1 (codegen/emit.lua, ctx.one_input): a kernel that takes up
 * to 5 inputs a step gets a second copy of each decode stage for steps of
 * one input, where T is the literal 1 (on the H100 the T = 1 kernel ran 14 %
 * faster than the T = 5 kernel's steps of one input, docs/PERF.md). Both
 * copies are the same statements, the copy's T and t0 written as 1 and 0, so every input's logits
 * must equal the kernel without the knob bit for bit, in steps of 1 to 5 inputs and a prompt chunk
 * past T_MAX (the tiled path), on bf16 and quantized matrices, on the emulator's fast and checking
 * schedules; and the reference's within 1e-4. Planted bugs: the one-input copy taken at two inputs
 * too, and the first stage's one-input copy skipped, must each change logits. make test-gpu runs it
 * on cuda (without the plants), where NVRTC compiles the copies apart. */
#include "logit_runs.h"
#include "quantized.h"

#define TOL 1e-4

/* The preset's kernel (T <= 5, prompt chunks of up to 16) with MKC_T1_PATH=on; KV in f32, so the
 * reference can be held to 1e-4 (test_kernel covers a bf16 cache). */
static int generate(gen_kernel *k, const char *preset, int on, const mkc_graph *quantized) {
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  setenv("MKC_T1_PATH", on ? "1" : "0", 1);
  quantized_plan plan = {quantized, 0, 0, 0};
  mkc_gen_opts o = {.graph_path = graph,
                    .preset = preset,
                    .draft_max = 4,
                    .ubatch = 16,
                    .kv_dtype = "f32",
                    .weight_type = quantized ? quantized_type : NULL,
                    .weight_type_ctx = &plan};
  memset(k, 0, sizeof *k);
  int rc = mkc_codegen(&o, &k->g, &k->src);
  unsetenv("MKC_T1_PATH");
  return rc;
}

/* 48 known inputs: a prompt chunk of 12 (past T_MAX: tiled, logits for its last), then steps
 * of 2, 3, 4, 5, 1, ... */
static int step_size(int c) { return c == 0 ? 12 : 1 + c % 5; }
static const logit_plan PLAN = {.n = 48, .mul = 29, .add = 7, .step_size = step_size};

static int count(const char *text, const char *what) {
  int n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

static void check_preset(const char *preset, int quantized, const char *schedule, int plant) {
  char name[96];
  snprintf(name, sizeof name, "%s%s, %s", preset,
           quantized ? " (Q4_K, or Q5_0 where not whole 256s)" : "", schedule);
  gen_kernel plain = {0}, base = {0}, on = {0};
  mkc_weights w = {0};
  if (!CHECK(generate(&plain, preset, 0, NULL) == 0 &&
                 generate(&base, preset, 0, quantized ? &plain.g : NULL) == 0 &&
                 generate(&on, preset, 1, quantized ? &plain.g : NULL) == 0 &&
                 mkc_weights_random(&w, &base.g, 9) == 0,
             "%s: generate the kernels", name))
    goto done;
  int copies = count(on.src.source, "if (T == 1) { /* one input: T = 1");
  CHECK(copies >= 5 && count(base.src.source, "/* one input") == 0,
        "%s: the knob gives %d stages a one-input copy, and only the knob", name, copies);
  logit_run b = logit_run_of(&PLAN, test_backend(), &base, &w),
            r = logit_run_of(&PLAN, test_backend(), &on, &w),
            ref = logit_run_of(&PLAN, MKC_BACKEND_REF, &base, &w);
  if (CHECK(b.ok && r.ok && ref.ok, "%s: a prompt chunk of 12, then steps of 1 to 5 inputs",
            name)) {
    CHECK_INT(logit_runs_differing(&PLAN, &r, &b, base.g.vocab), 0,
              "%s: every input's logits are the kernel's without the knob, bit for bit", name);
    double e = logit_runs_worst(&PLAN, &r, &ref, base.g.vocab);
    CHECK(e <= TOL, "%s: logits within %g of the reference (worst %.3g)", name, TOL, e);
    if (plant) {
      logit_runs_planted(&PLAN, name, &on, &w, &b, "the one-input copy taken at two inputs too",
                         "if (T == 1) { /* one input", "if (T <= 2) { /* one input");
      logit_runs_planted(&PLAN, name, &on, &w, &b, "the first stage's one-input copy skipped",
                         "if (T == 1) { /* one input", "if (T == 1) {} else if (0) { /* one input");
    }
  }
  logit_run_free(&b);
  logit_run_free(&r);
  logit_run_free(&ref);
done:
  mkc_weights_free(&w);
  gen_kernel_free(&on);
  gen_kernel_free(&base);
  gen_kernel_free(&plain);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  if (test_backend() == MKC_BACKEND_CUDA) { /* make test-gpu: NVRTC's own code for each copy */
    check_preset("tiny", 0, "cuda", 0);
    check_preset("odd", 0, "cuda", 0);
    check_preset("qwen3-tiny", 1, "cuda", 0);
    return check_done();
  }
  check_preset("tiny", 0, "fast schedule", 1);
  check_preset("odd", 1, "fast schedule", 0);
  check_preset("qwen3-tiny", 0, "fast schedule", 0);
  /* the checking schedule: every lane runs its own share (the GPU's path) */
  setenv("MKC_SIMT_SEED", "11", 1);
  check_preset("tiny", 0, "checking schedule", 1);
  check_preset("odd", 0, "checking schedule", 0);
  check_preset("qwen3-tiny", 1, "checking schedule", 0);
  unsetenv("MKC_SIMT_SEED");
  return check_done();
}
