/* mkc gen: writes the megakernel for a graph and preset, or a model file's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "loaded.h"

static int write_text(const char *path, const char *text) {
  FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
  if (!f) {
    fprintf(stderr, "mkc: error: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  int bad = fputs(text, f) < 0;
  bad |= f == stdout ? fflush(f) != 0 : fclose(f) != 0;
  if (bad) fprintf(stderr, "mkc: error: writing %s failed\n", path);
  return bad ? -1 : 0;
}

static const char USAGE[] =
    "usage: mkc gen GRAPH --preset P [--draft-max K] [--ubatch N] [--ctx N]\n"
    "               [--kv-dtype T] -o FILE.cu\n"
    "       mkc gen -m MODEL [--draft-max K] [--ubatch N] [--ctx N] [--kv-dtype T]\n"
    "               -o FILE.cu\n"
    "\n"
    "Writes the one-kernel CUDA source of a decode step (FILE \"-\": stdout): a\n"
    "header (version, graph, preset, hashes, options, plan), the device prelude\n"
    "and templates it uses, and __global__ mkc_step with one stage per fused op.\n"
    "  GRAPH            a graph file (graphs/llama.lua)\n"
    "  --preset P       one of the graph's presets (tiny, odd, llama-3.2-1b, ...)\n"
    "  -m MODEL         a GGUF file or Hugging Face folder: its own preset\n"
    "  --draft-max K    steps take up to K + 1 input tokens (0..31, default 0)\n"
    "  --ubatch N, -ub N  prompt chunks take up to N tokens (1..512, default 128),\n"
    "                   past K + 1 as tiled products on tensor cores\n"
    "  --ctx N, -c N    context length (default: the preset's, or the model's\n"
    "                   training context capped at 4096)\n"
    "  --kv-dtype T     the KV cache's element type: bf16 (default), f16, f32\n"
    "  --dequant        plan the model's quantized matrices as bf16 (see run)\n"
    "  --keep-layers L,...  each step also keeps these layers' outputs for the host\n"
    "                   (a drafter head's features; the last layer's is always there)\n"
    "  --slots B        a step serves up to B sequences (2..64), each with its own\n"
    "                   KV cache (run --batch); K + 1 rows in all, or --step-rows\n"
    "  --step-rows R    with --slots: a step takes up to R rows (K + 1 to --ubatch),\n"
    "                   each slot's at most K + 1; past K + 1 tiled, on tensor cores\n"
    "  --kv-pages N     with --slots: the slots share a pool of N pages of 16\n"
    "                   positions, held as their tokens need them\n"
    "  --imatrix-kernel mkc imatrix's kernel: each matmul stage first adds its\n"
    "                   input's squares, column by column, into scratch\n";

int mkc_cmd_gen(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE};
  int rc = mkc_cli_parse(
      argc, argv, 2,
      "--preset --draft-max --ubatch --ctx -o -m --kv-dtype --dequant --keep-layers --slots "
      "--kv-pages --step-rows --imatrix-kernel",
      1, &c);
  if (rc) return rc == MKC_CLI_HELP ? 0 : rc;
  if (!c.positional && !c.model_path)
    return mkc_cli_usage_error(
        "%s", "gen: which graph? (mkc gen graphs/llama.lua --preset tiny -o tiny.cu, or -m MODEL)");
  if (c.model_path && c.preset)
    return mkc_cli_usage_error("%s", "gen: -m brings its own preset; drop --preset");
  if (!c.preset && !c.model_path) return mkc_cli_usage_error("%s", "gen: --preset is required");
  if (!c.out) return mkc_cli_usage_error("%s", "gen: -o FILE is required (\"-\" for stdout)");
  c.graph = c.positional;
  mkc_loaded_model m; /* with -m: the model file's preset; nothing is loaded */
  if (mkc_loaded_plan(&c, &m) != 0) {
    mkc_loaded_close(&m);
    return 1;
  }
  rc = write_text(c.out, m.src.source) ? 1 : 0;
  if (!rc && strcmp(c.out, "-") != 0)
    fprintf(stderr,
            "mkc: wrote %s (%s, preset %s: %d stages, T <= %d, prompt chunks <= %d, max_ctx %d, KV "
            "%s)\n",
            c.out, m.src.file_name, m.g.preset, m.g.n_stages, m.g.t_max, m.g.t_chunk, m.g.max_ctx,
            mkc_kv_dtype_name(m.g.kv_dtype));
  mkc_loaded_close(&m);
  return rc;
}
