/* mkc run: decode with the megakernel (cuda or cpu backend) or the reference
 * executor: a model file (-m) and a text prompt streamed back as text, or
 * seeded random weights and token ids. */
#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "conversation.h"
#include "draft_source.h"
#include "exec/decode.h"
#include "exec/kv_file.h"
#include "interrupt.h"
#include "interactive.h"
#include "json_format.h"
#include "loaded.h"
#include "logprobs.h"
#include "model/reasoning.h"
#include "reverse_prompt.h"
#include "run_batch.h"
#include "stop_reason.h"
#include "token_line.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"

static const char USAGE[] =
    "usage: mkc run -m MODEL (-p TEXT | -f FILE) [options]\n"
    "       mkc run --preset P --random-weights SEED -n N [--prompt-ids 1,2,3]\n"
    "               [options]\n"
    "       mkc run --kernel DIR --random-weights SEED -n N [--prompt-ids ...]\n"
    "\n"
    "Decodes with the megakernel. With -m the prompt goes through the model's\n"
    "tokenizer and the completion streams as text; else token ids in and out.\n"
    "A stats line goes to stderr and says why generation stopped. Ctrl-C ends\n"
    "the line and prints the stats.\n"
    "  -m, --model MODEL      GGUF file, Hugging Face folder, or a model's file name\n"
    "                         in the model directory (~/.cache/mkc/models)\n"
    "  -p, --prompt TEXT      the prompt\n"
    "                         (special tokens such as <|im_start|> are read)\n"
    "  -f, --file FILE        the prompt from a file\n"
    "  --chat, -st            wrap the prompt in the model's chat template\n"
    "                         (llama-cli's single turn; -no-cnv: without, as run does\n"
    "                         by default)\n"
    "  -sys, --system-prompt TEXT  a system message (implies --chat); -sysf FILE:\n"
    "                         from a file\n"
    "  --chat-template NAME   the template's family (chatml, llama3, ...; implies\n"
    "                         --chat), or a template's text that mkc recognises;\n"
    "                         --chat-template-file FILE: the text from a file\n"
    "  --reasoning-effort LEVEL  gpt-oss's: low, medium (its default) or high\n"
    "                         (implies --chat)\n"
    "  --reasoning-budget N   -1: reason as the model does (default); 0: qwen3\n"
    "                         answers without reasoning (an empty think block;\n"
    "                         implies --chat)\n"
    "  -n, --n-predict N      tokens to generate (-1, the default with -m: until the\n"
    "                         end of generation or a full context)\n"
    "  --ignore-eos           go on past end-of-generation tokens\n"
    "  -r, --reverse-prompt TEXT  end generation at the token that completes TEXT\n"
    "                         (printed); up to 16 of them, a control token's text too\n"
    "  -e, --escape           \\n \\r \\t \\' \\\" \\\\ and \\xHH in -p and -r are the bytes\n"
    "                         they name, as in llama.cpp (the default); --no-escape:\n"
    "                         as written\n"
    "  --no-display-prompt    print only the completion\n"
    "  -sp, --special         print control tokens (<|im_end|>, ...), the one that\n"
    "                         ends generation too\n"
    "  --verbose-prompt       the prompt's tokens on stderr first, as tokenize lists\n"
    "                         them\n"
    "  -i, --interactive      then the user writes in turn with the model\n"
    "                         (llama-completion's interactive mode, plain text; a\n"
    "                         chat template's turns: mkc chat): at a reverse prompt,\n"
    "                         an end-of-generation token (the first -r then follows,\n"
    "                         unprinted), -n tokens or Ctrl-C, a line of stdin joins\n"
    "                         the text and the model writes on; an empty line gives\n"
    "                         it the turn again, Ctrl-D ends; -p optional\n"
    "  -if, --interactive-first  the same, the user first after the prompt\n"
    "  --in-prefix TEXT, --in-suffix TEXT  printed and read before and after each\n"
    "                         input (escapes as in -p; their control-token spellings\n"
    "                         are tokens, the input's are text); --in-prefix-bos: a\n"
    "                         BOS first\n"
    "  -mli, --multiline-input  an input ends at a line ending in / or \\ (else at\n"
    "                         each line, and a line ending in \\ goes on)\n"
    "  --prompt-cache FILE    the prompt's KV rows saved in FILE after the run, and\n"
    "                         read back by a later run whose prompt begins the same\n"
    "                         way (llama.cpp's; the same model, kernel and backend);\n"
    "  --prompt-cache-ro      read FILE, never write it; --prompt-cache-all: save the\n"
    "                         generated tokens' rows too\n"
    "  --json                 one JSON line per generated token on stdout instead\n"
    "  --format json          the answer is a JSON object: each token is chosen on\n"
    "                         the host among those that keep it valid JSON (the\n"
    "                         sampling options apply to them), and generation ends\n"
    "                         with the object; greedy, drafts are verified on the\n"
    "                         host too\n"
    "  --format SCHEMA, -j, --json-schema SCHEMA  the answer is JSON the schema\n"
    "                         validates (docs/MODELS.md says which keywords)\n"
    "  -jf, --json-schema-file FILE  the schema from a file\n"
    "  --grammar GBNF         the answer follows a grammar in llama.cpp's GBNF (it\n"
    "                         starts at rule root): each token is chosen on the host\n"
    "                         among those that keep the answer a beginning of a\n"
    "                         sentence; end-of-generation tokens may come where one\n"
    "                         can end, and generation ends there or where nothing can\n"
    "                         follow\n"
    "  --grammar-file FILE    the grammar from a file\n"
    "  --logprobs N           each token's log-probability and the N (1..20) most\n"
    "                         likely at its place, computed in the kernel (on stderr,\n"
    "                         or in the JSON lines)\n"
    "  --temp T               sample, in the kernel, at temperature T (0: greedy, the\n"
    "                         default); then llama.cpp's defaults apply to:\n"
    "  --top-k N (40), --top-p P (0.95), --min-p P (0.05), --repeat-penalty R (1),\n"
    "  --repeat-last-n N (64), --presence-penalty P (0), --frequency-penalty F (0)\n"
    "                         (order: penalties, top-k, top-p, min-p, "
    "temperature)\n" MKC_CLI_MORE_USAGE
    "  -s, --seed S           the sampler's seed (default: drawn, and printed)\n"
    "  -l, --logit-bias ID+B  add B (or -B: ID-B; -inf bans the token) to token ID's\n"
    "                         logit in the kernel, greedy or sampled (llama.cpp's\n"
    "                         form; up to 128 tokens)\n"
    "  --draft-max K          drafts per step (0..31), verified in the kernel (greedy\n"
    "                         or sampled: lossless either way); from prompt lookup\n"
    "                         unless:\n"
    "  --draft-layers L       self-speculation: the model's first L layers, its final\n"
    "                         norm and LM head draft (a kernel of their own, no extra\n"
    "                         weights)\n"
    "  -md, --model-draft FILE  a draft model with the same vocabulary (own kernel\n"
    "                         and cache)\n"
    "  --draft-p-min P        with -md or --draft-layers: a draft ends at the first\n"
    "                         choice less likely than P among its 10 likeliest\n"
    "                         (llama.cpp's)\n"
    "  --draft-head           a head on the model's hidden state drafts a block per\n"
    "                         step (graphs/draft_head.lua); random weights,\n"
    "                         --preset only: no trained head can be loaded yet\n"
    "  --draft-adaptive       the depth follows the acceptance rate (+1 above 80 %,\n"
    "                         -1 below 40 %), between --draft-min K (default 0) and\n"
    "                         --draft-max, and rounds go plain while drafting costs\n"
    "                         more than it saves\n"
    "  --rounds R             up to R draft-and-verify rounds (1..16) per kernel\n"
    "                         launch, drafted inside the kernel by prompt lookup, or\n"
    "                         with --draft-layers L by its own first L layers: one\n"
    "                         host round trip per R steps (not with -md,\n"
    "                         --draft-head, --draft-adaptive or --logprobs)\n"
    "  -c, --ctx N            context length (default: the model's, capped at 4096)\n"
    "  --context-shift        go on past a full context (llama.cpp's): keep the first\n"
    "                         --keep N prompt tokens (and the BOS; -1: the whole\n"
    "                         prompt; default 0) and the later half of the rest, feed\n"
    "                         them again and generate on; -n -1 then runs until the\n"
    "                         end of generation or Ctrl-C (--no-context-shift, the\n"
    "                         default: stop at the full context); with --batch each\n"
    "                         line shifts in its slot (-n N needed)\n"
    "  -ub, --ubatch N        the prompt in chunks of up to N tokens (1..512, default\n"
    "                         128), tiled products on tensor cores\n"
    "  --kv-dtype T           KV cache element type: bf16 (default), f16, f32\n"
    "                         (llama.cpp's -ctk T -ctv T: one type for both)\n"
    "  --dequant              widen the model's quantized matrices (Q8_0, Q4_0, Q4_1,\n"
    "                         Q5_0, Q5_1, Q2_K to Q6_K, IQ1_S, IQ1_M, IQ2_XXS,\n"
    "                         IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS) to bf16\n"
    "                         at load instead of streaming their blocks: 2 bytes per\n"
    "                         weight, but less decoding (the cpu backend's emulator\n"
    "                         runs bf16 faster)\n"
    "  --backend B            auto (GPU if any, else cpu), cuda, cpu, or ref (the\n"
    "                         reference executor)\n"
    "  -ngl, --n-gpu-layers N  llama.cpp's: 0 runs on the cpu backend; any other\n"
    "                         count, all or auto puts every layer on the GPU (mkc\n"
    "                         does not split a model across devices)\n"
    "  -t, --threads N        the cpu backend's threads, one block each (--blocks N)\n"
    "  --check-tensors        every weight finite, else the tensors at fault named\n"
    "                         and nothing run (llama.cpp's)\n"
    "  --lora FILE,...        LoRA adapters (llama.cpp's GGUF, or a PEFT folder),\n"
    "                         merged into the weights at load (an adapted matrix kept\n"
    "                         in bf16); --lora-scaled FILE:SCALE,...: each with its\n"
    "                         scale (chat, serve, bench, embed take them too)\n"
    "  --override-kv KEY=TYPE:VALUE,...  a GGUF's metadata replaced before it is read\n"
    "                         (llama.cpp's: TYPE int, float, bool or str)\n"
    "  --rope-freq-base B, --rope-scale N, --rope-freq-scale F, --rope-scaling\n"
    "  none|linear|yarn, --yarn-orig-ctx N, --yarn-ext-factor E, --yarn-beta-fast B,\n"
    "  --yarn-beta-slow B     llama.cpp's, over the model's RoPE (the layers that\n"
    "                         attend to every position; a sliding-window layer keeps\n"
    "                         its own)\n"
    "  llama.cpp's flags for threads, CPU placement, memory mapping, devices, batch\n"
    "  sizes, flash attention and logs (-fa, -b, --mlock, --no-mmap, -tb, -dev, -ot,\n"
    "  ...) are taken, each with a note saying why it is not followed\n"
    "  --batch FILE           one prompt per line (text with -m, else token ids\n"
    "                         \"1,2,3\"), decoded together on a slot kernel, each\n"
    "                         completion on a line of its own in the file's order\n"
    "                         (newlines as \\n); line i samples with seed S + i;\n"
    "                         -n per line (default: until the end with -m, else 16);\n"
    "                         the stats give the aggregate tokens/s and the KV bytes\n"
    "                         held; drafts by prompt lookup, or -md / --draft-layers\n"
    "                         on a slot kernel of their own (--draft-adaptive: each\n"
    "                         slot's depth by its own acceptance, from --draft-min,\n"
    "                         no timing gate);\n"
    "                         with --format, each\n"
    "                         line's answer is JSON; with\n"
    "                         -r, each line ends at its reverse prompt; with\n"
    "                         --logprobs, each line's tokens' on stderr after a line\n"
    "                         naming FILE:LINE\n"
    "  --slots B              with --batch: sequences per step (2..64, default 4),\n"
    "                         each with 1 + --draft-max inputs: B x (K + 1) <= 32\n"
    "  --kv-pages N           with --batch: the slots share N KV pages of 16\n"
    "                         positions (default: as many as B whole contexts); a\n"
    "                         slot holds the pages its tokens need\n"
    "  --stages               with --batch: the decode steps' time in each stage of\n"
    "                         the slot kernel (block 0's clock; a kernel built with\n"
    "                         timers)\n"
    "  --preset P, --graph GRAPH, --random-weights SEED, --prompt-ids IDS,\n"
    "  --kernel DIR:          a preset on random weights (see README.md)\n";

/* Text mode: each generated token is detokenized and printed as soon as it
 * is known; an end-of-generation token stops the run unprinted. */
typedef struct stream {
  const mkc_tokenizer *tok;   /* text mode's (NULL: ids in and out) */
  const mkc_tokenizer *names; /* the model's, for the texts of --json and --logprobs */
  mkc_detok detok;
  int ignore_eos; /* --ignore-eos: such tokens neither stop nor print */
  int eog;        /* generation ended on such a token */
  int json;       /* --json: a JSON line per token instead of the text */
  int logprobs;   /* --logprobs N: printed by on_logprobs */
  int split;      /* --chat with a model that reasons first: r prints its parts */
  int n_ids;      /* token ids printed (no tokenizer) */
  int special;    /* -sp: control tokens printed, an end-of-generation one too */
  mkc_reasoning r;
  mkc_reverse *rev; /* -r: the strings that end generation */
} stream;

static void put_text(stream *st, int id, const char *s, size_t n) {
  if (st->split)
    mkc_reasoning_print(&st->r, id, &s, &n, stdout);
  else
    fwrite(s, 1, n, stdout);
}

static int is_eog(const stream *st, int id) {
  return st->tok && !st->ignore_eos && mkc_tokenizer_is_eog(st->tok, id);
}

static void on_logprobs(void *ctx, int id, float lp, const int *ids, const float *lps, int n) {
  stream *st = ctx;
  if (!is_eog(st, id)) mkc_print_token(st->names, st->json, id, &lp, ids, lps, n);
}

static int on_token(void *ctx, int id) {
  stream *st = ctx;
  if (is_eog(st, id)) {
    st->eog = 1;
    if (st->special && !st->json) { /* llama.cpp's -sp shows the end too */
      char buf[MKC_DETOK_MAX];
      put_text(st, id, buf, mkc_detok_push(&st->detok, id, buf, sizeof buf));
      fflush(stdout);
    }
    return 1;
  }
  int reversed = mkc_reverse_push(st->rev, id); /* the token is printed all the same */
  if (st->json) {
    if (!st->logprobs) mkc_print_token(st->names, 1, id, NULL, NULL, NULL, 0);
    return reversed;
  }
  if (!st->tok) { /* ids, as they come */
    printf(st->n_ids++ ? " %d" : "%d", id);
    fflush(stdout);
    return reversed;
  }
  char buf[MKC_DETOK_MAX];
  put_text(st, id, buf, mkc_detok_push(&st->detok, id, buf, sizeof buf));
  fflush(stdout);
  return reversed;
}

/* Why generation ended, for the stats line and --json's. */
static const char *stopped(const mkc_cli *c, const stream *text, const mkc_decode_stats *st,
                           int open_ended, char *buf, size_t cap) {
  return mkc_stop_reason(st, text->eog, mkc_interrupted, open_ended && !c->context_shift,
                         text->rev->hit ? c->reverse[text->rev->hit - 1] : NULL, buf, cap);
}

/* The prompt as token ids: the text through the model's tokenizer (in its
 * chat template with --chat), else --prompt-ids, else token 1. */
static int *prompt_tokens(const mkc_cli *c, const mkc_loaded_model *m, int *n, int *family) {
  if (!c->prompt && !c->prompt_file)
    return mkc_parse_ids(c->prompt_ids ? c->prompt_ids : "1", m->g.vocab, n, "--prompt-ids");
  const mkc_tokenizer *tok = m->file.tok;
  if (!tok) {
    fprintf(stderr, "mkc: error: %s has no tokenizer: give the prompt as --prompt-ids\n",
            c->model_path);
    return NULL;
  }
  char *text = mkc_cli_prompt_text(c);
  if (!text) return NULL;
  int *ids = NULL;
  *n = -1;
  if (c->chat) {
    *family = mkc_chat_family_for(c->model_path, m->file.chat_template, c->chat_template);
    mkc_conversation conv;
    int kept;
    if (*family >= 0 && mkc_conversation_init(&conv, tok, *family, c->system_prompt) == 0) {
      if (mkc_conversation_options(&conv, c->reasoning_effort, c->no_reasoning) == 0 &&
          mkc_conversation_user(&conv, text, &kept) == 0) {
        *n = conv.n_hist;
        ids = conv.hist; /* the conversation's tokens are the prompt */
        conv.hist = NULL;
      }
      mkc_conversation_free(&conv);
    }
  } else {
    *n = mkc_tokenizer_encode(tok, text, strlen(text), mkc_tokenizer_add_bos(tok), 1, &ids);
  }
  free(text);
  if (*n < 0) return NULL;
  if (*n == 0) {
    fprintf(stderr, "mkc: error: the prompt is empty: at least one token is needed\n");
    free(ids);
    return NULL;
  }
  return ids;
}

/* --batch takes its prompts from the file and runs a slot kernel of its own. */
static int check_batch_flags(mkc_cli *c) {
  if (c->prompt || c->prompt_file || c->prompt_ids)
    return mkc_cli_usage_error("%s", "run --batch: the prompts are the file's lines; drop -p, -f "
                                     "and --prompt-ids");
  if (c->context_shift && (!c->have_n || c->n_gen < 0))
    return mkc_cli_usage_error("%s", "run --batch --context-shift: give -n N, each line's "
                                     "token budget (a shifted answer has no other end)");
  if (c->chat || c->json || c->rounds || c->kernel_dir || c->draft_head)
    return mkc_cli_usage_error(
        "%s", "run --batch takes none of --chat, -sys, --chat-template, --reasoning-effort, "
              "--reasoning-budget, --json, "
              "--rounds, --kernel, --draft-head "
              "(drafts: prompt lookup, -md or --draft-layers with --draft-p-min, --draft-max "
              "per slot, --draft-adaptive and --draft-min)");
  if (mkc_json_format_on(c) && !c->model_path)
    return mkc_cli_usage_error("run --batch: %s needs the model's tokenizer: -m, and text on the "
                               "file's lines",
                               mkc_json_format_what(c));
  if (c->n_reverse && !c->model_path)
    return mkc_cli_usage_error("%s", "run --batch: -r (a reverse prompt) needs the model's "
                                     "tokenizer: -m");
  int rc = mkc_json_format_check(c, "run --batch");
  if (rc) return rc;
  if (mkc_host_choice_on(c) && c->draft_max) /* the slots verify no drafts on the host */
    return mkc_cli_usage_error("run --batch: %s chooses each token on the host, one a step on the "
                               "slots: drop --draft-max",
                               mkc_json_format_what(c));
  if ((rc = mkc_draft_source_check(c, "run --batch"))) return rc;
  if (c->model_path) return mkc_cli_check_model(c, "run");
  if (!c->preset) return mkc_cli_usage_error("%s", "run --batch: -m FILE or --preset is required");
  if (!c->have_seed)
    return mkc_cli_usage_error("%s", "run: --random-weights SEED is required without -m");
  return 0;
}

static int check_flags(mkc_cli *c) {
  int rc = mkc_cli_shift_check(c, "run");
  if (rc) return rc;
  if ((rc = mkc_cli_prompt_cache_check(c, "run"))) return rc;
  if (c->prompt_cache && (c->batch_file || c->kernel_dir))
    return mkc_cli_usage_error("%s", "run: --prompt-cache goes with one prompt and a kernel "
                                     "generated here (not --batch, not --kernel)");
  if ((rc = mkc_interactive_check(c))) return rc;
  if (c->batch_file) return check_batch_flags(c);
  if (c->slots || c->kv_pages || c->stages)
    return mkc_cli_usage_error("%s", "run: --slots B, --kv-pages N and --stages go with --batch "
                                     "FILE (bench --stages times one sequence's stages)");
  if (c->kernel_dir && c->kv_dtype)
    return mkc_cli_usage_error("%s", "run: --kernel DIR brings its own KV type; drop --kv-dtype");
  if (!!c->prompt + !!c->prompt_file + !!c->prompt_ids > 1)
    return mkc_cli_usage_error("%s",
                               "run: give the prompt as -p TEXT, -f FILE or --prompt-ids: one");
  if ((c->chat || c->system_prompt || c->chat_template || c->reasoning_effort || c->no_reasoning) &&
      !c->prompt && !c->prompt_file)
    return mkc_cli_usage_error("%s", "run: --chat, -sys, --chat-template, --reasoning-effort and "
                                     "--reasoning-budget need a text prompt (-p or -f)");
  rc = mkc_json_format_check(c, "run");
  if (rc || (rc = mkc_cli_check_model(c, "run"))) return rc;
  if (rc || (rc = mkc_draft_source_check(c, "run"))) return rc;
  if (c->model_path) {
    if (!c->prompt && !c->prompt_file && !c->prompt_ids && !c->interactive && !c->interactive_first)
      return mkc_cli_usage_error("%s",
                                 "run: -p TEXT (or -f FILE, --prompt-ids) is required with -m");
    return 0;
  }
  if (c->prompt || c->prompt_file)
    return mkc_cli_usage_error("%s", "run: a text prompt needs a model with a tokenizer (-m)");
  if (c->n_reverse)
    return mkc_cli_usage_error("%s", "run: -r (a reverse prompt) needs a model with a tokenizer "
                                     "(-m)");
  if (!c->preset && !c->kernel_dir)
    return mkc_cli_usage_error("%s", "run: -m FILE, --preset or --kernel DIR is required");
  if (c->preset && c->kernel_dir)
    return mkc_cli_usage_error("%s", "run: --kernel DIR brings its own preset; drop --preset");
  if (!c->have_seed)
    return mkc_cli_usage_error("%s", "run: --random-weights SEED is required without -m");
  if (!c->have_n || c->n_gen < 0)
    return mkc_cli_usage_error("%s", "run: -n N (tokens to generate) is required");
  return 0;
}

/* The stats line on stderr: backend, prompt and generation speed, drafts,
 * the context and why generation stopped. */
static void print_stats(const mkc_cli *c, const mkc_loaded_model *m, int n_prompt,
                        const mkc_decode_stats *st, const char *why,
                        const unsigned long long *seed) {
  double gen_s = st->seconds - st->prompt_seconds;
  char rate[64] = "";
  /* The first token comes with the prompt: a rate needs two. */
  if (st->generated > 1 && gen_s > 0)
    snprintf(rate, sizeof rate, " (%.1f tok/s)", st->generated / gen_s);
  /* The prompt goes in chunks of up to the kernel's t_chunk, tiled past t_max. */
  char prompt_rate[160] = "", cached[48] = "";
  if (c->prompt_cache)
    snprintf(cached, sizeof cached, ", %d from --prompt-cache", n_prompt - st->fed);
  if (st->fed > 0 && st->prompt_seconds > 0)
    snprintf(prompt_rate, sizeof prompt_rate, " (%.1f tok/s, %d steps%s)",
             st->fed / st->prompt_seconds, st->steps - st->gen_steps - st->shift_steps, cached);
  else if (c->prompt_cache)
    snprintf(prompt_rate, sizeof prompt_rate, " (%s)", cached + 2);
  char ctx[160];
  int train = c->model_path ? m->file.desc.ctx_train : 0;
  if (train > m->g.max_ctx && !c->max_ctx)
    snprintf(ctx, sizeof ctx, "context %d (capped from %d: --ctx %d)", m->g.max_ctx, train, train);
  else
    snprintf(ctx, sizeof ctx, "context %d", m->g.max_ctx);
  if (st->shifts) {
    size_t at = strlen(ctx);
    snprintf(ctx + at, sizeof ctx - at, ", shifted %d times (%d tokens fed again in %d steps)",
             st->shifts, st->shift_fed, st->shift_steps);
  }
  char sampled[240];
  mkc_cli_sampled_words(c, seed, sampled, sizeof sampled);
  char depth[64] = "", fallbacks[64] = "", verify[32] = "n/a";
  if (c->draft_adaptive) {
    snprintf(depth, sizeof depth, " (adaptive depth %d..%d)", st->depth_lo, st->depth_hi);
    snprintf(fallbacks, sizeof fallbacks, ", %d fallbacks to plain decoding", st->fallbacks);
  }
  if (st->verify_seconds >= 0) snprintf(verify, sizeof verify, "%.3f s", st->verify_seconds);
  fprintf(stderr,
          "mkc: %s backend (%s), %s %s: prompt %d tokens in %.3f s%s; generated %d tokens in %.3f "
          "s%s; %s; drafted %ld%s, accepted %ld, acceptance %.1f%%, %.2f tokens/step over %d steps "
          "in %d launches; "
          "drafts from %s: %d rounds, %d mismatches, %d all accepted%s; time: draft %.3f s, target "
          "%.3f s, verify %s; %s; stopped: %s\n",
          mkc_session_backend(m->s), mkc_session_describe(m->s), c->model_path ? "model" : "preset",
          c->model_path ? c->model_path : m->g.preset, n_prompt, st->prompt_seconds, prompt_rate,
          st->generated, gen_s, rate, sampled, st->drafted, depth, st->accepted,
          st->drafted ? 100.0 * st->accepted / st->drafted : 0.0,
          st->gen_steps ? (double)st->generated / st->gen_steps : 0.0, st->gen_steps, st->launches,
          st->draft_source, st->rounds, st->mismatches, st->all_accepted, fallbacks,
          st->draft_seconds, st->target_seconds, verify, ctx, why);
}

/* --json's last line: {"stats": {...}}, the stats line's numbers (seconds
 * as numbers; verify null when it could not be split off). */
static void print_json_stats(int n_prompt, const mkc_decode_stats *st, const char *stopped) {
  cJSON *o = cJSON_CreateObject(), *j = cJSON_AddObjectToObject(o, "stats");
  const struct {
    const char *key;
    double v;
  } nums[] = {{"prompt_tokens", n_prompt},
              {"generated", st->generated},
              {"steps", st->gen_steps},
              {"launches", st->launches},
              {"rounds", st->rounds},
              {"drafted", (double)st->drafted},
              {"accepted", (double)st->accepted},
              {"mismatches", st->mismatches},
              {"all_accepted", st->all_accepted},
              {"fallbacks", st->fallbacks},
              {"draft_steps", (double)st->draft_steps},
              {"context_shifts", st->shifts},
              {"shift_fed", st->shift_fed},
              {"acceptance", st->drafted ? (double)st->accepted / st->drafted : 0.0},
              {"tokens_per_step", st->gen_steps ? (double)st->generated / st->gen_steps : 0.0},
              {"prompt_seconds", st->prompt_seconds},
              {"seconds", st->seconds},
              {"draft_seconds", st->draft_seconds},
              {"target_seconds", st->target_seconds}};
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
    cJSON_AddNumberToObject(j, nums[i].key, nums[i].v);
  if (st->verify_seconds >= 0)
    cJSON_AddNumberToObject(j, "verify_seconds", st->verify_seconds);
  else
    cJSON_AddNullToObject(j, "verify_seconds");
  cJSON_AddStringToObject(j, "draft_source", st->draft_source ? st->draft_source : "");
  /* the target's generation steps by inputs T: {"T": [steps, mean seconds]} */
  cJSON *by_t = cJSON_AddObjectToObject(j, "step_seconds");
  for (int t = 1; t <= MKC_T_CAP; t++) {
    if (!st->step_count[t]) continue;
    char key[16];
    snprintf(key, sizeof key, "%d", t);
    double v[2] = {st->step_count[t], st->step_seconds[t] / st->step_count[t]};
    cJSON_AddItemToObject(by_t, key, cJSON_CreateDoubleArray(v, 2));
  }
  cJSON_AddStringToObject(j, "stopped", stopped);
  char *line = cJSON_PrintUnformatted(o);
  if (line) printf("%s\n", line);
  free(line);
  cJSON_Delete(o);
}

int mkc_cmd_run(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE};
  int rc = mkc_cli_parse(
      argc, argv, 2,
      "--graph --preset --random-weights -n --draft-max --draft-min "
      "--draft-adaptive --prompt-ids --backend --ubatch "
      "--ctx --blocks --kernel -m -p --temp --seed --kv-dtype -f --chat "
      "--system-prompt --chat-template --reasoning-effort --reasoning-budget --ignore-eos "
      "--no-display-prompt --json --format --json-schema-file --grammar --grammar-file "
      "--logprobs --dequant "
      "--top-k --top-p --min-p --repeat-penalty --repeat-last-n "
      "--presence-penalty --frequency-penalty --draft-layers -md --draft-head --rounds --batch "
      "--slots --kv-pages --stages -r --escape --no-escape -l --context-shift --no-context-shift "
      "--keep --special --verbose-prompt --prompt-cache --prompt-cache-ro "
      "--prompt-cache-all --interactive --interactive-first --in-prefix --in-suffix "
      "--in-prefix-bos --multiline-input" MKC_CLI_MORE_FLAGS,
      0, &c);
  if (rc == MKC_CLI_HELP) return 0;
  c.chat |= c.system_prompt || c.chat_template || c.reasoning_effort || c.no_reasoning;
  if (rc || (rc = mkc_cli_unescape(&c)) || (rc = check_flags(&c))) return rc;
  mkc_sampling sampling;
  unsigned long long seed;
  if ((rc = mkc_cli_sampling(&c, &sampling, &seed))) return rc;
  if (c.batch_file) return mkc_run_batch(&c, &sampling, seed);
  if (c.interactive || c.interactive_first) return mkc_run_interactive(&c, &sampling, seed);

  mkc_loaded_model m;
  mkc_draft_source ds = {0};
  mkc_constraint *constraint = NULL;
  mkc_format_rules rules = {0};
  mkc_reverse rev = {0};
  int n_prompt = 0, *prompt = NULL, *out = NULL;
  rc = 1;
  int in_kernel = mkc_draft_layers_in_kernel(&c); /* then no draft kernel of its own */
  if (mkc_json_format_rules(&c, &rules) != 0 || mkc_loaded_plan(&c, &m) != 0 ||
      (!in_kernel && mkc_draft_source_plan(&c, &m, &ds) != 0))
    goto done;
  int family = MKC_CHAT_UNKNOWN;
  prompt = prompt_tokens(&c, &m, &n_prompt, &family);
  if (!prompt) goto done;
  if (n_prompt > m.g.max_ctx) {
    fprintf(stderr,
            "mkc: error: the prompt is %d tokens but the context holds %d: nothing was run (use "
            "--ctx %d or a shorter prompt)\n",
            n_prompt, m.g.max_ctx, n_prompt + (c.have_n && c.n_gen > 0 ? c.n_gen - 1 : 0));
    goto done;
  }
  /* -n -1 (the default with -m): until end of generation or a full context (shifted: no bound,
   * and the tokens only reach on_token) */
  int open_ended = !c.have_n || c.n_gen < 0;
  int n_gen = open_ended ? (c.context_shift ? -1 : m.g.max_ctx - n_prompt + 1) : c.n_gen;
  if (!open_ended && !c.context_shift && (long)n_prompt + n_gen - 1 > m.g.max_ctx) {
    fprintf(
        stderr,
        "mkc: error: %d prompt tokens + %d generated need %d positions but the context holds %d "
        "(use --ctx)\n",
        n_prompt, n_gen, n_prompt + n_gen - 1, m.g.max_ctx);
    goto done;
  }
  if (c.verbose_prompt) /* llama.cpp's: the prompt as its tokens, before the run */
    mkc_print_token_list(stderr, m.file.tok, "prompt", prompt, n_prompt);
  out = n_gen < 0 ? NULL : malloc((size_t)(n_gen + 1) * sizeof *out);
  if ((n_gen >= 0 && !out) || mkc_loaded_start(&c, &m) != 0 ||
      (!in_kernel && mkc_draft_source_start(&c, &m, &ds) != 0))
    goto done;

  stream text = {.tok = c.model_path && !c.prompt_ids ? m.file.tok : NULL,
                 .names = m.file.tok,
                 .ignore_eos = c.ignore_eos,
                 .json = c.json,
                 .logprobs = sampling.logprobs,
                 .special = c.special,
                 .rev = &rev};
  /* an answer that reasons first, as mkc chat prints it: its reasoning, then its reply */
  text.split = text.tok && !c.json && mkc_reasoning_init(&text.r, family, text.tok) == 0;
  if (mkc_json_format_setup(&c, m.file.tok, m.g.vocab, family, &constraint) != 0) goto done;
  if (constraint &&
      mkc_json_format_start(constraint, &rules, c.ignore_eos ? NULL : m.file.tok, seed) != 0)
    goto done;
  mkc_interrupt_install();
  if (mkc_session_set_sampling(m.s, &sampling) != 0) goto done;
  /* a launch of rounds ends at the end of generation, as on_token does */
  int eog_ids[MKC_ROUND_STOPS], n_eog = 0;
  if (text.tok && !text.ignore_eos)
    n_eog = mkc_tokenizer_eog_ids(text.tok, eog_ids, MKC_ROUND_STOPS);
  mkc_decode_opts o = {
      .draft_max = c.draft_max,
      .adaptive = c.draft_adaptive,
      .draft_min = c.draft_min,
      .drafter = ds.drafter,
      .rounds = c.rounds,
      .draft_layers = in_kernel,
      .stop_ids = eog_ids,
      .n_stop_ids = n_eog,
      .interrupted = &mkc_interrupted,
      .on_token = on_token,
      .on_logprobs = on_logprobs,
      .ctx = &text,
      .constraint = constraint,
      .shift = c.context_shift,
      .n_keep = mkc_shift_keep(c.n_keep, mkc_tokenizer_added_bos(m.file.tok), prompt, n_prompt)};
  if (text.tok && !c.json) {
    mkc_detok_init(&text.detok, text.tok, c.special);
    /* The prompt as the model reads it, then the completion: one stream, so a
     * character or SentencePiece's leading space spanning the two comes out
     * right. */
    char buf[MKC_DETOK_MAX];
    for (int i = 0; i < n_prompt; i++) {
      size_t n = mkc_detok_push_shown(&text.detok, prompt[i], buf, sizeof buf);
      if (!c.no_display_prompt) fwrite(buf, 1, n, stdout);
    }
    if (text.split && !c.no_display_prompt) fputs("\n", stdout); /* after the cue */
    fflush(stdout);
  }
  if (c.n_reverse && !m.file.tok) {
    fprintf(stderr, "mkc: error: %s has no tokenizer: -r needs one to read the completion\n",
            c.model_path);
    goto done;
  }
  if (mkc_reverse_open(&rev, m.file.tok, c.reverse, c.n_reverse) != 0) goto done;
  mkc_decode_stats st;
  char why[600];
  /* --prompt-cache: the rows of the prompt's start a file holds, read back */
  uint64_t cache_id = c.prompt_cache ? mkc_loaded_cache_id(&c, &m) : 0; /* reads 1 MiB: once */
  int n_cached = c.prompt_cache ? mkc_kv_load(m.s, cache_id, c.prompt_cache, prompt, n_prompt) : 0;
  if (n_cached < 0 ||
      mkc_decode_more(m.s, &m.g, prompt, n_prompt, n_cached, n_gen, &o, out, &st) != 0)
    goto done;
  if (c.prompt_cache && !c.prompt_cache_ro) { /* the prompt's rows (-all: the answer's too) */
    int n_save = c.prompt_cache_all ? mkc_session_pos(m.s) : n_prompt; /* at most pos */
    if (mkc_kv_save(m.s, n_save, cache_id, c.prompt_cache) != 0) goto done;
  }
  if (c.json) {
    print_json_stats(n_prompt, &st, stopped(&c, &text, &st, open_ended, why, sizeof why));
  } else if (text.tok) {
    char tail[MKC_DETOK_MAX];
    put_text(&text, -1, tail, mkc_detok_flush(&text.detok, tail, sizeof tail));
    printf("\n");
  } else {
    printf("\n"); /* the ids were printed as they came */
  }
  fflush(stdout);
  print_stats(&c, &m, n_prompt, &st, stopped(&c, &text, &st, open_ended, why, sizeof why),
              sampling.temp > 0 ? &seed : NULL);
  rc = mkc_interrupted ? 128 + SIGINT : 0;
done:
  mkc_reverse_close(&rev);
  mkc_constraint_close(constraint);
  mkc_format_rules_free(&rules);
  mkc_draft_source_close(&ds);
  mkc_loaded_close(&m);
  free(prompt);
  free(out);
  return rc;
}
