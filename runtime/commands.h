/* Subcommands of the mkc CLI that live outside main.c. Each takes the whole
 * argv (argv[1] is the command's name) and returns the process exit status:
 * 0, 1 for a failure, 2 for a usage error. */
#ifndef MKC_COMMANDS_H
#define MKC_COMMANDS_H

#endif
