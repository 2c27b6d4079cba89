/* mkc inspect against oracles: the codegen's own stage list (the Lua plan,
 * read here through an embedded Lua), byte counts computed from the preset's
 * sizes, tampered kernels that must show mismatches, --diff against the
 * stages whose emitted code changed, and --check on every preset. Skipped
 * (never passed) where libclang is missing. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codegen/host.h"
#include "inspect/inspect.h"
#include "inspect/libclang.h"
#include "util/files.h"
#include "backend/cuda/nvrtc.h"
#include "backend/cuda/ptxas.h"

#define MAX_STAGES 256

/* What codegen planned, straight from the Lua pipeline. */
typedef struct oracle {
  int n_stages;
  char kind[MAX_STAGES][32];
  char sync[MAX_STAGES][16];
  char *code[MAX_STAGES];
  int smem[MAX_STAGES];
  int n_nodes[MAX_STAGES], nodes[MAX_STAGES][16];
  int n_compute, compute[4096]; /* graph nodes that are not weights or tokens */
} oracle;

static const char ORACLE_LUA[] =
    "local home, graph, preset, draft_max = ...\n"
    "package.path = home .. '/codegen/?.lua'\n"
    "local emit, main = require('emit'), require('main')\n"
    "local seen\n"
    "local source = emit.source\n"
    "emit.source = function(g, plan, gen) seen = { graph = g, plan = plan } return source(g, plan, "
    "gen) end\n"
    "main.generate({ graph = graph, preset = preset, draft_max = draft_max, threads = 128,\n"
    "  max_blocks = 1024, t_cap = 32, version = 'oracle', templates_dir = home .. '/templates' })\n"
    "local out = { stages = {}, compute = {} }\n"
    "for i, st in ipairs(seen.plan.stages) do\n"
    "  local ids = {}\n"
    "  for _, n in ipairs(st.nodes) do ids[#ids + 1] = n.id - 1 end\n"
    "  out.stages[i] = { kind = st.kind, sync = st.sync.kind, nodes = ids, code = "
    "st.emitted.code,\n"
    "                    smem = st.smem_bytes }\n"
    "end\n"
    "for _, n in ipairs(seen.graph.order) do\n"
    "  if n.op ~= 'weight' and n.op ~= 'tokens' then out.compute[#out.compute + 1] = n.id - 1 end\n"
    "end\n"
    "return out\n";

static int oracle_load(const char *preset, int draft_max, oracle *o) {
  memset(o, 0, sizeof *o);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  lua_State *L = mkc_codegen_state(); /* codegen needs the host's schema */
  if (!L) return -1;
  int rc = luaL_loadstring(L, ORACLE_LUA);
  lua_pushstring(L, mkc_home());
  lua_pushstring(L, graph);
  lua_pushstring(L, preset);
  lua_pushinteger(L, draft_max);
  if (rc != LUA_OK || lua_pcall(L, 4, 1, 0) != LUA_OK) {
    printf("     | oracle: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return -1;
  }
  lua_getfield(L, -1, "stages");
  o->n_stages = (int)luaL_len(L, -1);
  for (int i = 0; i < o->n_stages && i < MAX_STAGES; i++) {
    lua_geti(L, -1, i + 1);
    lua_getfield(L, -1, "kind");
    snprintf(o->kind[i], sizeof o->kind[i], "%s", lua_tostring(L, -1));
    lua_getfield(L, -2, "sync");
    snprintf(o->sync[i], sizeof o->sync[i], "%s", lua_tostring(L, -1));
    lua_getfield(L, -3, "code");
    o->code[i] = strdup(lua_tostring(L, -1));
    lua_getfield(L, -4, "smem");
    o->smem[i] = (int)lua_tointeger(L, -1);
    lua_getfield(L, -5, "nodes");
    o->n_nodes[i] = (int)luaL_len(L, -1);
    for (int k = 0; k < o->n_nodes[i] && k < 16; k++) {
      lua_geti(L, -1, k + 1);
      o->nodes[i][k] = (int)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 6);
  }
  lua_pop(L, 1);
  lua_getfield(L, -1, "compute");
  o->n_compute = (int)luaL_len(L, -1);
  for (int i = 0; i < o->n_compute && i < 4096; i++) {
    lua_geti(L, -1, i + 1);
    o->compute[i] = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_close(L);
  return 0;
}

static void oracle_free(oracle *o) {
  for (int i = 0; i < o->n_stages && i < MAX_STAGES; i++) free(o->code[i]);
}

/* Generates a preset's kernel into path; fills g. */
static int gen(const char *preset, int draft_max, const char *path, mkc_graph *g) {
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph, .preset = preset, .draft_max = draft_max, .max_ctx = 0};
  mkc_kernel_src src;
  if (mkc_codegen(&o, g, &src) != 0) return -1;
  FILE *f = fopen(path, "w");
  int rc = f && fputs(src.source, f) >= 0 ? 0 : -1;
  if (f) fclose(f);
  mkc_kernel_src_free(&src);
  return rc;
}

static int open_at(const char *path, int tokens, int pos, int blocks, mkc_inspect_report *r) {
  mkc_inspect_opts o = {
      .tokens = tokens, .pos = pos, .blocks = blocks, .gpu = "h100", .arch = NULL};
  return mkc_inspect_open(path, &o, r);
}

/* The outline against the codegen's stage list: stage count and order,
 * each stage's graph nodes, each graph node in exactly one stage, syncs. */
static void outline_matches_plan(const char *preset, const char *path, const mkc_graph *g) {
  oracle o;
  mkc_inspect_report r;
  if (!CHECK(oracle_load(preset, 4, &o) == 0, "%s: the Lua plan loads", preset)) return;
  if (!CHECK(open_at(path, 1, -1, 0, &r) == 0, "%s: inspect opens the kernel", preset)) return;
  CHECK_INT(r.n_mismatches, 0, "%s: metadata and code agree", preset);
  for (int k = 0; k < r.n_mismatches && k < 5; k++)
    printf("     | %d: %s\n", r.mismatches[k].stage, r.mismatches[k].what);
  CHECK_INT(r.n_stages, o.n_stages, "%s: outline stage count = the codegen's stages", preset);
  int order_ok = r.n_stages == o.n_stages, nodes_ok = order_ok, sync_ok = order_ok, ops_ok = 1;
  for (int i = 0; order_ok && i < r.n_stages; i++) {
    const mkc_stage_meta *m = &r.stages[i].meta;
    if (strcmp(m->kind, o.kind[i]) != 0) {
      printf("     | stage %d: outline %s, plan %s\n", i + 1, m->kind, o.kind[i]);
      order_ok = 0;
    }
    nodes_ok &= m->n_nodes == o.n_nodes[i];
    for (int k = 0; nodes_ok && k < m->n_nodes; k++) nodes_ok &= m->nodes[k] == o.nodes[i][k];
    for (int k = 0; k < m->n_nodes; k++) {
      const char *op = mkc_op_name(g->nodes[m->nodes[k]].op);
      ops_ok &= strncmp(m->labels[k], op, strlen(op)) == 0;
    }
    int grid = strcmp(o.sync[i], "grid") == 0;
    sync_ok &= grid == (strcmp(r.stages[i].ast.sync, "grid") == 0);
  }
  CHECK(order_ok, "%s: outline stage kinds in the plan's order", preset);
  CHECK(nodes_ok, "%s: each stage lists the plan's graph nodes, in order", preset);
  CHECK(ops_ok, "%s: each node label starts with the op of that graph node", preset);
  CHECK(sync_ok, "%s: a grid barrier ends exactly the stages the sync plan says", preset);
  int once = 1, stray = 0;
  for (int c = 0; c < o.n_compute; c++) {
    int seen = 0;
    for (int i = 0; i < r.n_stages; i++)
      for (int k = 0; k < r.stages[i].meta.n_nodes; k++)
        seen += r.stages[i].meta.nodes[k] == o.compute[c];
    if (seen != 1) {
      printf("     | node %d in %d stages\n", o.compute[c], seen);
      once = 0;
    }
  }
  for (int i = 0; i < r.n_stages; i++)
    for (int k = 0; k < r.stages[i].meta.n_nodes; k++) {
      int op = g->nodes[r.stages[i].meta.nodes[k]].op;
      stray += op == MKC_OP_WEIGHT || op == MKC_OP_TOKENS;
    }
  CHECK(once && o.n_compute > 0, "%s: each of the %d graph nodes is in exactly one stage", preset,
        o.n_compute);
  CHECK_INT(stray, 0, "%s: no stage claims a weight or the tokens", preset);
  mkc_inspect_close(&r);
  oracle_free(&o);
}

/* llama-3.2-1b: distinct bytes per step from the preset's sizes alone. */
static void llama_bytes(const char *path, const mkc_graph *g, int T, int pos) {
  mkc_inspect_report r;
  if (!CHECK(open_at(path, T, pos, 0, &r) == 0, "llama-3.2-1b: inspect at T=%d pos=%d", T, pos))
    return;
  double d = g->dim, L = g->n_layers, q = (double)g->n_heads * g->head_dim;
  double kvd = (double)g->n_kv_heads * g->head_dim, ffn = g->ffn, V = g->vocab;
  /* bf16 weights: every matrix once (the tied head reads token_embd), norms, T embedding rows */
  double weights =
      2 * (L * (d * q + 2 * d * kvd + q * d + 3 * d * ffn + 2 * d) + d + V * d) + 2 * T * d;
  /* bf16 KV (the default): each layer reads K and V rows [0, pos+T) and writes T rows of each */
  double kv = L * 2 * 2 * kvd * (pos + T) + L * 2 * 2 * kvd * T;
  /* float activations per token: embed, per layer qkv/attention/o/gate-up/down, head, logits */
  double act = 4 * T * (d + L * (d + q + q + q + q + 2 * d + d + ffn + ffn + 2 * d) + d + V);
  long long w = 0, k = 0, total = 0;
  for (int i = 0; i < r.n_stages; i++)
    for (int j = 0; j < r.stages[i].meta.n_regions; j++) {
      const mkc_region *reg = &r.stages[i].meta.regions[j];
      long long b = mkc_qty_eval(reg->bytes, r.at);
      total += b;
      if (reg->arena == MKC_ARENA_WEIGHTS) w += b;
      if (reg->arena == MKC_ARENA_KV) k += b;
    }
  long long rd = 0, wr = 0;
  for (int i = 0; i < r.n_stages; i++) {
    rd += mkc_stage_bytes(&r.stages[i], 0, r.at);
    wr += mkc_stage_bytes(&r.stages[i], 1, r.at);
  }
  /* issue 12: at most 2 grid barriers a step; every other stage boundary a flow wait */
  CHECK(r.header.n_grid_barriers <= 2 &&
            r.header.n_grid_barriers + r.header.n_flow_waits == r.n_stages - 1,
        "llama-3.2-1b: %d grid barriers (<= 2) and %d flow waits between %d stages",
        r.header.n_grid_barriers, r.header.n_flow_waits, r.n_stages);
  CHECK_NEAR((double)w, weights, 0.5, "llama-3.2-1b T=%d pos=%d: weight bytes = 2 x parameters", T,
             pos);
  CHECK_NEAR((double)k, kv, 0.5, "llama-3.2-1b T=%d pos=%d: KV bytes = cache rows read + appended",
             T, pos);
  CHECK_NEAR((double)(rd + wr), weights + kv + act, 0.01 * (weights + kv + act),
             "llama-3.2-1b T=%d pos=%d: total bytes = weights + KV + activations (1%%)", T, pos);
  CHECK_INT(rd + wr, total, "llama-3.2-1b: stage totals add up the listed ranges");
  /* every stage of a 1B model at batch 1 is bandwidth-bound on an H100 */
  double floor = 0;
  for (int i = 0; i < r.n_stages; i++) floor += mkc_stage_floor(&r.stages[i], r.gpu, r.at, NULL);
  CHECK_NEAR(floor, (double)(rd + wr) / 3.35e12, 1e-3 * floor,
             "llama-3.2-1b T=%d: floor = bytes / 3.35 TB/s (memory-bound)", T);
  mkc_inspect_close(&r);
}

/* A stage's items over a small grid, against hand-counted shares. */
static void per_block(const char *path) {
  mkc_inspect_report r;
  if (open_at(path, 1, 0, 8, &r) != 0) return;
  /* tiny stage 5: 192 gate/up rows over 8 blocks x 4 warps: each warp of block 0 takes 6 */
  CHECK_INT(mkc_stage_per_block(&r.stages[4], 128, r.at), 4 * 6,
            "tiny: 192 warp items on 8 blocks: block 0 takes 24");
  /* stage 3: 4 heads x 1 token, one block each */
  CHECK_INT(mkc_stage_per_block(&r.stages[2], 128, r.at), 1,
            "tiny: 4 block items on 8 blocks: block 0 takes 1");
  mkc_inspect_close(&r);
}

static char *slurp(const char *path) { return mkc_read_file(path, NULL); }

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(text, f);
  return fclose(f);
}

/* text with the nth `from` after the first `after` replaced by `to`. */
static char *edit_nth(const char *text, const char *after, const char *from, const char *to,
                      int nth) {
  const char *p = strstr(text, after);
  for (int i = 0; i < nth && p; i++) p = strstr(i ? p + 1 : p, from);
  if (!p) return NULL;
  size_t n = strlen(text) + strlen(to) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
  return out;
}

/* ... the first such `from`. */
static char *edit(const char *text, const char *after, const char *from, const char *to) {
  return edit_nth(text, after, from, to, 1);
}

static int mismatch_in(const mkc_inspect_report *r, int stage, const char *word) {
  for (int i = 0; i < r->n_mismatches; i++)
    if (r->mismatches[i].stage == stage && strstr(r->mismatches[i].what, word)) return 1;
  return 0;
}

/* The cost model reads arguments by the names of the template's definition: mkc_matvec's
 * rows renamed (a local of the old name, first in the body, keeps it parsing) is a problem that
 * names rows. */
static void renamed_parameter(const char *text, const char *bad) {
  char *code = edit(text, "MKC_DEVICE void mkc_matvec(", "int rows,", "int n_rows,");
  char *code2 = code ? edit(code, "MKC_DEVICE void mkc_matvec(", "float *splitk) {",
                            "float *splitk) {\n  int rows = n_rows;")
                     : NULL;
  /* the definition's line in the template, where the message must point */
  char *tmpl = mkc_read_file(MKC_SOURCE_DIR "/templates/matvec.cuh", NULL), where[80];
  const char *def = tmpl ? strstr(tmpl, "MKC_DEVICE void mkc_matvec(") : NULL;
  int line = 1;
  for (const char *c = tmpl; def && c < def; c++) line += *c == '\n';
  snprintf(where, sizeof where, "(templates/matvec.cuh:%d) has no parameter rows", line);
  free(tmpl);
  mkc_inspect_report r;
  if (CHECK(def && code2 && write_file(bad, code2) == 0,
            "tamper: mkc_matvec's parameter rows renamed") &&
      CHECK(open_at(bad, 1, 0, 0, &r) == 0, "tamper: the renamed kernel still opens")) {
    CHECK(mismatch_in(&r, 4, "mkc_matvec at line ") && mismatch_in(&r, 4, where),
          "tamper: a renamed template parameter is a problem naming the template and parameter");
    mkc_inspect_close(&r);
  }
  free(code);
  free(code2);
}

/* The layer loop's body and table (codegen/fold.lua): a table value is one pass's, the body
 * every pass's. */
static void tampered_loop(const char *path, const char *bad) {
  char *text = slurp(path);
  mkc_inspect_report r;
  /* pass 0's o-proj matrix (stage 4) moved in the table: stage 4 only */
  char *code = edit(text, "MKC_CONSTANT int mkc_layer_i[2]", ", 24704,", ", 24640,");
  if (CHECK(code && write_file(bad, code) == 0, "tamper: a layer table value edited") &&
      open_at(bad, 1, 0, 0, &r) == 0) {
    int others = 0;
    for (int i = 0; i < r.n_mismatches; i++) others += r.mismatches[i].stage != 4;
    CHECK(mismatch_in(&r, 4, "weights+24640") && others == 0,
          "tamper: a table value changes its own pass's stage (4) and no other (%d)", others);
    mkc_inspect_close(&r);
  }
  free(code);
  /* the loop body's o-proj call: 64 rows -> 32, in both passes (stages 4 and 9); the second
   * such call (the first is the copy for one input, codegen/emit.lua's ctx.one_input) */
  code = edit_nth(text, "/* pass stage 3/5", ", 128, MKC_W_BF16), 64, 8,",
                  ", 128, MKC_W_BF16), 32, 8,", 2);
  if (CHECK(code && write_file(bad, code) == 0, "tamper: the loop body's call edited") &&
      open_at(bad, 1, 0, 0, &r) == 0) {
    int others = 0;
    for (int i = 0; i < r.n_mismatches; i++)
      others += r.mismatches[i].stage != 4 && r.mismatches[i].stage != 9;
    CHECK(mismatch_in(&r, 4, "items") && mismatch_in(&r, 9, "items") && others == 0,
          "tamper: an edit of the loop body shows in every pass (stages 4 and 9), nowhere else");
    mkc_inspect_close(&r);
  }
  free(code);
  free(text);
}

/* The cross-check is real: a changed literal or a changed comment is caught. The kernel is
 * written out stage by stage (MKC_UNFOLD=1), so that an edit is one stage's. */
static void tampered(const char *dir) {
  char path[4200], bad[4200];
  mkc_graph g;
  snprintf(path, sizeof path, "%s/tiny.unfolded.cu", dir);
  setenv("MKC_UNFOLD", "1", 1);
  int rc = gen("tiny", 4, path, &g);
  unsetenv("MKC_UNFOLD");
  if (!CHECK(rc == 0, "tiny, every stage written out: generated")) return;
  mkc_graph_free(&g);
  char *text = slurp(path);
  snprintf(bad, sizeof bad, "%s/tampered.cu", dir);
  /* stage 4's o-proj: 64 rows -> 32 in the call (the second: the first is the copy for one input)
   */
  char *code =
      edit_nth(text, "stage 4/15", "mkc_matvec(mkc_wmat_of(weights + 24704, 128, MKC_W_BF16), 64,",
               "mkc_matvec(mkc_wmat_of(weights + 24704, 128, MKC_W_BF16), 32,", 2);
  mkc_inspect_report r;
  if (CHECK(code && write_file(bad, code) == 0, "tamper: stage 4 call edited") &&
      open_at(bad, 1, 0, 0, &r) == 0) {
    CHECK(mismatch_in(&r, 4, "items") && mismatch_in(&r, 4, "flops") &&
              mismatch_in(&r, 4, "reads weights+24704 (8192 bytes), which its CUDA-core twin"),
          "tamper: rows 64 -> 32 in the code: items, flops and weight bytes of stage 4 mismatch");
    int others = 0;
    for (int i = 0; i < r.n_mismatches; i++) others += r.mismatches[i].stage != 4;
    CHECK_INT(others, 0, "tamper: ... and no other stage");
    mkc_inspect_close(&r);
  }
  free(code);
  /* the same in the tiled variant alone (a prompt chunk's, templates/gemm.cuh) */
  code =
      edit(text, "stage 4/15", "mkc_gemm_matvec(mkc_wmat_of(weights + 24704, 128, MKC_W_BF16), 64,",
           "mkc_gemm_matvec(mkc_wmat_of(weights + 24704, 128, MKC_W_BF16), 32,");
  if (CHECK(code && write_file(bad, code) == 0, "tamper: stage 4's tiled call edited") &&
      open_at(bad, 1, 0, 0, &r) == 0) {
    CHECK(mismatch_in(&r, 4, "mkc_gemm_matvec at line ") &&
              mismatch_in(&r, 4, "reads weights+24704 (4096 bytes), which its CUDA-core twin"),
          "tamper: rows 64 -> 32 in the tiled variant only: its weight bytes differ from its "
          "twin's");
    mkc_inspect_close(&r);
  }
  free(code);
  /* the same in the copy for one input alone (codegen/emit.lua, ctx.one_input) */
  code = edit(text, "stage 4/15", "mkc_matvec(mkc_wmat_of(weights + 24704, 128, MKC_W_BF16), 64,",
              "mkc_matvec(mkc_wmat_of(weights + 24704, 128, MKC_W_BF16), 32,");
  if (CHECK(code && write_file(bad, code) == 0, "tamper: stage 4's copy for one input edited") &&
      open_at(bad, 1, 0, 0, &r) == 0) {
    int others = 0;
    for (int i = 0; i < r.n_mismatches; i++) others += r.mismatches[i].stage != 4;
    CHECK(mismatch_in(&r, 4, "the copy for one input is not the stage's calls") && others == 0,
          "tamper: rows 64 -> 32 in the copy for one input only: stage 4 says so, no other (%d)",
          others);
    mkc_inspect_close(&r);
  }
  free(code);
  /* ... and the copy's T left as T: it must be the literal 1 */
  code = edit(text, "stage 4/15", ", 1, (float *)(smem + 0), (float *)0);\n    } else {",
              ", T, (float *)(smem + 0), (float *)0);\n    } else {");
  if (CHECK(code && write_file(bad, code) == 0, "tamper: stage 4's copy given T") &&
      open_at(bad, 1, 0, 0, &r) == 0) {
    CHECK(mismatch_in(&r, 4, "the copy for one input is not the stage's calls"),
          "tamper: the copy for one input passing T, not 1: stage 4 says so");
    mkc_inspect_close(&r);
  }
  free(code);
  /* the chunk attention's tiled variant (templates/gemm_attn.cuh) reading another V range */
  code = edit(text, "stage 3/15", "mkc_gemm_attention(scratch + 8192, 64, kv + 0, kv + 16384,",
              "mkc_gemm_attention(scratch + 8192, 64, kv + 0, kv + 16000,");
  if (CHECK(code && write_file(bad, code) == 0, "tamper: stage 3's tiled attention edited") &&
      open_at(bad, 1, 0, 0, &r) == 0) {
    CHECK(mismatch_in(&r, 3, "mkc_gemm_attention at line ") &&
              mismatch_in(&r, 3, "reads kv+16000 (64*ctx bytes), which its CUDA-core twin"),
          "tamper: the V cache moved in the tiled attention only: its twin does not read it");
    mkc_inspect_close(&r);
  }
  free(code);
  /* the metadata: stage 2 claims a wrong flop count and drops a KV write */
  code = edit(text, "stage 2/15", "flops: 16384*t", "flops: 16000*t");
  char *code2 = code ? edit(code, "stage 2/15", ", kv+16384 64*t (V cache layer 0)", "") : NULL;
  if (CHECK(code2 && write_file(bad, code2) == 0, "tamper: stage 2 comment edited") &&
      open_at(bad, 1, 0, 0, &r) == 0) {
    CHECK(mismatch_in(&r, 2, "flops: metadata 16000*t, code 16384*t"),
          "tamper: flops mismatch named with both values");
    CHECK(mismatch_in(&r, 2, "the code writes kv+16384"), "tamper: an unlisted KV write is named");
    mkc_inspect_close(&r);
  }
  free(code);
  free(code2);
  /* a sync removed: stage 5's flow arrival, then stage 6's wait */
  code = edit(text, "stage 5/15", "  mkc_flow_arrive(state);", "  ");
  if (CHECK(code && write_file(bad, code) == 0, "tamper: a flow arrival removed") &&
      open_at(bad, 1, 0, 0, &r) == 0) {
    CHECK(mismatch_in(&r, 5, "sync: metadata flow, code none") &&
              mismatch_in(&r, 0, "flow waits") &&
              mismatch_in(&r, 6, "a flow wait with no flow arrival before it"),
          "tamper: the missing arrival is named (stage 5, the header count, stage 6's wait)");
    mkc_inspect_close(&r);
  }
  free(code);
  code = edit(text, "stage 6/15", "  mkc_flow_wait(state, &flow_waited);", "  ");
  if (CHECK(code && write_file(bad, code) == 0, "tamper: a flow wait removed") &&
      open_at(bad, 1, 0, 0, &r) == 0) {
    CHECK(mismatch_in(&r, 6, "0 flow waits after the last stage's flow arrival"),
          "tamper: the missing wait is named (stage 6)");
    mkc_inspect_close(&r);
  }
  free(code);
  renamed_parameter(text, bad);
  free(text);
}

/* --diff: itself -> nothing; another draft_max -> exactly the stages whose code changed. */
static void diff(const char *path, const char *dir) {
  char other[4200];
  snprintf(other, sizeof other, "%s/tiny.k2.cu", dir);
  mkc_graph g;
  if (!CHECK(gen("tiny", 2, other, &g) == 0, "diff: tiny --draft-max 2 generated")) return;
  mkc_graph_free(&g);
  mkc_inspect_report a, b;
  if (open_at(path, 1, -1, 0, &a) != 0 || open_at(other, 1, -1, 0, &b) != 0) return;
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  int n = mkc_inspect_diff(&a, &a, f);
  fclose(f);
  CHECK(n == 0 && strstr(buf, "no change: 15 stages"), "diff of a kernel with itself: no change");
  free(buf);
  f = open_memstream(&buf, &size);
  n = mkc_inspect_diff(&a, &b, f);
  fclose(f);
  oracle o4, o2;
  oracle_load("tiny", 4, &o4);
  oracle_load("tiny", 2, &o2);
  int want[64] = {0}, got[64] = {0}, n_want = 0;
  for (int i = 0; i < o4.n_stages; i++) {
    want[i + 1] = strcmp(o4.code[i], o2.code[i]) != 0 || o4.smem[i] != o2.smem[i];
    n_want += want[i + 1];
  }
  for (const char *p = buf; (p = strstr(p, "\n~ stage ")); p++) {
    int i = atoi(p + 9);
    if (i > 0 && i < 64) got[i] = 1;
  }
  int same = 1;
  for (int i = 1; i <= o4.n_stages; i++)
    if (want[i] != got[i]) {
      printf("     | stage %d: codegen %s, diff %s\n", i, want[i] ? "changed" : "same",
             got[i] ? "changed" : "same");
      same = 0;
    }
  CHECK(n_want > 0 && n_want < o4.n_stages,
        "diff oracle: %d of %d stages' code changes with draft_max", n_want, o4.n_stages);
  CHECK(same, "diff --draft-max 4 vs 2 names exactly the stages whose emitted code changed");
  CHECK(strstr(buf, "draft_max                  4 -> 2") != NULL,
        "diff names the draft_max change");
  CHECK(n > n_want, "diff counts the header changes too (%d)", n);
  free(buf);
  oracle_free(&o4);
  oracle_free(&o2);
  mkc_inspect_close(&a);
  mkc_inspect_close(&b);
}

/* Codegen's side of the same rule: the emitters name their arguments, the template's
 * signature orders them, and a name the two disagree on is an internal error naming both. */
static const char RENAMED_LUA[] =
    "local home, dir = ...\n"
    "package.path = home .. '/codegen/?.lua'\n"
    "local emit, main, calls = require('emit'), require('main'), require('calls')\n"
    "for _, name in ipairs({ 'prelude_cuda.cuh', 'prelude_cpu.h', table.unpack(emit.TEMPLATES) }) "
    "do\n"
    "  local f = assert(io.open(home .. '/templates/' .. name, 'rb'))\n"
    "  local text = f:read('a')\n"
    "  f:close()\n"
    "  if name == 'matvec.cuh' then\n"
    "    text = text:gsub('mkc_matvec%(mkc_wmat w, int rows,', 'mkc_matvec(mkc_wmat w, int "
    "n_rows,')\n"
    "  end\n"
    "  f = assert(io.open(dir .. '/' .. name, 'wb'))\n"
    "  f:write(text)\n"
    "  f:close()\n"
    "end\n"
    "local function message(ok, err)\n"
    "  if ok then return 'no error' end\n"
    "  return type(err) == 'table' and err.mkc_error or tostring(err)\n"
    "end\n"
    "local renamed = message(pcall(main.generate, { graph = home .. '/graphs/llama.lua',\n"
    "  preset = 'tiny', draft_max = 4, threads = 128, max_blocks = 1024, t_cap = 32,\n"
    "  version = 'renamed', templates_dir = dir }))\n"
    "local sigs = calls.signatures({ e = 'MKC_DEVICE void mkc_embed(const int *tokens, int T) {}' "
    "},\n"
    "  { 'e' })\n"
    "local missing = message(pcall(calls.format, sigs, 'mkc_embed', { tokens = 'state->inputs' "
    "}))\n"
    "return renamed, missing\n";

static void renamed_in_codegen(const char *dir) {
  char templates[4200], cmd[4300];
  snprintf(templates, sizeof templates, "%s/templates", dir);
  snprintf(cmd, sizeof cmd, "mkdir -p %s", templates);
  if (!CHECK(system(cmd) == 0, "codegen rename: a templates folder made")) return;
  lua_State *L = mkc_codegen_state(); /* codegen needs the host's schema */
  if (!CHECK(L != NULL, "codegen rename: a codegen Lua state")) return;
  int rc = luaL_loadstring(L, RENAMED_LUA);
  lua_pushstring(L, mkc_home());
  lua_pushstring(L, templates);
  if (CHECK(rc == LUA_OK && lua_pcall(L, 2, 2, 0) == LUA_OK, "codegen rename: the chunk runs")) {
    const char *renamed = lua_tostring(L, -2), *missing = lua_tostring(L, -1);
    CHECK(renamed && strstr(renamed, "mkc_matvec (templates/matvec.cuh) has no parameter rows"),
          "codegen: an argument the template's signature does not name is an error naming both "
          "(%s)",
          renamed ? renamed : "?");
    CHECK(missing && strstr(missing, "the call to mkc_embed gives no T (templates/e)"),
          "codegen: a parameter the call does not give is an error naming both (%s)",
          missing ? missing : "?");
  } else {
    printf("     | %s\n", lua_tostring(L, -1));
  }
  lua_close(L);
}

/* Resources: what inspect reports is what ptxas said for the same source. */
static void resources(const char *path) {
  char why[512];
  if (mkc_nvrtc_load(why, sizeof why) != 0) {
    CHECK_SKIP("resources: NVRTC is missing (%s)", why);
    return;
  }
  mkc_inspect_opts o = {.pos = -1, .gpu = "h100", .arch = "sm_90"};
  mkc_inspect_report r;
  if (mkc_inspect_open(path, &o, &r) != 0) return;
  char *src = slurp(path);
  mkc_nvrtc_output out;
  mkc_ptxas_info info;
  int ok = mkc_nvrtc_compile(src, "tiny.cu", "sm_90", 0, &out) == 0 &&
           mkc_ptxas_parse(out.log, "mkc_step", &info) == 0;
  CHECK(r.res.available && ok, "resources: sm_90 compiled and read");
  if (ok) {
    CHECK(r.res.registers == info.registers && r.res.registers > 0,
          "resources: %d registers, as ptxas says", r.res.registers);
    CHECK(r.res.stack_bytes == info.stack_bytes && r.res.barriers == info.barriers &&
              r.res.spill_store_bytes == info.spill_stores,
          "resources: stack, barriers and spills as ptxas says");
  }
  mkc_nvrtc_output_free(&out);
  free(src);
  mkc_inspect_close(&r);
}

int main(void) {
  char why[512];
  if (mkc_clang_load(why, sizeof why) != 0) {
    printf("skip inspect tests: %s\n", why);
    printf("0 passed, 0 failed, 1 skipped\n");
    return 0;
  }
  char dir[] = "/tmp/mkc-inspect-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  static const char *const presets[] = {"tiny", "odd", "llama-3.2-1b"};
  char paths[3][4200];
  for (int i = 0; i < 3; i++) {
    mkc_graph g;
    snprintf(paths[i], sizeof paths[i], "%s/%s.cu", dir, presets[i]);
    if (!CHECK(gen(presets[i], 4, paths[i], &g) == 0, "%s: generated", presets[i])) continue;
    outline_matches_plan(presets[i], paths[i], &g);
    CHECK_INT(mkc_inspect_check(paths[i]), 0, "%s: --check finds no warning", presets[i]);
    if (i == 2) {
      llama_bytes(paths[i], &g, 1, 1024);
      llama_bytes(paths[i], &g, 5, 4000);
    }
    mkc_graph_free(&g);
  }
  char bad[4200];
  snprintf(bad, sizeof bad, "%s/tests/fails/bad_kernel.cu", mkc_home());
  char *text = slurp(bad);
  int expected = 0;
  for (const char *p = text; p && (p = strstr(p, " * expect: ")); p++) expected++;
  free(text);
  CHECK_INT(mkc_inspect_check(bad), expected,
            "tests/fails/bad_kernel.cu: --check reports its %d planted warnings", expected);
  per_block(paths[0]);
  tampered(dir);
  snprintf(bad, sizeof bad, "%s/tampered_loop.cu", dir);
  tampered_loop(paths[0], bad);
  diff(paths[0], dir);
  renamed_in_codegen(dir);
  resources(paths[0]);
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) printf("     | could not remove %s\n", dir);
  return check_done();
}
