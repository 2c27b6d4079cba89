/* See llama_flags.h. */
#include "llama_flags.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "util/text.h"

enum { NO_VALUE, VALUE, MAYBE_VALUE }; /* MAYBE: on/off/auto, which older versions lacked */

/* Why each group is not followed. */
static const char *const THREADS =
    "the kernel runs on the GPU, and the cpu backend runs one thread per block (-t)";
static const char *const MEMORY = "mkc maps the file to read it once, and copies the weights into "
                                  "the kernel's own buffers (device memory, or the cpu backend's)";
static const char *const DEVICES =
    "the whole model runs as one kernel on one device (-ngl 0: the cpu backend)";
static const char *const BATCH = "a prompt is fed in chunks of --ubatch tokens";
static const char *const CACHE =
    "the KV cache is the kernel's own (a sliding-window layer's a ring of its window)";
static const char *const ATTENTION = "the megakernel's attention is always fused";
static const char *const SAMPLING = "sampling runs in the kernel already";
static const char *const WARMUP =
    "the kernel is compiled (or found in the cache) before the first step, which needs no "
    "warm-up";
static const char *const LOGS = "mkc has no such logs: its stats line is on stderr";
static const char *const COLOR = "mkc prints plain text";

static const struct {
  const char *names; /* every spelling, space-separated */
  int value;
  const char *const *why;
} FLAGS[] = {
    {"-tb --threads-batch", VALUE, &THREADS},
    {"-C --cpu-mask", VALUE, &THREADS},
    {"-Cr --cpu-range", VALUE, &THREADS},
    {"--cpu-strict", VALUE, &THREADS},
    {"--prio", VALUE, &THREADS},
    {"--poll", VALUE, &THREADS},
    {"-Cb --cpu-mask-batch", VALUE, &THREADS},
    {"-Crb --cpu-range-batch", VALUE, &THREADS},
    {"--cpu-strict-batch", VALUE, &THREADS},
    {"--prio-batch", VALUE, &THREADS},
    {"--poll-batch", VALUE, &THREADS},
    {"--numa", VALUE, &THREADS},
    {"--mlock --mmap --no-mmap --no-host -nr --no-repack --repack -dio --direct-io --no-direct-io",
     NO_VALUE, &MEMORY},
    {"-lm --load-mode", VALUE, &MEMORY},
    {"-dev --device -sm --split-mode -ts --tensor-split -mg --main-gpu -ot --override-tensor "
     "-ncmoe --n-cpu-moe --rpc -fitt --fit-target -fitc --fit-ctx",
     VALUE, &DEVICES},
    {"-cmoe --cpu-moe -nkvo --no-kv-offload --kv-offload --no-op-offload --op-offload", NO_VALUE,
     &DEVICES},
    {"-fit --fit", MAYBE_VALUE, &DEVICES},
    {"-b --batch-size", VALUE, &BATCH},
    {"--swa-full", NO_VALUE, &CACHE},
    {"-dt --defrag-thold -cram --cache-ram -ctxcp --ctx-checkpoints --swa-checkpoints", VALUE,
     &CACHE},
    {"-fa --flash-attn", MAYBE_VALUE, &ATTENTION},
    {"-bs --backend-sampling", NO_VALUE, &SAMPLING},
    {"--warmup --no-warmup", NO_VALUE, &WARMUP},
    {"--perf --no-perf --log-disable --log-prefix --no-log-prefix --log-timestamps "
     "--no-log-timestamps --show-timings --no-show-timings",
     NO_VALUE, &LOGS},
    {"--log-file -lv --verbosity --log-verbosity", VALUE, &LOGS},
    {"--log-colors", MAYBE_VALUE, &LOGS},
    {"-co --color", MAYBE_VALUE, &COLOR},
    {"--simple-io", NO_VALUE, &COLOR},
};

/* The values llama.cpp's on/off/auto flags take (and its older bool forms lacked). */
static int is_switch(const char *v) {
  static const char *const WORDS[] = {"on", "off",     "auto",     "true", "false", "1",
                                      "0",  "enabled", "disabled", "yes",  "no"};
  for (size_t k = 0; k < sizeof WORDS / sizeof *WORDS; k++)
    if (strcmp(v, WORDS[k]) == 0) return 1;
  return 0;
}

int mkc_llama_flag_skip(int argc, char **argv, int *i) {
  const char *a = argv[*i];
  for (size_t k = 0; k < sizeof FLAGS / sizeof *FLAGS; k++) {
    if (!mkc_words_hold(FLAGS[k].names, a)) continue;
    const char *v = NULL;
    if (FLAGS[k].value == VALUE && *i + 1 >= argc)
      return mkc_cli_usage_error("%s needs a value", a);
    if (FLAGS[k].value == VALUE ||
        (FLAGS[k].value == MAYBE_VALUE && *i + 1 < argc && is_switch(argv[*i + 1])))
      v = argv[++*i];
    fprintf(stderr, "mkc: note: %s%s%s: not followed (llama.cpp's flag): %s\n", a, v ? " " : "",
            v ? v : "", *FLAGS[k].why);
    return 1;
  }
  return 0;
}
