/* Split-KV attention's merge (templates/attention.cuh, mkc_attention_merge) on
 * the SIMT emulator, one block, against the merge worked out here in double:
 * each head's m = max m_i, l = sum exp(m_i - m) l_i, out = sum exp(m_i - m)
 * acc_i / l (with a sink: its exp joins l, mkc_att_out's rule). The merge
 * shares its work among the block's threads in ways the model kernels reach
 * only on a GPU's grid, so each is driven here: more splits than a chunk of
 * weights holds (wcap small: the chunks past the first), more vectors than
 * threads (four heads of 256), heads not whole vectors of 4 (one float a
 * thread), groups limited by red's room, empty splits (m = the lowest float,
 * l = 0), and a run of slots not at 0. Built at 128 threads with loads 4 ahead
 * (the default), 1 ahead, and at 64 threads 3 ahead. */
#include "backend/cpu/backend.h"
#include "check.h"
#include "codegen/host.h"
#include "formats/weights.h"
#include "mkc_state.h"
#include "rand_bits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HEADS_MAX 4
#define NEG_MAX (-3.402823466e38f)

typedef struct merge_case {
  const float *part;
  int slot0, splits, pass_heads, gh, head_dim, wcap, red_floats;
  const uint16_t *sinks; /* bf16, or null */
  float *o;
} merge_case;

static const char KERNEL[] =
    "#define MKC_T_MAX 1\n"
    "#define MKC_KV_BF16 1\n"
    "#include \"prelude_cpu.h\"\n"
    "#include \"mkc_state.h\"\n"
    "#include \"common.cuh\"\n"
    "#include \"slots.cuh\"\n"
    "#include \"attention.cuh\"\n"
    "typedef struct { const float *part; int slot0, splits, pass_heads, gh, head_dim, wcap, "
    "red_floats; const mkc_bf16 *sinks; float *o; } merge_case;\n"
    "MKC_KERNEL mkc_step(const mkc_bf16 *unused, float *out, void *kv, mkc_state *st) {\n"
    "  const merge_case *c = (const merge_case *)kv;\n"
    "  float *mst = (float *)mkc_smem(), *wts = mst + 2 * MKC_ATT_HEADS;\n"
    "  float *red = wts + c->pass_heads * c->wcap;\n"
    "  mkc_attention_merge(c->part, c->slot0, c->splits, c->pass_heads, c->gh, c->head_dim,\n"
    "                      c->sinks, c->o, wts, c->wcap, red, c->red_floats, mst);\n"
    "  (void)unused, (void)out, (void)st;\n"
    "}\n";

/* One merge: random partials (every fifth split empty), the kernel's outputs against double's. */
static void one(mkc_cpu_kernel *k, int threads, const char *build, int splits, int pass_heads,
                int gh, int head_dim, int wcap, int groups_room, int sinks, int slot0) {
  int slot = (pass_heads * (head_dim + 2) + 3) & ~3, n = gh * head_dim;
  float *part = calloc((size_t)(slot0 + splits) * slot, sizeof(float));
  float *o = calloc((size_t)n, sizeof(float));
  uint16_t sink[HEADS_MAX];
  for (int h = 0; h < HEADS_MAX; h++) sink[h] = bf16_of(uniform(-2.0f, 6.0f));
  for (int i = 0; i < slot0 + splits; i++) {
    float *p = part + (long)i * slot;
    int empty = i >= slot0 && (i - slot0) % 5 == 4;
    for (int h = 0; h < pass_heads; h++) {
      p[pass_heads * head_dim + h] = empty ? NEG_MAX : uniform(-8.0f, 8.0f);
      p[pass_heads * head_dim + pass_heads + h] = empty ? 0.0f : uniform(0.5f, 30.0f);
      for (int d = 0; d < head_dim; d++)
        p[h * head_dim + d] = empty ? 0.0f : uniform(-20.0f, 20.0f);
    }
  }
  /* red's room: as the kernel gives it (slices x heads x head_dim), or one group's */
  int red_floats = groups_room > 1 ? groups_room * n : n;
  merge_case c = {part,     slot0, splits,     pass_heads,          gh,
                  head_dim, wcap,  red_floats, sinks ? sink : NULL, o};
  size_t smem = (size_t)(2 * HEADS_MAX + pass_heads * wcap + red_floats) * sizeof(float);
  mkc_state st;
  memset(&st, 0, sizeof st);
  int ok = mkc_cpu_kernel_launch(k, 1, threads, smem, NULL, NULL, &c, &st) == 0;
  double worst = 0.0;
  for (int h = 0; ok && h < gh; h++) {
    double m = -INFINITY, l = 0.0, top = 0.0;
    for (int i = slot0; i < slot0 + splits; i++)
      m = fmax(m, part[(long)i * slot + pass_heads * head_dim + h]);
    for (int i = slot0; i < slot0 + splits; i++) {
      const float *p = part + (long)i * slot;
      l +=
          exp((double)p[pass_heads * head_dim + h] - m) * p[pass_heads * head_dim + pass_heads + h];
    }
    double a = 1.0, extra = 0.0;
    if (sinks) { /* the sink's score in the softmax's sum */
      double s = mkc_bf16_to_float(sink[h]);
      top = fmax(m, s);
      a = exp(m - top);
      extra = exp(s - top);
    }
    double want[256], scale = 0.0;
    for (int d = 0; d < head_dim; d++) {
      double acc = 0.0;
      for (int i = slot0; i < slot0 + splits; i++) {
        const float *p = part + (long)i * slot;
        acc += exp((double)p[pass_heads * head_dim + h] - m) * p[h * head_dim + d];
      }
      want[d] = acc * a / (l * a + extra);
      scale = fmax(scale, fabs(want[d]));
    }
    for (int d = 0; d < head_dim; d++) {
      double e = fabs(o[h * head_dim + d] - want[d]) / (scale > 0 ? scale : 1.0);
      if (!(e <= worst)) worst = e;
    }
  }
  CHECK(ok && worst <= 2e-6,
        "%s: %d splits from slot %d, %d of %d heads of %d, chunks of %d, red for %d groups, %s: "
        "within 2e-6 of double (%.2g)%s",
        build, splits, slot0, gh, pass_heads, head_dim, wcap, groups_room,
        sinks ? "sinks" : "no sinks", worst, ok ? "" : " (the launch failed)");
  free(part);
  free(o);
}

/* splits, pass_heads, gh, head_dim, wcap, red's room in groups, sinks, slot0 */
static const int CASES[][8] = {
    /* llama-3.2-1b at 4096 positions: 66 splits of 4 heads of 64 (64 vectors, 2 groups) */
    {66, 4, 4, 64, 512, 16, 0, 0},
    {66, 4, 4, 64, 512, 16, 1, 3},
    /* chunks of weights past the first: 66 and 300 splits in chunks of 7 and 128 */
    {66, 4, 4, 64, 7, 16, 0, 0},
    {300, 4, 3, 64, 128, 16, 1, 0},
    /* more vectors than threads: 4 heads of 256 (Gemma 3 1B's), with a chunk past the first */
    {40, 4, 4, 256, 512, 4, 0, 0},
    {40, 4, 4, 256, 16, 4, 1, 2},
    /* heads not whole vectors: 6 floats each, one float a thread; 12 (odd's), in vectors */
    {9, 3, 3, 6, 512, 8, 0, 0},
    {9, 3, 3, 12, 4, 8, 1, 0},
    /* groups limited by red's room: one group; and a pass of one head (qwen2-tiny's second) */
    {33, 4, 4, 64, 512, 1, 0, 0},
    {5, 4, 1, 12, 512, 16, 0, 1},
    /* two splits, and one a chunk */
    {2, 2, 2, 16, 512, 16, 0, 0},
    {2, 2, 2, 16, 1, 16, 1, 0},
};

int main(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/templates", mkc_home());
  static const int builds[3][2] = {{128, 4}, {128, 1}, {64, 3}}; /* threads, MKC_ATT_AHEAD */
  for (int b = 0; b < 3; b++) {
    static char source[sizeof KERNEL + 96];
    snprintf(source, sizeof source, "#define MKC_THREADS %d\n#define MKC_ATT_AHEAD %d\n%s",
             builds[b][0], builds[b][1], KERNEL);
    char build[48];
    snprintf(build, sizeof build, "%d threads, %d ahead", builds[b][0], builds[b][1]);
    mkc_cpu_kernel *k = mkc_cpu_kernel_open(source, "att_merge.c", dir);
    if (!CHECK(k != NULL, "the merge's test kernel builds (%s)", build)) return check_done();
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
      const int *c = CASES[i];
      one(k, builds[b][0], build, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
    }
    mkc_cpu_kernel_close(k);
  }
  return check_done();
}
