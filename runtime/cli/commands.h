/* The subcommands of the mkc CLI, one cmd_*.c each. Each takes the whole argv
 * (argv[1] is the command's name) and returns the process exit status: 0, 1
 * for a failure, 2 for a usage error. */
#ifndef MKC_COMMANDS_H
#define MKC_COMMANDS_H

int mkc_cmd_gen(int argc, char **argv);     /* the kernel's .cu for a graph or model file */
int mkc_cmd_compile(int argc, char **argv); /* cubins, PTX and a manifest ahead of time */
int mkc_cmd_run(int argc, char **argv);     /* decode: token ids or text */
int mkc_cmd_bench(int argc, char **argv);   /* decode speed and bandwidth, llama-bench style */
int mkc_cmd_inspect(int argc, char **argv); /* see inside an emitted kernel */
int mkc_cmd_init(int argc, char **argv);    /* a model file (GGUF or HF folder) of random weights */
int mkc_cmd_info(int argc, char **argv);    /* what a model file (GGUF or HF folder) holds */
int mkc_cmd_chat(int argc, char **argv);    /* multi-turn chat with a model in the terminal */
int mkc_cmd_serve(int argc, char **argv);   /* an OpenAI-style HTTP server */
int mkc_cmd_embed(int argc, char **argv);   /* texts -> embedding vectors */
int mkc_cmd_tokenize(int argc, char **argv);   /* a text's tokens, as llama-tokenize prints them */
int mkc_cmd_perplexity(int argc, char **argv); /* a text's perplexity, as llama-perplexity's */
int mkc_cmd_imatrix(int argc, char **argv);    /* an importance matrix over a text */
int mkc_cmd_quantize(int argc, char **argv);   /* a GGUF in a llama-quantize type */
int mkc_cmd_gguf_split(int argc, char **argv); /* a GGUF cut in files, or put back in one */

#endif
