/* JSON as the chat templates' tojson filter writes it: Python's json.dumps
 * with ensure_ascii=False (transformers' filter), which the models were
 * tuned on: ", " and ": " between items, keys in their given order, text
 * beyond ASCII as is, control characters escaped. A model's tool
 * definitions and its calls' arguments are written this way into prompts. */
#ifndef MKC_TOJSON_H
#define MKC_TOJSON_H

struct cJSON;

/* v as json.dumps(v, ensure_ascii=False) writes it; malloc'd, NULL when out
 * of memory or v is not a JSON value. A number is written from cJSON's
 * double: a whole number below 1e16 as an integer (1.0 is written 1, and an
 * integer past 2^53 loses digits), others as repr() writes a float (0.1,
 * 1e-05, 1e+16). Where the JSON text is at hand, util/json_text.h's
 * mkc_json_python keeps every digit; this is for values built here (a
 * string) and for the rare request that spells a key with escapes. */
char *mkc_tojson(const struct cJSON *v);

#endif
