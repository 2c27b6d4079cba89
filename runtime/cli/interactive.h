/* mkc run -i/--interactive and -if/--interactive-first (interactive.c). */
#ifndef MKC_INTERACTIVE_H
#define MKC_INTERACTIVE_H

#include "cli.h"
#include "mkc_state.h"

/* The flags' usage errors (2 after the message), else 0: --in-prefix,
 * --in-suffix, --in-prefix-bos and -mli only with -i or -if, and what the
 * interactive mode does not take. */
int mkc_interactive_check(const mkc_cli *c);

/* Writes in turn with the user on stdin and stdout (sampler opt, seed as
 * run's); the process exit status. */
int mkc_run_interactive(const mkc_cli *c, const mkc_sampling *opt, unsigned long long seed);

#endif
