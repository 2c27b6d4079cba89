/* Constrained JSON output. The recognizer (util/json_accept.h) on the
 * grammar's cases, the index of the first refused byte written by hand from
 * RFC 8259 and RFC 3629, and on random documents written by a generator of
 * valid JSON (cJSON parses each: a second opinion) of which every prefix
 * must be taken; the trie walk of the vocabulary (mkc_constraint_mask)
 * against trying each token alone, on a made-up vocabulary and SmolLM2's;
 * the choice against the sampling oracle over the allowed tokens (greedy
 * with and without its shortcut, draws by chi-square, log-probabilities),
 * with planted bugs the draws' test must catch; and the decode loop on a
 * tiny model: each token it emits is the constrained argmax of the
 * reference executor's logits after the tokens before it; and sequences
 * decoded together on a slot kernel (exec/batch.h), constrained or not,
 * each what the decode loop gives it alone. */
#include <cJSON.h>
#include <stdint.h>

#include "check.h"
#include "fixture.h"
#include "slot_kernels.h"
#include "stats.h"

#include "exec/batch.h"
#include "exec/constrain.h"
#include "exec/decode.h"
#include "exec/draft.h"
#include "exec/sampler_ref.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "util/json_accept.h"
#include "util/json_schema.h"

#define P_MIN 0.001

/* ---- the recognizer ---- */

/* The index of the first byte refused in s[0..n), or -1 when none is. */
static long first_refused(const char *s, size_t n, int object_only) {
  mkc_json_acc a;
  mkc_json_acc_init(&a, object_only);
  for (size_t i = 0; i < n; i++)
    if (mkc_json_acc_byte(&a, (unsigned char)s[i]) != 0) return (long)i;
  return -1;
}

static int whole(const char *s, int object_only) {
  mkc_json_acc a;
  mkc_json_acc_init(&a, object_only);
  return mkc_json_acc_text(&a, s, strlen(s)) == 0 && mkc_json_acc_done(&a);
}

static void test_grammar(void) {
  static const char *const valid[] = {
      "{}",
      "[]",
      "{\"a\":1}",
      " {\n  \"a\": [1, 2, {\"b\": null}],\r\n  \"c\": true, \"d\": false\n} ",
      "-0",
      "0.5e+10",
      "1E-2",
      "-12.340e5",
      "\"\\u00e9\\n\\\"\\\\\\/\\b\\f\\r\\t\"",
      "\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xed\x9f\xbf \xf4\x8f\xbf\xbf\"",
      "[\"\\ud800\"]", /* a lone surrogate by escape: the grammar allows it */
      "{\"\":{\"\":[[],{}]}}",
      "true",
      "null",
  };
  for (size_t i = 0; i < sizeof valid / sizeof *valid; i++) {
    size_t n = strlen(valid[i]);
    CHECK(first_refused(valid[i], n, 0) == -1 && whole(valid[i], 0), "valid: %s", valid[i]);
  }
  /* the first byte JSON refuses; object_only where the case says */
  static const struct {
    const char *s;
    long at;
    int object_only;
  } refused[] = {
      {"{,", 1, 0},
      {"{\"a\" 1}", 5, 0},
      {"[01]", 2, 0},
      {"[1.]", 3, 0},
      {"[1.e5]", 3, 0},
      {"[-]", 2, 0},
      {"[+1]", 1, 0},
      {"{\"a\":tru}", 8, 0},
      {"\"\\x\"", 2, 0},
      {"\"\\u12g4\"", 5, 0},
      {"\"a\x01\"", 2, 0},
      {"[1,]", 3, 0},
      {"{\"a\":1,}", 7, 0},
      {"[1 2]", 3, 0},
      {"{\"a\":1]", 6, 0},
      {"[}", 1, 0},
      {"{\"a\"}", 4, 0},
      {"1 2", 2, 0},
      {"[1]", 0, 1},
      {"\"x\"", 0, 1},
      {" 5", 1, 1},
      {"{}x", 2, 1},
      {"{}{}", 2, 1},
      {"[1e5.0]", 4, 0},
      {"[1e]", 3, 0},
      {"[1e+]", 4, 0},
      {"[.5]", 1, 0},
      {"[--1]", 2, 0},
      {"[nul]", 4, 0},
      {"[True]", 1, 0},
      {"{1:2}", 1, 0},
      {"{\"a\"::1}", 5, 0},
      {"[\"\t\"]", 2, 0},
      {"\"\xc0\x80\"", 1, 0},         /* an overlong lead */
      {"\"\xe0\x80\x80\"", 2, 0},     /* overlong: E0 needs A0..BF next */
      {"\"\xed\xa0\x80\"", 2, 0},     /* a surrogate, UTF-8 encoded */
      {"\"\xf4\x90\x80\x80\"", 2, 0}, /* past U+10FFFF */
      {"\"\xf5\x80\x80\x80\"", 1, 0},
      {"\"\x80\"", 1, 0},
      {"\"\xc3\x41\"", 2, 0}, /* a lead without its continuation */
      {"\"\xe2\x82\"", 3, 0}, /* the string ends mid-character */
      {"\xc3\xa9", 0, 0},     /* text outside a string is ASCII */
  };
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    size_t n = strlen(refused[i].s);
    long got = first_refused(refused[i].s, n, refused[i].object_only);
    CHECK(got == refused[i].at, "refused at byte %ld%s: %s (got %ld)", refused[i].at,
          refused[i].object_only ? " (an object)" : "", refused[i].s, got);
  }
  /* a refused byte leaves the state as it was */
  mkc_json_acc a, b;
  mkc_json_acc_init(&a, 1);
  mkc_json_acc_text(&a, "{\"k\": 1", 7);
  b = a;
  CHECK(mkc_json_acc_byte(&a, 'x') != 0 && memcmp(&a, &b, sizeof a) == 0 &&
            mkc_json_acc_text(&a, "2}", 2) == 0 && mkc_json_acc_done(&a),
        "a refused byte leaves the state as it was, and the document goes on");

  /* the bounds: nesting, whitespace runs, line feeds */
  char deep[2 * MKC_JSON_DEPTH_MAX + 4];
  memset(deep, '[', MKC_JSON_DEPTH_MAX + 1);
  CHECK(first_refused(deep, MKC_JSON_DEPTH_MAX + 1, 0) == MKC_JSON_DEPTH_MAX,
        "%d lists deep are taken, one more is refused", MKC_JSON_DEPTH_MAX);
  memset(deep + MKC_JSON_DEPTH_MAX, ']', MKC_JSON_DEPTH_MAX);
  deep[2 * MKC_JSON_DEPTH_MAX] = 0;
  CHECK(whole(deep, 0), "and closed, they are a document");
  char ws[MKC_JSON_WS_MAX + 4] = "{";
  memset(ws + 1, ' ', MKC_JSON_WS_MAX + 1);
  CHECK(first_refused(ws, MKC_JSON_WS_MAX + 2, 1) == MKC_JSON_WS_MAX + 1,
        "a run of %d spaces is taken, one more is refused", MKC_JSON_WS_MAX);
  CHECK(first_refused("{ \r\n  \"a\" :\n1}", 14, 1) == -1, "one line feed a run, CR LF included");
  CHECK(first_refused("{\n\n", 3, 1) == 2 && first_refused("{ \n \n", 5, 1) == 4,
        "a second line feed in a run is refused");
  CHECK(first_refused("{} \n", 4, 1) == -1 && whole("{} \n", 1),
        "whitespace after the whole object is taken, and it stays whole");
  CHECK(!whole("{\"a\":", 1) && !whole("", 1) && whole("12", 0) && !whole("12.", 0) &&
            !whole("[1", 0),
        "whole: only a complete document (a top-level number that could go on counts)");
}

/* ---- random documents ---- */

static uint64_t rng_state = 12345;
static unsigned next_rand(unsigned n) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(rng_state >> 33) % n;
}

typedef struct text {
  char s[8192];
  size_t n;
} text;

static void put(text *t, const char *s) {
  size_t n = strlen(s);
  if (t->n + n < sizeof t->s) memcpy(t->s + t->n, s, n), t->n += n;
}

/* Whitespace a model might write: none, a space, or a line feed and indentation. */
static void put_ws(text *t) {
  static const char *const WS[] = {"", "", " ", "\n  ", "\r\n\t", "  "};
  put(t, WS[next_rand(6)]);
}

static void put_string(text *t) {
  static const char *const PARTS[] = {"a",        "name",         " ",
                                      "\\n",      "\\\"",         "\\\\",
                                      "\\/",      "\\u00E9",      "\\uD83D\\uDE00",
                                      "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                      "{[,:]}",   "1e5"};
  put(t, "\"");
  for (unsigned k = next_rand(5); k > 0; k--) put(t, PARTS[next_rand(14)]);
  put(t, "\"");
}

static void put_value(text *t, int depth) {
  static const char *const NUMS[] = {"0", "-0", "12", "-3.25", "6.02e23", "1E-9", "0.5e+1", "7"};
  static const char *const LITS[] = {"true", "false", "null"};
  unsigned kind = depth >= 4 ? next_rand(3) : next_rand(5);
  if (kind == 0) put(t, NUMS[next_rand(8)]);
  if (kind == 1) put_string(t);
  if (kind == 2) put(t, LITS[next_rand(3)]);
  if (kind == 3 || kind == 4) {
    int object = kind == 3;
    put(t, object ? "{" : "[");
    for (unsigned i = 0, n = next_rand(4); i < n; i++) {
      if (i) put(t, ",");
      put_ws(t);
      if (object) {
        put_string(t);
        put_ws(t);
        put(t, ":");
        put_ws(t);
      }
      put_value(t, depth + 1);
      put_ws(t);
    }
    put(t, object ? "}" : "]");
  }
}

static void test_random_documents(void) {
  int bad = 0, unparsed = 0, early = 0;
  for (int d = 0; d < 2000; d++) {
    text t = {.n = 0};
    put_ws(&t);
    if (d % 2)
      put_value(&t, 0);
    else {
      t.n = 0;
      put(&t, "{");
      put_ws(&t);
      put_string(&t);
      put(&t, ":");
      put_value(&t, 1);
      put(&t, "}");
    }
    t.s[t.n] = 0;
    cJSON *v = cJSON_ParseWithLength(t.s, t.n);
    unparsed += !v;
    cJSON_Delete(v);
    int object_only = d % 2 == 0;
    mkc_json_acc a;
    mkc_json_acc_init(&a, object_only);
    for (size_t i = 0; i < t.n; i++) {
      if (mkc_json_acc_byte(&a, (unsigned char)t.s[i]) != 0) {
        if (bad++ < 3) printf("     | refused at %zu: %s\n", i, t.s);
        break;
      }
      /* an object is whole only at its last byte (the documents end with no whitespace) */
      if (object_only && i + 1 < t.n && mkc_json_acc_done(&a)) early++;
    }
    if (!mkc_json_acc_done(&a)) bad++;
  }
  CHECK(unparsed == 0, "2000 random documents: cJSON parses every one (the generator writes JSON)");
  CHECK(bad == 0, "every prefix of each is taken, and each is whole at its end (%d not)", bad);
  CHECK(early == 0, "an object is whole only at its closing brace (%d earlier)", early);
}

/* ---- a made-up vocabulary ---- */

#define VOCAB 256
static char vocab_bytes[VOCAB * 8];
static uint32_t vocab_off[VOCAB + 1];
static uint8_t vocab_plain[VOCAB];
static int id_of_eot;

/* Printable ASCII, then pieces a JSON answer is made of, split UTF-8, a
 * control token, an empty one, words to the end. */
static mkc_vocab_text made_up_vocab(void) {
  static const char *const PIECES[] = {
      "\n",       "{\"",      "\"}",  "\":",  "\",",      ", \"",     "\": \"",       "true",
      "false",    "null",     "\n  ", "}\n",  "12",       "3.5",      "e-7",          "\\u00",
      "\\n",      "\xc3\xa9", "\xc3", "\xa9", "\xf0\x9f", "\x98\x80", "\xe2\x82\xac", "  ",
      "\"name\"", "\"age\":", "[{",   "}]",   "\t",       "\r\n",     "<|eot|>",      "",
      "\\",       "\\\"",     "\"\"", "{}",   "[]",       ",\n  \"",  "-0."};
  size_t at = 0;
  int id = 0;
  for (int c = 0x20; c < 0x7f; c++, id++) {
    vocab_off[id] = (uint32_t)at;
    vocab_bytes[at++] = (char)c;
    vocab_plain[id] = 1;
  }
  for (size_t k = 0; k < sizeof PIECES / sizeof *PIECES; k++, id++) {
    vocab_off[id] = (uint32_t)at;
    memcpy(vocab_bytes + at, PIECES[k], strlen(PIECES[k]));
    at += strlen(PIECES[k]);
    vocab_plain[id] = strcmp(PIECES[k], "<|eot|>") != 0;
    if (!vocab_plain[id]) id_of_eot = id;
  }
  for (; id < VOCAB; id++) {
    vocab_off[id] = (uint32_t)at;
    vocab_bytes[at++] = (char)('a' + id % 26);
    vocab_bytes[at++] = (char)('a' + id / 26 % 26);
    vocab_plain[id] = 1;
  }
  vocab_off[VOCAB] = (uint32_t)at;
  return (mkc_vocab_text){VOCAB, vocab_bytes, vocab_off, vocab_plain};
}

/* The answers the tests put the constraint in: each a prefix of a document. */
static const char *const STATES[] = {
    "",
    "{",
    "{\"na",
    "{\"name\"",
    "{\"name\": ",
    "{\"a\": 1",
    "{\"a\": 1.",
    "{\"a\": [",
    "{\"a\": \"x\xc3",
    "{\"a\": \"\\u0",
    "{\"a\": t",
    "{\"a\": [1, {\"b\": -",
    "{\"a\":\n  ",
    "{\"a\": 1}",
    "{\"a\": \"\xf0\x9f",
};
#define N_STATES (int)(sizeof STATES / sizeof *STATES)

/* c started and fed state's text; 0, or -1 when a token cannot spell it (byte by byte here). */
static int feed_seed(mkc_constraint *c, const char *state, uint64_t seed) {
  mkc_constraint_start(c, 1, seed);
  for (const char *p = state; *p; p++) {
    int id = -1;
    for (int i = 0; i < VOCAB && id < 0; i++)
      if (vocab_off[i + 1] - vocab_off[i] == 1 && vocab_bytes[vocab_off[i]] == *p) id = i;
    if (id < 0) { /* a byte with no single-byte token: its piece */
      for (int i = 0; i < VOCAB && id < 0; i++)
        if (vocab_off[i + 1] - vocab_off[i] >= 1 && vocab_bytes[vocab_off[i]] == *p &&
            strncmp(vocab_bytes + vocab_off[i], p, vocab_off[i + 1] - vocab_off[i]) == 0)
          id = i;
      if (id >= 0) p += vocab_off[id + 1] - vocab_off[id] - 1;
    }
    if (id < 0 || mkc_constraint_accept(c, id) != 0) return -1;
  }
  return 0;
}

static int feed(mkc_constraint *c, const char *state) { return feed_seed(c, state, 99); }

/* The tokens that may come next, each tried alone from the state's text. */
static int brute_force(const mkc_vocab_text *v, const char *state, uint8_t *allowed, int n) {
  int count = 0;
  for (int i = 0; i < n; i++) {
    allowed[i] = 0;
    if (i >= v->n || !v->plain[i] || v->off[i + 1] == v->off[i]) continue;
    mkc_json_acc a;
    mkc_json_acc_init(&a, 1);
    if (mkc_json_acc_text(&a, state, strlen(state)) != 0) return -1;
    if (mkc_json_acc_text(&a, v->bytes + v->off[i], v->off[i + 1] - v->off[i]) == 0)
      allowed[i] = 1, count++;
  }
  return count;
}

static void test_mask_made_up(void) {
  mkc_vocab_text v = made_up_vocab();
  mkc_constraint *c = mkc_constraint_open(&v);
  if (!CHECK(c != NULL, "the made-up vocabulary sorts")) return;
  uint8_t got[VOCAB + 8], want[VOCAB + 8];
  for (int s = 0; s < N_STATES; s++) {
    if (!CHECK(feed(c, STATES[s]) == 0, "state '%s' is reached token by token", STATES[s]))
      continue;
    int n = mkc_constraint_mask(c, got, VOCAB + 8), m = brute_force(&v, STATES[s], want, VOCAB + 8);
    int same = n == m && memcmp(got, want, VOCAB + 8) == 0, agree = 1;
    for (int i = 0; i < VOCAB + 8; i++) agree &= mkc_constraint_allowed(c, i) == want[i];
    CHECK(same && agree && !got[id_of_eot],
          "after '%s': the trie walk allows the %d tokens that each alone may come next (%d), "
          "never the control token",
          STATES[s], m, n);
  }
  mkc_constraint_close(c);
}

/* SmolLM2's 49152 tokens as its tokenizer prints them. */
static void test_mask_smollm2(void) {
  char path[1024];
  if (test_data_path("SmolLM2-135M-Instruct.Q4_1.gguf", path, sizeof path) != 0) return;
  mkc_model_file mf;
  if (!CHECK(mkc_model_file_open(path, &mf) == 0, "SmolLM2: the model file opens")) return;
  int n = mkc_tokenizer_n_vocab(mf.tok);
  uint8_t *plain = malloc((size_t)n), *got = malloc((size_t)n), *want = malloc((size_t)n);
  for (int i = 0; i < n; i++) plain[i] = (uint8_t)mkc_tokenizer_is_text(mf.tok, i);
  mkc_vocab_text v = {.n = n, .plain = plain};
  v.bytes = mkc_tokenizer_pieces(mf.tok, &v.off);
  mkc_constraint *c = mkc_constraint_open(&v);
  int all = c != NULL, total = 0;
  for (int s = 0; c && s < N_STATES; s++) {
    mkc_constraint_start(c, 1, 1);
    /* the state's text through the model's own tokens */
    int *ids = NULL, k = mkc_tokenizer_encode(mf.tok, STATES[s], strlen(STATES[s]), 0, 0, &ids);
    int fed = k >= 0;
    char said[256]; /* the text the tokens spell: a split character became U+FFFD */
    size_t at = 0;
    for (int i = 0; i < k && fed; i++) {
      uint32_t len = v.off[ids[i] + 1] - v.off[ids[i]];
      fed = at + len < sizeof said && mkc_constraint_accept(c, ids[i]) == 0;
      if (fed) memcpy(said + at, v.bytes + v.off[ids[i]], len), at += len;
    }
    said[at] = 0;
    free(ids);
    if (!CHECK(fed, "SmolLM2: '%s' is spelled in its tokens", STATES[s])) continue;
    int m = mkc_constraint_mask(c, got, n), b = brute_force(&v, said, want, n);
    all &= m == b && memcmp(got, want, (size_t)n) == 0;
    total += m;
  }
  CHECK(all && total > 0,
        "SmolLM2: the trie walk equals each token tried alone in every state "
        "(%d allowed in all)",
        total);
  int im_end = mkc_tokenizer_find(mf.tok, "<|im_end|>", 10);
  mkc_constraint_start(c, 1, 1);
  mkc_constraint_accept(c, mkc_tokenizer_find(mf.tok, "{", 1));
  mkc_constraint_accept(c, mkc_tokenizer_find(mf.tok, "\"", 1));
  CHECK(im_end >= 0 && !mkc_constraint_allowed(c, im_end),
        "SmolLM2: <|im_end|> is not allowed even inside a string, where its text would be");
  mkc_constraint_close(c);
  free(plain), free(got), free(want);
  mkc_model_file_close(&mf);
}

/* ---- schemas ---- */

static mkc_schema *schema(const char *text) {
  char why[300];
  mkc_schema *s = mkc_schema_compile(text, strlen(text), why, sizeof why);
  if (!s) printf("     | %s\n", why);
  return s;
}

/* The index of the first byte the schema's recognizer refuses, or -1; *whole: a whole document. */
static long schema_refused(const mkc_schema *sch, const char *s, int *whole) {
  mkc_json_acc a;
  mkc_json_acc_init_schema(&a, sch);
  for (size_t i = 0; s[i]; i++)
    if (mkc_json_acc_byte(&a, (unsigned char)s[i]) != 0) return (long)i;
  *whole = mkc_json_acc_done(&a);
  return -1;
}

static void test_schema_compile(void) {
  static const struct {
    const char *schema, *why;
  } refused[] = {
      {"{\"type\": \"string\", \"pattern\": \"a+\"}", "\"pattern\" is not offered"},
      {"{\"type\": \"integer\", \"minimum\": 0}", "\"minimum\" is not offered"},
      {"{\"type\": \"string\", \"format\": \"date\"}", "\"format\" is not offered"},
      {"{\"allOf\": [{}]}", "\"allOf\" is not offered"},
      {"{\"anyOf\": [{\"type\": \"object\"}, {\"type\": \"object\", \"properties\": {}}]}",
       "two alternatives of the same type"},
      {"{\"anyOf\": [{\"enum\": [1]}, {\"type\": \"string\"}]}", "an alternative of any value"},
      {"{\"$ref\": \"#/$defs/missing\"}", "names nothing here"},
      {"{\"type\": \"object\", \"properties\": {\"a\": {}}, \"required\": [\"b\"]}",
       "required names \"b\", which is not among its properties"},
      {"{\"type\": \"text\"}", "type \"text\" is not a JSON Schema type"},
      {"{\"type\": \"array\", \"minItems\": 3, \"maxItems\": 2}", "minItems 3 is past maxItems 2"},
      {"{\"type\": \"array\", \"maxItems\": 1000}", "past 255 are not offered"},
      {"{\"type\": \"object\", \"properties\": {\"a\\\"b\": {}}}", "would need escapes"},
      {"[1]", "a schema must be an object"},
      {"{\"type\": ", "not JSON"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    char why[300] = "";
    mkc_schema *s =
        mkc_schema_compile(refused[i].schema, strlen(refused[i].schema), why, sizeof why);
    CHECK(!s && strstr(why, refused[i].why) && strncmp(why, "json schema: ", 13) == 0,
          "schema refused: %s (%s)", refused[i].schema, why);
    mkc_schema_free(s);
  }
  mkc_schema *s = schema("{\"title\": \"t\", \"description\": \"d\", \"$schema\": \"x\", \"type\": "
                         "\"object\", \"properties\": {\"a\": {\"type\": \"string\", "
                         "\"description\": \"x\", \"default\": \"y\"}}, "
                         "\"additionalProperties\": false}");
  CHECK(s != NULL, "annotations are read past, additionalProperties taken");
  mkc_schema_free(s);
}

/* [0,0,...,0]: 300 items */
#define LONG_LIST long_list()
static const char *long_list(void) {
  static char s[700];
  if (!s[0]) {
    size_t n = 0;
    s[n++] = '[';
    for (int i = 0; i < 300; i++) s[n++] = '0', s[n++] = ',';
    s[n - 1] = ']';
  }
  return s;
}

static void test_schema_documents(void) {
  const struct {
    const char *schema, *doc;
    long at; /* the first byte refused, or -1 (then the document is whole) */
  } cases[] = {
#define S1                                                                                         \
  "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}, \"b\": {\"type\": "     \
  "\"string\"}, \"c\": {\"enum\": [\"x\", \"yz\", 1, null]}}, \"required\": [\"a\", \"c\"]}"
      {S1, "{\"a\":1,\"c\":\"x\"}", -1},
      {S1, "{ \"a\": -20, \"b\": \"s\\n\", \"c\": null }", -1},
      {S1, "{\"a\":1,\"c\":1}", -1},
      {S1, "{\"c\":\"x\"}", 2}, /* a is required first */
      {S1, "{\"b\":\"s\"}", 2}, /* and b comes after a */
      {S1, "{\"a\":1.5", 6},    /* an integer */
      {S1, "{\"a\":1e3", 6},
      {S1, "{\"a\":1}", 6},              /* c is required */
      {S1, "{\"a\":1,\"b\":2", 11},      /* b is a string */
      {S1, "{\"a\":1,\"c\":\"xy\"", 13}, /* not an enum value */
      {S1, "{\"a\":1,\"c\":12}", 12},    /* 1 is, 12 is not */
      {S1, "{\"a\":1,\"c\":null,", 15},  /* no property is left */
      {S1, "{\"a\":1,\"a\":2}", 8},      /* nor a second a */
      {S1, "{\"a\":1,\"d\":2}", 8},      /* nor one not declared */
      {S1, "[1]", 0},
#define S2                                                                                         \
  "{\"type\": \"array\", \"items\": {\"type\": \"boolean\"}, \"minItems\": 1, \"maxItems\": 2}"
      {S2, "[true]", -1},
      {S2, "[true, false]", -1},
      {S2, "[]", 1},
      {S2, "[true,false,", 11},
      {S2, "[1]", 1},
#define S8 "{\"type\": \"array\", \"items\": {\"type\": \"integer\"}}"
      {S8, LONG_LIST, -1}, /* no maxItems: no bound (300 items) */
#define S3 "{\"type\": [\"string\", \"null\"]}"
      {S3, "null", -1},
      {S3, "\"a\"", -1},
      {S3, "1", 0},
#define S4                                                                                         \
  "{\"$defs\": {\"node\": {\"type\": \"object\", \"properties\": {\"v\": {\"type\": "              \
  "\"integer\"}, "                                                                                 \
  "\"kids\": {\"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/node\"}}}, \"required\": "      \
  "[\"v\"]}}, \"$ref\": \"#/$defs/node\"}"
      {S4, "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}", -1},
      {S4, "{\"v\":1,\"kids\":[{\"kids\":[]}]}", 17},
#define S5                                                                                         \
  "{\"type\": \"object\", \"properties\": {\"a\": {}, \"b\": {\"type\": \"object\"}}, "            \
  "\"required\": [\"a\", \"b\"]}"
      {S5, "{\"a\":[1,{\"x\":\"y\"}],\"b\":{\"z\":[null]}}", -1},
      {S5, "{\"a\":true,\"b\":[]}", 14}, /* b is an object (of any members) */
#define S6                                                                                         \
  "{\"anyOf\": [{\"type\": \"array\", \"items\": {\"type\": \"integer\"}}, {\"type\": "            \
  "\"number\"}]}"
      {S6, "[1,2]", -1},
      {S6, "2.5", -1},
      {S6, "[1.5]", 2},
#define S7 "{\"const\": {\"k\": [1, \"\\u00e9\"]}}"
      {S7, "{\"k\":[1,\"\xc3\xa9\"]}", -1},
      {S7, "{\"k\": [1", 5}, /* the value's own text, compact */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    mkc_schema *s = schema(cases[i].schema);
    int whole = 0;
    long at = s ? schema_refused(s, cases[i].doc, &whole) : -2;
    CHECK(at == cases[i].at && (at >= 0 || whole), "schema %zu: %.60s %s (got %ld%s)", i,
          cases[i].doc, cases[i].at < 0 ? "is whole" : "is refused where the case says", at,
          at < 0 && !whole ? ", not whole" : "");
    mkc_schema_free(s);
  }
}

/* An object of 64 properties, the most: the last one written, none is left (and
 * nothing past the shift's width is read: UBSan's build runs this). */
static void test_schema_widest(void) {
  char sch[4096], doc[2048];
  size_t n = (size_t)snprintf(sch, sizeof sch, "{\"type\": \"object\", \"properties\": {");
  size_t d = (size_t)snprintf(doc, sizeof doc, "{");
  for (int p = 0; p < MKC_SCHEMA_PROPS_MAX; p++) {
    n += (size_t)snprintf(sch + n, sizeof sch - n, "%s\"p%d\": {\"type\": \"integer\"}",
                          p ? ", " : "", p);
    d += (size_t)snprintf(doc + d, sizeof doc - d, "%s\"p%d\":%d", p ? "," : "", p, p);
  }
  snprintf(sch + n, sizeof sch - n, "}, \"required\": [\"p0\", \"p63\"]}");
  snprintf(doc + d, sizeof doc - d, "}");
  mkc_schema *s = schema(sch);
  int whole = 0;
  long at = s ? schema_refused(s, doc, &whole) : -2;
  char cut[64];
  snprintf(cut, sizeof cut, "{\"p0\":0,\"p63\":1}");
  int whole2 = 0;
  long at2 = s ? schema_refused(s, cut, &whole2) : -2;
  CHECK(at == -1 && whole && at2 == -1 && whole2,
        "64 properties: all of them written is whole, and the first and last alone too");
  mkc_schema_free(s);
}

/* Under a schema: the trie walk against each token alone (no string shortcut in its keys). */
static void test_schema_mask(void) {
  mkc_vocab_text v = made_up_vocab();
  mkc_constraint *c = mkc_constraint_open(&v);
  mkc_schema *s = schema(S1);
  static const char *const states[] = {"",
                                       "{",
                                       "{\"",
                                       "{\"a\":",
                                       "{\"a\": 1",
                                       "{\"a\":1,\"",
                                       "{\"a\":1,\"b\":\"q",
                                       "{\"a\":1,\"c\":",
                                       "{\"a\":1,\"c\":\"y"};
  int all = c && s;
  uint8_t got[VOCAB], want[VOCAB];
  for (size_t k = 0; all && k < sizeof states / sizeof *states; k++) {
    mkc_constraint_start_schema(c, s, 1);
    mkc_json_acc a;
    mkc_json_acc_init_schema(&a, s);
    for (const char *p = states[k]; *p && all; p++) { /* byte by byte, as single-byte tokens */
      int id = *p >= 0x20 && *p < 0x7f ? *p - 0x20 : -1;
      all = id >= 0 && mkc_constraint_accept(c, id) == 0 && mkc_json_acc_byte(&a, *p) == 0;
    }
    int n = mkc_constraint_mask(c, got, VOCAB), m = 0;
    for (int i = 0; i < VOCAB; i++) {
      mkc_json_acc b = a;
      want[i] = v.plain[i] && v.off[i + 1] > v.off[i] &&
                mkc_json_acc_text(&b, v.bytes + v.off[i], v.off[i + 1] - v.off[i]) == 0;
      m += want[i];
    }
    if (!(n == m && memcmp(got, want, VOCAB) == 0)) {
      printf("     | after '%s': %d by the walk, %d alone\n", states[k], n, m);
      all = 0;
    }
  }
  CHECK(all, "a schema: the trie walk equals each token tried alone, in keys, values and enums");
  mkc_schema_free(s);
  mkc_constraint_close(c);
}

/* ---- the choice ---- */

static void random_logits(float *l, int n, unsigned seed) {
  rng_state = seed;
  for (int i = 0; i < n; i++) l[i] = (float)next_rand(100000) / 10000.0f - 5.0f;
}

/* The oracle's distribution over the allowed tokens: the logits of the others -inf. */
static void oracle_probs(const float *logits, const uint8_t *allowed, const int *window, int nw,
                         const mkc_sampling *o, double *probs) {
  float masked[VOCAB];
  for (int i = 0; i < VOCAB; i++) masked[i] = allowed[i] ? logits[i] : -INFINITY;
  mkc_sampling oo = *o;
  if (!(oo.repeat_penalty > 0)) oo.repeat_penalty = 1;
  mkc_sampler_ref_probs(masked, VOCAB, window, nw, &oo, probs);
}

static void test_greedy(void) {
  mkc_vocab_text v = made_up_vocab();
  mkc_constraint *c = mkc_constraint_open(&v);
  float logits[VOCAB];
  uint8_t allowed[VOCAB];
  double probs[VOCAB];
  int window[] = {'"' - 0x20, 'a' - 0x20, 120, 121, 122, 3, 3}, nw = 7, wrong = 0, cases = 0;
  mkc_sampling o = {.temp = 0,
                    .repeat_penalty = 1.5f,
                    .presence_penalty = 0.5f,
                    .frequency_penalty = 0.25f,
                    .repeat_last_n = 5};
  for (int s = 0; s < N_STATES; s++)
    for (int pen = 0; pen < 2; pen++)
      for (int seed = 0; seed < 8; seed++) {
        feed(c, STATES[s]);
        random_logits(logits, VOCAB, 1000 + 31 * s + seed);
        /* every other case: the 60 best tokens are ones the JSON refuses, past the shortcut */
        brute_force(&v, STATES[s], allowed, VOCAB);
        if (seed % 2)
          for (int i = 0, k = 0; i < VOCAB && k < 60; i++)
            if (!allowed[i]) logits[i] = 10.0f + (float)k++;
        mkc_sampling oo = pen ? o : (mkc_sampling){.temp = 0};
        oracle_probs(logits, allowed, window, nw, &oo, probs);
        int id = -1;
        mkc_constraint_choose(c, logits, VOCAB, window, nw, &oo, &id, NULL, NULL, NULL);
        wrong += id < 0 || probs[id] != 1.0;
        cases++;
      }
  CHECK(wrong == 0,
        "greedy: %d cases (15 states, penalties or none, the best tokens refused or "
        "not) choose the oracle's argmax over the allowed tokens (%d not)",
        cases, wrong);
  mkc_constraint_close(c);
}

#define DRAWS 20000

/* The chi-square p-value of counts against probs[VOCAB]. */
static double fit(const long *counts, const double *probs) {
  return chi2_p_value(counts, probs, VOCAB, DRAWS, NULL);
}

static void test_sampled(void) {
  mkc_vocab_text v = made_up_vocab();
  mkc_constraint *c = mkc_constraint_open(&v);
  float logits[VOCAB];
  uint8_t allowed[VOCAB];
  double want[VOCAB], bug[VOCAB];
  /* the window holds allowed tokens, so the penalties move the answer */
  int window[] = {'a' - 0x20, '"' - 0x20, 'b' - 0x20, 'a' - 0x20, 200, 201, 202}, nw = 7;
  enum { PENALTIES_LOST, TRUNCATED_FIRST, TEMPERATURE_LOST };
  const struct {
    const char *state, *name;
    mkc_sampling o;
    int bug; /* the planted bug these draws must catch */
  } cases[] = {
      {"{\"name\": \"",
       "in a string, temperature 0.8, penalties",
       {.temp = 0.8f,
        .top_p = 1,
        .repeat_penalty = 1.3f,
        .presence_penalty = 0.4f,
        .repeat_last_n = 6},
       PENALTIES_LOST},
      {"{\"a\": 1",
       "after a number, top-k 12, top-p 0.9, min-p 0.01",
       {.temp = 1.1f,
        .top_k = 12,
        .top_p = 0.9f,
        .min_p = 0.01f,
        .repeat_penalty = 1,
        .repeat_last_n = 6},
       TRUNCATED_FIRST},
      {"{\"a\": 1",
       "after a number, temperature 1.5",
       {.temp = 1.5f, .top_p = 1, .repeat_penalty = 1, .repeat_last_n = 6},
       TEMPERATURE_LOST},
  };
  static const char *const BUGS[] = {"the penalties lost in renumbering the allowed tokens",
                                     "top-k and top-p over every token, the mask after",
                                     "the temperature not applied"};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    const mkc_sampling *o = &cases[k].o;
    random_logits(logits, VOCAB, 77 + (unsigned)k);
    brute_force(&v, cases[k].state, allowed, VOCAB);
    /* the window's tokens likely, so the penalties matter; refused tokens likelier still, so
     * a truncation over every token would keep few allowed ones */
    for (int i = 0; i < nw; i++) logits[window[i]] = 4.0f;
    for (int i = 0, n = 0; i < VOCAB && n < 8; i++)
      if (!allowed[i]) logits[i] = 6.0f + (float)n++ * 0.1f;
    oracle_probs(logits, allowed, window, nw, o, want);
    long counts[VOCAB] = {0};
    int bad = 0;
    feed(c, cases[k].state);
    for (int d = 0; d < DRAWS; d++) {
      int id = -1;
      if (mkc_constraint_choose(c, logits, VOCAB, window, nw, o, &id, NULL, NULL, NULL) != 0 ||
          id < 0)
        bad++;
      else
        counts[id]++;
    }
    double p = bad ? 0 : fit(counts, want);
    CHECK(p >= P_MIN, "sampled, %s: %d draws fit the oracle over the allowed tokens (p = %.3g)",
          cases[k].name, DRAWS, p);
    mkc_sampling oo = *o;
    if (cases[k].bug == TRUNCATED_FIRST) {
      mkc_sampler_ref_probs(logits, VOCAB, window, nw, &oo, bug);
      double sum = 0;
      for (int i = 0; i < VOCAB; i++) sum += bug[i] *= allowed[i];
      for (int i = 0; i < VOCAB; i++) bug[i] = sum > 0 ? bug[i] / sum : 0;
    } else if (cases[k].bug == PENALTIES_LOST) {
      oracle_probs(logits, allowed, window, 0, o, bug);
    } else {
      oo.temp = 1;
      oracle_probs(logits, allowed, window, nw, &oo, bug);
    }
    double p_bug = fit(counts, bug);
    CHECK(p_bug < P_MIN, "  planted bug (%s): the same draws fail (p = %.3g)", BUGS[cases[k].bug],
          p_bug);
  }
  mkc_constraint_close(c);
}

/* Speculative sampling's verdict on a draft (mkc_constraint_verify): the token it gives has the
 * distribution mkc_constraint_choose's draws have (the oracle's), whatever the draft: the likeliest
 * token, a less likely one, one top-k cut, one the JSON refuses. The planted bug draws the
 * residual from every token, the draft included (the draft then comes too often). */
static void test_verified(void) {
  mkc_vocab_text v = made_up_vocab();
  mkc_constraint *c = mkc_constraint_open(&v);
  float logits[VOCAB];
  uint8_t allowed[VOCAB];
  double want[VOCAB], bug[VOCAB];
  int window[] = {'a' - 0x20, '"' - 0x20}, nw = 2;
  const char *state = "{\"name\": \"";
  mkc_sampling o = {
      .temp = 0.7f, .top_k = 6, .top_p = 1, .repeat_penalty = 1.2f, .repeat_last_n = 2};
  random_logits(logits, VOCAB, 4242);
  brute_force(&v, state, allowed, VOCAB);
  oracle_probs(logits, allowed, window, nw, &o, want);
  /* the drafts: the likeliest, the least likely of the top 6, one with probability 0 that is
   * allowed (top-k cut), one refused */
  int best = -1, mid = -1, cut = -1, refused = -1;
  for (int i = 0; i < VOCAB; i++) {
    if (want[i] > 0 && (best < 0 || want[i] > want[best])) best = i;
    if (want[i] > 0 && (mid < 0 || want[i] < want[mid])) mid = i;
    if (allowed[i] && want[i] == 0 && cut < 0) cut = i;
    if (!allowed[i] && refused < 0) refused = i;
  }
  const struct {
    const char *name;
    int draft;
  } drafts[] = {{"the likeliest token", best},
                {"the least likely of the top 6", mid},
                {"one top-k cut", cut},
                {"one the JSON refuses", refused}};
  for (size_t k = 0; k < sizeof drafts / sizeof *drafts; k++) {
    int d = drafts[k].draft, bad = d < 0;
    long counts[VOCAB] = {0};
    for (int n = 0; n < DRAWS && !bad; n++) {
      int id = -1;
      if (feed_seed(c, state, 1000003u * (uint64_t)n + k) != 0 ||
          mkc_constraint_verify(c, logits, VOCAB, window, nw, &o, d, &id, NULL, NULL, NULL) != 0)
        bad = 1;
      else
        counts[id]++;
    }
    double p = bad ? 0 : fit(counts, want);
    CHECK(p >= P_MIN,
          "verdict on a draft (%s, p = %.3f): %d tokens fit the oracle's distribution (p = %.3g)",
          drafts[k].name, d >= 0 ? want[d] : -1.0, DRAWS, p);
    if (d < 0 || want[d] == 0) continue; /* the bug changes nothing there */
    for (int i = 0; i < VOCAB; i++) bug[i] = (1 - want[d]) * want[i] + (i == d ? want[d] : 0);
    double p_bug = fit(counts, bug);
    CHECK(p_bug < P_MIN,
          "  planted bug (the residual drawn with the draft in it): the same "
          "tokens fail (p = %.3g)",
          p_bug);
  }
  mkc_constraint_close(c);
}

static void test_logprobs(void) {
  mkc_vocab_text v = made_up_vocab();
  mkc_constraint *c = mkc_constraint_open(&v);
  float logits[VOCAB], masked[VOCAB], lp = 0, lps[5];
  uint8_t allowed[VOCAB];
  double want[VOCAB];
  int window[] = {'x' - 0x20, '"' - 0x20}, ids[5], id = -1, ok = 1;
  mkc_sampling o = {.temp = 0.7f,
                    .top_k = 3,
                    .top_p = 1,
                    .repeat_penalty = 1.2f,
                    .repeat_last_n = 2,
                    .logprobs = 5};
  for (int s = 0; s < N_STATES; s++) {
    feed(c, STATES[s]);
    random_logits(logits, VOCAB, 500 + s);
    int m = brute_force(&v, STATES[s], allowed, VOCAB);
    for (int i = 0; i < VOCAB; i++) masked[i] = allowed[i] ? logits[i] : -INFINITY;
    mkc_sampler_ref_logprobs(masked, VOCAB, window, 2, &o, want);
    if (mkc_constraint_choose(c, logits, VOCAB, window, 2, &o, &id, &lp, ids, lps) != 0 ||
        !allowed[id] || fabs(lp - want[id]) > 1e-5) {
      ok = 0;
      continue;
    }
    /* the five likeliest allowed tokens, higher first, ties by lower id; -1 past them */
    for (int r = 0; r < 5; r++) {
      int best = -1;
      for (int i = 0; i < VOCAB; i++) {
        int taken = 0;
        for (int q = 0; q < r; q++) taken |= ids[q] == i;
        if (allowed[i] && !taken && (best < 0 || want[i] > want[best])) best = i;
      }
      if (r >= m ? ids[r] != -1 : ids[r] != best || fabs(lps[r] - want[best]) > 1e-5) ok = 0;
    }
  }
  CHECK(ok,
        "log-probabilities: the token's and the five likeliest, over the allowed tokens "
        "(temperature and penalties, no truncation), in all %d states",
        N_STATES);
  mkc_constraint_close(c);
}

/* ---- the decode loop ---- */

/* A drafter that proposes the next tokens of a script (seq, the tokens after the prompt), one
 * in every `wrong` of them (0: none) replaced by the token after it. */
typedef struct script_drafter {
  mkc_drafter base;
  const int *seq;
  int n_seq, n_prompt, wrong;
} script_drafter;

static int script_propose(mkc_drafter *d, const int *hist, int n, int k, int *out) {
  const script_drafter *sd = (const script_drafter *)d;
  int at = n - sd->n_prompt, m = 0;
  (void)hist;
  for (; m < k && at + m < sd->n_seq; m++)
    out[m] = sd->wrong && (at + m) % sd->wrong == sd->wrong - 1 ? (sd->seq[at + m] + 1) % VOCAB
                                                                : sd->seq[at + m];
  return m;
}

static void script_close(mkc_drafter *d) { (void)d; }

static const mkc_drafter_ops SCRIPT_OPS = {script_propose, NULL, NULL, script_close};

/* Drafts with constrained output (greedy), on tiny with a kernel of up to 6 inputs a step: the
 * host verifies them against its own choices, so the answer is the one without drafts,
 * whatever the drafts: prompt lookup's; the answer itself (every draft taken by the host, most
 * turned down by the kernel, whose own choice is unconstrained: the host's drafts are the next
 * step's fixed inputs), also with some wrong; and the model itself as its own draft model (its
 * unconstrained choices, which the kernel takes and the host turns down where the constraint
 * chooses otherwise: a rewind). Sampling takes no drafts. */
static void test_constrained_drafts(mkc_constraint *c) {
  fixture f;
  if (!CHECK(fixture_open(&f, "tiny", 5, 128, 21) == 0, "tiny with up to 5 drafts a step")) return;
  int prompt[] = {5, 17, 99, 3, 40, 41}, n_prompt = 6, want[64], out[64], n_gen = 40;
  mkc_session *s = mkc_session_open(test_backend(), &f.g, &f.src, &f.w, 2);
  mkc_decode_stats st;
  mkc_decode_opts none = {.constraint = c};
  mkc_constraint_start(c, 1, 5);
  int rc = s ? mkc_decode_with(s, &f.g, prompt, n_prompt, n_gen, &none, want, &st) : -1;
  int n_want = rc == 0 ? st.generated : 0;
  const struct {
    const char *name;
    int script, wrong, model, draft_max, adaptive;
  } runs[] = {
      {"prompt lookup, up to 2", 0, 0, 0, 2, 0},
      {"prompt lookup, adaptive up to 5", 0, 0, 0, 5, 1},
      {"the answer itself, 3 at a time", 1, 0, 0, 3, 0},
      {"the answer itself, 5 at a time", 1, 0, 0, 5, 0},
      {"the answer, every 4th wrong, 5 at a time", 1, 4, 0, 5, 0},
      {"the model itself (unconstrained), 4 at a time", 0, 0, 1, 4, 0},
  };
  for (size_t i = 0; i < sizeof runs / sizeof *runs && rc == 0; i++) {
    script_drafter sd = {{&SCRIPT_OPS, "script", 0}, want, n_want, n_prompt, runs[i].wrong};
    mkc_drafter *model = NULL;
    if (runs[i].model) {
      mkc_session *ds = mkc_session_open(test_backend(), &f.g, &f.src, &f.w, 2);
      model = ds ? mkc_drafter_model(ds, &f.g, "itself") : NULL;
      if (!CHECK(model != NULL, "the model as its own draft model")) continue;
    }
    mkc_decode_opts o = {.draft_max = runs[i].draft_max,
                         .adaptive = runs[i].adaptive,
                         .draft_min = runs[i].adaptive,
                         .drafter = runs[i].script ? &sd.base : model,
                         .constraint = c};
    mkc_constraint_start(c, 1, 5);
    mkc_session_reset(s);
    int r2 = mkc_decode_with(s, &f.g, prompt, n_prompt, n_gen, &o, out, &st);
    int same = r2 == 0 && st.generated == n_want && !memcmp(out, want, sizeof *out * n_want);
    int all = runs[i].script && !runs[i].wrong;
    CHECK(same && (!all || (st.accepted == st.drafted && st.gen_steps < st.generated / 2)),
          "drafts from %s: the answer without drafts (%d of %d drafts taken, %d steps for %d "
          "tokens)",
          runs[i].name, (int)st.accepted, (int)st.drafted, (int)st.gen_steps, st.generated);
    mkc_drafter_close(model);
  }
  /* sampled: drafts verified by speculative sampling on the host (its distribution is
   * test_verified's); here, end to end: every token one the document takes, drafts taken */
  mkc_sampling o8 = {.temp = 0.8f, .top_p = 1, .repeat_penalty = 1, .seed_lo = 3};
  if (rc == 0 && CHECK(mkc_session_set_sampling(s, &o8) == 0, "temperature 0.8 is taken")) {
    mkc_constraint *check = mkc_constraint_share(c);
    long taken = 0, drafted = 0;
    int valid = check != NULL, steps = 0, tokens = 0;
    for (int seed = 0; seed < 6 && valid; seed++) {
      script_drafter sd = {{&SCRIPT_OPS, "script", 0}, want, n_want, n_prompt, 0};
      mkc_decode_opts o = {.draft_max = 4, .drafter = seed % 2 ? &sd.base : NULL, .constraint = c};
      mkc_constraint_start(c, 1, 100 + (unsigned)seed);
      mkc_session_reset(s);
      valid = mkc_decode_with(s, &f.g, prompt, n_prompt, n_gen, &o, out, &st) == 0;
      mkc_constraint_start(check, 1, 0);
      for (int i = 0; valid && i < st.generated; i++)
        valid = mkc_constraint_accept(check, out[i]) == 0;
      taken += st.accepted, drafted += st.drafted, steps += (int)st.gen_steps + 1;
      tokens += st.generated;
    }
    CHECK(valid && taken > 0 && taken <= drafted && steps < tokens,
          "sampled, 6 seeds, drafts from prompt lookup and the greedy answer: every token one the "
          "JSON takes, %ld of %ld drafts taken, %d steps for %d tokens",
          taken, drafted, steps, tokens);
    mkc_constraint_close(check);
  }
  mkc_session_close(s);
  fixture_close(&f);
}

static void test_decode_loop(void) {
  fixture f;
  if (!CHECK(fixture_open(&f, "tiny", 2, 128, 21) == 0, "tiny: generated, random weights")) return;
  mkc_vocab_text v = made_up_vocab();
  if (!CHECK(f.g.vocab == VOCAB, "tiny's vocabulary is the made-up one's size (%d)", f.g.vocab))
    return;
  mkc_constraint *c = mkc_constraint_open(&v), *check = mkc_constraint_open(&v);
  int prompt[] = {5, 17, 99, 3, 40, 41}, n_prompt = 6, out[48], n_gen = 40;
  mkc_session *s = mkc_session_open(test_backend(), &f.g, &f.src, &f.w, 2);
  mkc_session *ref = mkc_session_open(MKC_BACKEND_REF, &f.g, &f.src, &f.w, 0);
  mkc_decode_stats st;
  mkc_decode_opts o = {.constraint = c};
  mkc_constraint_start(c, 1, 5);
  int rc = s && ref ? mkc_decode_with(s, &f.g, prompt, n_prompt, n_gen, &o, out, &st) : -1;
  CHECK(rc == 0 && st.generated >= 1 && st.drafted == 0 && st.gen_steps == st.generated - 1,
        "%s backend: %d tokens, one per step", mkc_session_backend(s), st.generated);
  /* each token is the constrained argmax of the reference's logits after the ones before */
  int same = rc == 0, hist[128];
  memcpy(hist, prompt, sizeof prompt);
  mkc_constraint_start(check, 1, 5);
  mkc_step_result r;
  float masked[VOCAB];
  double probs[VOCAB];
  mkc_sampling greedy = {.repeat_penalty = 1};
  for (int t = 0; same && t < n_prompt + st.generated - 1; t++) {
    if (mkc_session_step(ref, &hist[t], 1, 0, &r) != 0 || r.status != MKC_STATUS_OK) same = 0;
    if (t < n_prompt - 1 || !same) continue;
    const float *l = mkc_session_logits(ref, 0);
    for (int i = 0; i < VOCAB; i++) masked[i] = mkc_constraint_allowed(check, i) ? l[i] : -INFINITY;
    mkc_sampler_ref_probs(masked, VOCAB, hist, t + 1, &greedy, probs);
    int g = t - n_prompt + 1;
    same = probs[out[g]] == 1.0 && mkc_constraint_accept(check, out[g]) == 0;
    hist[t + 1] = out[g];
  }
  CHECK(same, "each token is the constrained argmax of the reference executor's logits after "
              "the prompt and the tokens before it");
  CHECK(st.complete == mkc_constraint_done(check) && (st.complete || st.generated == n_gen),
        "it stops when the object is whole (%s), else at -n", st.complete ? "whole" : "not whole");
  if (rc == 0) test_constrained_drafts(c);
  mkc_session_close(s);
  mkc_session_close(ref);
  mkc_constraint_close(c);
  mkc_constraint_close(check);
  fixture_close(&f);
}

/* ---- many sequences on a slot kernel ---- */

/* Four sequences on test_slots's kernels (one grid, so logits agree bit for bit): three
 * constrained documents over one shared vocabulary (greedy; sampled with two seeds, one an
 * object, one any value) and one free with drafts; each the same as mkc_decode_with alone on
 * the plain kernel, a constraint of its own. */
static void test_batch(void) {
  enum { N = 5, GEN = 24 };
  kernel plain, slots;
  slot_kernels_one_grid();
  if (!CHECK(kernel_open(&plain, 0) == 0 && kernel_open(&slots, SLOTS) == 0,
             "tiny's plain and slot kernels") ||
      !CHECK(slots.g.vocab == VOCAB, "their vocabulary is the made-up one's size"))
    return;
  mkc_vocab_text v = made_up_vocab();
  mkc_constraint *base = mkc_constraint_open(&v);
  mkc_slots *p = mkc_slots_open(test_backend(), &slots.g, &slots.src, &slots.w, BLOCKS);
  /* the last: a value the vocabulary cannot finish (its first byte is a token, the second is
   * in none): that sequence fails alone, the others go on */
  mkc_schema *stuck = schema("{\"enum\": [\"\u00fc\"]}");
  static const int prompts[N][5] = {
      {5, 17, 99, 3, 40}, {7, 7, 8, 1, 2}, {120, 3, 60, 61, 62}, {9, 9, 9, 9, 9}, {1, 2, 3, 4, 5}};
  /* constrained: 1 an object, 2 any value, 3 the stuck schema */
  static const struct {
    float temp;
    unsigned seed;
    int constrained;
  } how[N] = {{0, 1, 1}, {0.8f, 11, 1}, {1.0f, 16, 2}, {0, 0, 0}, {0, 3, 3}};
  mkc_batch_seq q[N];
  memset(q, 0, sizeof q);
  int opened = base && stuck;
  for (int i = 0; i < N; i++) {
    /* the stuck one's whitespace before its value may run to 64 bytes */
    q[i] = (mkc_batch_seq){.prompt = prompts[i], .n_prompt = 5, .n_predict = i == 4 ? 80 : GEN};
    q[i].opt = (mkc_sampling){.temp = how[i].temp,
                              .top_k = 40,
                              .top_p = 0.95f,
                              .min_p = 0.05f,
                              .repeat_penalty = 1,
                              .repeat_last_n = 64,
                              .seed_lo = how[i].seed};
    if (!how[i].constrained || !opened) continue;
    if (!(q[i].constraint = mkc_constraint_share(base)))
      opened = 0;
    else if (how[i].constrained == 3)
      mkc_constraint_start_schema(q[i].constraint, stuck, 3);
    else
      mkc_constraint_start(q[i].constraint, how[i].constrained == 1, how[i].seed);
  }
  mkc_batch_opts o = {.drafts = 2};
  mkc_batch_stats st;
  check_stderr_begin();
  int rc = p && opened ? mkc_batch_run(p, q, N, &o, &st) : -1;
  char *err = check_stderr_end();
  CHECK(rc == 0 && st.most_busy == N, "%d sequences decoded together (%d steps)", N, st.steps);
  CHECK(rc == 0 && q[4].stopped == MKC_BATCH_FAILED &&
            strstr(err, "mkc: error: constrained output: no token of the vocabulary continues"),
        "a document the vocabulary cannot finish: that sequence stops, said why, after %d tokens",
        q[4].n_out);
  free(err);
  for (int i = 0; rc == 0 && i < N - 1; i++) {
    mkc_session *s = mkc_session_open(test_backend(), &plain.g, &plain.src, &plain.w, BLOCKS);
    mkc_constraint *alone = how[i].constrained ? mkc_constraint_open(&v) : NULL;
    if (alone) mkc_constraint_start(alone, how[i].constrained == 1, how[i].seed);
    /* alone, a constrained one takes one token a step too: sampled, drafts would take other
     * draws (the same distribution, tests/test_constrain's verdicts) */
    mkc_decode_opts d = {.draft_max = alone ? 0 : 2, .constraint = alone};
    mkc_decode_stats ds;
    int out[GEN + 1], ok = s && mkc_session_set_sampling(s, &q[i].opt) == 0 &&
                           mkc_decode_with(s, &plain.g, prompts[i], 5, GEN, &d, out, &ds) == 0;
    int same = ok && ds.generated == q[i].n_out &&
               memcmp(out, q[i].out, (size_t)ds.generated * sizeof *out) == 0;
    int ends = !how[i].constrained || (ds.complete ? q[i].stopped == MKC_BATCH_COMPLETE
                                                   : q[i].stopped == MKC_BATCH_BUDGET);
    CHECK(same && ends, "sequence %d (%s%s): %d tokens, what it gives alone%s", i,
          how[i].constrained ? "JSON, " : "free, drafts, ", how[i].temp > 0 ? "sampled" : "greedy",
          q[i].n_out, ds.complete ? ", stopped when whole" : "");
    CHECK(!how[i].constrained || q[i].drafted == 0, "sequence %d: %ld drafts (constrained: none)",
          i, q[i].drafted);
    mkc_constraint_close(alone);
    mkc_session_close(s);
  }
  mkc_batch_free(q, N);
  for (int i = 0; i < N; i++) mkc_constraint_close(q[i].constraint);
  mkc_constraint_close(base);
  mkc_schema_free(stuck);
  mkc_slots_close(p);
  kernel_close(&plain);
  kernel_close(&slots);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  test_grammar();
  test_random_documents();
  test_mask_made_up();
  test_mask_smollm2();
  test_schema_compile();
  test_schema_documents();
  test_schema_widest();
  test_schema_mask();
  test_greedy();
  test_sampled();
  test_verified();
  test_logprobs();
  test_decode_loop();
  test_batch();
  return check_done();
}
