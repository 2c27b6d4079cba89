/* See tojson.h. */
#include "tojson.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/json_text.h"

typedef mkc_buf out;

static void put(out *o, const char *s) { mkc_buf_put(o, s); }

static void put_value(out *o, const cJSON *v) {
  if (cJSON_IsNull(v)) {
    put(o, "null");
  } else if (cJSON_IsBool(v)) {
    put(o, cJSON_IsTrue(v) ? "true" : "false");
  } else if (cJSON_IsNumber(v)) {
    double x = v->valuedouble;
    char buf[32];
    if (isfinite(x) && x == floor(x) && fabs(x) < 1e16) {
      snprintf(buf, sizeof buf, "%.0f", x == 0 ? 0.0 : x); /* -0 loads as the integer 0 */
      put(o, buf);
    } else {
      mkc_json_float(o, x);
    }
  } else if (cJSON_IsString(v)) {
    mkc_json_string(o, v->valuestring);
  } else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
    int obj = cJSON_IsObject(v);
    put(o, obj ? "{" : "[");
    for (const cJSON *e = v->child; e; e = e->next) {
      if (e != v->child) put(o, ", ");
      if (obj) {
        mkc_json_string(o, e->string ? e->string : "");
        put(o, ": ");
      }
      put_value(o, e);
    }
    put(o, obj ? "}" : "]");
  } else {
    o->oom = 1; /* not a value (cJSON raw or invalid) */
  }
}

char *mkc_tojson(const cJSON *v) {
  out o = {0};
  if (!v) return NULL;
  put_value(&o, v);
  if (o.oom) {
    free(o.s);
    return NULL;
  }
  return o.s;
}
