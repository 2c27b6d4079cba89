/* The CUDA kernel cache (runtime/backend/cuda/kcache.c) and the ptxas report parser:
 * miss, hit without NVRTC, corrupted and torn entries rebuilt, two processes
 * racing to fill one key, MKC_KEEP_SOURCE. Needs libnvrtc, no GPU. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "util/files.h"
#include "backend/cuda/kcache.h"
#include "backend/cuda/nvrtc.h"
#include "backend/cuda/ptxas.h"

static char source[512];
enum { DRIVER = 12040 }; /* cuDriverGetVersion's answer for CUDA 12.4 */

static void make_source(int variant) {
  snprintf(source, sizeof source,
           "extern \"C\" __global__ void mkc_step(float *x) {\n"
           "  __shared__ float s[64];\n"
           "  s[threadIdx.x & 63] = x[threadIdx.x] * %d.0f;\n"
           "  __syncthreads();\n"
           "  x[threadIdx.x] = s[(threadIdx.x + 1) & 63];\n"
           "}\n",
           variant);
}

static void ptxas_parser(void) {
  const char *sm80 =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_80'\n"
      "ptxas info    : Used 7 registers, 1 bytes smem\n"
      "ptxas info    : Compiling entry function 'mkc_step' for 'sm_80'\n"
      "ptxas info    : Function properties for mkc_step\n"
      "ptxas         .     104 bytes stack frame, 12 bytes spill stores, 80 bytes spill loads\n"
      "ptxas info    : Used 56 registers, used 1 barriers, 256 bytes smem, 384 bytes cmem[0]\n";
  mkc_ptxas_info p;
  CHECK(mkc_ptxas_parse(sm80, "mkc_step", &p) == 0, "ptxas: finds mkc_step's block");
  CHECK(strcmp(p.arch, "sm_80") == 0 && p.registers == 56 && p.barriers == 1 &&
            p.stack_bytes == 104 && p.spill_stores == 12 && p.spill_loads == 80 &&
            p.smem_bytes == 256 && p.cmem0_bytes == 384,
        "ptxas: every figure of the sm_80 report (%s %d regs %d bar %d stack %d/%d spill %d smem "
        "%d cmem)",
        p.arch, p.registers, p.barriers, p.stack_bytes, p.spill_stores, p.spill_loads, p.smem_bytes,
        p.cmem0_bytes);
  CHECK(mkc_ptxas_parse(sm80, "other", &p) == 0 && p.registers == 7 && p.smem_bytes == 1 &&
            p.stack_bytes == 0,
        "ptxas: another kernel's block is kept apart");
  /* NVRTC 13's order: the entry's figures, its "Used" line, then each function it calls
   * (__noinline__) with its own figures, which are not the entry's */
  const char *calls =
      "ptxas info    : Compiling entry function 'mkc_step' for 'sm_90'\n"
      "ptxas info    : Function properties for mkc_step\n"
      "    192 bytes stack frame, 128 bytes spill stores, 832 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 192 bytes cumulative stack size\n"
      "ptxas info    : Compile time = 2950.568 ms\n"
      "ptxas info    : Function properties for _ZN5_mkc_gemm_qkvE8mkc_wmat\n"
      "    0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Function properties for _ZN5_mkc_step_twinE\n"
      "    16 bytes stack frame, 0 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Function properties for _ZN5_mkc_gemm_tileE8mkc_wcat\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
  int parsed = mkc_ptxas_parse(calls, "mkc_step", &p);
  CHECK(parsed == 0 && p.registers == 168 && p.stack_bytes == 192 && p.spill_stores == 128 &&
            p.spill_loads == 832 && p.called_functions == 3 && p.called_spill_stores == 4 &&
            p.called_spill_loads == 8 && p.called_stack_bytes == 16,
        "ptxas: the entry's own figures, not those of the functions it calls after it (%d stack, "
        "%d/%d spill; %d called: %d/%d spill, %d stack)",
        p.stack_bytes, p.spill_stores, p.spill_loads, p.called_functions, p.called_spill_stores,
        p.called_spill_loads, p.called_stack_bytes);
  CHECK(mkc_ptxas_parse(sm80, "missing", &p) == -1,
        "ptxas: a kernel not in the report is an error");
  CHECK(mkc_ptxas_parse("garbage\n", "mkc_step", &p) == -1,
        "ptxas: a log with no report is an error");
}

static int count_tmp_files(void) {
  char dir[4096];
  if (mkc_cache_dir("cuda", dir, sizeof dir) != 0) return -1;
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp") != NULL;
  if (d) closedir(d);
  return n;
}

static void flip_byte(const char *path, long at) {
  FILE *f = fopen(path, "r+b");
  if (!f) return;
  fseek(f, at, SEEK_SET);
  int c = fgetc(f);
  fseek(f, at, SEEK_SET);
  fputc(c ^ 0x40, f);
  fclose(f);
}

static void cache(void) {
  mkc_compiled a, b;
  make_source(3);
  int calls = mkc_nvrtc_compile_count();
  int rc = mkc_kcache_compile(source, "k.cu", "sm_90", DRIVER, &a);
  CHECK(rc == 0 && !a.from_cache && a.cubin_size > 0, "miss: compiles (%zu-byte cubin)",
        a.cubin_size);
  CHECK_INT(mkc_nvrtc_compile_count() - calls, 1, "miss: NVRTC called once");
  CHECK(a.ptxas.registers > 0 && a.ptxas.smem_bytes == 256 && strcmp(a.ptxas.arch, "sm_90") == 0,
        "miss: ptxas figures parsed (%d registers, %d bytes smem)", a.ptxas.registers,
        a.ptxas.smem_bytes);
  calls = mkc_nvrtc_compile_count();
  CHECK(mkc_kcache_compile(source, "k.cu", "sm_90", DRIVER, &b) == 0 && b.from_cache,
        "hit: loaded from the cache");
  CHECK_INT(mkc_nvrtc_compile_count() - calls, 0, "hit: NVRTC not called");
  CHECK(b.cubin_size == a.cubin_size && memcmp(a.cubin, b.cubin, a.cubin_size) == 0 &&
            b.ptxas.registers == a.ptxas.registers,
        "hit: the same cubin and ptxas figures");
  mkc_compiled_free(&b);

  CHECK(mkc_kcache_compile(source, "k.cu", "sm_80", DRIVER, &b) == 0 && !b.from_cache &&
            strcmp(b.key, a.key) != 0,
        "another arch is another key");
  mkc_compiled_free(&b);
  CHECK(mkc_kcache_compile(source, "other.cu", "sm_90", DRIVER, &b) == 0 && !b.from_cache,
        "another program name is another key");
  mkc_compiled_free(&b);
  calls = mkc_nvrtc_compile_count();
  check_stderr_begin();
  rc = mkc_kcache_compile(source, "k.cu", "sm_90", 12080, &b);
  char *said = check_stderr_end();
  CHECK(rc == 0 && !b.from_cache && strcmp(b.key, a.key) != 0 &&
            mkc_nvrtc_compile_count() - calls == 1,
        "another driver version (CUDA 12.8, not 12.4) is another key: a miss, compiled");
  char dir[4096], want[4300];
  mkc_cache_dir("cuda", dir, sizeof dir);
  snprintf(want, sizeof want,
           "mkc: compiling k.cu for sm_90 with NVRTC %d.%d (once: cached in %s "
           "afterwards)...\nmkc: compiled k.cu for sm_90 in ",
           mkc_nvrtc_version(NULL, 0) / 1000, mkc_nvrtc_version(NULL, 0) % 1000 / 10, dir);
  const char *rest = strncmp(said, want, strlen(want)) == 0 ? said + strlen(want) : "";
  char *end;
  double secs = strtod(rest, &end);
  CHECK(end != rest && secs >= 0 && strcmp(end, " s\n") == 0,
        "a compile says what, for which arch, where it is cached, then how long: %s", said);
  free(said);
  mkc_compiled_free(&b);

  char path[4200];
  mkc_kcache_path(a.key, path, sizeof path);
  flip_byte(path, 40 + (long)a.cubin_size / 2);
  calls = mkc_nvrtc_compile_count();
  check_stderr_begin();
  rc = mkc_kcache_compile(source, "k.cu", "sm_90", DRIVER, &b);
  char *err = check_stderr_end();
  CHECK(rc == 0 && !b.from_cache && b.cubin_size == a.cubin_size &&
            memcmp(a.cubin, b.cubin, a.cubin_size) == 0,
        "corrupted entry: not loaded, rebuilt to the right cubin");
  CHECK(strstr(err, "is corrupt (checksum mismatch): rebuilding it") != NULL,
        "corrupted entry: reported");
  CHECK_INT(mkc_nvrtc_compile_count() - calls, 1, "corrupted entry: NVRTC called to rebuild");
  free(err);
  mkc_compiled_free(&b);
  check_stderr_begin();
  rc = mkc_kcache_compile(source, "k.cu", "sm_90", DRIVER, &b);
  err = check_stderr_end();
  CHECK(rc == 0 && b.from_cache && err[0] == '\0',
        "corrupted entry: reported once, then a clean hit");
  free(err);
  mkc_compiled_free(&b);

  if (truncate(path, 40 + (long)a.cubin_size / 3) == 0) {
    check_stderr_begin();
    rc = mkc_kcache_compile(source, "k.cu", "sm_90", DRIVER, &b);
    err = check_stderr_end();
    CHECK(rc == 0 && !b.from_cache && strstr(err, "sizes do not match the file"),
          "torn entry: detected, rebuilt");
    free(err);
    mkc_compiled_free(&b);
  }
  mkc_compiled_free(&a);

  /* Two processes fill one new key at once: both succeed, the entry is whole. */
  make_source(5);
  pid_t kids[2];
  for (int i = 0; i < 2; i++)
    if ((kids[i] = fork()) == 0) {
      mkc_compiled c;
      _exit(mkc_kcache_compile(source, "race.cu", "sm_90", DRIVER, &c) == 0 && !c.from_cache ? 0
                                                                                             : 1);
    }
  int ok = 1;
  for (int i = 0; i < 2; i++) {
    int status = 0;
    waitpid(kids[i], &status, 0);
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  CHECK(ok, "race: both processes compiled and stored");
  calls = mkc_nvrtc_compile_count();
  check_stderr_begin();
  rc = mkc_kcache_compile(source, "race.cu", "sm_90", DRIVER, &b);
  err = check_stderr_end();
  CHECK(rc == 0 && b.from_cache && err[0] == '\0' && mkc_nvrtc_compile_count() == calls,
        "race: the entry they left is whole and loads");
  CHECK_INT(count_tmp_files(), 0, "race: no temp files left behind");
  free(err);
  mkc_compiled_free(&b);

  setenv("MKC_KEEP_SOURCE", "1", 1);
  make_source(7);
  CHECK(mkc_kcache_compile(source, "keep.cu", "sm_90", DRIVER, &b) == 0,
        "MKC_KEEP_SOURCE=1: compiles");
  mkc_kcache_path(b.key, path, sizeof path);
  strcpy(path + strlen(path) - strlen(".cubin"), ".cu");
  char *kept = mkc_read_file(path, NULL);
  CHECK(kept && strcmp(kept, source) == 0,
        "MKC_KEEP_SOURCE=1: the source is kept beside the entry");
  free(kept);
  mkc_compiled_free(&b);
  unsetenv("MKC_KEEP_SOURCE");
}

int main(void) {
  char dir[] = "/tmp/mkc_test_kcache_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  setenv("MKC_CACHE_DIR", dir, 1);
  ptxas_parser();
  char why[512];
  if (mkc_nvrtc_load(why, sizeof why) != 0) {
    printf("skip cache tests: %s\n", why);
    printf("%d passed, %d failed, 1 skipped\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
  }
  cache();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
  return check_done();
}
