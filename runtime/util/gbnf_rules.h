/* A compiled grammar (gbnf.h), as the compiler (gbnf.c) leaves it for the
 * matcher (gbnf_run.c). Every rule is alternatives, each a sequence of
 * elements ended by GB_END; groups and repetitions became rules of their
 * own, so an element is a character class or a rule to read. */
#ifndef MKC_GBNF_RULES_H
#define MKC_GBNF_RULES_H

#include <stdint.h>

#include "gbnf.h"

enum { GB_CHARS, GB_REF, GB_END };

typedef struct gb_range {
  uint32_t lo, hi; /* code points lo..hi */
} gb_range;

typedef struct gb_elem {
  uint32_t kind; /* GB_* */
  uint32_t a, b; /* GB_CHARS: ranges[a .. a + b), sorted and apart; GB_REF: rule a */
} gb_elem;

typedef struct gb_rule {
  uint32_t first_alt, n_alts; /* alts[first_alt ..]: where each alternative's elements begin */
} gb_rule;

struct mkc_gbnf {
  gb_elem *elems;
  gb_range *ranges;
  uint32_t *alts;
  gb_rule *rules;
  uint32_t n_elems, n_ranges, n_alts, n_rules;
  uint32_t root;
};

#endif
