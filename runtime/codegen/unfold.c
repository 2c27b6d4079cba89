/* The layer loop written out: each pass's stage comment (listed before the
 * loop) followed by the loop body with lay_i[j] and lay_w[j] replaced by the
 * pass's values from the mkc_layer_i and mkc_layer_w tables. The result is
 * the kernel codegen writes with MKC_UNFOLD=1, less nothing a reader of the
 * stages needs (tests/test_unfold.c compares the two). */
#include "unfold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lines {
  const char **at; /* start of each line in the source */
  int *len;
  int n;
} lines;

static int split_lines(const char *s, lines *l) {
  int cap = 1;
  for (const char *p = s; *p; p++) cap += *p == '\n';
  l->at = malloc((size_t)cap * sizeof *l->at);
  l->len = malloc((size_t)cap * sizeof *l->len);
  l->n = 0;
  if (!l->at || !l->len) return -1;
  for (const char *p = s; *p;) {
    const char *e = strchr(p, '\n');
    int n = e ? (int)(e - p) : (int)strlen(p);
    l->at[l->n] = p;
    l->len[l->n++] = n;
    p += n + (e ? 1 : 0);
  }
  return 0;
}

static int starts(const lines *l, int i, const char *prefix) {
  size_t n = strlen(prefix);
  return i < l->n && (size_t)l->len[i] >= n && memcmp(l->at[i], prefix, n) == 0;
}

/* A table "MKC_CONSTANT TYPE NAME[rows][cols] = {" and its rows, or none. */
typedef struct table {
  long long *v;
  int rows, cols;
} table;

static int read_table(const lines *l, const char *head, table *t, char *why, size_t why_size) {
  memset(t, 0, sizeof *t);
  for (int i = 0; i < l->n; i++) {
    if (!starts(l, i, head)) continue;
    char fmt[96];
    snprintf(fmt, sizeof fmt, "%s[%%d][%%d] = {", head);
    if (sscanf(l->at[i], fmt, &t->rows, &t->cols) != 2 || t->rows < 1 || t->cols < 1 ||
        t->rows > 100000 || t->cols > 100000) {
      snprintf(why, why_size, "line %d: a layer table without its sizes", i + 1);
      return -1;
    }
    t->v = malloc((size_t)t->rows * (size_t)t->cols * sizeof *t->v);
    if (!t->v) {
      snprintf(why, why_size, "out of memory");
      return -1;
    }
    for (int r = 0; r < t->rows; r++) {
      int at = i + 1 + r;
      const char *p = at < l->n ? l->at[at] : "";
      const char *end = at < l->n ? p + l->len[at] : p;
      while (p < end && *p == ' ') p++;
      if (p >= end || *p != '{') goto bad;
      p++;
      for (int c = 0; c < t->cols; c++) {
        char *e;
        t->v[(size_t)r * (size_t)t->cols + (size_t)c] = strtoll(p, &e, 10);
        if (e == p || e >= end || *e != (c + 1 < t->cols ? ',' : '}')) goto bad;
        p = e + 1;
      }
      continue;
    bad:
      snprintf(why, why_size, "line %d: row %d of a layer table is not %d integers", at + 1, r,
               t->cols);
      return -1;
    }
    return 0;
  }
  return 0;
}

typedef struct out {
  char *text;
  size_t len, cap;
  int *line_of, n_lines, lines_cap;
} out;

static int put(out *o, const char *s, size_t n, int from_line) {
  if (o->len + n + 2 > o->cap) {
    size_t cap = (o->len + n + 2) * 2;
    char *t = realloc(o->text, cap);
    if (!t) return -1;
    o->text = t, o->cap = cap;
  }
  if (o->n_lines + 1 > o->lines_cap) {
    int cap = (o->n_lines + 1) * 2;
    int *t = realloc(o->line_of, (size_t)cap * sizeof *t);
    if (!t) return -1;
    o->line_of = t, o->lines_cap = cap;
  }
  memcpy(o->text + o->len, s, n);
  o->len += n;
  o->text[o->len++] = '\n';
  o->text[o->len] = 0;
  o->line_of[o->n_lines++] = from_line;
  return 0;
}

/* One body line with the pass's values in place of lay_i[j] and lay_w[j]. */
static int put_pass_line(out *o, const char *s, int n, int from_line, const table *ti,
                         const table *tw, int pass, char *why, size_t why_size) {
  char buf[8192];
  size_t b = 0;
  for (int k = 0; k < n;) {
    int is_i = n - k > 6 && memcmp(s + k, "lay_i[", 6) == 0;
    int is_w = n - k > 6 && memcmp(s + k, "lay_w[", 6) == 0;
    int ident_before = k > 0 && (s[k - 1] == '_' || (s[k - 1] >= '0' && s[k - 1] <= '9') ||
                                 ((s[k - 1] | 32) >= 'a' && (s[k - 1] | 32) <= 'z'));
    if ((is_i || is_w) && !ident_before) {
      const table *t = is_i ? ti : tw;
      int j = 0, d = k + 6;
      while (d < n && s[d] >= '0' && s[d] <= '9' && j < 1000000) j = j * 10 + (s[d++] - '0');
      if (d == k + 6 || d >= n || s[d] != ']' || j >= t->cols) {
        snprintf(why, why_size, "line %d: %.6s%d] is past its table's %d columns", from_line, s + k,
                 j, t->cols);
        return -1;
      }
      b += (size_t)snprintf(buf + b, sizeof buf - b, "%lld",
                            t->v[(size_t)pass * (size_t)t->cols + (size_t)j]);
      k = d + 1;
    } else {
      buf[b++] = s[k++];
    }
    if (b + 32 >= sizeof buf) {
      snprintf(why, why_size, "line %d is too long to unfold", from_line);
      return -1;
    }
  }
  return put(o, buf, b, from_line);
}

int mkc_unfold(const char *source, mkc_unfolded *u, char *why, size_t why_size) {
  memset(u, 0, sizeof *u);
  lines l;
  table ti = {0}, tw = {0};
  out o = {0};
  int rc = -1, head = -1;
  if (split_lines(source, &l) != 0) {
    snprintf(why, why_size, "out of memory");
    goto done;
  }
  for (int i = 0; i < l.n && head < 0; i++)
    if (starts(&l, i, "  /* layer loop: stages ")) head = i;
  if (head < 0) { /* no loop: the source as it is */
    for (int i = 0; i < l.n; i++)
      if (put(&o, l.at[i], (size_t)l.len[i], i + 1) != 0) goto oom;
    rc = 0;
    goto done;
  }
  int first, last, count, period;
  if (sscanf(l.at[head], "  /* layer loop: stages %d-%d are %d passes of the %d below", &first,
             &last, &count, &period) != 4 ||
      count < 1 || period < 1 || last - first + 1 != count * period) {
    snprintf(why, why_size, "line %d: a layer loop header without its stages and passes", head + 1);
    goto done;
  }
  if (read_table(&l, "MKC_CONSTANT int mkc_layer_i", &ti, why, why_size) != 0 ||
      read_table(&l, "MKC_CONSTANT long long mkc_layer_w", &tw, why, why_size) != 0)
    goto done;
  if ((ti.v && ti.rows != count) || (tw.v && tw.rows != count)) {
    snprintf(why, why_size, "the layer tables have other than the loop's %d passes", count);
    goto done;
  }
  /* the stage comments, one per pass and stage, then the for */
  int n_st = count * period, *c_from = calloc((size_t)n_st + 1, sizeof *c_from), i = head;
  if (!c_from) goto oom;
  for (int k = 0; k < n_st; k++) {
    while (i < l.n && !starts(&l, i, "  /* stage ")) i++;
    c_from[k] = i;
    while (i < l.n && !(l.len[i] >= 2 && memcmp(l.at[i] + l.len[i] - 2, "*/", 2) == 0)) i++;
    i++;
  }
  int loop = i;
  while (loop < l.n && !starts(&l, loop, "  for (int layer = 0; layer < ")) loop++;
  if (loop < l.n &&
      !(l.len[loop] > 16 && memcmp(l.at[loop] + l.len[loop] - 16, "/* layer loop */", 16) == 0))
    loop = l.n;
  int end = loop;
  while (end < l.n && !starts(&l, end, "  } /* layer loop */")) end++;
  if (c_from[n_st - 1] >= l.n || loop >= l.n || end >= l.n) {
    snprintf(why, why_size,
             "line %d: the layer loop's %d stage comments, its for or its end are missing",
             head + 1, n_st);
    free(c_from);
    goto done;
  }
  /* the body's stages: from each "pass stage" marker to the next (or the loop's end) */
  int *b_from = calloc((size_t)period + 1, sizeof *b_from), nb = 0;
  if (!b_from) {
    free(c_from);
    goto oom;
  }
  for (int k = loop + 1; k < end; k++)
    if (starts(&l, k, "  /* pass stage ")) {
      if (nb == period) {
        nb++;
        break;
      }
      b_from[nb++] = k;
    }
  b_from[period < nb ? period : nb] = end;
  if (nb != period) {
    snprintf(why, why_size, "line %d: the layer loop has %d stages, its header says %d", loop + 1,
             nb, period);
    free(c_from), free(b_from);
    goto done;
  }
  for (int k = 0; k < head - 1; k++)
    if (put(&o, l.at[k], (size_t)l.len[k], k + 1) != 0) goto oom_both;
  for (int p = 0; p < count; p++)
    for (int s = 0; s < period; s++) {
      int c = c_from[p * period + s];
      if (put(&o, "", 0, b_from[s]) != 0) goto oom_both;
      for (int k = c; k < l.n; k++) {
        if (put(&o, l.at[k], (size_t)l.len[k], k + 1) != 0) goto oom_both;
        if (l.len[k] >= 2 && memcmp(l.at[k] + l.len[k] - 2, "*/", 2) == 0) break;
      }
      int stop = b_from[s + 1];
      while (stop > b_from[s] + 1 && l.len[stop - 1] == 0) stop--; /* the blank before the next */
      for (int k = b_from[s] + 1; k < stop; k++)
        if (put_pass_line(&o, l.at[k], l.len[k], k + 1, &ti, &tw, p, why, why_size) != 0) {
          free(c_from), free(b_from);
          goto done;
        }
    }
  for (int k = end + 1; k < l.n; k++)
    if (put(&o, l.at[k], (size_t)l.len[k], k + 1) != 0) goto oom_both;
  free(c_from), free(b_from);
  u->folded = 1;
  rc = 0;
  goto done;
oom_both:
  free(c_from), free(b_from);
oom:
  snprintf(why, why_size, "out of memory");
done:
  free(l.at), free(l.len), free(ti.v), free(tw.v);
  if (rc == 0) {
    u->text = o.text ? o.text : strdup("");
    u->line_of = o.line_of;
    u->n_lines = o.n_lines;
  } else {
    free(o.text), free(o.line_of);
  }
  return rc;
}

void mkc_unfolded_free(mkc_unfolded *u) {
  free(u->text);
  free(u->line_of);
  memset(u, 0, sizeof *u);
}
