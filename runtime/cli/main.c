/* mkc: the command line's usage text and the table of subcommands, each in
 * its own cmd_*.c (declared in commands.h). */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const char USAGE[] =
    "usage:\n"
    "  mkc gen GRAPH --preset P [--draft-max K] [--ctx N] [--kv-dtype T] -o FILE.cu\n"
    "  mkc gen -m MODEL [--draft-max K] [--ctx N] [--kv-dtype T] -o FILE.cu\n"
    "  mkc compile FILE.cu --arch sm_80,sm_90 -o DIR\n"
    "  mkc run -m MODEL -p TEXT [-n N] [--temp T] [--seed S] [--ctx N] [--draft-max K]\n"
    "          [--backend auto|cuda|cpu|ref] [-t N]\n"
    "  mkc run [--graph GRAPH] --preset P --random-weights SEED -n N [--draft-max K]\n"
    "          [--prompt-ids 1,2,3] [--backend auto|cuda|cpu|ref] [--ctx N] [--blocks B]\n"
    "  mkc run --kernel DIR --random-weights SEED -n N [--prompt-ids ...]\n"
    "  mkc bench [--graph GRAPH] --preset P --random-weights SEED [--draft-max K] [-n N]\n"
    "          [--backend auto|cuda|cpu]\n"
    "  mkc inspect KERNEL.cu [--gpu ID] [--arch sm_XY|none] [--json | --stage N|NAME]\n"
    "  mkc inspect --check KERNEL.cu...  |  mkc inspect --diff A.cu B.cu\n"
    "  mkc init [GRAPH] --preset P --seed S -o FILE.gguf\n"
    "  mkc info -m MODEL\n"
    "\n"
    "gen writes the one-kernel CUDA source of a step (FILE \"-\": stdout).\n"
    "compile writes one cubin per arch, the PTX and manifest.json into DIR.\n"
    "-t/--threads N: the cpu backend's OS threads, one block each (the same as\n"
    "--blocks N; default: the cores this process may use).\n"
    "MODEL is a GGUF file or a Hugging Face folder (config.json, safetensors,\n"
    "tokenizer.json); its graph preset is derived from it (docs/MODELS.md).\n"
    "run -m -p streams the completion as text (-n -1, the default: until the\n"
    "end of generation); with --prompt-ids it prints token ids; stats on stderr.\n"
    "bench prints decode speed and weight bandwidth in a table.\n"
    "inspect outlines a kernel stage by stage (run `mkc inspect --help`).\n"
    "init writes a random model as GGUF; info says what a model file holds.\n"
    "--kv-dtype bf16|f16|f32: the KV cache's element type (default bf16, or\n"
    "$MKC_KV_DTYPE); gen, run and bench take it.\n"
    "GRAPH defaults to graphs/llama.lua in the mkc tree; --backend auto picks\n"
    "cuda where a GPU and driver exist, else cpu (the SIMT emulator).\n";

/* Subcommands (commands.h). */
static const struct {
  const char *name;
  int (*fn)(int argc, char **argv);
} COMMANDS[] = {
    {"gen", mkc_cmd_gen},     {"compile", mkc_cmd_compile}, {"run", mkc_cmd_run},
    {"bench", mkc_cmd_bench}, {"inspect", mkc_cmd_inspect}, {"init", mkc_cmd_init},
    {"info", mkc_cmd_info},
};

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(USAGE, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  char names[256] = "";
  for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++) {
    if (strcmp(argv[1], COMMANDS[i].name) == 0) return COMMANDS[i].fn(argc, argv);
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
             COMMANDS[i].name);
  }
  fprintf(stderr,
          "mkc: error: unknown command '%s' (expected one of: %s)\n(run `mkc --help` for usage)\n",
          argv[1], names);
  return 2;
}
