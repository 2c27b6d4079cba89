/* mkc run --batch FILE (run_batch.c). */
#ifndef MKC_RUN_BATCH_H
#define MKC_RUN_BATCH_H

#include "cli.h"
#include "mkc_state.h"

/* Decodes every line of c->batch_file together on c->slots slots with the
 * sampler opt (line i with seed + i); prints each completion on a line of
 * its own. The process exit status. */
int mkc_run_batch(const mkc_cli *c, const mkc_sampling *opt, unsigned long long seed);

/* c's flags for a slot kernel of `slots` sequences each taking 1 +
 * --draft-max rows a step (run --batch, serve --parallel): its step rows,
 * chunk and a paged KV pool unless --kv-pages says. 0, or a usage error's
 * status (cmd names the command in it). */
int mkc_slot_kernel_flags(mkc_cli *c, int slots, const char *cmd);

#endif
