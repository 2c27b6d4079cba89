/* mkc bench's rows in llama-bench's output formats (-o): md (the table), csv (a header, then a
 * row per test), json (a list of objects) and jsonl (an object a line). The fields keep
 * llama-bench's names where it has the same figure (model_filename, model_type, model_size,
 * model_n_params, backends, n_prompt, n_gen, n_depth, avg_ts, stddev_ts, samples_ts) and add
 * mkc's own (test, arch, n_draft, ms_per_token, tokens_per_step, ms_per_step, weights_gbs,
 * copy_gbs). */
#ifndef MKC_BENCH_REPORT_H
#define MKC_BENCH_REPORT_H

#include <stddef.h>

enum mkc_bench_format { MKC_BENCH_MD, MKC_BENCH_CSV, MKC_BENCH_JSON, MKC_BENCH_JSONL };

/* "md", "csv", "json" or "jsonl" -> enum mkc_bench_format, or -1. */
int mkc_bench_format_from_name(const char *name);

typedef struct mkc_bench_row {
  const char *model_file; /* the model's file or folder, else the preset */
  const char *model;      /* "llama tiny BF16": the graph, preset and matrix types */
  double model_bytes;     /* what a step streams */
  double params;
  const char *backend, *arch, *test; /* test: "tg128 draft4", ... (without the depth) */
  int n_prompt, n_gen, n_depth, n_draft;
  const double *tps; /* each repetition's tokens per second */
  int reps;
  double tokens_per_step, steps_per_s, weights_gbs;
  double copy_gbs; /* < 0: not measured */
} mkc_bench_row;

/* A size as the table shows it: "0.22 MiB", "2.30 GiB". */
void mkc_bench_size(double bytes, char *buf, size_t cap);

/* The rows' opening (md's table head, csv's header, json's bracket) on stdout. */
void mkc_bench_report_begin(int format);
/* One row; index: its place (json puts a comma before all but the first). */
void mkc_bench_report_row(int format, const mkc_bench_row *r, int index);
/* The rows' closing (json's bracket). */
void mkc_bench_report_end(int format);

#endif
