/* Subcommands of the mkc CLI that live outside main.c. Each takes the whole
 * argv (argv[1] is the command's name) and returns the process exit status:
 * 0, 1 for a failure, 2 for a usage error. */
#ifndef MKC_COMMANDS_H
#define MKC_COMMANDS_H

int mkc_cmd_init(int argc, char **argv); /* cmd_init.c: a GGUF file with random weights */
int mkc_cmd_info(int argc, char **argv); /* cmd_info.c: what a GGUF file holds */

int mkc_cmd_compile(int argc, char **argv); /* cmd_compile.c */
int mkc_cmd_run(int argc, char **argv);     /* cmd_run.c */
int mkc_cmd_bench(int argc, char **argv);   /* cmd_bench.c */
int mkc_cmd_inspect(int argc, char **argv); /* cmd_inspect.c: see inside an emitted kernel */

#endif
