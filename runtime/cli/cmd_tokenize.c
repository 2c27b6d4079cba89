/* mkc tokenize: a text's tokens through a model's tokenizer, printed as
 * llama.cpp's llama-tokenize prints them (its flags too), to see what a
 * prompt becomes. Only the tokenizer is read: a vocabulary-only GGUF (as
 * llama.cpp's tests ship them) or a model mkc cannot run does too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "formats/gguf.h"
#include "token_line.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"

static const char USAGE[] =
    "usage: mkc tokenize -m MODEL (-p TEXT | -f FILE) [--ids] [--no-bos]\n"
    "                    [--no-parse-special] [--show-count] [--no-escape]\n"
    "\n"
    "Prints the text's tokens through the model's tokenizer, one a line as\n"
    "\"ID -> 'PIECE'\" (a piece's bytes that are not printable UTF-8 as \\xHH), as\n"
    "llama.cpp's llama-tokenize does. Only the tokenizer is read: MODEL may be a\n"
    "GGUF of the vocabulary alone, a Hugging Face folder (tokenizer.json), or a\n"
    "model mkc does not run.\n"
    "  -m, --model MODEL      GGUF file, Hugging Face folder, or a model's file name\n"
    "                         in the model directory (~/.cache/mkc/models)\n"
    "  -p, --prompt TEXT      the text (\\n, \\t, \\xHH, ... read as in run;\n"
    "                         --no-escape: as written)\n"
    "  -f, --file FILE        the text from a file (its bytes as they are)\n"
    "  --ids                  only the ids, as a list: [1, 2, 3]\n"
    "  --no-bos               no BOS, even where the model adds one\n"
    "  --no-parse-special     control tokens' texts (<|im_start|>, ...) as plain text\n"
    "  --show-count           the number of tokens last\n";

/* The model's tokenizer: a GGUF's, or a Hugging Face folder's. NULL after a message. */
static mkc_tokenizer *open_tokenizer(const char *path, mkc_gguf **f) {
  struct stat st;
  *f = NULL;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "mkc: error: %s: %s\n", path, strerror(errno));
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) return mkc_tokenizer_from_hf(path);
  if (!(*f = mkc_gguf_open(path))) return NULL;
  return mkc_tokenizer_from_gguf(*f);
}

int mkc_cmd_tokenize(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE};
  int rc = mkc_cli_parse(argc, argv, 2,
                         "-m -p -f --ids --no-bos --no-parse-special --show-count --escape "
                         "--no-escape",
                         0, &c);
  if (rc == MKC_CLI_HELP) return 0;
  if (rc || (rc = mkc_cli_unescape(&c))) return rc;
  if (!c.model_path)
    return mkc_cli_usage_error_in("tokenize", "%s", "tokenize: -m MODEL is required");
  if (!!c.prompt + !!c.prompt_file != 1)
    return mkc_cli_usage_error_in("tokenize", "%s",
                                  "tokenize: give the text as -p TEXT or -f FILE: one");
  size_t len;
  char *text = c.prompt ? strdup(c.prompt) : mkc_read_file(c.prompt_file, &len);
  if (!text) {
    fprintf(stderr, "mkc: error: %s: %s\n", c.prompt ? "out of memory" : c.prompt_file,
            c.prompt ? "" : strerror(errno));
    return 1;
  }
  if (c.prompt) len = strlen(text);
  mkc_gguf *f;
  mkc_tokenizer *t = open_tokenizer(c.model_path, &f);
  int *ids = NULL, n = -1;
  if (t)
    n = mkc_tokenizer_encode(t, text, len, !c.no_bos && mkc_tokenizer_add_bos(t),
                             !c.no_parse_special, &ids);
  if (n >= 0) {
    if (c.ids_only) putchar('[');
    for (int i = 0; i < n; i++) {
      if (c.ids_only)
        printf(i ? ", %d" : "%d", ids[i]);
      else
        mkc_print_token_line(stdout, t, ids[i]);
    }
    if (c.ids_only) puts("]");
    if (c.show_count) printf("Total number of tokens: %d\n", n);
  }
  free(ids);
  free(text);
  mkc_tokenizer_free(t);
  mkc_gguf_close(f);
  return n >= 0 ? 0 : 1;
}
