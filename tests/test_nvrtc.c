/* Every preset's emitted kernel compiles through mkc's NVRTC path for sm_80
 * and sm_90: no GPU needed, only libnvrtc. Skipped (never passed) where
 * libnvrtc is missing. A deliberately broken kernel must fail with its lines
 * marked. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codegen_host.h"
#include "nvrtc.h"

static int skipped;

static void compile_preset(const char *preset, int draft_max) {
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {graph, preset, draft_max, 0, 0};
  mkc_graph g;
  mkc_kernel_src src;
  if (!CHECK(mkc_codegen(&o, &g, &src) == 0, "%s: generate", preset)) return;
  /* ONE __global__ kernel in the whole source. */
  int globals = 0;
  for (const char *p = src.source; (p = strstr(p, "__global__")); p++) globals++;
  CHECK_INT(globals, 1, "%s: the source has one __global__", preset);
  static const char *const archs[] = {"sm_80", "sm_90"};
  for (int i = 0; i < 2; i++) {
    mkc_nvrtc_output out;
    int rc = mkc_nvrtc_compile(src.source, src.file_name, archs[i], 0, &out);
    CHECK(rc == 0 && out.cubin && out.cubin_size > 1000,
          "%s: NVRTC compiles %s for %s (%zu-byte cubin)", preset, src.file_name, archs[i],
          out.cubin_size);
    CHECK(out.log && strstr(out.log, "mkc_step") && strstr(out.log, "registers"),
          "%s %s: the ptxas report names mkc_step and its registers", preset, archs[i]);
    if (out.log && strstr(out.log, "registers")) {
      const char *r = strstr(out.log, "Used ");
      printf("     | %.*s\n", r ? (int)strcspn(r, "\n") : 0, r ? r : "");
    }
    mkc_nvrtc_output_free(&out);
  }
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
  if (mkc_nvrtc_load(why, sizeof why) != 0) {
    printf("skip NVRTC tests: %s\n", why);
    skipped = 1;
    printf("0 passed, 0 failed, 1 skipped\n");
    return 0;
  }
  printf("     | NVRTC %d.%d\n", mkc_nvrtc_version() / 1000, mkc_nvrtc_version() % 1000 / 10);
  compile_preset("tiny", 4);
  compile_preset("odd", 7);
  compile_preset("llama-3.2-1b", 4);
  broken_kernel();
  return check_done();
}
