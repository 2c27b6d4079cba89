/* GBNF grammars (util/gbnf.h) and constrained output by one (exec/constrain.h).
 *
 * The oracles are not the matcher: regular grammars against the libc's POSIX
 * regular expressions written for the same language, on every string of a
 * small alphabet up to a length (a prefix may come next when some short
 * ending makes the regex match it whole); nested grammars against a
 * counter; character classes beyond ASCII against every Unicode code
 * point's UTF-8 (every one- and two-byte prefix, and sampled longer ones).
 * The compiler's refusals name line and column, checked by hand. The
 * constraint's trie walk over a made-up vocabulary is checked against
 * trying each token alone from the answer's text, and the end-of-generation
 * tokens come exactly where the grammar may end. */
#include <regex.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#include "exec/constrain.h"
#include "util/gbnf.h"

/* A grammar's text on one line, for a check's name. */
static const char *shown(const char *text) {
  static char buf[4][256];
  static int k;
  char *b = buf[k++ % 4];
  size_t n = 0;
  for (; *text && n + 3 < sizeof buf[0]; text++)
    if (*text == '\n' || *text == '\r')
      b[n++] = '\\', b[n++] = *text == '\n' ? 'n' : 'r';
    else
      b[n++] = *text;
  b[n] = 0;
  return b;
}

static mkc_gbnf *compile(const char *text, char *why, size_t cap) {
  return mkc_gbnf_compile(text, strlen(text), why, cap);
}

/* The first byte of s[0..n) the grammar refuses (-1: none), each byte read
 * from the level below without a commit (commit: with one after each), and
 * whether the text can end there and go on. */
typedef struct reading {
  long refused;
  int ends, goes_on;
} reading;

static reading read_text(mkc_gbnf_run *r, const char *s, size_t n, int commit) {
  reading out = {-1, 0, 0};
  mkc_gbnf_run_restart(r);
  int lv = 0;
  for (size_t i = 0; i < n; i++) {
    if (mkc_gbnf_run_byte(r, lv, (unsigned char)s[i]) != 0) {
      out.refused = (long)i;
      return out;
    }
    if (commit)
      mkc_gbnf_run_commit(r, lv + 1);
    else
      lv++;
  }
  out.ends = mkc_gbnf_run_can_end(r, lv);
  out.goes_on = mkc_gbnf_run_can_go_on(r, lv);
  return out;
}

/* ---- refusals ---- */

static void test_refusals(void) {
  static const struct {
    const char *text, *why;
  } cases[] = {
      {"", "1:1: no rule 'root'"},
      {"item ::= \"a\"\n", "2:1: no rule 'root'"},
      {"root ::= item\n", "1:10: rule 'item' is not defined"},
      {"root ::= \"a\"\nroot ::= \"b\"\n", "2:1: rule 'root' is defined twice"},
      {"root ::= \"abc\n", "1:10: the literal has no closing quote"},
      {"root ::= [a-z\n", "1:10: the character class has no closing ]"},
      {"root ::= [z-a]\n", "1:11: the range's end comes before its start"},
      {"root ::= (\"a\" | \"b\"\n", "1:10: the ( is not closed"},
      {"root ::= \"a\" )\n", "1:14: unexpected ')' in rule 'root'"},
      {"root := \"a\"\n", "1:6: expected ::= after 'root'"},
      {"root ::= \"a\"\n  | \"b\"\n", "2:3: '|' at a line's start"},
      {"root ::= \"\\q\"\n", "1:11: unknown escape \\q"},
      {"root ::= \"\\x4\"\n", "1:14: expected 2 hex digits"},
      {"root ::= \"\\uD800\"\n", "1:11: \\uD800 is not a Unicode character"},
      {"root ::= \"\\U00110000\"\n", "1:11: \\U00110000 is not a Unicode character"},
      {"root ::= \"\xc3\"\n", "1:11: not UTF-8"},
      {"root ::= \"a\"{3,2}\n", "1:13: {3,2}: the most is less than the least"},
      {"root ::= \"a\"{1001}\n", "1:14: a repetition count above 1000"},
      {"root ::= \"a\"{2\n", "1:15: expected } to close {"},
      {"root ::= <[1000]>\n", "1:10: token references"},
      {"root ::= \"a\" []\n", "1:14: an empty character class ([])"},
      {"root ::= [^]\n", "1:10: an empty character class ([^])"},
      {"root ::= x \"a\"\nx ::= root | \"b\"\n", "1:1: rule 'root' is left-recursive"},
      {"root ::= y? root \"a\" | \"b\"\ny ::= \"c\"\n", "1:1: rule 'root' is left-recursive"},
      {"root ::= (\"a\"?)*\n",
       "1:16: in rule 'root': a repetition of a part that can match nothing"},
      {"root ::= \"a\" # a comment\n   bad\n", "2:7: expected ::= after 'bad'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char why[300] = "";
    mkc_gbnf *g = compile(cases[i].text, why, sizeof why);
    CHECK(!g && strncmp(why, cases[i].why, strlen(cases[i].why)) == 0,
          "%s: refused with '%s' (said '%s')", shown(cases[i].text), cases[i].why, why);
    mkc_gbnf_free(g);
  }
  /* what llama.cpp's grammars are written with compiles */
  static const char *const fine[] = {
      "root ::= \"a\" |\n  \"b\"\n",
      "root ::=\n  (\n    \"a\" # first\n    | \"b\"\n  )+\r\n",
      "root ::= [^\\]\\[\\\\\"]* [\\x00-\\x1F\\u00e9\\U0001F600] .\n",
      "root ::= item{0} item{2,} item{0,3} item{4}\nitem ::= \"x\"\n",
      "root ::= \"\"\n",
      "root-2 ::= \"a\"\nroot ::= root-2 root-2\n",
  };
  for (size_t i = 0; i < sizeof fine / sizeof *fine; i++) {
    char why[300] = "";
    mkc_gbnf *g = compile(fine[i], why, sizeof why);
    CHECK(g != NULL, "compiles: %s%s", shown(fine[i]), why);
    mkc_gbnf_free(g);
  }
}

/* ---- regular grammars against regular expressions ---- */

#define ALPHA "ab1."
#define LEN 6  /* strings tried: every one this long or shorter */
#define MORE 4 /* an ending this long or shorter makes any viable prefix whole */

static int regex_whole(const regex_t *re, const char *s) { return regexec(re, s, 0, NULL, 0) == 0; }

/* Whether some s + t with |t| <= more (non-empty when nonempty) matches whole. */
static int completes(const regex_t *re, char *s, size_t n, int more, int nonempty) {
  if (!nonempty && regex_whole(re, s)) return 1;
  if (more == 0) return 0;
  for (const char *a = ALPHA; *a; a++) {
    s[n] = *a, s[n + 1] = 0;
    int ok = completes(re, s, n + 1, more - 1, 0);
    s[n] = 0;
    if (ok) return 1;
  }
  return 0;
}

typedef struct tally {
  long strings, wrong;
  char first[64];
} tally;

static void against(mkc_gbnf_run *r, const regex_t *re, char *s, size_t n, tally *t) {
  char buf[LEN + MORE + 2];
  memcpy(buf, s, n + 1);
  int viable = completes(re, buf, n, MORE, 0);
  int whole = regex_whole(re, s), longer = completes(re, buf, n, MORE, 1);
  for (int commit = 0; commit < 2; commit++) {
    reading got = read_text(r, s, n, commit);
    int ok =
        viable ? got.refused == -1 && got.ends == whole && got.goes_on == longer : got.refused >= 0;
    t->strings++;
    if (!ok && !t->wrong++)
      snprintf(t->first, sizeof t->first, "'%s'%s", s, commit ? " (commits)" : "");
  }
  if (n == LEN) return;
  for (const char *a = ALPHA; *a; a++) {
    s[n] = *a, s[n + 1] = 0;
    against(r, re, s, n + 1, t);
    s[n] = 0;
  }
}

static void test_regular(void) {
  static const struct {
    const char *gbnf, *ere;
  } cases[] = {
      {"root ::= \"a\" [0-9]+ (\".\" [0-9]+)?", "a[0-9]+(\\.[0-9]+)?"},
      {"root ::= (\"ab\" | \"b\")* \"a\"?", "(ab|b)*a?"},
      {"root ::= x{2,3} y?\nx ::= \"a\" | \"b\"\ny ::= [^ab]", "[ab]{2,3}[^ab]?"},
      {"root ::= \"a\"{0,2} \"b\"{1,}", "a{0,2}b+"},
      {"root ::= ((\"a\" | \"1\") \".\")+ | \"b\"", "((a|1)\\.)+|b"},
      {"root ::= [a-b]{3}", "[ab]{3}"},
      {"root ::= (\n  \"a\" # one\n  | \"b\" \"1\"\n)+", "(a|b1)+"},
      {"root ::= . \"a\"?", ".a?"},
      {"root ::= \"\" \"a\" \"\"", "a"},
      {"root ::= x x\nx ::= \"a\"?", "a?a?"},
      {"root ::= x{3}\nx ::= \"b\" | \"\"", "b?b?b?"},
      {"root ::= (\"a\" | \"a\" \"b\" | \"a\")* \"1\"", "(a|ab)*1"},
      {"root ::= [^a] [\\x2e-\\x31]*", "[^a][.-1]*"},
      {"root ::= \"ab\"{2} | \"1\"{1,2} \".\"", "(ab){2}|1{1,2}\\."},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char why[300], pattern[200], s[LEN + MORE + 2] = "";
    mkc_gbnf *g = compile(cases[i].gbnf, why, sizeof why);
    if (!CHECK(g != NULL, "compiles: %s", shown(cases[i].gbnf))) {
      printf("     | %s\n", why);
      continue;
    }
    regex_t re;
    snprintf(pattern, sizeof pattern, "^(%s)$", cases[i].ere);
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0) {
      CHECK(0, "the regex %s compiles", pattern);
      mkc_gbnf_free(g);
      continue;
    }
    mkc_gbnf_run *r = mkc_gbnf_run_open(g);
    tally t = {0};
    against(r, &re, s, 0, &t);
    CHECK(t.wrong == 0,
          "%s = /%s/: %ld readings of every string over \"" ALPHA "\" to %d bytes (%ld wrong, "
          "first %s)",
          shown(cases[i].gbnf), cases[i].ere, t.strings, LEN, t.wrong, t.first);
    regfree(&re);
    mkc_gbnf_run_close(r);
    mkc_gbnf_free(g);
  }
}

/* ---- nested grammars against counters ---- */

static void test_nested(void) {
  char why[300];
  mkc_gbnf *g = compile("root ::= (\"(\" root \")\")*", why, sizeof why);
  mkc_gbnf *h = compile("root ::= \"a\" root \"b\" | \"c\"", why, sizeof why);
  if (!CHECK(g && h, "nested grammars compile")) return;
  mkc_gbnf_run *r = mkc_gbnf_run_open(g), *q = mkc_gbnf_run_open(h);
  long wrong = 0, tried = 0;
  char s[16];
  for (int n = 0; n <= 12; n++)
    for (long bits = 0; bits < 1L << n; bits++) {
      /* balanced parentheses: a prefix while no ) closes more than opened */
      int depth = 0;
      long first_bad = -1;
      for (int i = 0; i < n; i++) {
        s[i] = bits >> i & 1 ? ')' : '(';
        depth += s[i] == '(' ? 1 : -1;
        if (depth < 0 && first_bad < 0) first_bad = i;
      }
      reading got = read_text(r, s, (size_t)n, n % 2);
      wrong +=
          got.refused != first_bad || (first_bad < 0 && (got.ends != (depth == 0) || !got.goes_on));
      /* a^i c b^j: a prefix while j <= i; whole when j == i */
      int as = 0, bs = 0, c = 0;
      first_bad = -1;
      for (int i = 0; i < n; i++) {
        s[i] = bits >> i & 1 ? (c ? 'b' : 'c') : 'a';
        if (s[i] == 'a' && c) first_bad = first_bad < 0 ? i : first_bad;
        if (s[i] == 'c') c = 1;
        if (s[i] == 'a' && !c) as++;
        if (s[i] == 'b' && ++bs > as && first_bad < 0) first_bad = i;
      }
      got = read_text(q, s, (size_t)n, n % 2);
      wrong += got.refused != first_bad ||
               (first_bad < 0 && (got.ends != (c && bs == as) || got.goes_on != (!c || bs < as)));
      tried += 2;
    }
  CHECK(wrong == 0,
        "balanced parentheses and a^n c b^n: %ld strings to 12 bytes, the first refused byte, "
        "whole and longer as counted (%ld wrong)",
        tried, wrong);
  /* a long answer read through commits stays right */
  mkc_gbnf_run_restart(r);
  int ok = 1;
  for (int i = 0; i < 20000 && ok; i++) {
    ok = mkc_gbnf_run_byte(r, 0, i < 10000 ? '(' : ')') == 0;
    if (ok) mkc_gbnf_run_commit(r, 1);
  }
  CHECK(ok && mkc_gbnf_run_can_end(r, 0) && mkc_gbnf_run_byte(r, 0, ')') != 0,
        "10000 parentheses deep and back: whole, and one more ) refused");
  mkc_gbnf_run_close(r), mkc_gbnf_run_close(q);
  mkc_gbnf_free(g), mkc_gbnf_free(h);
}

/* ---- Unicode ---- */

static int utf8(uint32_t cp, unsigned char *b) {
  if (cp < 0x80) return b[0] = (unsigned char)cp, 1;
  if (cp < 0x800)
    return b[0] = (unsigned char)(0xC0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000) {
    b[0] = (unsigned char)(0xE0 | cp >> 12), b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    b[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  b[0] = (unsigned char)(0xF0 | cp >> 18), b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), b[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

static int in_class(uint32_t cp, int which) {
  int e_to_u = cp >= 0xE9 && cp <= 0xFC, extra = cp == 0x20AC || cp == 0x1F600;
  return which == 0 ? e_to_u || extra
                    : !(cp >= 0xC0 && cp <= 0xFF) && !(cp >= 0x800 && cp <= 0xFFFF);
}

static void test_unicode(void) {
  static const char *const gram[2] = {"root ::= [\\u00e9-\\u00fc\\u20AC\\U0001F600]",
                                      "root ::= [^\\u00c0-\\u00ff\\u0800-\\uFFFF]"};
  for (int w = 0; w < 2; w++) {
    char why[300];
    mkc_gbnf *g = compile(gram[w], why, sizeof why);
    if (!CHECK(g != NULL, "compiles: %s", gram[w])) continue;
    /* every code point's encoding: which one- and two-byte prefixes may begin a character of
     * the class, which are one whole */
    static uint8_t one[256], two[65536], whole1[256], whole2[65536];
    memset(one, 0, sizeof one), memset(two, 0, sizeof two);
    memset(whole1, 0, sizeof whole1), memset(whole2, 0, sizeof whole2);
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
      if ((cp >= 0xD800 && cp <= 0xDFFF) || !in_class(cp, w)) continue;
      unsigned char b[4];
      int n = utf8(cp, b);
      one[b[0]] = 1, whole1[b[0]] |= n == 1;
      if (n > 1) two[b[0] << 8 | b[1]] = 1, whole2[b[0] << 8 | b[1]] |= n == 2;
    }
    mkc_gbnf_run *r = mkc_gbnf_run_open(g);
    long wrong = 0;
    for (int a = 0; a < 256; a++) {
      char s[2] = {(char)a};
      reading got = read_text(r, s, 1, 0);
      wrong += (got.refused < 0) != one[a] || (one[a] && got.ends != whole1[a]);
      for (int b = 0; b < 256 && one[a] && !whole1[a]; b++) {
        s[1] = (char)b;
        got = read_text(r, s, 2, b % 2);
        int ok =
            two[a << 8 | b] ? got.refused < 0 && got.ends == whole2[a << 8 | b] : got.refused == 1;
        wrong += !ok;
      }
    }
    /* longer characters: sampled, whole and with the last byte wrong */
    long tried = 0;
    for (uint32_t cp = 0x800; cp <= 0x10FFFF; cp += cp % 7 ? 97 : 89) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      unsigned char b[5];
      int n = utf8(cp, b);
      reading got = read_text(r, (char *)b, (size_t)n, cp % 2);
      wrong += in_class(cp, w) ? !(got.refused < 0 && got.ends) : got.refused < 0;
      b[n - 1] = 0x41; /* not a continuation byte: refused there, or before outside the class */
      long at = read_text(r, (char *)b, (size_t)n, 0).refused;
      wrong += in_class(cp, w) ? at != n - 1 : at < 0 || at > n - 1;
      tried++;
    }
    for (uint32_t cp = 0x20A0; cp <= 0x20B0; cp++) { /* around a single code point */
      unsigned char b[4];
      int n = utf8(cp, b);
      reading got = read_text(r, (char *)b, (size_t)n, 1);
      wrong += in_class(cp, w) ? got.refused >= 0 : got.refused < 0;
      tried++;
    }
    CHECK(wrong == 0,
          "%s: every 1- and 2-byte text and %ld longer characters read as the code points' "
          "UTF-8 says (%ld wrong)",
          gram[w], tried, wrong);
    mkc_gbnf_run_close(r);
    mkc_gbnf_free(g);
  }
}

/* ---- ambiguity ---- */

static void test_ambiguity(void) {
  char why[300];
  /* x^n can be read 2^n ways, each waiting for its own y's and z's */
  mkc_gbnf *g = compile("root ::= p\np ::= \"x\" p \"y\" | \"x\" p \"z\" | \"\"", why, sizeof why);
  /* many ways that come together: one way from then on */
  mkc_gbnf *h = compile("root ::= (\"a\" | \"a\" | [a-c] | \"aa\")*", why, sizeof why);
  if (!CHECK(g && h, "ambiguous grammars compile")) return;
  mkc_gbnf_run *r = mkc_gbnf_run_open(g), *q = mkc_gbnf_run_open(h);
  int lv = 0, refused_at = -1;
  for (int i = 0; i < 40 && refused_at < 0; i++)
    if (mkc_gbnf_run_byte(r, lv, 'x') != 0)
      refused_at = i;
    else
      lv++;
  CHECK(refused_at >= 10 && refused_at <= 14 && mkc_gbnf_run_overflowed(r),
        "x^n read 2^n ways: refused past %d ways (at byte %d), and it says why",
        MKC_GBNF_STACKS_MAX, refused_at);
  mkc_gbnf_run_restart(r);
  CHECK(!mkc_gbnf_run_overflowed(r) && read_text(r, "xxyz", 4, 1).ends, "restart clears it");
  int ok = 1;
  mkc_gbnf_run_restart(q);
  for (int i = 0; i < 5000 && ok; i++) {
    ok = mkc_gbnf_run_byte(q, 0, "abc"[i % 3]) == 0;
    mkc_gbnf_run_commit(q, 1);
  }
  CHECK(ok && !mkc_gbnf_run_overflowed(q) && mkc_gbnf_run_can_end(q, 0),
        "5000 bytes of a grammar with four readings of 'a'");
  mkc_gbnf_run_close(r), mkc_gbnf_run_close(q);
  mkc_gbnf_free(g), mkc_gbnf_free(h);
}

/* ---- the constraint over a vocabulary ---- */

#define VOCAB 64
static char vbytes[VOCAB * 4];
static uint32_t voff[VOCAB + 1];
static uint8_t vplain[VOCAB];

/* single characters, pieces, two control tokens (end-of-generation ids 60 and 61), an empty one */
static mkc_vocab_text vocab(void) {
  static const char *const PIECES[] = {"a",  "b",        "1",    "2",    ".",        "(",    ")",
                                       "ab", "ba",       "a1",   "1.",   "((",       "))",   "()",
                                       ")(", "\xc3\xa9", "\xc3", "\xa9", "\xe2\x82", "\xac", "x",
                                       " ",  "a b",      "12",   "abc",  ".5",       "aa",   "bb"};
  size_t at = 0;
  int id = 0, n = (int)(sizeof PIECES / sizeof *PIECES);
  for (; id < VOCAB; id++) {
    voff[id] = (uint32_t)at;
    const char *p = id < n     ? PIECES[id]
                    : id == 60 ? "<|end|>"
                    : id == 61 ? "<|eot|>"
                    : id == 62 ? ""
                               : "zz";
    memcpy(vbytes + at, p, strlen(p));
    at += strlen(p);
    vplain[id] = id != 60 && id != 61;
  }
  voff[VOCAB] = (uint32_t)at;
  return (mkc_vocab_text){VOCAB, vbytes, voff, vplain};
}

static void test_constraint(void) {
  static const char *const grams[] = {
      "root ::= (\"a\" | \"b\")+ \"1\"?",
      "root ::= (\"(\" root \")\")*",
      "root ::= [\\u00e9\\u20ac]{1,3} \".\"",
      "root ::= \"a\" [0-9]* (\".\" [0-9]+)?",
  };
  static const char *const texts[] = {
      "",   "a",   "ab",    "ab1", "(", "((", "()", "\xc3\xa9", "\xc3\xa9\xe2\x82\xac",
      "a1", "a1.", "a12.5", "aba"};
  mkc_vocab_text v = vocab();
  mkc_constraint *c = mkc_constraint_open(&v);
  const int ends[] = {60, 61};
  uint8_t got[VOCAB + 4];
  long cases = 0, wrong = 0;
  for (size_t gi = 0; gi < sizeof grams / sizeof *grams; gi++) {
    char why[300];
    mkc_gbnf *g = compile(grams[gi], why, sizeof why);
    mkc_gbnf_run *alone = mkc_gbnf_run_open(g);
    for (size_t ti = 0; ti < sizeof texts / sizeof *texts; ti++) {
      const char *t = texts[ti];
      if (read_text(alone, t, strlen(t), 1).refused >= 0) continue; /* not a prefix here */
      int can_end = mkc_gbnf_run_can_end(alone, 0), goes_on = mkc_gbnf_run_can_go_on(alone, 0);
      /* the answer's text, a token of one piece at a time where there is one, else byte by byte
       * through the split pieces */
      mkc_constraint_start_grammar(c, g, ends, 2, 7);
      int fed = 1;
      for (size_t i = 0; t[i] && fed;) {
        int best = -1;
        for (int id = 0; id < VOCAB; id++) {
          size_t n = voff[id + 1] - voff[id];
          if (vplain[id] && n && n <= strlen(t + i) && !memcmp(vbytes + voff[id], t + i, n) &&
              (best < 0 || n > voff[best + 1] - voff[best]))
            best = id;
        }
        fed = best >= 0 && mkc_constraint_accept(c, best) == 0;
        if (fed) i += voff[best + 1] - voff[best];
      }
      if (!fed) {
        wrong++;
        continue;
      }
      int n = mkc_constraint_mask(c, got, VOCAB + 4), want_n = 0, ok = 1;
      for (int id = 0; id < VOCAB + 4; id++) {
        int want = 0;
        if (id < VOCAB && vplain[id] && voff[id + 1] > voff[id]) {
          char s[64];
          snprintf(s, sizeof s, "%s%.*s", t, (int)(voff[id + 1] - voff[id]), vbytes + voff[id]);
          want = read_text(alone, s, strlen(s), 0).refused < 0;
        } else if (id == 60 || id == 61)
          want = can_end;
        want_n += want;
        ok &= got[id] == want && mkc_constraint_allowed(c, id) == want;
      }
      ok &= n == want_n && mkc_constraint_done(c) == 2 * (can_end && !goes_on);
      if (can_end) {
        ok &= mkc_constraint_accept(c, 61) == 0 && mkc_constraint_done(c) == 2;
      } else
        ok &= mkc_constraint_accept(c, 60) != 0;
      cases++;
      if (!ok) {
        wrong++;
        printf("     | %s after '%s'\n", shown(grams[gi]), t);
      }
    }
    mkc_gbnf_run_close(alone);
    mkc_gbnf_free(g);
  }
  /* one answer token by token, its states met again (the kept masks): each step's mask as the
   * tokens tried alone say */
  const char *steps[] = {"a", "b", "a", "ab", "ba", "a", "1"},
             *gram = "root ::= (\"a\" | \"b\")+ \"1\"?";
  char why[300], text[64] = "";
  mkc_gbnf *g = compile(gram, why, sizeof why);
  mkc_gbnf_run *alone = mkc_gbnf_run_open(g);
  mkc_constraint_start_grammar(c, g, ends, 2, 7);
  long steps_wrong = 0;
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    int id = -1;
    for (int t = 0; t < VOCAB && id < 0; t++)
      if (vplain[t] && voff[t + 1] - voff[t] == strlen(steps[i]) &&
          !memcmp(vbytes + voff[t], steps[i], strlen(steps[i])))
        id = t;
    steps_wrong += id < 0 || mkc_constraint_accept(c, id) != 0;
    strcat(text, steps[i]);
    mkc_constraint_mask(c, got, VOCAB + 4);
    for (int t = 0; t < VOCAB; t++) {
      char s[80];
      int want = 0;
      if (vplain[t] && voff[t + 1] > voff[t]) {
        snprintf(s, sizeof s, "%s%.*s", text, (int)(voff[t + 1] - voff[t]), vbytes + voff[t]);
        want = read_text(alone, s, strlen(s), 0).refused < 0;
      } else if (t == 60 || t == 61)
        want = read_text(alone, text, strlen(text), 1).ends;
      steps_wrong += got[t] != want;
    }
  }
  CHECK(steps_wrong == 0,
        "%s, one answer token by token (states met again, their masks kept): every step's mask "
        "as the tokens tried alone say (%ld wrong)",
        shown(gram), steps_wrong);
  mkc_gbnf_run_close(alone);
  mkc_gbnf_free(g);
  CHECK(wrong == 0 && cases >= 15,
        "%ld answers: the trie walk allows the tokens that each alone continue the text, the "
        "end tokens exactly where the grammar may end, and done where nothing can follow (%ld "
        "wrong)",
        cases, wrong);
  mkc_constraint_close(c);
}

int main(void) {
  test_refusals();
  test_regular();
  test_nested();
  test_unicode();
  test_ambiguity();
  test_constraint();
  return check_done();
}
