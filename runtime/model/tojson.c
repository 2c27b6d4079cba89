/* See tojson.h. */
#include "tojson.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

typedef mkc_buf out;

static void put_n(out *o, const char *s, size_t n) { mkc_buf_put_n(o, s, n); }
static void put(out *o, const char *s) { mkc_buf_put(o, s); }

/* Python's json string: \" \\ \n \r \t \b \f, other control characters as
 * \u00xx (lower case), every other byte as is. */
static void put_string(out *o, const char *s) {
  put(o, "\"");
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    char esc[8];
    switch (*c) {
    case '"':
      put(o, "\\\"");
      break;
    case '\\':
      put(o, "\\\\");
      break;
    case '\n':
      put(o, "\\n");
      break;
    case '\r':
      put(o, "\\r");
      break;
    case '\t':
      put(o, "\\t");
      break;
    case '\b':
      put(o, "\\b");
      break;
    case '\f':
      put(o, "\\f");
      break;
    default:
      if (*c < 0x20) {
        snprintf(esc, sizeof esc, "\\u%04x", *c);
        put(o, esc);
      } else {
        put_n(o, (const char *)c, 1);
      }
    }
  }
  put(o, "\"");
}

/* repr() of a float: the fewest significant digits that read back as x,
 * positional when the decimal exponent is in -4..15 (with ".0" when whole),
 * else d.ddde+XX. */
static void put_float(out *o, double x) {
  char e[40];
  int p = 1;
  for (; p < 17; p++) {
    snprintf(e, sizeof e, "%.*e", p - 1, x);
    if (strtod(e, NULL) == x) break;
  }
  snprintf(e, sizeof e, "%.*e", p - 1, x);
  /* e: [-]d[.ddd]e(+|-)XX */
  char digits[24], buf[64];
  int nd = 0, neg = e[0] == '-';
  const char *c = e + neg;
  for (; *c && *c != 'e'; c++)
    if (*c != '.') digits[nd++] = *c;
  digits[nd] = '\0';
  int exp = atoi(c + 1);
  char *w = buf;
  if (neg) *w++ = '-';
  if (exp < -4 || exp >= 16) {
    *w++ = digits[0];
    if (nd > 1) w += sprintf(w, ".%s", digits + 1);
    sprintf(w, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  } else if (exp < 0) {
    w += sprintf(w, "0.");
    for (int k = 0; k < -exp - 1; k++) *w++ = '0';
    sprintf(w, "%s", digits);
  } else {
    for (int k = 0; k <= exp; k++) *w++ = k < nd ? digits[k] : '0';
    *w++ = '.';
    if (nd > exp + 1)
      sprintf(w, "%s", digits + exp + 1);
    else
      sprintf(w, "0");
  }
  put(o, buf);
}

/* A new line at depth levels of indent spaces. */
static void put_line(out *o, int indent, int depth) {
  put(o, "\n");
  for (int k = 0; k < indent * depth; k++) put(o, " ");
}

static void put_value(out *o, const cJSON *v, int indent, int depth) {
  if (cJSON_IsNull(v)) {
    put(o, "null");
  } else if (cJSON_IsBool(v)) {
    put(o, cJSON_IsTrue(v) ? "true" : "false");
  } else if (cJSON_IsNumber(v)) {
    double x = v->valuedouble;
    char buf[32];
    if (!isfinite(x)) { /* JSON has none; cJSON reads none */
      put(o, isnan(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity");
    } else if (x == floor(x) && fabs(x) < 1e16) {
      snprintf(buf, sizeof buf, "%.0f", x == 0 ? 0.0 : x); /* -0 loads as the integer 0 */
      put(o, buf);
    } else {
      put_float(o, x);
    }
  } else if (cJSON_IsString(v)) {
    put_string(o, v->valuestring);
  } else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
    int obj = cJSON_IsObject(v);
    put(o, obj ? "{" : "[");
    for (const cJSON *e = v->child; e; e = e->next) {
      if (e != v->child) put(o, indent ? "," : ", ");
      if (indent) put_line(o, indent, depth + 1);
      if (obj) {
        put_string(o, e->string ? e->string : "");
        put(o, ": ");
      }
      put_value(o, e, indent, depth + 1);
    }
    if (indent && v->child) put_line(o, indent, depth);
    put(o, obj ? "}" : "]");
  } else {
    o->oom = 1; /* not a value (cJSON raw or invalid) */
  }
}

char *mkc_tojson(const cJSON *v) { return mkc_tojson_indent(v, 0); }

char *mkc_tojson_indent(const cJSON *v, int indent) {
  out o = {0};
  if (!v) return NULL;
  put_value(&o, v, indent, 0);
  if (o.oom) {
    free(o.s);
    return NULL;
  }
  return o.s;
}
