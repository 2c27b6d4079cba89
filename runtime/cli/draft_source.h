/* The draft source the run-like commands take from their flags (issue 15):
 * prompt lookup (the default), self-speculation (--draft-layers L: the
 * target's first L layers with its final norm and LM head, a kernel and
 * session of their own on the target's weights), or a draft model (-md
 * FILE: its own kernel, weights, session and KV cache; the target's
 * vocabulary). */
#ifndef MKC_DRAFT_SOURCE_H
#define MKC_DRAFT_SOURCE_H

#include "cli.h"
#include "exec/draft.h"
#include "exec/draft_slots.h"
#include "loaded.h"

typedef struct mkc_draft_source {
  /* The draft's graph and kernel (-md: its model file and weights too; the
   * session belongs to the drafter). Unused for prompt lookup. */
  mkc_loaded_model m;
  mkc_drafter *drafter; /* NULL: prompt lookup, the decode loop's default */
  /* a slot kernel's target (run --batch, serve --parallel): the draft's pool instead */
  mkc_slot_drafter *pool;
} mkc_draft_source;

/* The flags' usage errors (2 after the message), else 0: one source at a
 * time, a model drafter needs --draft-max, not with --kernel. */
int mkc_draft_source_check(const mkc_cli *c, const char *cmd);

/* After mkc_loaded_plan(c, target): the draft's kernel, checked against the
 * target (L below its layers; the draft file's vocabulary and tokenizer the
 * target's); for a slot kernel's target a slot kernel of as many slots and
 * whole caches (exec/draft_slots.h). Cheap, as the target's plan. 0, or -1
 * after a message. */
int mkc_draft_source_plan(const mkc_cli *c, const mkc_loaded_model *target, mkc_draft_source *ds);

/* After mkc_loaded_start(c, target): the draft's weights and its session on
 * the target's backend. 0, or -1 after a message. */
int mkc_draft_source_start(const mkc_cli *c, const mkc_loaded_model *target, mkc_draft_source *ds);

/* A slot kernel's target on backend kind: the draft's weights and its pool
 * (ds->pool). 0, or -1 after a message. */
int mkc_draft_source_start_slots(const mkc_cli *c, const mkc_loaded_model *target,
                                 mkc_draft_source *ds, int kind);

/* Before the target closes (self-speculation reads its weights). */
void mkc_draft_source_close(mkc_draft_source *ds);

/* The layers the target's own kernel drafts with (--draft-layers with --rounds
 * R > 1: self-speculation inside the kernel, mkc_decode_opts.draft_layers;
 * run and chat then start no draft source), else 0. */
int mkc_draft_layers_in_kernel(const mkc_cli *c);

#endif
