/* mkc compile: an emitted kernel -> cubins per arch, PTX, manifest.json. */
#include <stdio.h>

#include "backend/cuda/aot.h"
#include "cli.h"
#include "commands.h"

static const char USAGE[] =
    "usage: mkc compile KERNEL.cu --arch sm_80,sm_90 -o DIR\n"
    "\n"
    "Builds a kernel from mkc gen ahead of time with NVRTC (no GPU needed): one\n"
    "cubin per arch, the PTX of the lowest (the driver compiles it for GPUs no\n"
    "cubin fits) and DIR/manifest.json (graph, preset, hashes, registers and\n"
    "spills per arch). mkc run --kernel DIR runs it.\n";

int mkc_cmd_compile(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE};
  int rc = mkc_cli_parse(argc, argv, 2, "--arch -o", 1, &c);
  if (rc) return rc == MKC_CLI_HELP ? 0 : rc;
  if (!c.positional)
    return mkc_cli_usage_error("%s",
                               "compile: which kernel? (mkc compile tiny.cu --arch sm_90 -o DIR)");
  if (!c.archs) return mkc_cli_usage_error("%s", "compile: --arch is required (e.g. sm_80,sm_90)");
  if (!c.out) return mkc_cli_usage_error("%s", "compile: -o DIR is required");
  mkc_manifest m;
  if (mkc_aot_compile(c.positional, c.archs, c.out, &m) != 0) return 1;
  for (int i = 0; i < m.n_cubins; i++) {
    const mkc_ptxas_info *p = &m.cubins[i].ptxas;
    fprintf(stderr,
            "mkc: %s/%s: %ld bytes; %d registers, %d B spill stores, %d B spill loads, %d B stack",
            c.out, m.cubins[i].file, m.cubins[i].size, p->registers, p->spill_stores,
            p->spill_loads, p->stack_bytes);
    if (p->called_functions)
      fprintf(stderr, "; %d called functions: %d B spill stores, %d B spill loads, %d B stack",
              p->called_functions, p->called_spill_stores, p->called_spill_loads,
              p->called_stack_bytes);
    fputc('\n', stderr);
  }
  fprintf(stderr, "mkc: %s/%s (for GPUs no cubin fits), %s/manifest.json\n", c.out, m.ptx_file,
          c.out);
  return 0;
}
