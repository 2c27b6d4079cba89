/* Grammars in llama.cpp's GBNF, for constrained output (--grammar): the text
 * compiled into rules, and a matcher that reads an answer a byte at a time
 * and says whether some sentence of the grammar still begins with it.
 *
 * The syntax is llama.cpp's (grammars/README.md there): rules `name ::= ...`
 * (names of letters, digits and '-'; `root` is the start), alternatives
 * `|`, sequences, groups `( )`, literals "..." and character classes [...]
 * ([^...] negated) with the escapes \n \r \t \\ \" \[ \] \xHH \uHHHH
 * \UHHHHHHHH, `.` for any character, repetitions * + ? {m} {m,} {m,n}, and
 * comments from # to the line's end. A rule's body ends at a line's end
 * unless a group is open or the line ends in ::= or |. Characters are
 * Unicode code points; the answer's bytes are their UTF-8.
 *
 * Refused at compile time, with the line and column: an undefined rule, a
 * rule defined twice, no root, an empty class ([] or [^], which llama.cpp
 * reads as nothing at all), token references (<[id]>), and left recursion (a rule that can come
 * back to itself before reading a character, which would loop: also a
 * repetition of a part that can match nothing, such as (x?)*). */
#ifndef MKC_GBNF_H
#define MKC_GBNF_H

#include <stddef.h>

#define MKC_GBNF_REPEAT_MAX 1000 /* m and n of x{m,n} */
#define MKC_GBNF_STACKS_MAX 8192 /* ways a prefix is read at once (ambiguity) */
#define MKC_GBNF_DEPTH_MAX 10000 /* rules entered before a character is read */

typedef struct mkc_gbnf mkc_gbnf;

/* text[0..n) compiled; NULL after writing "LINE:COL: what" into why[cap]. */
mkc_gbnf *mkc_gbnf_compile(const char *text, size_t n, char *why, size_t cap);
void mkc_gbnf_free(mkc_gbnf *g);

/* A reading of one answer. Its states are levels: level 0 is the answer so
 * far, and level j + 1 is level j and one more byte, so a token's bytes are
 * tried from any earlier level and forgotten (exec/constrain.c walks the
 * vocabulary that way). */
typedef struct mkc_gbnf_run mkc_gbnf_run;

/* A reading of g (which must outlive it) at the start; NULL when its start
 * overflows (as mkc_gbnf_run_overflowed says) or memory runs out. */
mkc_gbnf_run *mkc_gbnf_run_open(const mkc_gbnf *g);
void mkc_gbnf_run_close(mkc_gbnf_run *r);
/* Back to the start, as opened. */
void mkc_gbnf_run_restart(mkc_gbnf_run *r);

/* Level `level` + 1 from level `level` (<= the deepest made since the last
 * commit; any above it are forgotten) and byte c: 0, or -1 when no sentence
 * begins with that text. */
int mkc_gbnf_run_byte(mkc_gbnf_run *r, int level, unsigned char c);
/* Level `level` becomes level 0, the answer so far. */
void mkc_gbnf_run_commit(mkc_gbnf_run *r, int level);
/* Whether the text at the level is a whole sentence. */
int mkc_gbnf_run_can_end(const mkc_gbnf_run *r, int level);
/* Whether some sentence is longer than the text at the level. */
int mkc_gbnf_run_can_go_on(const mkc_gbnf_run *r, int level);
/* A number that names the level's state (what may follow, and a character
 * under way) until the run is closed: equal numbers, equal states. */
unsigned long long mkc_gbnf_run_state(const mkc_gbnf_run *r, int level);
/* Whether a byte was refused only because the text could be read in more
 * than MKC_GBNF_STACKS_MAX ways, or memory ran out: the answer is then cut
 * short, and the caller says so. Cleared by restart. */
int mkc_gbnf_run_overflowed(const mkc_gbnf_run *r);

#endif
