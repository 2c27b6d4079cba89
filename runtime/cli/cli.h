/* The command line's flags: one parser for every subcommand, each naming the
 * flags it takes, and the usage errors they share. */
#ifndef MKC_CLI_H
#define MKC_CLI_H

#include "codegen/graph.h"
#include "backend/sampling_more.h"
#include "formats/lora.h"
#include "mkc_state.h"
#include "model/rope_flags.h"
#include "reverse_prompt.h"

#define MKC_KV_OVERRIDES 32 /* --override-kv flags at most */

#define MKC_IN_FILES_MAX 64 /* imatrix --in-file */

typedef struct mkc_cli {
  const char *graph, *preset, *out, *prompt_ids, *backend, *kernel_dir, *archs;
  const char *model_path, *prompt; /* -m FILE|DIR, -p TEXT */
  const char *kv_dtype;            /* --kv-dtype bf16|f16|f32 (NULL: $MKC_KV_DTYPE, else bf16) */
  const char *cache_type[2]; /* llama.cpp's -ctk, -ctv (where --kv-dtype is taken): K's, V's */
  int draft_max, max_ctx, n_gen, have_n, blocks, have_seed;
  int ubatch;                     /* --ubatch N: inputs of a prompt chunk (0: codegen's default) */
  unsigned long long seed;        /* --random-weights */
  double temp;                    /* --temp: 0 greedy */
  unsigned long long sample_seed; /* --seed: the sampler's */
  int have_sample_seed;
  /* The sampler's other options as given (see mkc_cli_sampling for the
   * defaults); sampling_set: a bit per option given, in SAMPLING_FLAGS order. */
  double top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
  int top_k, repeat_last_n, logprobs;
  /* llama.cpp's samplers the kernel lacks, chosen on the host (exec/sample_chain.h): their
   * numbers as given; more_set: a bit per option given, in mkc_sampling_more_options order */
  mkc_sampling_more more;
  unsigned more_set;
  const char *dry_breakers[MKC_DRY_BREAKERS]; /* --dry-sequence-breaker TEXT, each time given */
  const char *samplers, *sampling_seq;        /* --samplers "a;b", --sampling-seq LETTERS */
  int n_dry_breakers;
  unsigned sampling_set;
  /* -l/--logit-bias TOKEN_ID(+|-)BIAS, each time given, in order (mkc_cli_sampling sorts them
   * and adds up a token's) */
  int bias_id[MKC_BIAS_CAP];
  float bias[MKC_BIAS_CAP];
  int n_bias;
  const char *positional; /* gen GRAPH, compile KERNEL */
  /* Text prompts and chat (llama.cpp's spellings) */
  const char *prompt_file;        /* -f FILE: the prompt read from a file */
  const char *system_prompt;      /* -sys/--system-prompt TEXT (chat) */
  const char *chat_template;      /* --chat-template NAME (or a template's text): the model's own
                                   * overridden */
  const char *system_prompt_file; /* -sysf FILE: -sys's text from a file */
  const char *chat_template_file; /* --chat-template-file FILE: a template's text from a file */
  int no_conversation;            /* -no-cnv: llama-cli's plain completion, run's own way */
  int check_tensors;              /* --check-tensors: every weight finite, else no run */
  int spm_infill;                 /* serve --spm-infill: /infill's suffix before its prefix */
  int no_slots;                   /* serve --no-slots: GET /slots refused (llama-server's) */
  int reasoning_format; /* serve --reasoning-format: enum mkc_reasoning_format (0: auto) */
  double draft_p_min;   /* --draft-p-min P: a model drafter's confidence floor (0: none) */
  int repetitions;      /* bench -r/--repetitions N: timed runs of each test (0: its default) */
  int http_timeout;     /* serve -to/--timeout N: seconds a request may take to arrive, and a
                         * client to read (0: 30) */
  mkc_rope_flags rope;  /* llama.cpp's --rope-* and --yarn-* over -m's RoPE */
  /* --lora FILE,... and --lora-scaled FILE:SCALE,... (llama.cpp's): adapters merged into -m's
   * weights at load (formats/lora.h), each with its scale (--lora: 1) */
  const char *lora[MKC_LORA_MAX];
  float lora_scale[MKC_LORA_MAX];
  int n_lora;
  /* imatrix --in-file F, each time given (llama-imatrix's): matrices added in, combined alone
   * without -f */
  const char *in_files[MKC_IN_FILES_MAX];
  int n_in_files;
  int i_chunk;   /* imatrix --chunk N: the text's first N chunks skipped */
  int out_freq;  /* imatrix --output-frequency N: -o written every N chunks (0: 10) */
  int save_freq; /* imatrix --save-frequency N: a copy, -o.at_CHUNKS, every N chunks (0: none) */
  /* --override-kv KEY=TYPE:VALUE,... (llama.cpp's), each time given: -m's GGUF metadata */
  const char *kv_overrides[MKC_KV_OVERRIDES];
  int n_kv_overrides;
  const char *reasoning_effort; /* --reasoning-effort LEVEL: gpt-oss's template's */
  int no_reasoning;             /* --reasoning-budget 0: qwen3's enable_thinking false */
  int chat;                     /* --chat: run applies the chat template to -p */
  int ignore_eos;               /* --ignore-eos: generate past end-of-generation tokens */
  int no_display_prompt;        /* --no-display-prompt: print only the completion */
  /* run -i/--interactive, -if/--interactive-first (llama-completion's): the user writes in
   * turn with the model (cli/interactive.c) */
  int interactive, interactive_first;
  const char *in_prefix, *in_suffix; /* --in-prefix, --in-suffix TEXT: around each input */
  int in_prefix_bos;                 /* --in-prefix-bos: a BOS before each input */
  int multiline;                     /* -mli/--multiline-input: input ends at a line in / or \ */
  int context_shift;                 /* --context-shift: generation goes on past a full context */
  int no_context_shift;              /* --no-context-shift: llama.cpp's default, said aloud */
  int n_keep;                        /* --keep N: prompt tokens a shift keeps (-1: all) */
  int ids_only;                      /* tokenize --ids: the ids as a list */
  int no_bos, no_parse_special;      /* tokenize --no-bos, --no-parse-special */
  int show_count;                    /* tokenize --show-count */
  int special;                       /* run -sp/--special: control tokens printed */
  int verbose_prompt;                /* run --verbose-prompt: the prompt's tokens on stderr */
  const char *prompt_cache;          /* run --prompt-cache FILE: the prompt's KV rows on disk */
  int prompt_cache_ro, prompt_cache_all; /* --prompt-cache-ro, --prompt-cache-all */
  int escape, no_escape; /* -e/--escape (llama.cpp's default too), --no-escape: -p, -r */
  const char *reverse[MKC_REVERSE_MAX]; /* -r/--reverse-prompt TEXT, each time given */
  int n_reverse;
  int verbose;               /* --verbose: chat prints each turn's stats */
  int json;                  /* --json: run prints JSON lines, one per generated token */
  const char *format;        /* --format json|SCHEMA (-j/--json-schema): JSON output */
  const char *schema_file;   /* --json-schema-file FILE (-jf): the schema from a file */
  const char *grammar;       /* --grammar GBNF: the answer follows the grammar */
  const char *grammar_file;  /* --grammar-file FILE: the grammar from a file */
  int draft_min;             /* --draft-min K: the adaptive depth's floor */
  int draft_adaptive;        /* --draft-adaptive: the depth follows the acceptance rate */
  int rounds;                /* --rounds R: decode rounds per kernel launch (0: 1) */
  int dequant;               /* --dequant: the model's quantized matrices widened to bf16 */
  int depth;                 /* bench -d/--n-depth N: tokens in the cache before each test */
  int n_chunks;              /* perplexity --chunks N (-1: all the text holds) */
  const char *kl_base;       /* perplexity --kl-divergence-base FILE: the log-probabilities' file */
  int kl_divergence;         /* perplexity --kl-divergence: compare with kl_base's */
  int process_output;        /* imatrix --process-output: output.weight's inputs too */
  int no_ppl, ppl;           /* imatrix --no-ppl, --ppl: the perplexity estimate off, on */
  int parse_special;         /* imatrix --parse-special: control tokens' spellings parsed */
  int show_statistics;       /* imatrix --show-statistics: the --in-file matrix's report */
  const char *output_format; /* imatrix --output-format gguf|dat */
  int ppl_stride;            /* perplexity --ppl-stride S: windows S apart, their last S scored */
  int ppl_output_type;       /* perplexity --ppl-output-type 1: a line a chunk */
  int hellaswag, winogrande; /* perplexity --hellaswag, --winogrande: -f is their dataset */
  int hellaswag_tasks;       /* --hellaswag-tasks N (default 400) */
  int winogrande_tasks;      /* --winogrande-tasks N (0: all) */
  int multiple_choice;       /* perplexity --multiple-choice: -f is its binary dataset */
  int mc_tasks;              /* --multiple-choice-tasks N (0: all) */
  int stages;                /* bench --stages: a kernel with stage timers, and their table */
  int imatrix_kernel;        /* gen --imatrix-kernel, and mkc imatrix's: mkc_gen_opts.imatrix */
  /* The draft source (cli/draft_source.h); neither: prompt lookup */
  int draft_layers;             /* --draft-layers L: self-speculation on the first L layers */
  const char *draft_model_path; /* -md FILE: a draft model with the target's vocabulary */
  int draft_head; /* --draft-head: a head on the target's hidden state (graphs/draft_head.lua) */
  int keep_layers[MKC_KEEP_MAX]; /* gen --keep-layers L,...: layer outputs each step keeps */
  int n_keep_layers;
  int slots; /* gen/run --slots B: a slot kernel, B sequences per step (templates/slots.cuh) */
  const char *batch_file; /* run --batch FILE: one prompt per line, decoded together */
  int kv_pages;  /* gen/run --kv-pages N: the slots share a pool of N KV pages (templates/slots.cuh)
                  */
  int step_rows; /* gen --step-rows R: a slot kernel's rows per step, past K + 1 tiled */
  const char *host;  /* serve --host ADDR: the address to listen on */
  const char *alias; /* serve -a/--alias NAME: the model's name in the API */
  /* llama.cpp's -ngl N (where --backend is taken): 0 runs on the cpu backend; any other
   * count (all, auto: -1) lets the GPU take every layer, as mkc does not split a model */
  int gpu_layers, have_gpu_layers;
  const char *slot_save_path; /* serve --slot-save-path DIR: llama-server's slot files there */
  int port;                   /* serve --port N (0: one the system picks) */
  const char *api_key;        /* serve --api-key KEY: requests must carry it (Bearer) */
  const char *api_key_file;   /* serve --api-key-file FILE: the keys, one a line */
  const char *pooling;        /* embed --pooling mean|cls|last (NULL: the model's) */
  int embd_normalize;         /* embed --embd-normalize N (the caller sets the default) */
  const char *usage;          /* the command's usage text, printed for --help */
  char model_buf[4400];       /* -m NAME found in the model directory (model/model_dir.h) */
  char draft_model_buf[4400]; /* -md NAME found there */
} mkc_cli;

/* mkc_cli_parse's answer to --help/-h, after printing c->usage: exit 0. */
#define MKC_CLI_HELP (-1)

/* Prints "mkc: error: <fmt with arg>" and the --help hint; returns 2. */
int mkc_cli_usage_error(const char *fmt, const char *arg);
/* The same with the hint of one command: "(run `mkc CMD --help` for usage)". */
int mkc_cli_usage_error_in(const char *cmd, const char *fmt, const char *arg);
/* --context-shift and --keep as cmd takes them: --keep needs the shift, and
 * --no-context-shift cannot go with it. 0, or 2 after the usage error. */
int mkc_cli_shift_check(const mkc_cli *c, const char *cmd);
/* --prompt-cache-ro and --prompt-cache-all need --prompt-cache FILE: 0, or 2 after the usage
 * error. */
int mkc_cli_prompt_cache_check(const mkc_cli *c, const char *cmd);

/* The request's sampling options from the flags: --temp (0, greedy, unless
 * given), and llama.cpp's defaults for what was not given (top-k 40, top-p
 * 0.95, min-p 0.05, repeat penalty 1 over the last 64 tokens); the logit
 * biases by token, ascending (one token's given twice: their sum); the seed is
 * --seed, else one drawn now (*seed says which, for the stats line).
 * Checked (mkc_sampling_check, and the samplers the kernel lacks:
 * mkc_cli_sampling_more): 0, or 2 after the message. */
int mkc_cli_sampling(const mkc_cli *c, mkc_sampling *o, unsigned long long *seed);

/* The flags of the samplers the kernel lacks, for a command's allowed list. */
#define MKC_CLI_MORE_FLAGS                                                                         \
  " --typical --top-nsigma --xtc-probability --xtc-threshold --dynatemp-range --dynatemp-exp "     \
  "--mirostat --mirostat-lr --mirostat-ent --dry-multiplier --dry-base --dry-allowed-length "      \
  "--dry-penalty-last-n --dry-sequence-breaker --samplers --sampling-seq "

/* Their usage lines. */
#define MKC_CLI_MORE_USAGE                                                                         \
  "  llama.cpp's other samplers, run on the host from each step's logits (order:\n"                \
  "  penalties, DRY, top-n-sigma, top-k, typical, top-p, min-p, XTC, temperature):\n"              \
  "  --typical P (1: off), --top-nsigma N (off), --xtc-probability P (0),\n"                       \
  "  --xtc-threshold T (0.1), --dynatemp-range R (0), --dynatemp-exp E (1),\n"                     \
  "  --mirostat 1|2 (0: off; replaces the chain), --mirostat-ent TAU (5),\n"                       \
  "  --mirostat-lr ETA (0.1), --dry-multiplier M (0: off), --dry-base B (1.75),\n"                 \
  "  --dry-allowed-length N (2), --dry-penalty-last-n N (64; -1: the whole\n"                      \
  "  context), --dry-sequence-breaker TEXT (each time given; replaces \\n : \" *;\n"               \
  "  none: no breakers), --samplers \"top_k;min_p;temperature\" or\n"                              \
  "  --sampling-seq kmt: the chain's samplers (in its order; those left out\n"                     \
  "  are off)\n"

/* The samplers the kernel lacks from the flags (llama.cpp's defaults for the rest): 0, or 2
 * after the usage error. */
int mkc_cli_sampling_more(const mkc_cli *c, mkc_sampling_more *m);
/* Whether the flags turn one of them on (their tokens are then chosen on the host). */
int mkc_cli_more_on(const mkc_cli *c);
/* For a stats line: " on the host (DRY 0.8, typical 0.5)", or "" when none is on. */
void mkc_cli_more_words(const mkc_cli *c, char *buf, size_t n);
/* A stats line's words for the sampler: "greedy", or "sampled, seed S" (seed not NULL), then
 * mkc_cli_more_words's. */
void mkc_cli_sampled_words(const mkc_cli *c, const unsigned long long *seed, char *buf, size_t n);

/* A whole-string non-negative integer (a seed): 0, or -1 (no message). */
int mkc_parse_seed(const char *s, unsigned long long *v);

/* With -m, --preset, --graph and --random-weights have no place: the usage
 * error "CMD: -m brings its own ..." (2), else 0. */
int mkc_cli_check_model(const mkc_cli *c, const char *cmd);

/* Parses argv[first..]; `allowed` lists the flags this command takes, e.g.
 * "--preset -n --draft-max". Returns 0, 2 (after printing why) or
 * MKC_CLI_HELP (after printing c->usage for --help or -h). */
int mkc_cli_parse(int argc, char **argv, int first, const char *allowed, int want_positional,
                  mkc_cli *c);

/* llama.cpp's escapes (cli/escapes.h) in -p, --in-prefix, --in-suffix, each -r and each
 * --dry-sequence-breaker, in place
 * (they point into argv, which is the program's to write), unless --no-escape: 0, or 2 after the
 * usage error of an escape naming the NUL byte or of an empty -r. */
int mkc_cli_unescape(mkc_cli *c);

/* The text prompt: -p TEXT, or -f FILE's bytes (all of them: a NUL in the
 * file is an error, not the end). malloc'd, or NULL after a message. */
char *mkc_cli_prompt_text(const mkc_cli *c);

/* "1,2,3" -> ids (malloc'd), each in [0, vocab); NULL + message naming `what`
 * (a flag, or file:line) on bad input. */
int *mkc_parse_ids(const char *s, int vocab, int *n, const char *what);

#endif
