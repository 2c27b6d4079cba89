/* mkc: the command line's usage text and the table of subcommands, each in
 * its own cmd_*.c (declared in commands.h). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "util/version.h"

static const char USAGE[] =
    "usage: mkc COMMAND [options]   (mkc COMMAND --help: that command's options)\n"
    "\n"
    "  run      decode: a model file and a text prompt (-m MODEL -p TEXT), or a\n"
    "           preset on random weights and token ids\n"
    "           (--preset P --random-weights S)\n"
    "  chat     talk with an instruct model in the terminal (-m MODEL)\n"
    "  embed    a text's embedding vector, pooled from the model's last hidden states\n"
    "  serve    answer OpenAI-style HTTP requests: /v1/chat/completions,\n"
    "           /v1/completions\n"
    "  gen      write the one-kernel CUDA source of a decode step\n"
    "           (a graph or -m MODEL)\n"
    "  compile  build a kernel ahead of time: cubins per arch, PTX, manifest.json\n"
    "  bench    decode speed and weight bandwidth, llama-bench style\n"
    "  inspect  outline a kernel stage by stage, without a GPU\n"
    "  init     write a model of seeded random weights (GGUF or Hugging Face folder)\n"
    "  info     what a model file holds and the graph preset mkc derives from it\n"
    "  tokenize a text's tokens through a model's tokenizer,\n"
    "           as llama-tokenize prints them\n"
    "  perplexity  a text's perplexity under a model, as llama-perplexity measures it\n"
    "  quantize a GGUF model in a llama-quantize type (Q4_K_M, Q8_0, ...)\n"
    "  imatrix  an importance matrix over a text, as llama-imatrix computes it\n"
    "  gguf-split  a GGUF model cut in files, or put back in one, as\n"
    "           llama-gguf-split does\n"
    "\n"
    "MODEL is a GGUF file or a Hugging Face folder (config.json, safetensors,\n"
    "tokenizer.json), or the file name of a model in the model directory\n"
    "($MKC_MODEL_DIR, else ~/.cache/mkc/models; `make demo` fetches SmolLM2 there).\n"
    "--backend auto (the default) runs on the GPU where a driver and device\n"
    "exist, else on the cpu backend (the same kernel on the SIMT emulator).\n"
    "mkc --version prints the version.\n";

/* Subcommands (commands.h). */
static const struct {
  const char *name;
  int (*fn)(int argc, char **argv);
} COMMANDS[] = {
    {"run", mkc_cmd_run},
    {"chat", mkc_cmd_chat},
    {"gen", mkc_cmd_gen},
    {"compile", mkc_cmd_compile},
    {"bench", mkc_cmd_bench},
    {"inspect", mkc_cmd_inspect},
    {"init", mkc_cmd_init},
    {"info", mkc_cmd_info},
    {"serve", mkc_cmd_serve},
    {"embed", mkc_cmd_embed},
    {"tokenize", mkc_cmd_tokenize},
    {"perplexity", mkc_cmd_perplexity},
    {"quantize", mkc_cmd_quantize},
    {"imatrix", mkc_cmd_imatrix},
    {"gguf-split", mkc_cmd_gguf_split},
};

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(USAGE, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    printf("mkc %s\n", MKC_VERSION);
    return 0;
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
