/* mkc run -i: llama-completion's interactive mode, in plain text (a chat
 * template's turns are mkc chat). The prompt is read and the model writes
 * on; where it writes a reverse prompt (-r), an end-of-generation token or -n
 * tokens, or Ctrl-C stops it, the user writes: the input, between
 * --in-prefix and --in-suffix (printed as the input is read), joins the text
 * the model reads and the model writes on. An empty line gives the model the
 * turn again; the end of input (Ctrl-D) or Ctrl-C at the input ends. The
 * session keeps every token's K/V, so each turn feeds only its own tokens;
 * a full context ends the run, or with --context-shift drops older text as
 * run's shift does (the history is kept here, shifted with the cache). */
#include "interactive.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "draft_source.h"
#include "escapes.h"
#include "exec/decode.h"
#include "exec/kv_file.h"
#include "interrupt.h"
#include "json_format.h"
#include "loaded.h"
#include "reverse_prompt.h"
#include "stop_reason.h"
#include "token_line.h"

int mkc_interactive_check(const mkc_cli *c) {
  int on = c->interactive || c->interactive_first;
  if (!on) {
    if (c->in_prefix || c->in_suffix || c->in_prefix_bos || c->multiline)
      return mkc_cli_usage_error("%s", "run: --in-prefix, --in-suffix, --in-prefix-bos and -mli "
                                       "shape what the user writes: they go with -i or -if");
    return 0;
  }
  if (!c->model_path)
    return mkc_cli_usage_error("%s", "run -i: the user writes text: -m MODEL (a tokenizer)");
  if (c->prompt_ids || c->batch_file || c->json || c->logprobs || mkc_json_format_on(c) ||
      c->chat || c->kernel_dir)
    return mkc_cli_usage_error(
        "%s", "run -i writes text in turn with the user: none of --prompt-ids, --batch, --json, "
              "--logprobs, --format, --grammar, --kernel, or --chat, -sys, --chat-template, "
              "--reasoning-* (a chat template's turns: mkc chat)");
  return 0;
}

/* The run: the text as tokens (the history the model reads), one detokenizer
 * over all of it, and the totals for the stats line. */
typedef struct turns {
  const mkc_cli *c;
  mkc_loaded_model *m;
  const mkc_tokenizer *tok;
  int *hist, n_hist, cap;
  mkc_detok detok;
  mkc_reverse rev;
  int eog; /* the latest reply ended on an end-of-generation token */
  int replies, fed, generated, shifts;
  int from_file; /* the first reply's positions --prompt-cache read */
  long drafted, accepted;
  double prompt_seconds, gen_seconds;
} turns;

/* Room for n more tokens and a context's generation after them. 0, or -1. */
static int grow(turns *t, int n) {
  size_t need = (size_t)t->n_hist + (size_t)n + (size_t)t->m->g.max_ctx + 2;
  if (need <= (size_t)t->cap) return 0;
  int *h = realloc(t->hist, need * sizeof *h);
  if (!h) {
    fprintf(stderr, "mkc: error: out of memory\n");
    return -1;
  }
  t->hist = h;
  t->cap = (int)need;
  return 0;
}

/* ids join the history; their text goes through the detokenizer (the next
 * printed piece then spaces as the whole text does): unprinted, or (the
 * prompt) shown as the model reads it, control tokens spelled, and printed
 * unless --no-display-prompt. */
static int take(turns *t, const int *ids, int n, int prompt) {
  if (grow(t, n) != 0) return -1;
  char buf[MKC_DETOK_MAX];
  for (int i = 0; i < n; i++) {
    t->hist[t->n_hist++] = ids[i];
    size_t k = (prompt ? mkc_detok_push_shown : mkc_detok_push)(&t->detok, ids[i], buf, sizeof buf);
    if (prompt && !t->c->no_display_prompt) fwrite(buf, 1, k, stdout);
  }
  fflush(stdout);
  return 0;
}

/* text's tokens (no BOS; parse_special as mkc_tokenizer_encode) joining the history. */
static int take_text(turns *t, const char *text, int parse_special) {
  int *ids = NULL;
  int n = mkc_tokenizer_encode(t->tok, text, strlen(text), 0, parse_special, &ids);
  int rc = n < 0 ? -1 : take(t, ids, n, 0);
  free(ids);
  return rc;
}

static void print_piece(size_t n, const char *buf) {
  fwrite(buf, 1, n, stdout);
  fflush(stdout);
}

static int on_token(void *ctx, int id) {
  turns *t = ctx;
  char buf[MKC_DETOK_MAX];
  if (!t->c->ignore_eos && mkc_tokenizer_is_eog(t->tok, id)) {
    t->eog = 1;
    size_t n = mkc_detok_push(&t->detok, id, buf, sizeof buf); /* -sp: its text */
    print_piece(n, buf);
    return 1;
  }
  int reversed = mkc_reverse_push(&t->rev, id); /* the token is printed all the same */
  print_piece(mkc_detok_push(&t->detok, id, buf, sizeof buf), buf);
  return reversed;
}

/* One input as llama-completion reads it: lines until one that ends it. A
 * line ending in / ends the input (the / becomes its newline); one ending in
 * \ goes on to the next (the \ dropped); -mli swaps which of the two a line
 * ending in neither does. The last newline is dropped. 1 with the input in
 * *out (malloc'd; "" for an empty line: the model's turn), 0 at the end of
 * input, -1 on Ctrl-C, -2 after an error's message. */
static int read_input(int multiline, char **out) {
  char *buf = NULL, *line = NULL;
  size_t len = 0, line_cap = 0;
  int more = 1, rc = 1;
  while (more) {
    errno = 0;
    ssize_t n = getline(&line, &line_cap, stdin);
    if (n < 0) { /* end of input: what came before it is the input, if anything */
      rc = mkc_interrupted ? -1 : 1;
      break;
    }
    if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
    more = multiline;
    if (n > 0 && line[n - 1] == '/') {
      line[n - 1] = '\n';
      more = 0;
    } else {
      if (n > 0 && line[n - 1] == '\\') line[--n] = '\0', more = !multiline;
      line[n++] = '\n'; /* getline's buffer holds the NUL after the line's newline */
    }
    char *b = realloc(buf, len + (size_t)n + 1);
    if (!b) {
      fprintf(stderr, "mkc: error: out of memory\n");
      rc = -2;
      break;
    }
    buf = b;
    memcpy(buf + len, line, (size_t)n);
    len += (size_t)n;
    buf[len] = '\0';
  }
  free(line);
  if (rc != 1 || !buf) {
    free(buf);
    return rc == 1 ? 0 : rc;
  }
  if (len > 0 && buf[len - 1] == '\n') buf[--len] = '\0';
  *out = buf;
  return 1;
}

/* The user's turn: --in-prefix printed, the input read and, unless empty,
 * --in-suffix printed and the three joined to the history (a BOS first with
 * --in-prefix-bos). 1 when the model's turn follows, 0 at the end of input,
 * -1 on Ctrl-C, -2 after an error's message. */
static int user_turn(turns *t) {
  const mkc_cli *c = t->c;
  for (;;) {
    if (c->in_prefix) fputs(c->in_prefix, stdout);
    fflush(stdout);
    char *in = NULL;
    int r = read_input(c->multiline, &in);
    if (r != 1) return r;
    if (!*in) {
      free(in);
      return 1;
    }
    if (c->in_suffix) fputs(c->in_suffix, stdout);
    fflush(stdout);
    if (!c->no_escape && mkc_unescape(in) == (size_t)-1) {
      fprintf(stderr, "mkc: the input names the NUL byte (\\x00), which a text cannot hold: not "
                      "read; write it again (--no-escape takes backslashes as written)\n");
      free(in);
      continue;
    }
    int from = t->n_hist, bos = mkc_tokenizer_bos(t->tok);
    int rc = c->in_prefix_bos && bos >= 0 ? take(t, &bos, 1, 0) : 0;
    /* three texts, each tokenized alone as llama-completion does: the input's control-token
     * spellings are its text, the prefix's and suffix's are the tokens */
    if (rc == 0 && c->in_prefix) rc = take_text(t, c->in_prefix, 1);
    if (rc == 0) rc = take_text(t, in, 0);
    if (rc == 0 && c->in_suffix) rc = take_text(t, c->in_suffix, 1);
    free(in);
    if (rc != 0) return -2;
    if (c->verbose_prompt)
      mkc_print_token_list(stderr, t->tok, "input", t->hist + from, t->n_hist - from);
    return 1;
  }
}

/* Whether the text read from position `from` on (its last 32 tokens, as llama-completion reads
 * them, control tokens spelled) ends in a reverse prompt: llama-completion's history starts
 * over at each user turn, so only what was just read counts. */
static int ends_in_reverse(const turns *t, int from) {
  int n = t->n_hist - from < 32 ? t->n_hist - from : 32, hit = 0;
  char *text = t->c->n_reverse ? mkc_tokenizer_decode(t->tok, t->hist + t->n_hist - n, n, 1) : NULL;
  size_t len = text ? strlen(text) : 0;
  for (int k = 0; text && k < t->c->n_reverse && !hit; k++) {
    size_t r = strlen(t->c->reverse[k]);
    hit = r <= len && !memcmp(text + len - r, t->c->reverse[k], r);
  }
  free(text);
  return hit;
}

enum { REPLY_DONE, REPLY_FULL, REPLY_FAILED };

/* The model's turn: it writes on from the history until a reverse prompt, an
 * end-of-generation token, -n tokens or Ctrl-C (REPLY_DONE), or a full
 * context without --context-shift (REPLY_FULL, said on stderr). */
static int model_turn(turns *t, const mkc_decode_opts *o, uint64_t cache_id, int first) {
  const mkc_cli *c = t->c;
  mkc_loaded_model *m = t->m;
  int ctx = m->g.max_ctx;
  if (t->n_hist > ctx && !c->context_shift) {
    fprintf(stderr,
            "mkc: the text (%d tokens) no longer fits the context (%d): the run ends here "
            "(--context-shift goes on without the older text; or a larger --ctx)\n",
            t->n_hist, ctx);
    return REPLY_FULL;
  }
  /* the session's tokens that begin the history stay; at least the last token is fed */
  const int *held = mkc_session_tokens(m->s);
  int n_cached = 0, pos = mkc_session_pos(m->s), most = pos < t->n_hist - 1 ? pos : t->n_hist - 1;
  while (n_cached < most && held[n_cached] == t->hist[n_cached]) n_cached++;
  if (first && c->prompt_cache &&
      (n_cached = t->from_file = mkc_kv_load(m->s, cache_id, c->prompt_cache, t->hist, t->n_hist)) <
          0)
    return REPLY_FAILED;
  int budget = c->have_n && c->n_gen >= 0, room = ctx + 1 - t->n_hist;
  int n_gen = budget ? c->n_gen : c->context_shift ? -1 : room;
  if (!c->context_shift && n_gen > room) n_gen = room;
  t->eog = 0;
  if (mkc_reverse_open(&t->rev, t->tok, c->reverse, c->n_reverse) != 0) return REPLY_FAILED;
  mkc_decode_stats st;
  int rc = mkc_decode_history(m->s, &m->g, t->hist, &t->n_hist, n_cached, n_gen, o, NULL, &st);
  mkc_reverse_close(&t->rev);
  char tail[MKC_DETOK_MAX];
  print_piece(mkc_detok_flush(&t->detok, tail, sizeof tail), tail);
  if (rc != 0) return REPLY_FAILED;
  t->replies++;
  t->fed += st.fed + st.shift_fed;
  t->generated += st.generated;
  t->shifts += st.shifts;
  t->drafted += st.drafted;
  t->accepted += st.accepted;
  t->prompt_seconds += st.prompt_seconds;
  t->gen_seconds += st.seconds - st.prompt_seconds;
  int stopped = st.stopped || mkc_interrupted || (budget && st.generated >= c->n_gen);
  if (!stopped) {
    fprintf(stderr,
            "\nmkc: the context is full (%d tokens): the run ends here (--context-shift goes on "
            "without the older text; or a larger --ctx)\n",
            ctx);
    return REPLY_FULL;
  }
  if (t->eog) { /* as llama-completion: the first reverse prompt follows, unprinted */
    if (c->n_reverse && take_text(t, c->reverse[0], 1) != 0) return REPLY_FAILED;
    fputs("\n", stdout);
  }
  return REPLY_DONE;
}

/* The stats line: the replies' totals and why the run ended. */
static void print_stats(const turns *t, int n_prompt, const char *why,
                        const unsigned long long *seed) {
  const mkc_cli *c = t->c;
  char sampled[240], rate[48] = "", shifted[48] = "", cached[48] = "";
  mkc_cli_sampled_words(c, seed, sampled, sizeof sampled);
  if (t->generated > 1 && t->gen_seconds > 0)
    snprintf(rate, sizeof rate, " (%.1f tok/s)", t->generated / t->gen_seconds);
  if (t->shifts) snprintf(shifted, sizeof shifted, ", shifted %d times", t->shifts);
  if (c->prompt_cache) snprintf(cached, sizeof cached, " (%d from --prompt-cache)", t->from_file);
  fprintf(stderr,
          "mkc: %s backend (%s), model %s, interactive: %d replies; prompt %d tokens%s; fed %d "
          "tokens in %.3f s; generated %d tokens in %.3f s%s; %s; drafted %ld, accepted %ld; "
          "context %d%s; ended: %s\n",
          mkc_session_backend(t->m->s), mkc_session_describe(t->m->s), c->model_path, t->replies,
          n_prompt, cached, t->fed, t->prompt_seconds, t->generated, t->gen_seconds, rate, sampled,
          t->drafted, t->accepted, t->m->g.max_ctx, shifted, why);
}

/* The prompt's tokens (a BOS first where the model adds one) into the
 * history, printed unless --no-display-prompt. 0, or -1 after a message. */
static int read_prompt(turns *t) {
  const mkc_cli *c = t->c;
  /* no prompt: the BOS alone where the model adds one, as llama-completion starts */
  char *text = c->prompt || c->prompt_file ? mkc_cli_prompt_text(c) : strdup("");
  if (!text) return -1;
  int *ids = NULL;
  int n = mkc_tokenizer_encode(t->tok, text, strlen(text), mkc_tokenizer_add_bos(t->tok), 1, &ids);
  free(text);
  if (n < 0) {
    free(ids);
    return -1;
  }
  int rc = take(t, ids, n, 1);
  free(ids);
  if (rc == 0 && c->verbose_prompt) mkc_print_token_list(stderr, t->tok, "prompt", t->hist, n);
  return rc;
}

int mkc_run_interactive(const mkc_cli *c, const mkc_sampling *opt, unsigned long long seed) {
  mkc_loaded_model m;
  mkc_draft_source ds = {0};
  turns t = {.c = c, .m = &m};
  int rc = 1, in_kernel = mkc_draft_layers_in_kernel(c);
  if (mkc_loaded_plan(c, &m) != 0 || (!in_kernel && mkc_draft_source_plan(c, &m, &ds) != 0))
    goto done;
  if (!(t.tok = m.file.tok)) {
    fprintf(stderr, "mkc: error: %s has no tokenizer: run -i reads and writes text\n",
            c->model_path);
    goto done;
  }
  mkc_detok_init(&t.detok, t.tok, c->special);
  if (grow(&t, 0) != 0 || read_prompt(&t) != 0) goto done;
  int n_prompt = t.n_hist;
  if (mkc_loaded_start(c, &m) != 0 || (!in_kernel && mkc_draft_source_start(c, &m, &ds) != 0) ||
      mkc_session_set_sampling(m.s, opt) != 0)
    goto done;
  /* a launch of rounds ends at the end of generation, as on_token does */
  int eog_ids[MKC_ROUND_STOPS];
  int n_eog = c->ignore_eos ? 0 : mkc_tokenizer_eog_ids(t.tok, eog_ids, MKC_ROUND_STOPS);
  mkc_decode_opts o = {
      .draft_max = c->draft_max,
      .adaptive = c->draft_adaptive,
      .draft_min = c->draft_min,
      .drafter = ds.drafter,
      .rounds = c->rounds,
      .draft_layers = in_kernel,
      .stop_ids = eog_ids,
      .n_stop_ids = n_eog,
      .interrupted = &mkc_interrupted,
      .on_token = on_token,
      .ctx = &t,
      .shift = c->context_shift,
      .n_keep = mkc_shift_keep(c->n_keep, mkc_tokenizer_added_bos(t.tok), t.hist, n_prompt)};
  uint64_t cache_id = c->prompt_cache ? mkc_loaded_cache_id(c, &m) : 0; /* reads 1 MiB: once */
  if (isatty(0))
    fprintf(stderr, "mkc: interactive: Ctrl-C hands you the turn, Return on an empty line hands "
                    "it back, a line ending in \\ goes on to the next and one ending in / ends "
                    "the input; Ctrl-D ends\n");
  mkc_interrupt_install();
  const char *why = "the end of input";
  /* read: tokens were just read, from position read_from on */
  int user = c->interactive_first || n_prompt == 0, read = n_prompt, read_from = 0;
  for (;;) {
    mkc_interrupted = 0;
    if (user) {
      int before = t.n_hist, r = user_turn(&t);
      if (r == -2) goto done;
      if (r <= 0) {
        if (r < 0) why = "Ctrl-C";
        break;
      }
      read = t.n_hist > before, read_from = before;
    }
    user = 1;
    if (t.n_hist == 0) continue; /* nothing to write on yet */
    /* text that ends in a reverse prompt hands the user the turn at once, as llama-completion
     * finds it in what it read (an empty line gives the model the turn all the same) */
    if (read && ends_in_reverse(&t, read_from)) continue;
    read = 0;
    int first = t.replies == 0, r = model_turn(&t, &o, cache_id, first);
    if (r == REPLY_FAILED) goto done;
    if (r == REPLY_FULL) {
      why = "the context is full";
      break;
    }
    if (first && c->prompt_cache && !c->prompt_cache_ro && !c->prompt_cache_all &&
        mkc_kv_save(m.s, n_prompt, cache_id, c->prompt_cache) != 0)
      goto done;
  }
  fputs("\n", stdout);
  fflush(stdout);
  if (c->prompt_cache && c->prompt_cache_all && !c->prompt_cache_ro && t.replies &&
      mkc_kv_save(m.s, mkc_session_pos(m.s), cache_id, c->prompt_cache) != 0)
    goto done;
  print_stats(&t, n_prompt, why, opt->temp > 0 ? &seed : NULL);
  rc = !strcmp(why, "Ctrl-C") ? 128 + SIGINT : 0;
done:
  mkc_draft_source_close(&ds);
  mkc_loaded_close(&m);
  free(t.hist);
  return rc;
}
