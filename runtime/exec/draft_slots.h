/* Drafts for a slot scheduler's sequences from a draft model's own slot
 * pool (or the target's first layers as one): mkc serve --parallel and run
 * --batch with -md or --draft-layers. Slot s of the draft pool follows slot
 * s of the target's; what each draft slot's cache holds is kept, and before
 * drafting it is made to hold the sequence's history as exec/draft_model.c
 * does for one session: the longest prefix it shares is kept (a rewind
 * forgets the rest; a rewind farther than a step's inputs clears the slot,
 * which a sliding window's ring needs), the rest is fed, then each further
 * draft is one step of one token. The slots draft together: a step feeds
 * every drafting slot its next input, so k drafts cost k steps whatever the
 * number of slots (and a history longer than a slot's share of a step is fed
 * first with its slot alone, in chunks). Drafts are the draft's greedy
 * choices (with --draft-p-min, only the likely ones); the target's verdict
 * keeps what it keeps, so each sequence emits what it emits alone. */
#ifndef MKC_DRAFT_SLOTS_H
#define MKC_DRAFT_SLOTS_H

#include "exec/slots.h"

typedef struct mkc_slot_drafter mkc_slot_drafter;

/* A drafter over pool, a slot kernel of whole caches (kv_pages 0) with no
 * recurrent layer, whose slots, context and vocabulary are at least the
 * target's; it owns pool from here on (closed with it, even on failure).
 * name: how messages name it. NULL + message. */
mkc_slot_drafter *mkc_slot_drafter_open(mkc_slots *pool, const char *name);
void mkc_slot_drafter_close(mkc_slot_drafter *d);
const char *mkc_slot_drafter_name(const mkc_slot_drafter *d);

/* llama.cpp's --draft-p-min: a slot's choice whose probability among the
 * top 10 tokens is below p_min (0 < p_min <= 1) ends its draft and is not
 * proposed (exec/draft_model.c's rule); the pool's kernel computes those
 * log-probabilities from then on. 0, or -1 after a message. */
int mkc_slot_drafter_p_min(mkc_slot_drafter *d, float p_min);

/* One slot's request: up to `want` drafts after hist[0..n) (n >= 1: the
 * sequence's tokens, the last not yet in the target's cache). */
typedef struct mkc_slot_draft {
  const int *hist;
  int n, want;
  int got;               /* out: the drafts made, 0..want */
  int drafts[MKC_T_CAP]; /* out */
} mkc_slot_draft;

/* Drafts for every slot s with req[s].want > 0 (req has a slot's count of
 * entries); want is capped at the draft kernel's t_max - 1. 0, or -1 after
 * a message (a backend failure; a refused step drafts nothing for that slot). */
int mkc_slot_drafter_propose(mkc_slot_drafter *d, mkc_slot_draft *req, int n_req);

/* The draft pool's steps so far (for the stats). */
long mkc_slot_drafter_steps(const mkc_slot_drafter *d);

#endif
