/* The datasets of llama-perplexity's multiple-choice scores, read as it
 * reads them, for mkc perplexity --hellaswag and --winogrande:
 *
 * HellaSwag (hellaswag_val_full.txt): 6 lines a task: the context
 * (activity label, ": ", context), the gold ending's index 0..3, then the
 * four endings.
 *
 * Winogrande (a CSV such as winogrande-debiased-eval.csv): a task a line,
 * INDEX,SENTENCE,CHOICE1,CHOICE2,ANSWER, the sentence optionally in double
 * quotes (commas inside them are its own) with one '_' where a choice goes,
 * the answer 1 or 2. A line that is not such a task is skipped with a
 * warning, as llama-perplexity skips it (a header line, say).
 *
 * Both parse a text in place (its newlines, and the separators of a
 * Winogrande line, become NULs); the tasks point into it. */
#ifndef MKC_CHOICE_TASKS_H
#define MKC_CHOICE_TASKS_H

#include <stddef.h>

typedef struct mkc_hellaswag_task {
  const char *context, *ending[4];
  int gold; /* 0..3 */
  int line; /* the context's, 1-based */
} mkc_hellaswag_task;

/* 0 with *tasks (malloc'd) and *n, or -1 after "mkc: error: PATH[:LINE]: ..."
 * (a line count that is not a multiple of 6, a gold index that is not 0..3,
 * no tasks). */
int mkc_hellaswag_parse(char *text, size_t len, const char *path, mkc_hellaswag_task **tasks,
                        int *n);

typedef struct mkc_winogrande_task {
  const char *first, *second; /* the sentence before and after its '_' */
  const char *choice[2];
  int answer; /* 1 or 2 */
  int line;
} mkc_winogrande_task;

/* 0 with *tasks (malloc'd) and *n, the lines that are not tasks warned of
 * (the first few, then their count); -1 after a message when no line is a
 * task. */
int mkc_winogrande_parse(char *text, size_t len, const char *path, mkc_winogrande_task **tasks,
                         int *n);

/* llama-perplexity's --multiple-choice files (ARC, MMLU, TruthfulQA as
 * converted for llama.cpp), little-endian:
 *
 *   n_task        u32
 *   positions     n_task u32: each task's offset in the file
 *   tasks         each: a string, the question; then two sets of answers
 *                 (mc1, one answer right; mc2, several: read past, not
 *                 scored), each a u32 count (at most 100), that many
 *                 strings and that many i32 labels (1: right)
 *
 * a string being a u32 length and its bytes. */
typedef struct mkc_mc_task {
  char *question;
  char **answers; /* n_answers of them, each NUL-terminated */
  int *labels;
  int n_answers;
} mkc_mc_task;

/* The file's task count, its positions checked to lie in it: 0, or -1 after a message. */
int mkc_mc_count(const unsigned char *data, size_t n, const char *path, int *n_task);
/* Task `index` (for messages) read at offset *at, which moves past it: 0, or -1 after a message
 * (cut short, more than 100 answers, an empty question or answer). */
int mkc_mc_read(const unsigned char *data, size_t n, size_t *at, const char *path, int index,
                mkc_mc_task *t);
/* Where task i's position says it starts (mkc_mc_count checked it). */
size_t mkc_mc_position(const unsigned char *data, int i);
void mkc_mc_free(mkc_mc_task *t);

#endif
