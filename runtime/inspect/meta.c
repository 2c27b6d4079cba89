/* The codegen view of an emitted kernel: the header and the stage comments
 * codegen/emit.lua writes (format 1, docs/INSPECT.md), read as text. */
#include "inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The header line starting with `key` (" * plan:"), or NULL. */
static const char *header_line(const char *source, const char *key) {
  const char *end = strstr(source, "*/");
  for (const char *p = source; p && (!end || p < end); p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (strncmp(p, key, strlen(key)) == 0) return p + strlen(key);
  return NULL;
}

int mkc_meta_header(const char *source, mkc_inspect_header *h, char *why, size_t why_size) {
  memset(h, 0, sizeof *h);
  char version[24];
  if (sscanf(source, "/* mkc %23s -- generated: do not edit.", version) != 1) {
    snprintf(why, why_size, "no \"/* mkc VERSION -- generated: do not edit.\" header");
    return -1;
  }
  snprintf(h->generator, sizeof h->generator, "mkc %s", version);
  const char *g = header_line(source, " * graph:"), *o = header_line(source, " * options:");
  const char *p = header_line(source, " * plan:"), *in = header_line(source, " * inspect: format");
  if (!g || sscanf(g, " %255[^,], preset %63s", h->graph, h->preset) != 2) {
    snprintf(why, why_size, "the header has no \" * graph: FILE, preset NAME\" line");
    return -1;
  }
  if (!o || sscanf(o,
                   " draft_max %d (T <= %d tokens per step), max_ctx %d, %d threads per block, <= "
                   "%d blocks",
                   &h->draft_max, &h->t_max, &h->max_ctx, &h->threads, &h->max_blocks) != 5) {
    snprintf(why, why_size, "the header's options line is not mkc's");
    return -1;
  }
  /* "N grid barriers, N flow waits;" (flow waits: templates/common.cuh), or before flow
   * waits existed "N grid barriers;" */
  int n_plan =
      p ? sscanf(p,
                 " %d stages, %d grid barriers, %d flow waits; scratch %lld floats, KV %lld "
                 "%7[^,], weights %lld bf16, smem %lld bytes",
                 &h->n_stages, &h->n_grid_barriers, &h->n_flow_waits, &h->scratch_floats,
                 &h->kv_elems, h->kv_dtype, &h->weight_elems, &h->smem_bytes)
        : 0;
  if (n_plan == 2) {
    h->n_flow_waits = 0;
    n_plan =
        1 + sscanf(p,
                   " %d stages, %d grid barriers; scratch %lld floats, KV %lld %7[^,], weights "
                   "%lld bf16, smem %lld bytes",
                   &h->n_stages, &h->n_grid_barriers, &h->scratch_floats, &h->kv_elems, h->kv_dtype,
                   &h->weight_elems, &h->smem_bytes);
  }
  if (n_plan != 8) {
    snprintf(why, why_size, "the header's plan line is not mkc's");
    return -1;
  }
  /* a slot kernel's row map (templates/slots.cuh) takes shared memory before the stages' */
  const char *rowmap = strstr(source, "\n#define MKC_ROWMAP_BYTES ");
  if (rowmap) sscanf(rowmap, "\n#define MKC_ROWMAP_BYTES %lld", &h->rowmap_bytes); /* else 0 */
  if (strcmp(h->kv_dtype, "floats") == 0) /* kernels from before the KV type was an option */
    snprintf(h->kv_dtype, sizeof h->kv_dtype, "f32");
  h->kv_elem_bytes = strcmp(h->kv_dtype, "f32") == 0                                       ? 4
                     : strcmp(h->kv_dtype, "bf16") == 0 || strcmp(h->kv_dtype, "f16") == 0 ? 2
                                                                                           : 0;
  if (!h->kv_elem_bytes) {
    snprintf(why, why_size, "the header's KV type %s is not bf16, f16 or f32", h->kv_dtype);
    return -1;
  }
  if (!in || sscanf(in, " %d", &h->format) != 1) {
    snprintf(why, why_size,
             "the header has no \" * inspect: format N\" line (a kernel from before mkc inspect: "
             "regenerate it with mkc gen)");
    return -1;
  }
  if (h->format != 1) {
    snprintf(why, why_size, "inspect format %d; this mkc reads format 1", h->format);
    return -1;
  }
  return 0;
}

/* "c+N*t+N*ctx+N*att" -> q; returns the characters read, 0 on a bad quantity. */
static int parse_qty(const char *s, mkc_qty *q) {
  memset(q, 0, sizeof *q);
  const char *p = s;
  for (;;) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p) return 0;
    p = end;
    if (*p == '*') {
      p++;
      if (strncmp(p, "ctx", 3) == 0)
        q->ctx += v, p += 3;
      else if (strncmp(p, "att", 3) == 0)
        q->att += v, p += 3;
      else if (*p == 't')
        q->t += v, p += 1;
      else
        return 0;
    } else {
      q->c += v;
    }
    if (*p != '+') break;
    p++;
  }
  return (int)(p - s);
}

/* The value of "* key: " inside the comment, up to the end of its line. */
static int field(const char *comment, const char *key, char *out, size_t size) {
  char pat[32];
  snprintf(pat, sizeof pat, "* %s: ", key);
  const char *p = strstr(comment, pat);
  if (!p) return -1;
  p += strlen(pat);
  size_t n = strcspn(p, "\n");
  if (n >= 2 && strncmp(p + n - 2, "*/", 2) == 0) n -= 2;
  while (n > 0 && p[n - 1] == ' ') n--;
  if (n >= size) n = size - 1;
  memcpy(out, p, n);
  out[n] = 0;
  return 0;
}

/* "weights+16512 8192 (blk.0.attn_q.weight), scratch+0 256*t (embed (line 31))" */
static int parse_regions(const char *s, int write, mkc_stage_meta *m) {
  if (strcmp(s, "none") == 0) return 0;
  static const char *const arenas[MKC_ARENA_COUNT] = {"weights", "scratch", "kv"};
  const char *p = s;
  while (*p) {
    if (m->n_regions == MKC_INSPECT_MAX_REGIONS) return -1;
    mkc_region *r = &m->regions[m->n_regions];
    memset(r, 0, sizeof *r);
    r->write = write;
    r->arena = -1;
    for (int a = 0; a < MKC_ARENA_COUNT; a++) {
      size_t n = strlen(arenas[a]);
      if (strncmp(p, arenas[a], n) == 0 && p[n] == '+') r->arena = a, p += n + 1;
    }
    char *end;
    r->offset = strtoll(p, &end, 10);
    if (r->arena < 0 || end == p || *end != ' ') return -1;
    p = end + 1;
    int used = parse_qty(p, &r->bytes);
    if (!used || p[used] != ' ' || p[used + 1] != '(') return -1;
    p += used + 2;
    int depth = 1;
    size_t n = 0;
    while (p[n] && depth > 0) {
      depth += (p[n] == '(') - (p[n] == ')');
      n++;
    }
    if (depth != 0) return -1;
    snprintf(r->name, sizeof r->name, "%.*s", (int)(n - 1), p);
    p += n;
    m->n_regions++;
    if (strncmp(p, ", ", 2) == 0)
      p += 2;
    else if (*p)
      return -1;
  }
  return 0;
}

/* "inv_rms 0+32, red 32+16" */
static int parse_smem(const char *s, mkc_stage_meta *m) {
  if (strcmp(s, "none") == 0) return 0;
  const char *p = s;
  while (*p) {
    if (m->n_smem == MKC_INSPECT_MAX_SMEM) return -1;
    mkc_smem_region *r = &m->smem[m->n_smem];
    int used = 0;
    if (sscanf(p, "%31s %ld+%ld%n", r->name, &r->offset, &r->bytes, &used) != 3) return -1;
    if (r->offset + r->bytes > m->smem_bytes) m->smem_bytes = r->offset + r->bytes;
    m->n_smem++;
    p += used;
    if (strncmp(p, ", ", 2) == 0) p += 2;
  }
  return 0;
}

/* The labels on the title line: "a (line 3), b (line 4)" or "no graph node". */
static int parse_labels(const char *s, mkc_stage_meta *m) {
  if (strcmp(s, "no graph node") == 0) return 0;
  const char *p = s;
  while (*p) {
    const char *end = strstr(p, "(line ");
    if (!end || !(end = strchr(end, ')'))) return -1;
    end++;
    if (m->n_nodes == MKC_INSPECT_MAX_NODES) return -1;
    m->labels[m->n_nodes++] = strndup(p, (size_t)(end - p));
    p = end;
    if (strncmp(p, ", ", 2) == 0) p += 2;
  }
  return 0;
}

int mkc_meta_stage(const char *comment, mkc_stage_meta *m, char *why, size_t why_size) {
  memset(m, 0, sizeof *m);
  char title[4096], buf[4096];
  int used = 0;
  if (sscanf(comment, "/* stage %d/%d: %31s --%n", &m->index, &m->n_stages, m->kind, &used) != 3 ||
      !used) {
    snprintf(why, why_size, "not \"/* stage I/N: KIND -- NODES\"");
    return -1;
  }
  snprintf(title, sizeof title, "%.*s", (int)strcspn(comment + used, "\n"), comment + used);
  if (parse_labels(title[0] == ' ' ? title + 1 : title, m) != 0) {
    snprintf(why, why_size, "cannot read the graph nodes in \"%s\"", title);
    return -1;
  }
  if (field(comment, "work", m->work, sizeof m->work) != 0) {
    snprintf(why, why_size, "no work line");
    return -1;
  }
  char *semi = strrchr(m->work, ';'); /* "...; smem N bytes" */
  if (semi) *semi = 0;
  if (field(comment, "nodes", buf, sizeof buf) != 0) {
    snprintf(why, why_size, "no \"nodes: ...; items: ...; flops: ...; sync: ...\" line");
    return -1;
  }
  /* nodes: 4 6 9; items: 64, one warp each; flops: 16384*t; sync: grid */
  char *items = strstr(buf, "; items: "), *flops = strstr(buf, "; flops: ");
  char *sync = strstr(buf, "; sync: ");
  if (!items || !flops || !sync) {
    snprintf(why, why_size, "the nodes line lacks items, flops or sync");
    return -1;
  }
  *items = *flops = *sync = 0;
  items += 9, flops += 9, sync += 8;
  int n_ids = 0;
  if (strcmp(buf, "none") != 0)
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " "))
      if (n_ids < MKC_INSPECT_MAX_NODES) m->nodes[n_ids++] = atoi(tok);
  if (n_ids != m->n_nodes) {
    snprintf(why, why_size, "%d node ids for %d graph nodes named in the title", n_ids, m->n_nodes);
    return -1;
  }
  used = parse_qty(items, &m->items);
  if (!used || strncmp(items + used, ", one ", 6) != 0 || !strstr(items, " each")) {
    snprintf(why, why_size, "cannot read items \"%s\"", items);
    return -1;
  }
  snprintf(m->unit, sizeof m->unit, "%.*s", (int)(strstr(items, " each") - (items + used + 6)),
           items + used + 6);
  if (!parse_qty(flops, &m->flops)) {
    snprintf(why, why_size, "cannot read flops \"%s\"", flops);
    return -1;
  }
  snprintf(m->sync, sizeof m->sync, "%s", sync);
  if (field(comment, "smem", buf, sizeof buf) != 0 || parse_smem(buf, m) != 0) {
    snprintf(why, why_size, "cannot read the smem line");
    return -1;
  }
  if (field(comment, "reads", buf, sizeof buf) != 0 || parse_regions(buf, 0, m) != 0) {
    snprintf(why, why_size, "cannot read the reads line");
    return -1;
  }
  if (field(comment, "writes", buf, sizeof buf) != 0 || parse_regions(buf, 1, m) != 0) {
    snprintf(why, why_size, "cannot read the writes line");
    return -1;
  }
  return 0;
}

void mkc_meta_free(mkc_stage_meta *m) {
  for (int i = 0; i < m->n_nodes; i++) free(m->labels[i]);
  m->n_nodes = 0;
}
