/* Constrained output on the command line (run and chat: JSON by --format
 * json|SCHEMA, -j/--json-schema, -jf/--json-schema-file; a GBNF grammar by
 * --grammar, --grammar-file) and in serve: the constraint (exec/constrain.h)
 * over a model's tokens as its tokenizer prints them. */
#ifndef MKC_JSON_FORMAT_H
#define MKC_JSON_FORMAT_H

#include "cli.h"
#include "exec/constrain.h"
#include "tokenizer/tokenizer.h"
#include "util/gbnf.h"
#include "util/json_schema.h"

/* What the answer follows: a schema's JSON, a grammar's sentences, a JSON object (json), or
 * nothing (a free document: the samplers the kernel lacks, more, chose its tokens). */
typedef struct mkc_format_rules {
  mkc_schema *schema;
  mkc_gbnf *grammar;
  int json;
  mkc_sampling_more more; /* all zero: none */
} mkc_format_rules;

/* The constraint for t's vocabulary (built once per model: it sorts the
 * tokens); NULL after a message. */
mkc_constraint *mkc_json_format_open(const mkc_tokenizer *t);
/* The host's choice over t's vocabulary, or (t NULL: token ids in and out) over n_vocab tokens
 * that have no text, for the samplers the kernel lacks; NULL after a message. */
mkc_constraint *mkc_host_choice_open(const mkc_tokenizer *t, int n_vocab);

/* Whether the flags ask for constrained output (JSON or a grammar). */
int mkc_json_format_on(const mkc_cli *c);
/* Whether the host chooses the tokens: constrained output, or a sampler the kernel lacks. */
int mkc_host_choice_on(const mkc_cli *c);
/* The flag that asks for it, as messages name it ("--format (JSON output)", ...). */
const char *mkc_json_format_what(const mkc_cli *c);

/* The flags' usage errors for command cmd (a --format value, both a format
 * and a file, JSON and a grammar, a text-less prompt, drafting flags): 0 or
 * the usage error's status. c->format becomes "" when only the schema file
 * is given. */
int mkc_json_format_check(mkc_cli *c, const char *cmd);

/* Whether an answer in family's chat template (-1: none) opens with its
 * reasoning, which is not JSON: gpt-oss's and deepseek-r1's always, qwen3's
 * unless reasoning_off (its template's way to turn it off). */
int mkc_json_format_reasons(int family, int reasoning_off);

/* The flags' schema or grammar compiled into *rules (both NULL without
 * one), and their samplers the kernel lacks, before anything heavy is done.
 * 0, or -1 after a message. */
int mkc_json_format_rules(const mkc_cli *c, mkc_format_rules *rules);
void mkc_format_rules_free(mkc_format_rules *rules);

/* Constrained output (or the host's choice) as the flags ask, for a model of n_vocab tokens
 * with tokenizer t (NULL: none, token ids only) whose chat template is family (-1: none):
 * *con opened (NULL without it). 0, or -1 after a message (a model that reasons first, asked
 * for a format). */
int mkc_json_format_setup(const mkc_cli *c, const mkc_tokenizer *t, int n_vocab, int family,
                          mkc_constraint **con);

/* A new answer's document: the grammar's (which t's end-of-generation
 * tokens may end), the schema's, an object's, else a free one; with the
 * rules' samplers. 0, or -1 after a message. */
int mkc_json_format_start(mkc_constraint *con, const mkc_format_rules *rules,
                          const mkc_tokenizer *t, uint64_t seed);

#endif
