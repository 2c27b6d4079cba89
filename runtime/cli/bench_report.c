/* See bench_report.h. */
#include "bench_report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

int mkc_bench_format_from_name(const char *name) {
  static const char *const NAMES[] = {"md", "csv", "json", "jsonl"};
  for (int k = 0; k < 4; k++)
    if (strcmp(name, NAMES[k]) == 0) return k;
  return -1;
}

static double mean(const double *x, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += x[i];
  return s / n;
}

static double stddev(const double *x, int n) {
  double m = mean(x, n), s = 0;
  for (int i = 0; i < n; i++) s += (x[i] - m) * (x[i] - m);
  return n > 1 ? sqrt(s / (n - 1)) : 0;
}

/* csv's columns, and the first of json's fields, in this order */
static const char *const CSV_HEAD =
    "model_filename,model_type,model_size,model_n_params,backends,arch,test,n_prompt,n_gen,"
    "n_depth,n_draft,avg_ts,stddev_ts,samples_ts,ms_per_token,tokens_per_step,ms_per_step,"
    "weights_gbs,copy_gbs";

void mkc_bench_report_begin(int format) {
  if (format == MKC_BENCH_MD) {
    printf(
        "| model | size | params | backend | test | t/s | arch | ms/token | tok/step | ms/step | "
        "weights GB/s | of copy |\n");
    printf("| --- | ---: | ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
  } else if (format == MKC_BENCH_CSV) {
    printf("%s\n", CSV_HEAD);
  } else if (format == MKC_BENCH_JSON) {
    printf("[\n");
  }
}

/* A csv field: quoted, its quotes doubled, where it holds a comma, a quote or a newline. */
static void csv_text(const char *s) {
  if (!strpbrk(s, ",\"\n")) {
    fputs(s, stdout);
    return;
  }
  putchar('"');
  for (; *s; s++) {
    if (*s == '"') putchar('"');
    putchar(*s);
  }
  putchar('"');
}

void mkc_bench_size(double bytes, char *buf, size_t cap) {
  if (bytes >= 1024.0 * 1048576.0)
    snprintf(buf, cap, "%.2f GiB", bytes / (1024.0 * 1048576.0));
  else
    snprintf(buf, cap, "%.2f MiB", bytes / 1048576.0);
}

static void md_row(const mkc_bench_row *r, double tps) {
  char size[32], at[32] = "", of_copy[32] = "n/a";
  mkc_bench_size(r->model_bytes, size, sizeof size);
  if (r->n_depth > 0) snprintf(at, sizeof at, " @ d%d", r->n_depth);
  if (r->copy_gbs > 0)
    snprintf(of_copy, sizeof of_copy, "%.1f%%", 100.0 * r->weights_gbs / r->copy_gbs);
  printf("| %s | %s | %.2f M | %s | %s%s | %.2f ± %.2f | %s | %.3f | %.2f | %.3f | %.1f | %s |\n",
         r->model, size, r->params / 1e6, r->backend, r->test, at, tps, stddev(r->tps, r->reps),
         r->arch, 1e3 / tps, r->tokens_per_step, 1e3 / r->steps_per_s, r->weights_gbs, of_copy);
}

static void csv_row(const mkc_bench_row *r, double tps) {
  const char *texts[] = {r->model_file, r->model};
  for (int k = 0; k < 2; k++) csv_text(texts[k]), putchar(',');
  printf("%.0f,%.0f,", r->model_bytes, r->params);
  csv_text(r->backend), putchar(','), csv_text(r->arch), putchar(','), csv_text(r->test);
  printf(",%d,%d,%d,%d,%.6g,%.6g,\"", r->n_prompt, r->n_gen, r->n_depth, r->n_draft, tps,
         stddev(r->tps, r->reps));
  for (int i = 0; i < r->reps; i++) printf("%s%.6g", i ? ";" : "", r->tps[i]);
  printf("\",%.6g,%.6g,%.6g,%.6g,", 1e3 / tps, r->tokens_per_step, 1e3 / r->steps_per_s,
         r->weights_gbs);
  if (r->copy_gbs > 0) printf("%.6g", r->copy_gbs);
  putchar('\n');
}

static void json_row(const mkc_bench_row *r, double tps, int format, int index) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model_filename", r->model_file);
  cJSON_AddStringToObject(o, "model_type", r->model);
  cJSON_AddNumberToObject(o, "model_size", r->model_bytes);
  cJSON_AddNumberToObject(o, "model_n_params", r->params);
  cJSON_AddStringToObject(o, "backends", r->backend);
  cJSON_AddStringToObject(o, "arch", r->arch);
  cJSON_AddStringToObject(o, "test", r->test);
  cJSON_AddNumberToObject(o, "n_prompt", r->n_prompt);
  cJSON_AddNumberToObject(o, "n_gen", r->n_gen);
  cJSON_AddNumberToObject(o, "n_depth", r->n_depth);
  cJSON_AddNumberToObject(o, "n_draft", r->n_draft);
  cJSON_AddNumberToObject(o, "avg_ts", tps);
  cJSON_AddNumberToObject(o, "stddev_ts", stddev(r->tps, r->reps));
  cJSON_AddItemToObject(o, "samples_ts", cJSON_CreateDoubleArray(r->tps, r->reps));
  cJSON_AddNumberToObject(o, "ms_per_token", 1e3 / tps);
  cJSON_AddNumberToObject(o, "tokens_per_step", r->tokens_per_step);
  cJSON_AddNumberToObject(o, "ms_per_step", 1e3 / r->steps_per_s);
  cJSON_AddNumberToObject(o, "weights_gbs", r->weights_gbs);
  if (r->copy_gbs > 0)
    cJSON_AddNumberToObject(o, "copy_gbs", r->copy_gbs);
  else
    cJSON_AddNullToObject(o, "copy_gbs");
  char *s = cJSON_PrintUnformatted(o);
  if (format == MKC_BENCH_JSON)
    printf("%s  %s", index ? ",\n" : "", s ? s : "{}");
  else
    printf("%s\n", s ? s : "{}");
  cJSON_free(s);
  cJSON_Delete(o);
}

void mkc_bench_report_row(int format, const mkc_bench_row *r, int index) {
  double tps = mean(r->tps, r->reps);
  if (format == MKC_BENCH_MD)
    md_row(r, tps);
  else if (format == MKC_BENCH_CSV)
    csv_row(r, tps);
  else
    json_row(r, tps, format, index);
  fflush(stdout);
}

void mkc_bench_report_end(int format) {
  if (format == MKC_BENCH_JSON) printf("\n]\n");
  fflush(stdout);
}
