/* A slot's KV rows on disk: llama-server's slot save and restore on a slot
 * pool (mkc serve --parallel). The file is exec/kv_file.h's, with no
 * sliding-window rings (a paged pool keeps every position of every layer);
 * its model id names the model and the slot kernel. */
#ifndef MKC_SLOT_FILE_H
#define MKC_SLOT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "exec/slots.h"

/* Writes slot s's positions [0, pos) to path for model_id: returns the
 * tokens written, with the file's bytes in *written, or -1 with why (the
 * log says more). */
int mkc_slot_file_save(mkc_slots *p, int s, uint64_t model_id, const char *path, size_t *written,
                       char *why, size_t cap);
/* Reads path into slot s (cleared first): returns its tokens' count, with
 * the file's bytes in *bytes_read, or -1 with why (not there, not such a
 * file, another model's or kernel's, a token outside the vocabulary, more
 * positions than the context, the pool out of pages), the slot then empty. */
int mkc_slot_file_restore(mkc_slots *p, int s, uint64_t model_id, const char *path,
                          size_t *bytes_read, char *why, size_t cap);

#endif
