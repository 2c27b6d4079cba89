/* JSON output on the command line (run and chat: --format json|SCHEMA,
 * -j/--json-schema, -jf/--json-schema-file) and in serve: the constraint
 * (exec/constrain.h) over a model's tokens as its tokenizer prints them. */
#ifndef MKC_JSON_FORMAT_H
#define MKC_JSON_FORMAT_H

#include "cli.h"
#include "exec/constrain.h"
#include "tokenizer/tokenizer.h"
#include "util/json_schema.h"

/* The constraint for t's vocabulary (built once per model: it sorts the
 * tokens); NULL after a message. */
mkc_constraint *mkc_json_format_open(const mkc_tokenizer *t);

/* The flags' usage errors for command cmd (a --format value, both a format
 * and a file, a text-less prompt, drafting flags): 0 or the usage error's
 * status. c->format becomes "" when only the file is given. */
int mkc_json_format_check(mkc_cli *c, const char *cmd);

/* Whether an answer in family's chat template (-1: none) opens with its
 * reasoning, which is not JSON: gpt-oss's and deepseek-r1's always, qwen3's
 * unless reasoning_off (its template's way to turn it off). */
int mkc_json_format_reasons(int family, int reasoning_off);

/* The flags' schema compiled into *schema (NULL without one), before
 * anything heavy is done. 0, or -1 after a message. */
int mkc_json_format_schema(const mkc_cli *c, mkc_schema **schema);

/* JSON output as the flags ask, for a model with tokenizer t whose chat
 * template is family (-1: none): *con opened (NULL without --format). 0,
 * or -1 after a message (a model that reasons first). */
int mkc_json_format_setup(const mkc_cli *c, const mkc_tokenizer *t, int family,
                          mkc_constraint **con);

/* A new answer's document: the schema's, else an object. */
void mkc_json_format_start(mkc_constraint *con, const mkc_schema *schema, uint64_t seed);

#endif
