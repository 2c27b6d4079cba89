/* llama-perplexity's multiple-choice datasets (cli/choice_tasks.h) and the
 * draws that choose their subsets (util/mt19937.h). The generator against
 * the C++ standard's check value (the 10000th draw of a default-seeded
 * std::mt19937 is 4123659995) and draws g++'s libstdc++ made (recorded from
 * std::mt19937 rng(1) with std::uniform_int_distribution<size_t>, and with
 * Winogrande's float scaling); the parsers on their fields, quotes, short
 * last lines and refusals; --multiple-choice's binary tasks and refusals. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/choice_tasks.h"
#include "util/mt19937.h"

static void draws(void) {
  mkc_mt19937 r;
  mkc_mt19937_seed(&r, 5489); /* the default seed */
  uint32_t v = 0;
  for (int i = 0; i < 10000; i++) v = mkc_mt19937_next(&r);
  CHECK_INT(v, 4123659995u, "mt19937: the standard's 10000th draw");
  mkc_mt19937_seed(&r, 1);
  uint32_t first[3] = {mkc_mt19937_next(&r), mkc_mt19937_next(&r), mkc_mt19937_next(&r)};
  CHECK(first[0] == 1791095845u && first[1] == 4282876139u && first[2] == 3093770124u,
        "mt19937(1): its first three draws");
  /* HellaSwag's: uniform over the tasks left, 10042 of them at first */
  static const size_t WANT[] = {4187, 10012, 7232, 9361, 1};
  mkc_mt19937_seed(&r, 1);
  int same = 1;
  for (int i = 0; i < 5; i++) same &= mkc_mt19937_uniform(&r, 10041 - (size_t)i) == WANT[i];
  CHECK(same, "uniform_int_distribution<size_t>(0, n - 1) as libstdc++ draws it (n = 10042 down)");
  /* a range of 2/3 of 2^32: the rejection path */
  static const size_t TWO_THIRDS[] = {1194063896, 2855250759u, 2670202245u, 327508};
  mkc_mt19937_seed(&r, 1);
  same = 1;
  for (int i = 0; i < 4; i++) same &= mkc_mt19937_uniform(&r, 2863311530u) == TWO_THIRDS[i];
  CHECK(same, "uniform_int_distribution over 2/3 of 2^32: its retries as libstdc++'s");
}

static void hellaswag(void) {
  char text[] = "Cooking: a man cracks an egg\n2\nand flies.\nand sings.\nand whisks it.\nand "
                "swims.\nSports: a ball\n0\nis thrown.\nis eaten.\nis sung.\nis read.";
  mkc_hellaswag_task *t;
  int n;
  int rc = mkc_hellaswag_parse(text, strlen(text), "hs.txt", &t, &n);
  CHECK(rc == 0 && n == 2 && !strcmp(t[0].context, "Cooking: a man cracks an egg") &&
            t[0].gold == 2 && !strcmp(t[0].ending[2], "and whisks it.") && t[1].gold == 0 &&
            !strcmp(t[1].ending[3], "is read.") && t[1].line == 7,
        "HellaSwag: 12 lines (the last without a newline), 2 tasks, their fields and lines");
  if (rc == 0) free(t);
  char odd[] = "a\n1\nb\nc\nd\n";
  check_stderr_begin();
  rc = mkc_hellaswag_parse(odd, strlen(odd), "hs.txt", &t, &n);
  char *err = check_stderr_end();
  CHECK(rc == -1 && strstr(err, "mkc: error: hs.txt: 5 lines, not a whole number of tasks"),
        "HellaSwag: 5 lines refused (%s)", err);
  free(err);
  char gold[] = "a\n4\nb\nc\nd\ne\n";
  check_stderr_begin();
  rc = mkc_hellaswag_parse(gold, strlen(gold), "hs.txt", &t, &n);
  err = check_stderr_end();
  CHECK(rc == -1 && strstr(err, "mkc: error: hs.txt:2: the gold ending's index: 0, 1, 2 or 3, "
                                "not '4'"),
        "HellaSwag: a gold index of 4 refused (%s)", err);
  free(err);
}

static void winogrande(void) {
  char text[] = "index,sentence,option1,option2,answer\n"
                "0,Sarah was better than Maria so _ got the easy cases.,Sarah,Maria,2\r\n"
                "1,\"He said, loudly, that _ won.\",Tom,Ann,1\n"
                "2,No blank here.,a,b,1\n"
                "3,A _ b.,x,y,3";
  mkc_winogrande_task *t;
  int n;
  check_stderr_begin();
  int rc = mkc_winogrande_parse(text, strlen(text), "wg.csv", &t, &n);
  char *err = check_stderr_end();
  CHECK(rc == 0 && n == 2 && !strcmp(t[0].first, "Sarah was better than Maria so ") &&
            !strcmp(t[0].second, " got the easy cases.") && !strcmp(t[0].choice[0], "Sarah") &&
            !strcmp(t[0].choice[1], "Maria") && t[0].answer == 2 && t[0].line == 2 &&
            !strcmp(t[1].first, "He said, loudly, that ") && !strcmp(t[1].second, " won.") &&
            !strcmp(t[1].choice[1], "Ann") && t[1].answer == 1,
        "Winogrande: 2 tasks of 5 lines, their fields (a quoted sentence with commas, a CRLF)");
  CHECK(strstr(err, "wg.csv:1: the sentence has no '_' for a choice: skipped") &&
            strstr(err, "wg.csv:4: the sentence has no '_'") &&
            strstr(err, "wg.csv:5: the answer is not 1 or 2: skipped"),
        "Winogrande: the header, a sentence without '_' and an answer of 3 warned of (%s)", err);
  free(err);
  if (rc == 0) free(t);
  char none[] = "a,b\n";
  check_stderr_begin();
  rc = mkc_winogrande_parse(none, strlen(none), "wg.csv", &t, &n);
  err = check_stderr_end();
  CHECK(rc == -1 && strstr(err, "mkc: error: wg.csv: no Winogrande task in 1 lines"),
        "Winogrande: no task refused (%s)", err);
  free(err);
}

/* A --multiple-choice file built here: n tasks, each "question" with answers a and bb
 * (labels 0, 1), and an mc2 of one answer "c"; then mutated by the caller. empty: the first
 * answer is "" instead. */
static size_t mc_file(unsigned char *b, int n, int empty) {
  size_t at = 4 + 4 * (size_t)n;
  memcpy(b, &n, 4);
  for (int t = 0; t < n; t++) {
    uint32_t pos = (uint32_t)at;
    memcpy(b + 4 + 4 * t, &pos, 4);
    static const unsigned char TASK[] = {8, 0,   0,   0, 'q', 'u', 'e', 's', 't', 'i', 'o', 'n',
                                         2, 0,   0,   0, 1,   0,   0,   0,   'a', 2,   0,   0,
                                         0, 'b', 'b', 0, 0,   0,   0,   1,   0,   0,   0,   1,
                                         0, 0,   0,   1, 0,   0,   0,   'c', 1,   0,   0,   0};
    if (empty) { /* the answer's length 0, its byte left out */
      memcpy(b + at, TASK, 16);
      memset(b + at + 16, 0, 4);
      memcpy(b + at + 20, TASK + 21, sizeof TASK - 21);
      at += sizeof TASK - 1;
      continue;
    }
    memcpy(b + at, TASK, sizeof TASK);
    at += sizeof TASK;
  }
  return at;
}

static void multiple_choice(void) {
  unsigned char b[256];
  size_t n = mc_file(b, 2, 0);
  int count;
  mkc_mc_task t;
  size_t at = 12;
  int ok = mkc_mc_count(b, n, "mc.bin", &count) == 0 && count == 2 &&
           mkc_mc_read(b, n, &at, "mc.bin", 0, &t) == 0;
  CHECK(ok && !strcmp(t.question, "question") && t.n_answers == 2 && !strcmp(t.answers[1], "bb") &&
            t.labels[0] == 0 && t.labels[1] == 1 && at == mkc_mc_position(b, 1),
        "multiple choice: 2 tasks, the first's question, answers and labels, the next at its "
        "position");
  if (ok) mkc_mc_free(&t);
  struct {
    const char *name;
    size_t cut, poke_at;
    unsigned char poke;
    const char *want;
  } BAD[] = {
      {"cut short in its labels", 12 + 40, 0, 0, "mkc: error: mc.bin: task 0: cut short"},
      {"101 answers", 0, 12 + 12, 101, "mkc: error: mc.bin: task 0: more than 100 answers"},
      {"an empty answer", 0, 0, 0, "mkc: error: mc.bin: task 0: an empty answer"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
    n = mc_file(b, 2, i == 2);
    if (BAD[i].cut) n = BAD[i].cut;
    if (BAD[i].poke_at) b[BAD[i].poke_at] = BAD[i].poke;
    at = 12;
    check_stderr_begin();
    int rc = mkc_mc_read(b, n, &at, "mc.bin", 0, &t);
    char *err = check_stderr_end();
    CHECK(rc == -1 && strstr(err, BAD[i].want), "multiple choice: %s refused (%s)", BAD[i].name,
          err);
    free(err);
  }
  n = mc_file(b, 2, 0);
  uint32_t far = 5000;
  memcpy(b + 8, &far, 4);
  check_stderr_begin();
  int rc = mkc_mc_count(b, n, "mc.bin", &count);
  char *err = check_stderr_end();
  CHECK(rc == -1 && strstr(err, "task 1's position 5000 is past the end"),
        "multiple choice: a position past the end refused (%s)", err);
  free(err);
}

int main(void) {
  multiple_choice();
  draws();
  hellaswag();
  winogrande();
  return check_done();
}
