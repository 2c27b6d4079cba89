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

int mkc_json_format_check(mkc_cli *c, const char *cmd) {
  char msg[400] = "";
  const char *f = c->format;
  if (c->schema_file && !f) c->format = ""; /* JSON output, its schema from the file */
  if (f && strcmp(f, "json") != 0 && f[strspn(f, " \t\n\r")] != '{')
    snprintf(msg, sizeof msg, "%s: --format '%s': json, or a JSON schema ({...})", cmd, f);
  else if (f && c->schema_file)
    snprintf(msg, sizeof msg, "%s: --format and --json-schema-file: one of them", cmd);
  else if (c->format && (!c->model_path || c->prompt_ids))
    snprintf(msg, sizeof msg,
             "%s: --format (JSON output) needs the model's tokenizer: -m with -p or -f", cmd);
  else if (c->format && (c->draft_max || c->draft_adaptive || c->draft_layers ||
                         c->draft_model_path || c->draft_head || c->rounds > 1))
    snprintf(msg, sizeof msg,
             "%s: --format (JSON output) chooses each token on the host, one per step: drop the "
             "drafting flags (--draft-max, --draft-layers, -md, --draft-head, --draft-adaptive, "
             "--rounds)",
             cmd);
  char command[16]; /* the help's: "run" for "run --batch" */
  snprintf(command, sizeof command, "%.*s", (int)strcspn(cmd, " "), cmd);
  return msg[0] ? mkc_cli_usage_error_in(command, "%s", msg) : 0;
}

/* --format SCHEMA or --json-schema-file FILE compiled; NULL after a message. */
static mkc_schema *schema_of(const mkc_cli *c) {
  size_t n = 0;
  char *file = c->schema_file ? mkc_read_file(c->schema_file, &n) : NULL, why[300];
  if (c->schema_file && !file) {
    fprintf(stderr, "mkc: error: --json-schema-file %s: %s\n", c->schema_file, strerror(errno));
    return NULL;
  }
  mkc_schema *s =
      mkc_schema_compile(file ? file : c->format, file ? n : strlen(c->format), why, sizeof why);
  if (!s)
    fprintf(stderr, "mkc: error: %s%s: %s\n", c->schema_file ? "--json-schema-file " : "--format",
            c->schema_file ? c->schema_file : "", why);
  free(file);
  return s;
}

int mkc_json_format_reasons(int family, int reasoning_off) {
  return family >= 0 && mkc_chat_reasons(family) && (family != MKC_CHAT_QWEN3 || !reasoning_off);
}

int mkc_json_format_schema(const mkc_cli *c, mkc_schema **schema) {
  *schema = NULL;
  if (!c->format || strcmp(c->format, "json") == 0) return 0;
  return (*schema = schema_of(c)) ? 0 : -1;
}

int mkc_json_format_setup(const mkc_cli *c, const mkc_tokenizer *t, int family,
                          mkc_constraint **con) {
  *con = NULL;
  if (!c->format) return 0;
  if (mkc_json_format_reasons(family, c->no_reasoning)) {
    fprintf(stderr,
            "mkc: error: --format: this model reasons before it answers, and the reasoning is "
            "not JSON%s\n",
            family == MKC_CHAT_QWEN3 ? " (--reasoning-budget 0 turns it off)" : "");
    return -1;
  }
  return (*con = mkc_json_format_open(t)) ? 0 : -1;
}

void mkc_json_format_start(mkc_constraint *con, const mkc_schema *schema, uint64_t seed) {
  if (schema)
    mkc_constraint_start_schema(con, schema, seed);
  else
    mkc_constraint_start(con, 1, seed);
}
