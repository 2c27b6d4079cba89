/* libFuzzer target for the JSON recognizer of constrained output
 * (util/json_accept.h), which reads whatever bytes a model's tokens spell,
 * and for the JSON schemas requests bring (util/json_schema.h). The first
 * byte picks: bit 0, an object or any value; bit 1, the rest is a schema,
 * a NUL, then the text. The text is read a byte at a time. Nothing may
 * crash, and: a refused byte leaves the state as it was; once a byte is
 * refused the recognizer refuses it again (it is a function of state and
 * byte); and a text read whole and done is JSON cJSON parses (a second
 * opinion; text with \u escapes of surrogates is left out, as cJSON
 * refuses a lone one the grammar allows).
 * Seeds in fuzz/corpus/json_accept. */
#include <cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_accept.h"
#include "util/json_schema.h"

static int has_surrogate_escape(const uint8_t *s, size_t n) {
  for (size_t i = 0; i + 2 < n; i++)
    if (s[i] == '\\' && s[i + 1] == 'u' && (s[i + 2] == 'd' || s[i + 2] == 'D')) return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const uint8_t *s = data + 1;
  size_t n = size - 1;
  mkc_json_acc a;
  mkc_json_acc_init(&a, data[0] & 1);
  mkc_schema *schema = NULL;
  if (data[0] & 2) {
    const uint8_t *nul = memchr(s, 0, n);
    if (!nul) return 0;
    char why[300];
    schema = mkc_schema_compile((const char *)s, (size_t)(nul - s), why, sizeof why);
    if (!schema) {
      if (strncmp(why, "json schema: ", 13) != 0) abort(); /* a refusal says what it is */
      return 0;
    }
    mkc_json_acc_init_schema(&a, schema);
    n -= (size_t)(nul + 1 - s);
    s = nul + 1;
  }
  size_t read = 0;
  for (; read < n; read++) {
    mkc_json_acc before = a;
    if (mkc_json_acc_byte(&a, s[read]) == 0) continue;
    if (memcmp(&a, &before, sizeof a) != 0) abort();  /* a refusal changed the state */
    if (mkc_json_acc_byte(&a, s[read]) == 0) abort(); /* and the same byte is taken after all */
    break;
  }
  if (read == n && mkc_json_acc_done(&a) && !has_surrogate_escape(s, n)) {
    cJSON *v = cJSON_ParseWithLength((const char *)s, n);
    if (!v) abort(); /* whole JSON by the recognizer, not by cJSON */
    if ((data[0] & 1) && !schema && !cJSON_IsObject(v)) abort();
    cJSON_Delete(v);
  }
  mkc_schema_free(schema);
  return 0;
}
