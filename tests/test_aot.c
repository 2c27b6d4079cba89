/* Ahead-of-time artifacts: mkc_aot_compile writes cubins, PTX and a
 * manifest that reads back field for field; the image pick for a device;
 * bad manifests and bad inputs fail with their messages. Needs libnvrtc.
 * The kernel compiled is tiny as test_nvrtc compiles it (T <= 5, the preset's
 * context), through the suite's kernel cache where tests/run.sh gives one
 * (MKC_CACHE_DIR): the two NVRTC compiles, 90 s of CPU, are then done once
 * for both tests. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/cuda/aot.h"
#include "check.h"
#include "codegen/host.h"
#include "util/files.h"
#include "backend/cuda/nvrtc.h"

static char dir[] = "/tmp/mkc_test_aot_XXXXXX";

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) fputs(text, f), fclose(f);
}

static void header_parse(const char *source) {
  mkc_kernel_header h;
  CHECK(mkc_kernel_header_parse(source, &h) == 0, "header: parses the emitted kernel's header");
  CHECK(strcmp(h.preset, "tiny") == 0 && strstr(h.graph, "graphs/llama.lua") && h.draft_max == 2 &&
            h.max_ctx == 100 && h.threads == 128 && h.max_blocks == 1024 &&
            strlen(h.graph_hash) == 16 && strcmp(h.version, "mkc 0.1.0") == 0 &&
            strcmp(h.kv_dtype, "bf16") == 0 && h.ubatch == 100,
        "header: preset %s, graph %s, draft_max %d, max_ctx %d, threads %d, version %s, KV %s, "
        "prompt chunks %d (the context's 100 of 128)",
        h.preset, h.graph, h.draft_max, h.max_ctx, h.threads, h.version, h.kv_dtype, h.ubatch);
  CHECK(mkc_kernel_header_parse("extern \"C\" __global__ void k() {}\n", &h) == -1,
        "header: a kernel without an mkc header is refused");
  /* a version token longer than the field: refused, nothing written past it */
  const char *rest = strstr(source, " -- generated");
  char *long_version = rest ? malloc(strlen(source) + 64) : NULL;
  if (long_version) {
    sprintf(long_version, "/* mkc 0.1.0-%s%s", "0123456789abcdefghijkl", rest);
    memset(&h, 0x5a, sizeof h);
    CHECK(mkc_kernel_header_parse(long_version, &h) == -1 && h.graph[0] == 0,
          "header: a 28-character version is refused, not cut, and nothing written past it");
    sprintf(long_version, "/* mkc 0.1.0-%s%s", "0123456789abcdefghijk", rest);
    CHECK(mkc_kernel_header_parse(long_version, &h) == 0 &&
              strcmp(h.version, "mkc 0.1.0-0123456789abcdefghijk") == 0 &&
              strcmp(h.preset, "tiny") == 0,
          "header: a 27-character version fits (%s)", h.version);
  }
  free(long_version);
}

static void pick(void) {
  mkc_manifest m = {0};
  m.n_cubins = 3;
  strcpy(m.cubins[0].arch, "sm_80");
  strcpy(m.cubins[1].arch, "sm_86");
  strcpy(m.cubins[2].arch, "sm_90a");
  strcpy(m.ptx_arch, "compute_80");
  CHECK_INT(mkc_aot_pick(&m, 8, 0), 0, "pick: sm_80 device gets the sm_80 cubin");
  CHECK_INT(mkc_aot_pick(&m, 8, 9), 1,
            "pick: sm_89 device gets the newest same-major cubin (sm_86)");
  CHECK_INT(mkc_aot_pick(&m, 9, 0), 2, "pick: sm_90 device gets sm_90a");
  CHECK_INT(mkc_aot_pick(&m, 10, 0), MKC_AOT_PTX, "pick: sm_100 device falls back to the PTX");
  CHECK_INT(mkc_aot_pick(&m, 7, 5), MKC_AOT_NONE, "pick: sm_75 device: nothing fits");
  m.n_cubins = 0;
  strcpy(m.ptx_arch, "compute_90");
  CHECK_INT(mkc_aot_pick(&m, 8, 6), MKC_AOT_NONE, "pick: PTX newer than the device does not fit");
}

static void round_trip(const char *kernel_path) {
  char out[4000], path[4400];
  snprintf(out, sizeof out, "%s/aot", dir);
  mkc_manifest w, r;
  int rc = mkc_aot_compile(kernel_path, "sm_80,sm_90", out, &w);
  if (!CHECK(rc == 0, "compile: tiny for sm_80,sm_90")) return;
  struct stat st;
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", out, w.cubins[i].file);
    CHECK(stat(path, &st) == 0 && st.st_size == w.cubins[i].size && w.cubins[i].ptxas.registers > 0,
          "compile: %s (%ld bytes, %d registers)", w.cubins[i].file, w.cubins[i].size,
          w.cubins[i].ptxas.registers);
  }
  snprintf(path, sizeof path, "%s/%s", out, w.ptx_file);
  char *ptx = mkc_read_file(path, NULL);
  CHECK(ptx && strstr(ptx, ".entry mkc_step") && strcmp(w.ptx_arch, "compute_80") == 0,
        "compile: %s holds mkc_step's PTX", w.ptx_file);
  free(ptx);
  CHECK(strcmp(w.name, "llama.tiny.cu") == 0 &&
            strcmp(w.cubins[0].file, "llama.tiny.sm_80.cubin") == 0,
        "compile: files named after the program (%s)", w.name);
  rc = mkc_manifest_read(out, &r);
  CHECK(rc == 0, "manifest: reads back");
  CHECK(rc == 0 && memcmp(&w, &r, sizeof w) == 0, "manifest: every field round-trips");
  char *json = mkc_read_file((snprintf(path, sizeof path, "%s/manifest.json", out), path), NULL);
  CHECK(json && strstr(json, "\"preset\":\t\"tiny\"") && strstr(json, "\"arch\":\t\"sm_90\"") &&
            strstr(json, "\"kv_dtype\":\t\"bf16\""),
        "manifest: plain JSON with the preset, KV type and archs");

  /* Bad manifests. */
  struct {
    const char *from, *to, *message;
  } bad[] = {
      {"\"format\":\t\"mkc-aot-1\"", "\"format\":\t\"mkc-aot-9\"",
       "manifest.json: format is not mkc-aot-1"},
      {"\"preset\":\t\"tiny\"", "\"preset\":\t7",
       "manifest.json: preset is missing or not a string"},
      {"\"file\":\t\"llama.tiny.sm_80.cubin\"", "\"file\":\t\"../../etc/passwd\"",
       "manifest.json: cubins[].file must be a plain file name"},
      {"\"max_ctx\":\t512", "\"max_ctx\":\t-5", "manifest.json: max_ctx is out of range"},
      {"{", "[", "manifest.json: not valid JSON"},
      {"\"kv_dtype\":\t\"bf16\"", "\"kv_dtype\":\t\"fp8\"",
       "manifest.json: kv_dtype is not bf16, f16 or f32"},
      {"\"arch\":\t\"sm_80\"", "\"arch\":\t\"\"",
       "manifest.json: cubins[].arch is not an arch like sm_90"},
      {"\"arch\":\t\"sm_80\"", "\"arch\":\t\"compute_80\"",
       "manifest.json: cubins[].arch is not an arch like sm_90"},
      {"\"arch\":\t\"sm_80\"", "\"arch\":\t\"sm_90\"",
       "manifest.json: cubins[].arch is listed twice"},
      {"\"arch\":\t\"compute_80\"", "\"arch\":\t\"sm_80\"",
       "manifest.json: ptx.arch is not an arch like compute_80"},
      {"\n}", "\n}\n{}", "manifest.json: bytes after the JSON object (at byte"},
  };
  for (size_t i = 0; json && i < sizeof bad / sizeof *bad; i++) {
    char *at = strstr(json, bad[i].from);
    if (!CHECK(at != NULL, "bad manifest %zu: pattern found", i)) continue;
    size_t n = strlen(json) + strlen(bad[i].to) + 1;
    char *text = malloc(n);
    snprintf(text, n, "%.*s%s%s", (int)(at - json), json, bad[i].to, at + strlen(bad[i].from));
    if (i == 4) snprintf(text, n, "%s", "[1,");
    write_text(path, text);
    free(text);
    check_stderr_begin();
    rc = mkc_manifest_read(out, &r);
    char *err = check_stderr_end();
    CHECK(rc == -1 && strstr(err, bad[i].message), "bad manifest: %s", bad[i].message);
    free(err);
  }
  free(json);
}

static void bad_inputs(const char *kernel_path) {
  char out[4200], notk[4200];
  snprintf(out, sizeof out, "%s/bad", dir);
  snprintf(notk, sizeof notk, "%s/plain.cu", dir);
  write_text(notk, "extern \"C\" __global__ void mkc_step() {}\n");
  struct {
    const char *kernel, *archs, *message;
  } cases[] = {
      {kernel_path, "sm80", "mkc: error: --arch: expected a list like sm_80,sm_90, got 'sm80'"},
      {kernel_path, "sm_90,sm_90", "mkc: error: --arch: sm_90 given twice"},
      {kernel_path, "", "mkc: error: --arch: no arch given"},
      {notk, "sm_90", "not an mkc kernel"},
      {"/nonexistent.cu", "sm_90",
       "mkc: error: cannot read /nonexistent.cu: No such file or directory"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    mkc_manifest m;
    check_stderr_begin();
    int rc = mkc_aot_compile(cases[i].kernel, cases[i].archs, out, &m);
    char *err = check_stderr_end();
    CHECK(rc == -1 && strstr(err, cases[i].message), "bad input: %s", cases[i].message);
    free(err);
  }
}

int main(void) {
  if (!mkdtemp(dir)) return 1;
  char cache[4200], kernel_path[4200];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  const char *suite_cache = getenv("MKC_CACHE_DIR");
  if (!suite_cache || !*suite_cache) setenv("MKC_CACHE_DIR", cache, 1);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  /* The header's fields, on a kernel whose context (100) clamps its prompt chunks. */
  mkc_gen_opts o = {.graph_path = graph, .preset = "tiny", .draft_max = 2, .max_ctx = 100};
  mkc_graph g;
  mkc_kernel_src src;
  if (mkc_codegen(&o, &g, &src) != 0) return 1;
  header_parse(src.source);
  mkc_kernel_src_free(&src);
  mkc_graph_free(&g);
  /* The compiled kernel: test_nvrtc's tiny (the same source, name and options: the same key). */
  o.draft_max = 4;
  o.max_ctx = 0;
  if (mkc_codegen(&o, &g, &src) != 0) return 1;
  snprintf(kernel_path, sizeof kernel_path, "%s/llama.tiny.cu", dir);
  write_text(kernel_path, src.source);
  pick();
  char why[512];
  if (mkc_nvrtc_load(why, sizeof why) != 0) {
    printf("skip compile tests: %s\n", why);
    printf("%d passed, %d failed, 1 skipped\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
  }
  round_trip(kernel_path);
  bad_inputs(kernel_path);
  mkc_kernel_src_free(&src);
  mkc_graph_free(&g);
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
  return check_done();
}
