/* Every preset's emitted kernel compiles through mkc's NVRTC path (the kernel
 * cache, kcache.h) for sm_90, and tiny, odd and llama-3.2-1b for sm_80, sm_100
 * and sm_120 too, with the ptxas figures parsed: no GPU needed, only libnvrtc.
 * Skipped (never passed) where libnvrtc is missing. A broken kernel fails
 * with its lines marked. At sm_90 every kernel fits 3 blocks of 128 threads
 * per SM (<= 168 registers), and at every arch it keeps nothing in local
 * memory: 0 B spilled, 0 B stack (issue 12), the kernel's own figures and its
 * called functions' (Blackwell's, sm_100 and later, since 2026-11-28).
 * llama-3.2-1b is compiled quantized too (its matrices Q4_K, and Q4_K, Q5_K or
 * Q3_K with attn_v and ffn_down Q6_K, as Q4_K_M and Q5_K_M files mix them), and at
 * T = 1; so is SmolLM2 as its Q4_K_M file stores it (Q5_0 and Q8_0). (A parser
 * that read the last called function's figures as the kernel's let a check of
 * this pass from 2026-11-23 to 2026-11-28 while the kernels spilled.)
 * Compiles run two at a time (they are slow). MKC_TEST_ONLY=TEXT compiles only the kernels
 * whose label ("blocks-tiny (each matrix kind an IQ1/IQ2/IQ3 grid type) T <= 5 sm_90") holds
 * TEXT, to judge a template change on the kernel it moved. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "codegen/host.h"
#include "backend/cuda/kcache.h"
#include "backend/cuda/nvrtc.h"
#include "quantized.h"

#define MAX_JOBS 64
#define PARALLEL 2

typedef struct job {
  const char *preset;
  int draft_max;
  int arch;
  int quant; /* 0: bf16; QUANT_Q4_K or QUANT_Q4_K_M: the matrices in blocks */
  pid_t pid;
} job;

enum {
  QUANT_Q4_K = 1,
  QUANT_Q4_K_M,
  QUANT_Q5_K_M,
  QUANT_Q3_K_Q6_K,
  QUANT_EVERY,
  QUANT_GRID,
  QUANT_LOW
};
static const char *const QUANT_NAMES[] = {"",
                                          " Q4_K",
                                          " Q4_K_M",
                                          " Q5_K_M",
                                          " Q3_K/Q6_K",
                                          " (each matrix kind its own block type)",
                                          " (each matrix kind an IQ1/IQ2/IQ3 grid type)",
                                          " (NVFP4, TQ1_0, TQ2_0, Q1_0, Q2_0)"};

/* In a child: compile and print the figures; the exit status is the verdict. */
static int compile_one(const job *j) {
  char graph[4200], arch[16];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  snprintf(arch, sizeof arch, "sm_%d", j->arch);
  mkc_gen_opts o = {
      .graph_path = graph, .preset = j->preset, .draft_max = j->draft_max, .max_ctx = 0};
  mkc_graph g;
  mkc_kernel_src src;
  if (mkc_codegen(&o, &g, &src) != 0) return 1;
  if (j->quant) { /* again, with the bf16 kernel's shapes */
    quantized_plan q = {&g, j->quant >= QUANT_Q4_K_M,
                        j->quant == QUANT_Q5_K_M      ? MKC_GGML_Q5_K
                        : j->quant == QUANT_Q3_K_Q6_K ? MKC_GGML_Q3_K
                                                      : 0,
                        j->quant == QUANT_EVERY  ? 1
                        : j->quant == QUANT_GRID ? 2
                        : j->quant == QUANT_LOW  ? 3
                                                 : 0};
    mkc_graph gq;
    mkc_kernel_src srcq;
    o.weight_type = quantized_type;
    o.weight_type_ctx = &q;
    if (mkc_codegen(&o, &gq, &srcq) != 0) return 1;
    mkc_kernel_src_free(&src);
    mkc_graph_free(&g);
    g = gq;
    src = srcq;
  }
  mkc_compiled c;
  if (mkc_kcache_compile(src.source, src.file_name, arch, 0, &c) != 0) return 1;
  const mkc_ptxas_info *p = &c.ptxas;
  printf("     | %s%s T <= %d %s: %zu-byte cubin, %d registers, %d B stack, %d/%d B spilled "
         "(called: %d/%d B, %d B stack), %d barriers\n",
         j->preset, QUANT_NAMES[j->quant], j->draft_max + 1, arch, c.cubin_size, p->registers,
         p->stack_bytes, p->spill_stores, p->spill_loads, p->called_spill_stores,
         p->called_spill_loads, p->called_stack_bytes, p->barriers);
  fflush(stdout);
  int ok =
      c.cubin_size > 1000 && p->registers > 0 && strcmp(p->arch, arch) == 0 && p->barriers >= 1;
  /* sm_90: room for MKC_MIN_BLOCKS = 3 blocks of 128 threads (65536 registers / 384 threads, in
   * the allocation unit of 8); and at every arch nothing in local memory (issue 12) */
  int fits = j->arch != 90 || p->registers <= 168;
  int lean = p->spill_stores == 0 && p->spill_loads == 0 && p->stack_bytes == 0 &&
             p->called_spill_stores == 0 && p->called_spill_loads == 0 &&
             p->called_stack_bytes == 0;
  mkc_compiled_free(&c);
  mkc_kernel_src_free(&src);
  mkc_graph_free(&g);
  return !ok ? 1 : (!fits ? 2 : 0) | (!lean ? 4 : 0); /* a bit for each finding */
}

static void wait_one(job *jobs, int n) {
  int status;
  pid_t pid = wait(&status);
  for (int i = 0; i < n; i++)
    if (jobs[i].pid == pid) {
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      const char *q = QUANT_NAMES[jobs[i].quant];
      int t = jobs[i].draft_max + 1;
      int built = code == 0 || code == 2 || code == 4 || code == 6;
      CHECK(built, "%s%s T <= %d: compiles through NVRTC for sm_%d, ptxas figures parsed",
            jobs[i].preset, q, t, jobs[i].arch);
      if (jobs[i].arch == 90)
        CHECK(built && !(code & 2),
              "%s%s T <= %d sm_90: <= 168 registers (3 blocks of 128 threads per SM)",
              jobs[i].preset, q, t);
      CHECK(built && !(code & 4), "%s%s T <= %d sm_%d: 0 B spilled, 0 B stack", jobs[i].preset, q,
            t, jobs[i].arch);
      jobs[i].pid = 0;
    }
}

/* Kernels a source defines: lines that open with MKC_KERNEL or __global__ (the
 * prelude's #define of MKC_KERNEL is not a kernel). */
static int count_kernels(const char *source) {
  int n = 0;
  for (const char *line = source; line && *line;
       line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    while (*line == ' ' || *line == '\t') line++;
    if (strncmp(line, "#", 1) == 0) continue;
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    for (const char *w = line; w < line + len; w++)
      if ((strncmp(w, "MKC_KERNEL", 10) == 0 || strncmp(w, "__global__", 10) == 0) &&
          (w == line || !(isalnum((unsigned char)w[-1]) || w[-1] == '_'))) {
        n++;
        break;
      }
  }
  return n;
}

/* The counter itself, on sources whose kernels are known. */
static void kernel_counter(void) {
  CHECK_INT(
      count_kernels("#define MKC_KERNEL extern \"C\" __global__ void\nMKC_KERNEL k(void) {}\n"), 1,
      "kernel count: the prelude's #define is not a kernel");
  CHECK_INT(count_kernels("#define MKC_KERNEL extern \"C\" __global__ void\nMKC_KERNEL a(void) {}\n"
                          "extern \"C\" __global__ void b(void) {}\nMKC_KERNEL c(void) {}\n"),
            3, "kernel count: a second and third kernel are counted");
  CHECK_INT(count_kernels("int NOT_MKC_KERNEL;\n"), 0,
            "kernel count: a longer name is not a kernel");
}

static void one_global(const char *preset) {
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph, .preset = preset, .draft_max = 4, .max_ctx = 0};
  mkc_graph g;
  mkc_kernel_src src;
  if (!CHECK(mkc_codegen(&o, &g, &src) == 0, "%s: generate", preset)) return;
  CHECK_INT(count_kernels(src.source), 1, "%s: the source defines exactly one kernel", preset);
  mkc_kernel_src_free(&src);
  mkc_graph_free(&g);
}

static void broken_kernel(void) {
  const char *src =
      "extern \"C\" __global__ void k(float *x) {\n  x[0] = 1.0f;\n  x[1] = undefined_name;\n}\n";
  mkc_nvrtc_output out;
  check_stderr_begin();
  int rc = mkc_nvrtc_compile(src, "broken.cu", "sm_90", 0, &out);
  char *err = check_stderr_end();
  CHECK(rc == -1, "a broken kernel fails to compile");
  CHECK(strstr(err, "mkc: error: nvrtc: compiling broken.cu for sm_90 failed") != NULL,
        "... with a clear message");
  CHECK(strstr(err, "options: --gpu-architecture=sm_90") != NULL, "... listing the options");
  CHECK(strstr(err, ">>    3 |   x[1] = undefined_name;") != NULL,
        "... and marking the failing line");
  free(err);
  mkc_nvrtc_output_free(&out);
}

int main(void) {
  char why[512];
  kernel_counter();
  if (mkc_nvrtc_load(why, sizeof why) != 0) {
    CHECK_SKIP("NVRTC tests: %s", why);
    return check_done();
  }
  int v = mkc_nvrtc_version(NULL, 0), supported[64];
  int n_supported = mkc_nvrtc_supported_archs(supported, 64);
  printf("     | NVRTC %d.%d, %d archs\n", v / 1000, v % 1000 / 10, n_supported);
  /* Every preset for sm_90, where each must keep nothing in local memory. tiny, odd and
   * llama-3.2-1b for sm_80 too, and past sm_90 for the first arch of each family (sm_100,
   * sm_120): the others (sm_103 and sm_110; sm_121) gave the same registers as their family's
   * first for all three presets in every run (docs/PERF.md, 2026-11-28 eighth session), and
   * the qwen presets' sm_80 figures were their sm_90 ones within 3 registers (2026-12-06), so
   * those compiles, 40 s of CPU each, were left out of the suite on 2026-12-07. */
  static const struct {
    const char *name;
    /* newer_archs: 1 sm_100 and sm_120 */
    int draft_max, newer_archs, sm80;
  } presets[] = {
      {"tiny", 4, 1, 1},        {"odd", 7, 1, 1},          {"llama-3.2-1b", 4, 1, 1},
      {"qwen2-tiny", 4, 0, 0},  {"qwen3-tiny", 7, 0, 0},   {"llama3-tiny", 4, 0, 0},
      {"yarn-tiny", 4, 0, 0},   {"linear-tiny", 7, 0, 0},  {"smollm2-135m", 4, 0, 0},
      {"blocks-tiny", 4, 0, 0}, {"swa-tiny", 4, 0, 0},     {"gemma-tiny", 4, 0, 0},
      {"gemma3-tiny", 4, 0, 0}, {"partial-tiny", 4, 0, 0}, {"moe-tiny", 4, 0, 0},
      {"gptoss-tiny", 4, 0, 0}, {"smollm3-tiny", 4, 0, 0}, {"exaone4-swa-tiny", 4, 0, 0}};
  job jobs[MAX_JOBS];
  int n = 0;
  for (size_t p = 0; p < sizeof presets / sizeof *presets; p++) {
    one_global(presets[p].name);
    for (int a = 0; a < n_supported && n < MAX_JOBS; a++)
      if ((supported[a] == 80 && presets[p].sm80) || supported[a] == 90 ||
          (presets[p].newer_archs && (supported[a] == 100 || supported[a] == 120)))
        jobs[n++] = (job){presets[p].name, presets[p].draft_max, supported[a], 0, 0};
  }
  /* llama-3.2-1b at sm_90 quantized (T <= 5 and T = 1; Q5_K_M at T = 1), and in bf16 at T = 1 */
  for (int a = 0; a < n_supported && n + 13 <= MAX_JOBS; a++)
    if (supported[a] == 90) {
      jobs[n++] = (job){"llama-3.2-1b", 0, 90, 0, 0};
      jobs[n++] = (job){"llama-3.2-1b", 4, 90, QUANT_Q4_K, 0};
      jobs[n++] = (job){"llama-3.2-1b", 0, 90, QUANT_Q4_K, 0};
      jobs[n++] = (job){"llama-3.2-1b", 4, 90, QUANT_Q4_K_M, 0};
      jobs[n++] = (job){"llama-3.2-1b", 0, 90, QUANT_Q4_K_M, 0};
      jobs[n++] = (job){"llama-3.2-1b", 0, 90, QUANT_Q5_K_M, 0};
      jobs[n++] = (job){"llama-3.2-1b", 0, 90, QUANT_Q3_K_Q6_K, 0};
      /* SmolLM2's 576 columns are not whole 256s: a Q4_K_M file is mostly Q5_0, with Q8_0 */
      jobs[n++] = (job){"smollm2-135m", 0, 90, QUANT_Q4_K_M, 0};
      /* every other block type's decoder, once each, at T = 1 and T = 5 */
      jobs[n++] = (job){"blocks-tiny", 0, 90, QUANT_EVERY, 0};
      jobs[n++] = (job){"blocks-tiny", 4, 90, QUANT_EVERY, 0};
      jobs[n++] = (job){"blocks-tiny", 0, 90, QUANT_GRID, 0}; /* the IQ grids, MXFP4 */
      jobs[n++] = (job){"blocks-tiny", 4, 90, QUANT_LOW, 0};  /* NVFP4, ternary, 1 and 2 bits */
      jobs[n++] = (job){"blocks-tiny", 4, 90, QUANT_GRID, 0};
    }
  CHECK(n_supported > 0 && n >= 6, "NVRTC supports sm_80 and sm_90 (%d jobs)", n);
  const char *only = getenv("MKC_TEST_ONLY");
  if (only && *only) {
    int kept = 0;
    for (int i = 0; i < n; i++) {
      char label[256];
      snprintf(label, sizeof label, "%s%s T <= %d sm_%d", jobs[i].preset,
               QUANT_NAMES[jobs[i].quant], jobs[i].draft_max + 1, jobs[i].arch);
      if (strstr(label, only)) jobs[kept++] = jobs[i];
    }
    CHECK(kept > 0, "MKC_TEST_ONLY=%s names %d of the %d kernels", only, kept, n);
    n = kept;
  }
  int running = 0;
  for (int i = 0; i < n; i++) {
    if (running == PARALLEL) wait_one(jobs, n), running--;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(compile_one(&jobs[i]));
    jobs[i].pid = pid;
    running++;
  }
  while (running-- > 0) wait_one(jobs, n);
  broken_kernel();
  return check_done();
}
