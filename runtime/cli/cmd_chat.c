/* mkc chat: multi-turn chat with an instruct model in the terminal. The
 * session keeps every turn's K/V: a new turn feeds only its own tokens (the
 * conversation's template diff, conversation.h); answers stream as text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "conversation.h"
#include "draft_source.h"
#include "exec/decode.h"
#include "exec/kv_file.h"
#include "interrupt.h"
#include "json_format.h"
#include "loaded.h"
#include "model/reasoning.h"
#include "reverse_prompt.h"
#include "stop_reason.h"

static const char USAGE[] =
    "usage: mkc chat -m MODEL [-sys TEXT] [--chat-template NAME] [options]\n"
    "\n"
    "Talks with an instruct model in its chat template. Type a message and\n"
    "Enter (a line ending in \\ continues on the next, and ollama's \"\"\" starts\n"
    "a message that ends at a line ending in \"\"\"); /exit or Ctrl-D ends\n"
    "the chat, /clear starts it over, /? lists these commands; Ctrl-C stops\n"
    "the answer being written and keeps the conversation. Each turn processes\n"
    "only its own tokens: the earlier ones stay in the KV cache. When the\n"
    "history leaves too little of the context for an answer (-n tokens, else\n"
    "a quarter of it), its oldest turns are left out (the system message\n"
    "stays) and it is read anew (stderr says so).\n"
    "  -m, --model MODEL      GGUF file, Hugging Face folder, or a model's file name\n"
    "                         in the model directory (~/.cache/mkc/models)\n"
    "  -sys, --system-prompt TEXT  the system message (-sysf FILE: from a file)\n"
    "  --chat-template NAME   the template's family when the model's is unknown\n"
    "                         (chatml, llama3, ...), or a template's text that mkc\n"
    "                         recognises; --chat-template-file FILE: from a file\n"
    "  --reasoning-effort LEVEL  gpt-oss's: low, medium (its default) or high\n"
    "  --reasoning-budget N   -1: reason as the model does (default); 0: qwen3\n"
    "                         answers without reasoning (an empty think block)\n"
    "  -n, --n-predict N      at most N tokens per answer (default -1: until the end)\n"
    "  -r, --reverse-prompt TEXT  an answer ends at the token that completes TEXT\n"
    "                         (escapes as in run: \\n, \\t, \\xHH...; --no-escape)\n"
    "  --verbose              each turn's stats on stderr (tokens processed, speed)\n"
    "  --format json|SCHEMA, -j SCHEMA, -jf FILE  every answer is JSON (an object, or\n"
    "                         what the schema validates), as for run\n"
    "  --grammar GBNF, --grammar-file FILE  every answer follows the grammar,\n"
    "                         as for run\n"
    "  --temp T, -s/--seed S, --top-k N, --top-p P, --min-p P, --repeat-penalty R,\n"
    "  --repeat-last-n N, --presence-penalty P, --frequency-penalty F,\n"
    "  -l/--logit-bias ID+B, --typical P, --top-nsigma N, --xtc-probability P,\n"
    "  --xtc-threshold T, --dynatemp-range R, --dynatemp-exp E, --mirostat 1|2,\n"
    "  --mirostat-ent TAU, --mirostat-lr ETA, --dry-multiplier M, --dry-base B,\n"
    "  --dry-allowed-length N, --dry-penalty-last-n N, --dry-sequence-breaker TEXT,\n"
    "  --samplers LIST, --sampling-seq S, --draft-max K, --draft-min K,\n"
    "  --draft-adaptive, --draft-layers L, -md/--model-draft FILE, --draft-head,\n"
    "  --rounds R, -c/--ctx N, --kv-dtype T, --backend B, -ngl N, -t/--threads N,\n"
    "  --dequant, --ubatch N, --context-shift (an answer goes on past a full\n"
    "  context; without -n, up to 10 contexts), --keep N (the conversation's first\n"
    "  tokens a shift keeps), --prompt-cache FILE, --prompt-cache-ro,\n"
    "  --prompt-cache-all (the first turn reads the rows FILE holds of its start,\n"
    "  then saves its own): as for run\n";

/* The lines chat takes as commands, not messages (/? prints this). */
static const char COMMANDS[] =
    "  /clear     start the conversation over (the system message stays)\n"
    "  /exit, /bye  end the chat (as Ctrl-D does)\n"
    "  /?, /help  this list\n";

static int check_flags(mkc_cli *c) {
  if (!c->model_path) return mkc_cli_usage_error_in("chat", "%s", "chat: -m MODEL is required");
  int rc = mkc_cli_shift_check(c, "chat");
  if (rc || (rc = mkc_cli_prompt_cache_check(c, "chat"))) return rc;
  rc = mkc_json_format_check(c, "chat");
  return rc ? rc : mkc_draft_source_check(c, "chat");
}

/* --format, --grammar: each answer's document (NULL con: none), its draws' seeds from seed. */
typedef struct json_out {
  mkc_constraint *con;
  mkc_format_rules rules;
  unsigned long long seed;
} json_out;

/* One answer streamed: printed as it comes, its ids kept (an
 * end-of-generation token last, unprinted). A model that reasons first
 * (reasoning.h: gpt-oss, qwen3, deepseek-r1) has its reasoning printed
 * between "Thinking..." and "...done thinking." and its reply's text kept
 * alone for the conversation. */
typedef struct answer {
  const mkc_tokenizer *tok;
  mkc_detok detok;
  int eog;
  int split; /* r splits the answer */
  mkc_reasoning r;
  char *reply; /* the reply's text (split), malloc'd */
  size_t n_reply;
  int oom;
  mkc_reverse rev; /* -r: the strings that end an answer */
} answer;

static void keep_reply(answer *a, const char *s, size_t n) {
  char *r = a->oom ? NULL : realloc(a->reply, a->n_reply + n + 1);
  if (!r) {
    a->oom = 1;
    return;
  }
  memcpy(r + a->n_reply, s, n);
  a->n_reply += n;
  r[a->n_reply] = '\0';
  a->reply = r;
}

static void show(answer *a, int id, const char *s, size_t n) {
  if (!a->split) {
    fwrite(s, 1, n, stdout);
    return;
  }
  if (mkc_reasoning_print(&a->r, id, &s, &n, stdout) == MKC_PART_REPLY) keep_reply(a, s, n);
}

static int on_token(void *ctx, int id) {
  answer *a = ctx;
  if (mkc_tokenizer_is_eog(a->tok, id)) {
    a->eog = 1;
    return 1;
  }
  int reversed = mkc_reverse_push(&a->rev, id); /* the token is shown all the same */
  char buf[MKC_DETOK_MAX];
  show(a, id, buf, mkc_detok_push(&a->detok, id, buf, sizeof buf));
  fflush(stdout);
  return reversed;
}

/* The next message: lines up to one that does not end in a backslash, or
 * (ollama's) from a line starting with """ to one ending with """, the quotes
 * dropped and the lines' newlines kept. malloc'd without the last newline;
 * NULL at end of input or on Ctrl-C. */
static char *read_message(int tty) {
  char *msg = NULL, *line = NULL;
  size_t len = 0, cap = 0;
  int quoted = 0; /* inside """ ... """ */
  for (;;) {
    if (tty) fputs(msg ? ". " : "> ", stdout);
    fflush(stdout);
    errno = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
      free(line);
      free(msg);
      return NULL;
    }
    if (n > 0 && line[n - 1] == '\n') line[--n] = 0;
    char *at = line;
    if (!msg && strncmp(line, "\"\"\"", 3) == 0) { /* the opening quotes */
      quoted = 1;
      at += 3, n -= 3;
    }
    int more;
    if (quoted) {
      int closed = n >= 3 && strcmp(at + n - 3, "\"\"\"") == 0 && (at != line + 3 || n > 3);
      if (closed) n -= 3;
      more = !closed;
      if (more) at[n++] = '\n'; /* getline's buffer holds the NUL after it */
    } else {
      more = n > 0 && at[n - 1] == '\\';
      if (more) at[n - 1] = '\n';
    }
    char *m = realloc(msg, len + (size_t)n + 1);
    if (!m) {
      free(line);
      free(msg);
      return NULL;
    }
    msg = m;
    memcpy(msg + len, at, (size_t)n);
    len += (size_t)n;
    msg[len] = 0;
    if (!more) break;
  }
  free(line);
  return msg;
}

/* full: the turn could generate only as many tokens as the context had left. */
static void print_turn(const mkc_cli *c, int turn, const mkc_decode_stats *st, int n_cached,
                       int n_hist, const answer *a, int interrupted, int full) {
  double gen_s = st->seconds - st->prompt_seconds;
  char buf[600];
  const char *why =
      mkc_stop_reason(st, a->eog, interrupted, full, a->rev.hit ? c->reverse[a->rev.hit - 1] : NULL,
                      buf, sizeof buf);
  fprintf(stderr,
          "mkc: turn %d: processed %d tokens (%d cached, conversation %d); prompt %.3f s; "
          "generated %d tokens in %.3f s (%.1f tok/s); drafted %ld, accepted %ld (%s: %d rounds, "
          "draft %.3f s); stopped: %s\n",
          turn, st->fed, n_cached, n_hist, st->prompt_seconds, st->generated, gen_s,
          gen_s > 0 && st->generated > 1 ? st->generated / gen_s : 0.0, st->drafted, st->accepted,
          st->draft_source, st->rounds, st->draft_seconds, why);
}

/* One turn: the user's message, then the answer. 0, or -1 after a message
 * (the latest turn alone overflowing the context among them). *n_valid: how many of the
 * history's tokens the session holds. */
static int turn(const mkc_cli *c, mkc_loaded_model *m, mkc_drafter *drafter, const json_out *json,
                mkc_conversation *conv, const char *msg, int number, int *n_valid) {
  int n_kept;
  if (mkc_conversation_user(conv, msg, &n_kept) != 0) return -1;
  /* Room for the answer (-n, at most half the context; else a quarter): a history that leaves
   * less loses its oldest turns down to half the context, so that the next turns add to the
   * cache again rather than read the history anew each time. */
  int ctx = m->g.max_ctx;
  int reserve = mkc_chat_fit_reserve(ctx, c->have_n && c->n_gen >= 0 ? c->n_gen : -1);
  if (conv->n_hist + reserve > ctx) {
    int n_was = conv->n_hist, n_same, dropped;
    if (mkc_conversation_fit(conv, ctx - reserve < ctx / 2 ? ctx - reserve : ctx / 2, &n_same,
                             &dropped) != 0)
      return -1;
    if (dropped && conv->n_hist <= ctx)
      fprintf(stderr,
              "mkc: the conversation (%d tokens) leaves too little of the context (%d) for an "
              "answer: its %d oldest messages are left out (%d tokens now)\n",
              n_was, ctx, dropped, conv->n_hist);
  }
  int room = ctx - conv->n_hist + 1;
  if (room < 1) { /* the latest turn alone: the rest of the input is not answered */
    fprintf(stderr,
            "mkc: error: the latest turn (%d tokens, with any system message) does not fit the "
            "context (%d): start a new chat, with a larger --ctx\n",
            conv->n_hist, ctx);
    return -1;
  }
  /* shifted (--context-shift): past the room, up to -n, else ollama's bound of 10 contexts */
  int n_gen = c->have_n && c->n_gen >= 0 ? c->n_gen : c->context_shift ? 10 * ctx : room;
  if (n_gen > room && !c->context_shift) n_gen = room;
  int *out = malloc((size_t)(n_gen + 1) * sizeof *out);
  if (!out) return -1;
  answer a = {.tok = m->file.tok};
  if (mkc_reverse_open(&a.rev, a.tok, c->reverse, c->n_reverse) != 0) {
    free(out);
    return -1;
  }
  mkc_detok_init(&a.detok, a.tok, 0);
  a.split = mkc_reasoning_init(&a.r, conv->family, a.tok) == 0;
  int eog_ids[MKC_ROUND_STOPS], n_eog = mkc_tokenizer_eog_ids(a.tok, eog_ids, MKC_ROUND_STOPS);
  mkc_decode_opts o = {.draft_max = c->draft_max,
                       .adaptive = c->draft_adaptive,
                       .draft_min = c->draft_min,
                       .drafter = drafter,
                       .rounds = c->rounds,
                       .draft_layers = mkc_draft_layers_in_kernel(c),
                       .stop_ids = eog_ids,
                       .n_stop_ids = n_eog,
                       .on_token = on_token,
                       .ctx = &a,
                       .interrupted = &mkc_interrupted,
                       .constraint = json->con,
                       .shift = c->context_shift,
                       .n_keep = mkc_shift_keep(c->n_keep, mkc_tokenizer_added_bos(m->file.tok),
                                                conv->hist, conv->n_hist)};
  if (json->con && mkc_json_format_start(json->con, &json->rules, m->file.tok,
                                         json->seed + (unsigned)number) != 0)
    return -1;
  /* the session's tokens that begin this history stay, however it came to hold them (after
   * /clear: the system message's); at least the last token is fed */
  const int *held = mkc_session_tokens(m->s);
  int n_cached = 0, most = *n_valid < conv->n_hist - 1 ? *n_valid : conv->n_hist - 1;
  while (n_cached < most && held[n_cached] == conv->hist[n_cached]) n_cached++;
  /* --prompt-cache: the first turn reads the rows a file holds of its start (a system message
   * and the like), and leaves its own prompt's (-all: its answer's too) for the next chat */
  int first = number == 1 && c->prompt_cache;
  uint64_t cache_id = first ? mkc_loaded_cache_id(c, m) : 0; /* reads 1 MiB: once */
  if (first &&
      (n_cached = mkc_kv_load(m->s, cache_id, c->prompt_cache, conv->hist, conv->n_hist)) < 0)
    return -1;
  int n_prompt = conv->n_hist;
  mkc_decode_stats st;
  int rc = mkc_decode_more(m->s, &m->g, conv->hist, conv->n_hist, n_cached, n_gen, &o, out, &st);
  if (rc == 0 && first && !c->prompt_cache_ro) /* at most pos */
    rc = mkc_kv_save(m->s, c->prompt_cache_all ? mkc_session_pos(m->s) : n_prompt, cache_id,
                     c->prompt_cache);
  if (rc == 0) {
    char tail[MKC_DETOK_MAX];
    show(&a, -1, tail, mkc_detok_flush(&a.detok, tail, sizeof tail));
    fputs("\n", stdout);
    fflush(stdout);
    int interrupted = mkc_interrupted;
    mkc_interrupted = 0;
    int n_hist = conv->n_hist;
    /* The answer's text without its end-of-generation token (split: its reply). */
    char *text = a.split ? NULL : mkc_tokenizer_decode(a.tok, out, st.generated - a.eog, 0);
    const char *said = a.split ? (a.reply ? a.reply : "") : text;
    rc = a.oom || !said ? -1 : mkc_conversation_answer(conv, out, st.generated, said);
    if (a.oom) fprintf(stderr, "mkc: error: out of memory in the chat\n");
    free(text);
    /* The session holds the prompt (all of it, unless Ctrl-C came first) and
     * each answer token but the last, which no step has read yet; after a
     * context shift, a shortened history no turn begins with: start over. */
    int pos = mkc_session_pos(m->s);
    *n_valid = st.shifts ? 0 : pos < n_hist ? pos : conv->n_hist - (st.generated > 0);
    if (c->verbose)
      print_turn(c, number, &st, n_cached, conv->n_hist, &a, interrupted,
                 !c->context_shift && n_gen == room);
  }
  mkc_reverse_close(&a.rev);
  free(a.reply);
  free(out);
  return rc;
}

int mkc_cmd_chat(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE};
  int rc = mkc_cli_parse(
      argc, argv, 2,
      "-m -n --temp --seed --draft-max --draft-min --draft-adaptive --ctx --backend "
      "--blocks --kv-dtype --dequant --ubatch "
      "--system-prompt --chat-template --reasoning-effort --reasoning-budget "
      "--verbose --top-k --top-p --min-p "
      "--repeat-penalty --repeat-last-n --presence-penalty --frequency-penalty "
      "--draft-layers -md --draft-head --rounds --format --json-schema-file --grammar "
      "--grammar-file "
      "-r --escape --no-escape -l --context-shift --no-context-shift --keep --prompt-cache "
      "--prompt-cache-ro --prompt-cache-all" MKC_CLI_MORE_FLAGS,
      0, &c);
  if (rc == MKC_CLI_HELP) return 0;
  if (rc || (rc = mkc_cli_unescape(&c)) || (rc = check_flags(&c))) return rc;
  mkc_sampling sampling;
  unsigned long long seed;
  if ((rc = mkc_cli_sampling(&c, &sampling, &seed))) return rc;
  mkc_loaded_model m;
  mkc_draft_source ds = {0};
  mkc_conversation conv = {0};
  json_out json = {.seed = seed};
  rc = 1;
  int in_kernel = mkc_draft_layers_in_kernel(&c); /* then no draft kernel of its own */
  if (mkc_json_format_rules(&c, &json.rules) != 0 || mkc_loaded_plan(&c, &m) != 0 ||
      (!in_kernel && mkc_draft_source_plan(&c, &m, &ds) != 0))
    goto done;
  if (!m.file.tok) {
    fprintf(stderr, "mkc: error: %s has no tokenizer: chat needs one\n", c.model_path);
    goto done;
  }
  int family = mkc_chat_family_for(c.model_path, m.file.chat_template, c.chat_template);
  if (family < 0 || mkc_conversation_init(&conv, m.file.tok, family, c.system_prompt) != 0 ||
      mkc_conversation_options(&conv, c.reasoning_effort, c.no_reasoning) != 0 ||
      mkc_json_format_setup(&c, m.file.tok, m.g.vocab, family, &json.con) != 0)
    goto done;
  if (mkc_loaded_start(&c, &m) != 0 || (!in_kernel && mkc_draft_source_start(&c, &m, &ds) != 0))
    goto done;
  if (mkc_session_set_sampling(m.s, &sampling) != 0) goto done;
  int tty = isatty(0) && isatty(1);
  if (tty)
    fprintf(stderr,
            "mkc: chatting with %s (%s template, %s backend); /exit or Ctrl-D ends, /? lists the "
            "commands\n",
            c.model_path, mkc_chat_family_name(family), mkc_session_backend(m.s));
  mkc_interrupt_install();
  int n_valid = 0;
  for (int number = 1;; number++) {
    mkc_interrupted = 0;
    char *msg = read_message(tty);
    if (!msg) {
      if (tty) fputs("\n", stdout);
      break; /* end of input, or Ctrl-C at the prompt */
    }
    if (strcmp(msg, "/exit") == 0 || strcmp(msg, "/bye") == 0) {
      free(msg);
      break;
    }
    if (strcmp(msg, "/?") == 0 || strcmp(msg, "/help") == 0) {
      fputs(COMMANDS, stderr);
      free(msg);
      number--;
      continue;
    }
    if (strcmp(msg, "/clear") == 0) { /* ollama's: the conversation starts over */
      mkc_chat_opts opts = conv.opts;
      mkc_conversation_free(&conv);
      free(msg);
      if (mkc_conversation_init(&conv, m.file.tok, family, c.system_prompt) != 0) goto done;
      conv.opts = opts;
      fprintf(stderr, "mkc: the conversation is cleared%s\n",
              c.system_prompt ? " (its system message stays)" : "");
      number--;
      continue;
    }
    if (!*msg) {
      free(msg);
      number--;
      continue;
    }
    int r = turn(&c, &m, ds.drafter, &json, &conv, msg, number, &n_valid);
    free(msg);
    if (r < 0) goto done;
  }
  rc = 0;
done:
  mkc_constraint_close(json.con);
  mkc_format_rules_free(&json.rules);
  mkc_conversation_free(&conv);
  mkc_draft_source_close(&ds);
  mkc_loaded_close(&m);
  return rc;
}
