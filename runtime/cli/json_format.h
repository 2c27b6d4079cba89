/* JSON output (run --format json, a request's format or response_format):
 * the constraint (exec/constrain.h) over a model's tokens, as its
 * tokenizer prints them. */
#ifndef MKC_JSON_FORMAT_H
#define MKC_JSON_FORMAT_H

#include "exec/constrain.h"
#include "tokenizer/tokenizer.h"

/* The constraint for t's vocabulary (built once per model: it sorts the
 * tokens); NULL after a message. */
mkc_constraint *mkc_json_format_open(const mkc_tokenizer *t);

#endif
