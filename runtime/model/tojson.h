/* JSON as the chat templates' tojson filter writes it: Python's json.dumps
 * with ensure_ascii=False (transformers' filter), which the models were
 * tuned on: ", " and ": " between items, keys in their given order, text
 * beyond ASCII as is, control characters escaped. A model's tool
 * definitions and its calls' arguments are written this way into prompts. */
#ifndef MKC_TOJSON_H
#define MKC_TOJSON_H

struct cJSON;

/* v as json.dumps(v, ensure_ascii=False) writes it; malloc'd, NULL when out
 * of memory or v is not a JSON value. A number is written as Python writes
 * the value its text would load as: a whole number below 1e16 as an integer
 * (1.0 in the request is written 1: cJSON keeps no difference), others as
 * repr() writes a float (0.1, 1e-05, 1e+16). */
char *mkc_tojson(const struct cJSON *v);

/* tojson(indent=N): each item of a list or object on its own line, N
 * spaces deeper than its container, "," at line ends and ": " after keys;
 * an empty list or object stays [] or {}. indent 0 is mkc_tojson. */
char *mkc_tojson_indent(const struct cJSON *v, int indent);

#endif
