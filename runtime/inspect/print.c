/* The inspect report as text (outline, one stage's source) and as JSON
 * (schema mkc-inspect/2, docs/INSPECT.md). */
#include "inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ARENA[MKC_ARENA_COUNT] = {"weights", "scratch", "kv"};

/* v in units, thousands, millions or billions of them: 950, 1.20k, 3.40M, 1.234G. */
static const char *fmt_si(double v, const char *const unit[4], char *buf, size_t size) {
  int i = v < 1e3 ? 0 : v < 1e6 ? 1 : v < 1e9 ? 2 : 3;
  static const double scale[4] = {1, 1e3, 1e6, 1e9};
  static const char *const fmt[4] = {"%.0f%s", "%.2f%s", "%.2f%s", "%.3f%s"};
  snprintf(buf, size, fmt[i], v / scale[i], unit[i]);
  return buf;
}

static const char *fmt_bytes(double b, char *buf, size_t size) {
  static const char *const unit[4] = {" B", " kB", " MB", " GB"};
  return fmt_si(b, unit, buf, size);
}

static const char *fmt_count(double v, char *buf, size_t size) {
  static const char *const unit[4] = {"", "k", "M", "G"};
  return fmt_si(v, unit, buf, size);
}

static const char *fmt_time(double s, char *buf, size_t size) {
  if (s < 1e-6)
    snprintf(buf, size, "%.1f ns", s * 1e9);
  else if (s < 1e-3)
    snprintf(buf, size, "%.2f us", s * 1e6);
  else
    snprintf(buf, size, "%.3f ms", s * 1e3);
  return buf;
}

static const char *sync_text(const mkc_stage *s) {
  if (strcmp(s->ast.sync, "grid") == 0) return "grid barrier";
  if (strcmp(s->ast.sync, "counter") == 0) return "counter wait";
  if (strcmp(s->ast.sync, "flow") == 0)
    return "flow arrival (the next stage waits for every block)";
  return strcmp(s->meta.sync, "end") == 0 ? "end of step" : "none";
}

/* Total floor: the stages run one after another, each ended by its sync. */
static double total_floor(const mkc_inspect_report *r) {
  double t = 0;
  for (int i = 0; i < r->n_stages; i++) t += mkc_stage_floor(&r->stages[i], r->gpu, r->at, NULL);
  return t;
}

static void print_resources(const mkc_inspect_report *r, FILE *f) {
  const mkc_resources *res = &r->res;
  if (!res->available) {
    fprintf(f, "resources  unavailable: %s\n", res->why);
    return;
  }
  fprintf(f,
          "resources  %s (NVRTC %d.%d, ptxas): %d registers, spills %ld B stored / %ld B loaded, "
          "stack %ld B, smem %ld B static + %lld B dynamic, %d barrier%s, cmem %ld B\n",
          res->arch, res->nvrtc_version / 1000, res->nvrtc_version % 1000 / 10, res->registers,
          res->spill_store_bytes, res->spill_load_bytes, res->stack_bytes, res->smem_static_bytes,
          r->header.smem_bytes, res->barriers, res->barriers == 1 ? "" : "s", res->cmem_bytes);
}

/* The kernel-wide lines before the stages. */
static void print_kernel(const mkc_inspect_report *r, FILE *f) {
  const mkc_inspect_header *h = &r->header;
  char a[32], b[32], c[32];
  fprintf(f, "%s: %s kernel for %s, preset %s\n", r->path, h->generator, h->graph, h->preset);
  fprintf(f,
          "kernel     __global__ mkc_step (%s:%d): %d stages, %d grid barriers, %d flow waits; "
          "%d threads per block; T <= %d tokens per step; max_ctx %d\n",
          r->path, r->kernel_line, r->n_stages, h->n_grid_barriers, h->n_flow_waits, h->threads,
          h->t_max, h->max_ctx);
  fprintf(f, "memory     weights %s, scratch %s, KV cache %s (%s); smem %lld B per block\n",
          fmt_bytes(2.0 * (double)h->weight_elems, a, sizeof a),
          fmt_bytes(4.0 * (double)h->scratch_floats, b, sizeof b),
          fmt_bytes((double)h->kv_elem_bytes * (double)h->kv_elems, c, sizeof c), h->kv_dtype,
          h->smem_bytes);
  fprintf(f,
          "step       T = %d token%s at pos %d, %d blocks (--tokens, --pos, --blocks); bytes are "
          "distinct global bytes per step\n",
          r->at.tokens, r->at.tokens == 1 ? "" : "s", r->at.pos, r->at.blocks);
  print_resources(r, f);
}

/* A stage's global ranges, reads then writes. */
static void print_regions(const mkc_inspect_report *r, const mkc_stage_meta *m, FILE *f) {
  char a[32];
  for (int w = 0; w < 2; w++) {
    int first = 1;
    for (int k = 0; k < m->n_regions; k++) {
      const mkc_region *g = &m->regions[k];
      if (g->write != w) continue;
      fprintf(f, "  %-7s %-7s + %-9lld %10s  %s\n", first ? (w ? "writes" : "reads") : "",
              ARENA[g->arena], g->offset,
              fmt_bytes((double)mkc_qty_eval(g->bytes, r->at), a, sizeof a), g->name);
      first = 0;
    }
    if (first) fprintf(f, "  %-7s none\n", w ? "writes" : "reads");
  }
}

/* One stage of the outline: nodes, calls, work, smem, ranges, cost, sync, mismatches. */
static void print_stage(const mkc_inspect_report *r, int i, FILE *f) {
  const mkc_stage *s = &r->stages[i];
  const mkc_stage_meta *m = &s->meta;
  char a[32], b[32], c[32], d[32];
  fprintf(f, "\nstage %d/%d  %s  (%s:%d-%d)\n", i + 1, r->n_stages, m->kind, r->path,
          s->ast.first_line, s->ast.last_line);
  for (int k = 0; k < m->n_nodes; k++)
    fprintf(f, "  %-7s #%d %s\n", k ? "" : "nodes", m->nodes[k], m->labels[k]);
  if (!m->n_nodes) fprintf(f, "  nodes   none (it finishes the logits node's greedy choice)\n");
  for (int k = 0; k < s->ast.n_calls; k++)
    fprintf(f, "  %-7s %s (%s:%d)\n", k ? "" : "calls", s->ast.calls[k].name,
            s->ast.calls[k].template_file, s->ast.calls[k].template_line);
  long long items = mkc_qty_eval(m->items, r->at);
  fprintf(f, "  work    %lld item%s, one %s each; block 0 takes %lld  [%s]\n", items,
          items == 1 ? "" : "s", m->unit, mkc_stage_per_block(s, r->header.threads, r->at),
          m->work);
  if (!m->n_smem) fprintf(f, "  smem    none\n");
  for (int k = 0; k < m->n_smem; k++)
    fprintf(f, "  %-7s %-8s at %5ld, %5ld B\n", k ? "" : "smem", m->smem[k].name, m->smem[k].offset,
            m->smem[k].bytes);
  print_regions(r, m, f);
  int cb = 0;
  double fl = mkc_stage_floor(s, r->gpu, r->at, &cb);
  fprintf(f, "  cost    %s read, %s written, %s FLOP; floor %s on %s (%s-bound)\n",
          fmt_bytes((double)mkc_stage_bytes(s, 0, r->at), a, sizeof a),
          fmt_bytes((double)mkc_stage_bytes(s, 1, r->at), b, sizeof b),
          fmt_count((double)mkc_qty_eval(m->flops, r->at), c, sizeof c), fmt_time(fl, d, sizeof d),
          r->gpu->id, cb ? "compute" : "memory");
  if (s->ast.sync_line)
    fprintf(f, "  sync    %s (line %d)\n", sync_text(s), s->ast.sync_line);
  else
    fprintf(f, "  sync    %s\n", sync_text(s));
  for (int k = 0; k < r->n_mismatches; k++)
    if (r->mismatches[k].stage == i + 1) fprintf(f, "  MISMATCH %s\n", r->mismatches[k].what);
}

/* The roofline table, its totals and the tokens/s it allows. */
static void print_roofline(const mkc_inspect_report *r, FILE *f) {
  const mkc_gpu *g = r->gpu;
  char a[32], b[32], c[32], d[32];
  fprintf(
      f, "\nroofline on %s: %.2f TB/s, %.1f TFLOP/s fp32 (the templates' FMAs; bf16 tensor %.1f)\n",
      g->name, g->bandwidth / 1e12, g->fp32 / 1e12, g->bf16_tensor / 1e12);
  fprintf(f, "  stage  %-16s %12s %12s %10s %10s  bound\n", "kind", "read", "written", "FLOPs",
          "floor");
  long long rd = 0, wr = 0, fp = 0;
  for (int i = 0; i < r->n_stages; i++) {
    const mkc_stage *s = &r->stages[i];
    int cb = 0;
    double fl = mkc_stage_floor(s, g, r->at, &cb);
    long long sr = mkc_stage_bytes(s, 0, r->at), sw = mkc_stage_bytes(s, 1, r->at);
    long long sf = mkc_qty_eval(s->meta.flops, r->at);
    rd += sr, wr += sw, fp += sf;
    fprintf(f, "  %5d  %-16s %12s %12s %10s %10s  %s\n", i + 1, s->meta.kind,
            fmt_bytes((double)sr, a, sizeof a), fmt_bytes((double)sw, b, sizeof b),
            fmt_count((double)sf, c, sizeof c), fmt_time(fl, d, sizeof d),
            cb ? "compute" : "memory");
  }
  double t = total_floor(r);
  fprintf(f, "  total  %-16s %12s %12s %10s %10s\n", "", fmt_bytes((double)rd, a, sizeof a),
          fmt_bytes((double)wr, b, sizeof b), fmt_count((double)fp, c, sizeof c),
          fmt_time(t, d, sizeof d));
  if (r->at.tokens == 1)
    fprintf(
        f,
        "  floor %s per step (sum of stage floors; barriers not counted): at most %.0f tokens/s\n",
        fmt_time(t, d, sizeof d), 1.0 / t);
  else
    fprintf(
        f,
        "  floor %s per step (sum of stage floors; barriers not counted): at most %.0f tokens/s "
        "with no draft accepted, %.0f with all %d inputs accepted\n",
        fmt_time(t, d, sizeof d), 1.0 / t, r->at.tokens / t, r->at.tokens);
}

void mkc_inspect_print(const mkc_inspect_report *r, FILE *f) {
  print_kernel(r, f);
  for (int i = 0; i < r->n_stages; i++) print_stage(r, i, f);
  print_roofline(r, f);
  if (r->n_mismatches) {
    fprintf(f, "\n%d mismatch%s between the codegen metadata and the code:\n", r->n_mismatches,
            r->n_mismatches == 1 ? "" : "es");
    for (int k = 0; k < r->n_mismatches; k++)
      fprintf(f, "  %s%d: %s\n", r->mismatches[k].stage ? "stage " : "kernel",
              r->mismatches[k].stage, r->mismatches[k].what);
  } else {
    fprintf(f, "\nmetadata and code agree: stages, items, FLOPs, syncs, smem offsets and every "
               "global range\n");
  }
}

/* "... (line 33)" -> 33, or 0 */
static int label_line(const char *label) {
  const char *p = strstr(label, "(line ");
  return p ? atoi(p + 6) : 0;
}

static int stage_matches(const mkc_stage *s, int index, const char *which) {
  char *end;
  long n = strtol(which, &end, 10);
  if (*which && !*end) return n == index;
  if (strcmp(s->meta.kind, which) == 0) return 1;
  for (int k = 0; k < s->meta.n_nodes; k++)
    if (strstr(s->meta.labels[k], which)) return 1;
  return 0;
}

int mkc_inspect_print_stage(const mkc_inspect_report *r, const char *which, FILE *f) {
  int found = 0;
  for (int i = 0; i < r->n_stages; i++) {
    const mkc_stage *s = &r->stages[i];
    if (!stage_matches(s, i + 1, which)) continue;
    if (found++) fputc('\n', f);
    fprintf(f, "stage %d/%d: %s (%s:%d-%d)\n", i + 1, r->n_stages, s->meta.kind, r->path,
            s->ast.first_line, s->ast.last_line);
    for (int k = 0; k < s->meta.n_nodes; k++)
      fprintf(f, "  graph node #%d %s  (%s:%d)\n", s->meta.nodes[k], s->meta.labels[k],
              r->header.graph, label_line(s->meta.labels[k]));
    for (int k = 0; k < s->ast.n_calls; k++)
      fprintf(f, "  line %d calls %s  (%s:%d)\n", s->ast.calls[k].line, s->ast.calls[k].name,
              s->ast.calls[k].template_file, s->ast.calls[k].template_line);
    /* from the unfolded text: a pass of the layer loop shows its own values, each line
     * numbered as the file's line it comes from */
    const mkc_unfolded *u = &r->unfolded;
    const char *p = u->text;
    for (int line = 1; p && *p && line <= s->ast.u_last_line; line++) {
      size_t len = strcspn(p, "\n");
      if (line >= s->ast.u_first_line)
        fprintf(f, "%6d | %.*s\n", u->folded ? u->line_of[line - 1] : line, (int)len, p);
      p += len;
      if (*p) p++;
    }
  }
  return found;
}

/* ---- JSON ---- */

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

/* The literal text before, then s as a JSON string. */
static void json_after(FILE *f, const char *before, const char *s) {
  fputs(before, f);
  json_str(f, s);
}

static void json_qty(FILE *f, mkc_qty q) {
  fprintf(f, "{\"c\": %lld, \"t\": %lld, \"ctx\": %lld, \"att\": %lld}", q.c, q.t, q.ctx, q.att);
}

static void json_resources(const mkc_resources *res, long long smem_dynamic, FILE *f) {
  fprintf(f, "  \"resources\": {\"available\": %s, \"arch\": ", res->available ? "true" : "false");
  json_str(f, res->arch);
  if (!res->available) {
    json_after(f, ", \"why\": ", res->why);
    fprintf(f, "},\n");
    return;
  }
  fprintf(f,
          ", \"nvrtc_version\": %d, \"registers\": %d, \"spill_store_bytes\": %ld, "
          "\"spill_load_bytes\": %ld, \"stack_bytes\": %ld, \"smem_static_bytes\": %ld, "
          "\"smem_dynamic_bytes\": %lld, \"barriers\": %d, \"cmem_bytes\": %ld},\n",
          res->nvrtc_version, res->registers, res->spill_store_bytes, res->spill_load_bytes,
          res->stack_bytes, res->smem_static_bytes, smem_dynamic, res->barriers, res->cmem_bytes);
}

/* The kernel-wide members before the stages. */
static void json_kernel(const mkc_inspect_report *r, FILE *f) {
  const mkc_inspect_header *h = &r->header;
  json_after(f, "{\n  \"schema\": \"mkc-inspect/2\",\n  \"file\": ", r->path);
  json_after(f, ",\n  \"generator\": ", h->generator);
  json_after(f, ",\n  \"graph\": ", h->graph);
  json_after(f, ",\n  \"preset\": ", h->preset);
  fprintf(f,
          ",\n  \"kernel\": {\"name\": \"mkc_step\", \"line\": %d, \"threads\": %d, \"t_max\": %d, "
          "\"max_ctx\": %d, \"stages\": %d, \"grid_barriers\": %d, \"flow_waits\": %d, "
          "\"smem_bytes\": %lld, "
          "\"weight_bytes\": %lld, \"scratch_bytes\": %lld, \"kv_bytes\": %lld},\n",
          r->kernel_line, h->threads, h->t_max, h->max_ctx, r->n_stages, h->n_grid_barriers,
          h->n_flow_waits, h->smem_bytes, 2 * h->weight_elems, 4 * h->scratch_floats,
          h->kv_elem_bytes * h->kv_elems);
  fprintf(f, "  \"step\": {\"tokens\": %d, \"pos\": %d, \"blocks\": %d},\n", r->at.tokens,
          r->at.pos, r->at.blocks);
  json_resources(&r->res, h->smem_bytes, f);
}

/* A stage's graph nodes and template calls. */
static void json_nodes_calls(const mkc_stage *s, FILE *f) {
  const mkc_stage_meta *m = &s->meta;
  fprintf(f, ",\n     \"nodes\": [");
  for (int k = 0; k < m->n_nodes; k++) {
    fprintf(f, "%s{\"id\": %d, \"label\": ", k ? ", " : "", m->nodes[k]);
    json_str(f, m->labels[k]);
    fprintf(f, ", \"graph_line\": %d}", label_line(m->labels[k]));
  }
  fprintf(f, "],\n     \"calls\": [");
  for (int k = 0; k < s->ast.n_calls; k++) {
    fprintf(f, "%s{\"name\": ", k ? ", " : "");
    json_str(f, s->ast.calls[k].name);
    fprintf(f, ", \"line\": %d, \"template\": ", s->ast.calls[k].line);
    json_str(f, s->ast.calls[k].template_file);
    fprintf(f, ", \"template_line\": %d}", s->ast.calls[k].template_line);
  }
  fprintf(f, "]");
}

/* A stage's smem regions and global ranges. */
static void json_memory(const mkc_inspect_report *r, const mkc_stage_meta *m, FILE *f) {
  fprintf(f, "     \"smem_bytes\": %ld, \"smem\": [", m->smem_bytes);
  for (int k = 0; k < m->n_smem; k++) {
    fprintf(f, "%s{\"name\": ", k ? ", " : "");
    json_str(f, m->smem[k].name);
    fprintf(f, ", \"offset\": %ld, \"bytes\": %ld}", m->smem[k].offset, m->smem[k].bytes);
  }
  fprintf(f, "],\n     \"buffers\": [");
  for (int k = 0; k < m->n_regions; k++) {
    const mkc_region *g = &m->regions[k];
    fprintf(
        f, "%s\n       {\"access\": \"%s\", \"arena\": \"%s\", \"offset\": %lld, \"bytes\": %lld, ",
        k ? "," : "", g->write ? "write" : "read", ARENA[g->arena], g->offset,
        mkc_qty_eval(g->bytes, r->at));
    fprintf(f, "\"per_step\": ");
    json_qty(f, g->bytes);
    json_after(f, ", \"name\": ", g->name);
    fputc('}', f);
  }
  fprintf(f, "]");
}

/* One element of "stages". */
static void json_stage(const mkc_inspect_report *r, int i, FILE *f) {
  const mkc_stage *s = &r->stages[i];
  const mkc_stage_meta *m = &s->meta;
  fprintf(f, "%s\n    {\"index\": %d, \"kind\": ", i ? "," : "", i + 1);
  json_str(f, m->kind);
  fprintf(f, ", \"first_line\": %d, \"last_line\": %d", s->ast.first_line, s->ast.last_line);
  json_nodes_calls(s, f);
  json_after(f, ",\n     \"work\": ", m->work);
  fprintf(f, ", \"items\": %lld, \"unit\": ", mkc_qty_eval(m->items, r->at));
  json_str(f, m->unit);
  fprintf(f, ", \"per_block\": %lld,\n     \"sync\": {\"kind\": \"%s\", \"line\": %d},\n",
          mkc_stage_per_block(s, r->header.threads, r->at),
          strcmp(s->ast.sync, "none") == 0 && strcmp(m->sync, "end") == 0 ? "end" : s->ast.sync,
          s->ast.sync_line);
  json_memory(r, m, f);
  int cb = 0;
  double fl = mkc_stage_floor(s, r->gpu, r->at, &cb);
  fprintf(f, ",\n     \"bytes_read\": %lld, \"bytes_written\": %lld, \"flops\": %lld, ",
          mkc_stage_bytes(s, 0, r->at), mkc_stage_bytes(s, 1, r->at),
          mkc_qty_eval(m->flops, r->at));
  fprintf(f, "\"flops_per_step\": ");
  json_qty(f, m->flops);
  fprintf(f, ", \"floor_s\": %.6e, \"bound\": \"%s\",\n     \"mismatches\": [", fl,
          cb ? "compute" : "memory");
  int first = 1;
  for (int k = 0; k < r->n_mismatches; k++) {
    if (r->mismatches[k].stage != i + 1) continue;
    fprintf(f, "%s", first ? "" : ", ");
    json_str(f, r->mismatches[k].what);
    first = 0;
  }
  fprintf(f, "]}");
}

/* Totals, roofline and the mismatch list that close the document. */
static void json_summary(const mkc_inspect_report *r, FILE *f) {
  long long rd = 0, wr = 0, fp = 0;
  for (int i = 0; i < r->n_stages; i++) {
    rd += mkc_stage_bytes(&r->stages[i], 0, r->at);
    wr += mkc_stage_bytes(&r->stages[i], 1, r->at);
    fp += mkc_qty_eval(r->stages[i].meta.flops, r->at);
  }
  double t = total_floor(r);
  fprintf(
      f,
      "\n  ],\n  \"totals\": {\"bytes_read\": %lld, \"bytes_written\": %lld, \"flops\": %lld},\n",
      rd, wr, fp);
  const mkc_gpu *g = r->gpu;
  json_after(f, "  \"roofline\": {\"gpu\": ", g->id);
  json_after(f, ", \"name\": ", g->name);
  fprintf(f,
          ", \"bandwidth_bytes_per_s\": %.6e, \"peak_flops\": %.6e, \"floor_s\": %.6e, "
          "\"tokens_per_s\": %.6e, \"tokens_per_s_all_accepted\": %.6e},\n",
          g->bandwidth, g->fp32, t, 1.0 / t, r->at.tokens / t);
  fprintf(f, "  \"mismatches\": [");
  for (int k = 0; k < r->n_mismatches; k++) {
    fprintf(f, "%s\n    {\"stage\": %d, \"what\": ", k ? "," : "", r->mismatches[k].stage);
    json_str(f, r->mismatches[k].what);
    fputc('}', f);
  }
  fprintf(f, "%s]\n}\n", r->n_mismatches ? "\n  " : "");
}

void mkc_inspect_print_json(const mkc_inspect_report *r, FILE *f) {
  json_kernel(r, f);
  fprintf(f, "  \"stages\": [");
  for (int i = 0; i < r->n_stages; i++) json_stage(r, i, f);
  json_summary(r, f);
}
