/* ptxas -v prints, per entry function:
 *   ptxas info    : Compiling entry function 'k' for 'sm_90'
 *   ptxas info    : Function properties for k
 *   ptxas         .     88 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 64 registers, used 1 barriers, 256 bytes smem, 384 bytes cmem[0]
 * then, for each function the entry calls (not inlined: __noinline__), its own
 *   ptxas info    : Function properties for _ZN..._mkc_gemm_tile...
 *   ptxas         .     0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
 * Those are the called functions' figures, not the entry's: each figure is
 * taken from the properties of the function it belongs to. Fields on the
 * "Used" line come and go (no smem, no cmem on sm_90), so each is looked for
 * by its unit. */
#include "ptxas.h"

#include <stdio.h>
#include <string.h>

/* The number before `unit` on the line starting at line (up to its end), or -1. */
static int number_before(const char *line, const char *unit) {
  const char *end = strchr(line, '\n');
  size_t len = end ? (size_t)(end - line) : strlen(line);
  size_t ulen = strlen(unit);
  for (size_t i = 0; i + ulen <= len; i++) {
    if (memcmp(line + i, unit, ulen) != 0 || i == 0 || line[i - 1] != ' ') continue;
    size_t j = i - 1;
    while (j > 0 && line[j - 1] >= '0' && line[j - 1] <= '9') j--;
    if (j == i - 1) continue;
    int v = 0;
    for (size_t k = j; k < i - 1; k++) v = v * 10 + (line[k] - '0');
    return v;
  }
  return -1;
}

/* Where text is on the line starting at line (up to its end), or NULL. */
static const char *in_line(const char *line, const char *text) {
  const char *end = strchr(line, '\n');
  size_t len = end ? (size_t)(end - line) : strlen(line), tlen = strlen(text);
  for (size_t i = 0; i + tlen <= len; i++)
    if (memcmp(line + i, text, tlen) == 0) return line + i;
  return NULL;
}

int mkc_ptxas_parse(const char *log, const char *kernel, mkc_ptxas_info *info) {
  memset(info, 0, sizeof *info);
  char key[300];
  snprintf(key, sizeof key, "Compiling entry function '%s' for '", kernel);
  const char *p = log ? strstr(log, key) : NULL;
  if (!p) return -1;
  p += strlen(key);
  size_t n = strcspn(p, "'");
  if (n >= sizeof info->arch) n = sizeof info->arch - 1;
  memcpy(info->arch, p, n);
  /* The block ends where the next entry function starts. */
  const char *next = strstr(p, "Compiling entry function '");
  int found = 0, own = 0; /* own: the last "Function properties for" named the entry */
  const char *props = "Function properties for ";
  size_t klen = strlen(kernel);
  for (const char *line = p; line && *line && (!next || line < next);) {
    int v;
    const char *fp = in_line(line, props);
    if (fp) {
      const char *name = fp + strlen(props);
      own = strncmp(name, kernel, klen) == 0 &&
            (name[klen] == '\n' || name[klen] == '\0' || name[klen] == ' ');
      if (!own) info->called_functions++;
    }
    if ((v = number_before(line, "bytes stack frame")) >= 0) {
      if (own)
        info->stack_bytes = v;
      else if (v > info->called_stack_bytes)
        info->called_stack_bytes = v;
    }
    if ((v = number_before(line, "bytes spill stores")) >= 0)
      *(own ? &info->spill_stores : &info->called_spill_stores) += v;
    if ((v = number_before(line, "bytes spill loads")) >= 0)
      *(own ? &info->spill_loads : &info->called_spill_loads) += v;
    if ((v = number_before(line, "registers")) >= 0) {
      info->registers = v;
      found = 1;
      if ((v = number_before(line, "barriers")) >= 0) info->barriers = v;
      if ((v = number_before(line, "bytes smem")) >= 0) info->smem_bytes = v;
      if ((v = number_before(line, "bytes cmem[0]")) >= 0) info->cmem0_bytes = v;
    }
    line = strchr(line, '\n');
    if (line) line++;
  }
  return found ? 0 : -1;
}
