/* Test helpers: one line per check ("ok   name" or "FAIL name ... [file:line]"),
 * then check_done() prints "N passed, N failed" and gives the exit status. */
#ifndef MKC_CHECK_H
#define MKC_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int check_passed, check_failed;

__attribute__((format(printf, 4, 0))) static inline int
check_vreport(int ok, const char *file, int line, const char *fmt, va_list ap) {
  fputs(ok ? "ok   " : "FAIL ", stdout);
  vprintf(fmt, ap);
  if (!ok) printf("  [%s:%d]", file, line);
  putchar('\n');
  fflush(stdout);
  if (ok)
    check_passed++;
  else
    check_failed++;
  return ok;
}

__attribute__((format(printf, 4, 5))) static inline int
check_report(int ok, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  check_vreport(ok, file, line, fmt, ap);
  va_end(ap);
  return ok;
}

__attribute__((format(printf, 5, 6))) static inline int
check_int(long long actual, long long expected, const char *file, int line, const char *fmt, ...) {
  char name[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  if (actual == expected) return check_report(1, file, line, "%s", name);
  return check_report(0, file, line, "%s: expected %lld, actual %lld", name, expected, actual);
}

__attribute__((format(printf, 6, 7))) static inline int check_near(double actual, double expected,
                                                                   double tol, const char *file,
                                                                   int line, const char *fmt, ...) {
  char name[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  if (fabs(actual - expected) <= tol) return check_report(1, file, line, "%s", name);
  return check_report(0, file, line, "%s: expected %.9g, actual %.9g (tolerance %g)", name,
                      expected, actual, tol);
}

/* CHECK(cond, "name %d", ...): passes when cond is true. */
#define CHECK(cond, ...) check_report(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
/* CHECK_INT(actual, expected, "name", ...): prints both on failure. */
#define CHECK_INT(actual, expected, ...)                                                           \
  check_int((long long)(actual), (long long)(expected), __FILE__, __LINE__, __VA_ARGS__)
/* CHECK_NEAR(actual, expected, tol, "name", ...): |actual - expected| <= tol. */
#define CHECK_NEAR(actual, expected, tol, ...)                                                     \
  check_near((actual), (expected), (tol), __FILE__, __LINE__, __VA_ARGS__)

/* CHECK_SKIP("why", ...): a check that cannot run here (missing data or
 * hardware); counted as skipped in the closing line. */
static int check_skipped;
#define CHECK_SKIP(...) (printf("skip "), printf(__VA_ARGS__), putchar('\n'), check_skipped++)

/* The path of test data file `name` under $MKC_TEST_DATA (tests/data/fetch.sh)
 * into buf: 0, or -1 after a skip that names what is missing. */
static inline int test_data_path(const char *name, char *buf, size_t cap) {
  const char *data = getenv("MKC_TEST_DATA");
  snprintf(buf, cap, "%s/%s", data ? data : "", name);
  if (data && *data && access(buf, R_OK) == 0) return 0;
  CHECK_SKIP("%s: no test data (set MKC_TEST_DATA; tests/data/fetch.sh)", name);
  return -1;
}

/* Prints the closing line; returns the process exit status. */
static inline int check_done(void) {
  if (check_skipped)
    printf("%d passed, %d failed, %d skipped\n", check_passed, check_failed, check_skipped);
  else
    printf("%d passed, %d failed\n", check_passed, check_failed);
  fflush(stdout);
  return check_failed ? 1 : 0;
}

/* Captures what the code between check_stderr_begin() and check_stderr_end()
 * writes to stderr, to compare an error message with the expected one. The
 * returned text (malloc'd, caller frees) is also echoed to stdout, indented. */
static int check_saved_stderr = -1;
static FILE *check_capture;

static inline void check_stderr_begin(void) {
  fflush(stderr);
  check_capture = tmpfile();
  if (!check_capture) return;
  check_saved_stderr = dup(2);
  dup2(fileno(check_capture), 2);
}

static inline char *check_stderr_end(void) {
  char *text = calloc(1, 1);
  if (!check_capture) return text;
  fflush(stderr);
  dup2(check_saved_stderr, 2);
  close(check_saved_stderr);
  long n = ftell(check_capture);
  if (n > 0 && (text = realloc(text, (size_t)n + 1))) {
    rewind(check_capture);
    n = (long)fread(text, 1, (size_t)n, check_capture);
    text[n] = '\0';
  }
  fclose(check_capture);
  check_capture = NULL;
  for (char *line = text; text && *line;) {
    char *nl = line;
    while (*nl && *nl != '\n') nl++;
    printf("     | %.*s\n", (int)(nl - line), line);
    line = *nl ? nl + 1 : nl;
  }
  return text;
}

#endif
