/* Where models fetched for mkc live (`make demo` puts SmolLM2 there), so
 * `-m NAME` finds a model by its file name from any directory. */
#ifndef MKC_MODEL_DIR_H
#define MKC_MODEL_DIR_H

#include <stddef.h>

/* $MKC_MODEL_DIR, else $XDG_CACHE_HOME/mkc/models, else ~/.cache/mkc/models
 * (not created). 0, or -1 when there is no home to put it in. */
int mkc_model_dir(char *out, size_t cap);

/* The path -m NAME means: NAME itself when it exists; else, for a bare name
 * (no '/'), the model directory's NAME when that exists (with a note on
 * stderr saying so); else NAME, whose open fails with the usual error, plus
 * a hint naming the model directory. Writes out; returns out. */
const char *mkc_model_resolve(const char *name, char *out, size_t cap);

#endif
