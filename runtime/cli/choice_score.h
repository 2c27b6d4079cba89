/* mkc perplexity --hellaswag, --winogrande and --multiple-choice:
 * llama-perplexity's multiple-choice scores. Each task's candidate texts share a start, which
 * is read once; each candidate then goes on from it (the cache rewound),
 * and its score is the mean log-probability of the tokens that differ
 * (HellaSwag and --multiple-choice: the ending or answer; Winogrande: the
 * words after the choice). The
 * candidate with the higher score is the model's answer; the running
 * accuracy is printed a task a line, as llama-perplexity prints it. */
#ifndef MKC_CHOICE_SCORE_H
#define MKC_CHOICE_SCORE_H

#include "cli.h"
#include "loaded.h"

/* The dataset is c's text (-f FILE); m planned and started. 0, or 1 after a message. */
int mkc_perplexity_hellaswag(const mkc_cli *c, mkc_loaded_model *m);
int mkc_perplexity_winogrande(const mkc_cli *c, mkc_loaded_model *m);
/* --multiple-choice: the dataset is -f FILE, read whole (binary). */
int mkc_perplexity_multiple_choice(const mkc_cli *c, mkc_loaded_model *m);

#endif
