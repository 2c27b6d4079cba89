/* See harmony_tools.h. Written from openai/gpt-oss-120b's chat template
 * and checked against jinja2's rendering of it (test_tools). */
#include "harmony_tools.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "tojson.h"

static const cJSON *item(const cJSON *o, const char *name) {
  return cJSON_GetObjectItemCaseSensitive(o, name);
}

/* Jinja's truth of a value: present, and not false, 0, "", [] or {}. */
static int truthy(const cJSON *v) {
  if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return 0;
  if (cJSON_IsNumber(v)) return v->valuedouble != 0;
  if (cJSON_IsString(v)) return v->valuestring[0] != '\0';
  if (cJSON_IsArray(v) || cJSON_IsObject(v)) return v->child != NULL;
  return 1;
}

/* A schema's properties: an object with any. Anything else (a list, say, which the template
 * would fail to walk as name and spec pairs) reads as none, so every property has a name. */
static const cJSON *properties(const cJSON *spec) {
  const cJSON *p = item(spec, "properties");
  return cJSON_IsObject(p) && p->child ? p : NULL;
}

static int type_is(const cJSON *spec, const char *type) {
  const cJSON *t = item(spec, "type");
  return cJSON_IsString(t) && strcmp(t->valuestring, type) == 0;
}

/* name is in the list required (a JSON list of strings, or absent). */
static int required(const cJSON *list, const char *name) {
  const cJSON *e;
  cJSON_ArrayForEach(e, list) if (cJSON_IsString(e) && strcmp(e->valuestring, name) == 0) return 1;
  return 0;
}

/* v as Python's str() or Jinja's "+" writes it: a string as is, anything
 * else as JSON. */
static void put_plain(mkc_buf *b, const cJSON *v) {
  if (cJSON_IsString(v)) {
    mkc_buf_put(b, v->valuestring);
    return;
  }
  char *s = mkc_tojson(v);
  mkc_buf_put(b, s ? s : "");
  free(s);
}

static void put_json(mkc_buf *b, const cJSON *v) {
  char *s = mkc_tojson(v);
  b->oom |= !s;
  if (s) mkc_buf_put(b, s);
  free(s);
}

static void put_type(mkc_buf *b, const cJSON *spec);

/* An array's type: its items' type and [], "any[]" for a long or
 * "object | object" one, " | null" when nullable. */
static void put_array(mkc_buf *b, const cJSON *spec) {
  const cJSON *items = item(spec, "items");
  static const char *const SIMPLE[][2] = {{"string", "string[]"},
                                          {"number", "number[]"},
                                          {"integer", "number[]"},
                                          {"boolean", "boolean[]"}};
  if (!truthy(items)) {
    mkc_buf_put(b, "any[]");
  } else {
    size_t k = 0;
    while (k < 4 && !type_is(items, SIMPLE[k][0])) k++;
    if (k < 4) {
      mkc_buf_put(b, SIMPLE[k][1]);
    } else {
      mkc_buf inner = {0};
      put_type(&inner, items);
      b->oom |= inner.oom;
      const char *s = inner.s ? inner.s : "";
      size_t chars = 0; /* Jinja's length: characters, not bytes */
      for (const char *c = s; *c; c++) chars += ((unsigned char)*c & 0xc0) != 0x80;
      if (strcmp(s, "object | object") == 0 || chars > 50) {
        mkc_buf_put(b, "any[]");
      } else {
        mkc_buf_put(b, s);
        mkc_buf_put(b, "[]");
      }
      free(inner.s);
    }
  }
  if (truthy(item(spec, "nullable"))) mkc_buf_put(b, " | null");
}

/* The template's render_typescript_type. */
static void put_type(mkc_buf *b, const cJSON *spec) {
  const cJSON *type = item(spec, "type"), *one_of = item(spec, "oneOf"), *e;
  if (type_is(spec, "array")) {
    put_array(b, spec);
  } else if (cJSON_IsArray(type) && type->child) { /* a list of types */
    cJSON_ArrayForEach(e, type) {
      if (e != type->child) mkc_buf_put(b, " | ");
      put_plain(b, e);
    }
  } else if (truthy(one_of)) {
    /* the template's has_object_variants is set inside a loop, which Jinja
     * scopes: it never becomes "any" */
    cJSON_ArrayForEach(e, one_of) {
      put_type(b, e);
      const cJSON *d = item(e, "description"), *dflt = item(e, "default");
      if (truthy(d)) {
        mkc_buf_put(b, "// ");
        put_plain(b, d);
      }
      if (dflt) {
        mkc_buf_put(b, "                    // default: ");
        put_json(b, dflt);
      }
      if (e->next) mkc_buf_put(b, " | \n");
    }
  } else if (type_is(spec, "string")) {
    const cJSON *values = item(spec, "enum");
    if (truthy(values)) {
      mkc_buf_put(b, "\"");
      cJSON_ArrayForEach(e, values) {
        if (e != values->child) mkc_buf_put(b, "\" | \"");
        put_plain(b, e);
      }
      mkc_buf_put(b, "\"");
    } else {
      mkc_buf_put(b, "string");
      if (truthy(item(spec, "nullable"))) mkc_buf_put(b, " | null");
    }
  } else if (type_is(spec, "number") || type_is(spec, "integer")) {
    mkc_buf_put(b, "number");
  } else if (type_is(spec, "boolean")) {
    mkc_buf_put(b, "boolean");
  } else if (type_is(spec, "object")) {
    const cJSON *props = properties(spec), *req = item(spec, "required");
    if (!props) {
      mkc_buf_put(b, "object");
      return;
    }
    mkc_buf_put(b, "{\n");
    cJSON_ArrayForEach(e, props) {
      mkc_buf_put(b, e->string);
      if (!required(req, e->string)) mkc_buf_put(b, "?");
      mkc_buf_put(b, ": \n                "); /* the template's own indentation */
      put_type(b, e);
      if (e->next) mkc_buf_put(b, ", ");
    }
    mkc_buf_put(b, "}");
  } else {
    mkc_buf_put(b, "any");
  }
}

/* One function: its description as a comment, then its type. */
static void put_function(mkc_buf *b, const cJSON *f) {
  const cJSON *name = item(f, "name"), *desc = item(f, "description"),
              *params = item(f, "parameters"), *props = properties(params),
              *req = item(params, "required"), *p;
  mkc_buf_put(b, "// ");
  if (desc) put_plain(b, desc);
  mkc_buf_put(b, "\ntype ");
  put_plain(b, name);
  mkc_buf_put(b, " = ");
  if (!truthy(params) || !props) {
    mkc_buf_put(b, "() => any;\n\n");
    return;
  }
  mkc_buf_put(b, "(_: {\n");
  cJSON_ArrayForEach(p, props) {
    const cJSON *d = item(p, "description"), *dflt = item(p, "default");
    if (truthy(d)) {
      mkc_buf_put(b, "// ");
      put_plain(b, d);
      mkc_buf_put(b, "\n");
    }
    mkc_buf_put(b, p->string);
    if (!required(req, p->string)) mkc_buf_put(b, "?");
    mkc_buf_put(b, ": ");
    put_type(b, p);
    if (dflt) {
      if (truthy(item(p, "enum"))) {
        mkc_buf_put(b, ", // default: ");
        put_plain(b, dflt);
      } else if (truthy(item(p, "oneOf"))) {
        mkc_buf_put(b, "// default: ");
        put_plain(b, dflt);
      } else {
        mkc_buf_put(b, ", // default: ");
        put_json(b, dflt);
      }
    }
    mkc_buf_put(b, ",\n");
  }
  mkc_buf_put(b, "}) => any;\n\n");
}

void mkc_harmony_tools(mkc_buf *b, const char *const *tools, int n) {
  mkc_buf_put(b, "## functions\n\nnamespace functions {\n\n");
  for (int k = 0; k < n; k++) {
    cJSON *t = cJSON_Parse(tools[k]);
    const cJSON *f = item(t, "function");
    if (cJSON_IsObject(f)) put_function(b, f);
    cJSON_Delete(t);
  }
  mkc_buf_put(b, "} // namespace functions");
}
