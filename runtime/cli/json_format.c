/* See json_format.h. */
#include "json_format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/chat_template.h"
#include "util/files.h"

mkc_constraint *mkc_json_format_open(const mkc_tokenizer *t) {
  mkc_vocab_text v = {.n = mkc_tokenizer_n_vocab(t)};
  uint8_t *plain = malloc((size_t)v.n + 1);
  if (!plain) {
    fputs("mkc: error: out of memory\n", stderr);
    return NULL;
  }
  for (int i = 0; i < v.n; i++) plain[i] = (uint8_t)mkc_tokenizer_is_text(t, i);
  v.bytes = mkc_tokenizer_pieces(t, &v.off);
  v.plain = plain;
  mkc_constraint *c = mkc_constraint_open(&v);
  free(plain);
  return c;
}

mkc_constraint *mkc_host_choice_open(const mkc_tokenizer *t, int n_vocab) {
  if (t) return mkc_json_format_open(t);
  /* token ids only: n_vocab tokens with no text (a free document needs none; no DRY breaker
   * can match one) */
  uint32_t *off = calloc((size_t)n_vocab + 1, sizeof *off);
  if (!off) {
    fputs("mkc: error: out of memory\n", stderr);
    return NULL;
  }
  mkc_vocab_text v = {.n = n_vocab, .bytes = "", .off = off};
  mkc_constraint *c = mkc_constraint_open(&v);
  free(off);
  return c;
}

int mkc_json_format_on(const mkc_cli *c) {
  return c->format || c->schema_file || c->grammar || c->grammar_file;
}

int mkc_host_choice_on(const mkc_cli *c) { return mkc_json_format_on(c) || mkc_cli_more_on(c); }

const char *mkc_json_format_what(const mkc_cli *c) {
  return c->grammar        ? "--grammar (output by a grammar)"
         : c->grammar_file ? "--grammar-file (output by a grammar)"
         : c->format || c->schema_file
             ? "--format (JSON output)"
             : "a sampler the kernel lacks (--typical, --mirostat, --dry-...)";
}

int mkc_json_format_check(mkc_cli *c, const char *cmd) {
  char msg[400] = "";
  const char *f = c->format;
  if (c->schema_file && !f) c->format = ""; /* JSON output, its schema from the file */
  const char *what = mkc_json_format_what(c);
  if (f && strcmp(f, "json") != 0 && f[strspn(f, " \t\n\r")] != '{')
    snprintf(msg, sizeof msg, "%s: --format '%s': json, or a JSON schema ({...})", cmd, f);
  else if (f && c->schema_file)
    snprintf(msg, sizeof msg, "%s: --format and --json-schema-file: one of them", cmd);
  else if (c->grammar && c->grammar_file)
    snprintf(msg, sizeof msg, "%s: --grammar and --grammar-file: one of them", cmd);
  else if (c->format && (c->grammar || c->grammar_file))
    snprintf(msg, sizeof msg, "%s: JSON output (--format, -j, -jf) or a grammar: one of them", cmd);
  else if (mkc_json_format_on(c) && (!c->model_path || c->prompt_ids))
    snprintf(msg, sizeof msg, "%s: %s needs the model's tokenizer: -m with -p or -f", cmd, what);
  else if (c->n_dry_breakers && !c->model_path)
    snprintf(msg, sizeof msg,
             "%s: --dry-sequence-breaker is matched on the tokens' texts: it needs the model's "
             "tokenizer (-m)",
             cmd);
  else if (mkc_host_choice_on(c) && c->rounds > 1)
    snprintf(msg, sizeof msg,
             "%s: %s chooses each token on the host: not with --rounds (a launch's rounds are the "
             "kernel's choices)",
             cmd, what);

  char command[16]; /* the help's: "run" for "run --batch" */
  snprintf(command, sizeof command, "%.*s", (int)strcspn(cmd, " "), cmd);
  return msg[0] ? mkc_cli_usage_error_in(command, "%s", msg) : 0;
}

/* The text a flag gives, or (file_flag set) the file's: *n bytes; NULL
 * after a message. A file's is freed by the caller (*owned). */
static const char *text_of(const char *text, const char *file, const char *file_flag, size_t *n,
                           char **owned) {
  *owned = NULL;
  if (!file) {
    *n = strlen(text);
    return text;
  }
  if (!(*owned = mkc_read_file(file, n)))
    fprintf(stderr, "mkc: error: %s %s: %s\n", file_flag, file, strerror(errno));
  return *owned;
}

/* --format SCHEMA or --json-schema-file FILE compiled; NULL after a message. */
static mkc_schema *schema_of(const mkc_cli *c) {
  size_t n;
  char *file, why[300];
  const char *text = text_of(c->format, c->schema_file, "--json-schema-file", &n, &file);
  mkc_schema *s = text ? mkc_schema_compile(text, n, why, sizeof why) : NULL;
  if (text && !s)
    fprintf(stderr, "mkc: error: %s%s: %s\n", c->schema_file ? "--json-schema-file " : "--format",
            c->schema_file ? c->schema_file : "", why);
  free(file);
  return s;
}

/* --grammar TEXT or --grammar-file FILE compiled; NULL after a message (a
 * file's mistakes as FILE:LINE:COL: error:). */
static mkc_gbnf *grammar_of(const mkc_cli *c) {
  size_t n;
  char *file, why[300];
  const char *text = text_of(c->grammar, c->grammar_file, "--grammar-file", &n, &file);
  mkc_gbnf *g = text ? mkc_gbnf_compile(text, n, why, sizeof why) : NULL;
  int line, col, at = 0;
  if (text && !g && file && sscanf(why, "%d:%d: %n", &line, &col, &at) == 2 && at > 0)
    fprintf(stderr, "%s:%d:%d: error: %s\n", c->grammar_file, line, col, why + at);
  else if (text && !g)
    fprintf(stderr, "mkc: error: --grammar: %s\n", why);
  free(file);
  return g;
}

int mkc_json_format_reasons(int family, int reasoning_off) {
  return family >= 0 && mkc_chat_reasons(family) && (family != MKC_CHAT_QWEN3 || !reasoning_off);
}

int mkc_json_format_rules(const mkc_cli *c, mkc_format_rules *rules) {
  *rules = (mkc_format_rules){0};
  if (mkc_cli_sampling_more(c, &rules->more) != 0) return -1;
  if (c->grammar || c->grammar_file) return (rules->grammar = grammar_of(c)) ? 0 : -1;
  rules->json = c->format != NULL;
  if (!c->format || strcmp(c->format, "json") == 0) return 0;
  return (rules->schema = schema_of(c)) ? 0 : -1;
}

void mkc_format_rules_free(mkc_format_rules *rules) {
  mkc_schema_free(rules->schema);
  mkc_gbnf_free(rules->grammar);
  *rules = (mkc_format_rules){0};
}

int mkc_json_format_setup(const mkc_cli *c, const mkc_tokenizer *t, int n_vocab, int family,
                          mkc_constraint **con) {
  *con = NULL;
  if (!mkc_host_choice_on(c)) return 0;
  if (mkc_json_format_on(c) && mkc_json_format_reasons(family, c->no_reasoning)) {
    int gbnf = c->grammar || c->grammar_file;
    fprintf(stderr,
            "mkc: error: %s: this model reasons before it answers, and the reasoning is not %s%s\n",
            gbnf ? (c->grammar ? "--grammar" : "--grammar-file") : "--format",
            gbnf ? "the grammar's" : "JSON",
            family == MKC_CHAT_QWEN3 ? " (--reasoning-budget 0 turns it off)" : "");
    return -1;
  }
  return (*con = mkc_host_choice_open(t, n_vocab)) ? 0 : -1;
}

int mkc_json_format_start(mkc_constraint *con, const mkc_format_rules *rules,
                          const mkc_tokenizer *t, uint64_t seed) {
  if (rules->grammar) {
    int ends[MKC_GRAMMAR_ENDS];
    int n = t ? mkc_tokenizer_eog_ids(t, ends, MKC_GRAMMAR_ENDS) : 0;
    if (mkc_constraint_start_grammar(con, rules->grammar, ends, n, seed) != 0) return -1;
  } else if (rules->schema) {
    mkc_constraint_start_schema(con, rules->schema, seed);
  } else if (rules->json) {
    mkc_constraint_start(con, 1, seed);
  } else {
    mkc_constraint_start_free(con, seed);
  }
  mkc_constraint_set_more(con, &rules->more);
  return 0;
}
