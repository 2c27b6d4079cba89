/* The sync plan against a brute-force oracle: read from the codegen's own plan
 * (through an embedded Lua), every pair of stages with no grid barrier or flow
 * wait between them (each orders every block's stage before every block's
 * next) touches disjoint memory, or only reads it: scratch ranges (each value's
 * region, t_max rows at its stride; the argmax partials; the head-norm
 * counters) and KV cache slots, compared by address, not by value. Run on
 * every preset and on tests/graphs/scratch_reuse.lua, whose buffer plan puts
 * a new value in a freed region while the stage that last read the old one
 * may still run: that stage pair must be split by a barrier. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <string.h>

#include "check.h"
#include "codegen/host.h"

#define MAX_STAGES 256
#define MAX_RANGES 16

typedef struct range {
  int kv;        /* 0: scratch (floats); 1: the KV cache (elements) */
  long lo, hi;   /* [lo, hi) */
  int write;     /* 0: read */
  char name[48]; /* what the stage touches there */
} range;

typedef struct plan {
  int n_stages;
  char kind[MAX_STAGES][32];
  int grid[MAX_STAGES]; /* a grid barrier ends the stage */
  int n_ranges[MAX_STAGES];
  range ranges[MAX_STAGES][MAX_RANGES];
} plan;

/* The memory each stage touches, from the plan's raw fields (regions, KV slots, partials,
 * counters), not from sync.lua's own bookkeeping. */
static const char PLAN_LUA[] =
    "local home, graph, preset, draft_max = ...\n"
    "package.path = home .. '/codegen/?.lua'\n"
    "local emit, main = require('emit'), require('main')\n"
    "local seen\n"
    "local source = emit.source\n"
    "emit.source = function(g, plan, gen) seen = { plan = plan, gen = gen } return source(g, "
    "plan, gen) end\n"
    "main.generate({ graph = graph, preset = preset, draft_max = draft_max, threads = 128,\n"
    "  max_blocks = 1024, t_cap = 32, version = 'oracle', templates_dir = home .. '/templates' "
    "})\n"
    "local plan, t_max = seen.plan, seen.gen.t_max\n"
    "local out = {}\n"
    "for i, st in ipairs(plan.stages) do\n"
    "  local rs = {}\n"
    "  local function add(kv, lo, n, write, name)\n"
    "    rs[#rs + 1] = { kv = kv, lo = lo, hi = lo + n, write = write, name = name }\n"
    "  end\n"
    "  local function value(v, write)\n"
    "    local r = plan.value(v)\n"
    "    add(0, r.offset, t_max * r.stride, write, v.op .. ' line ' .. v.line)\n"
    "  end\n"
    "  for _, v in ipairs(st.reads) do value(v, 0) end\n"
    "  for _, v in ipairs(st.writes) do value(v, 1) end\n"
    "  if st.att then\n"
    "    local slot, a = plan.kv[st.att], st.att\n"
    "    add(1, slot.k, 2 * a.kv_heads * seen.gen.max_ctx * a.head_dim, st.kind == 'qkv_rope' "
    "and 1 or 0, 'KV cache')\n"
    "  end\n"
    "  if st.kind == 'qkv_rope' and (st.q_norm or st.k_norm) then\n"
    "    add(0, plan.head_ready, st.att.heads + st.att.kv_heads, 1, 'head norm counters')\n"
    "  end\n"
    "  local n = t_max * seen.gen.max_blocks\n"
    "  local idx = plan.partials + math.ceil(n / 64) * 64\n"
    "  if st.kind == 'lm_head' or st.kind == 'accept' then\n"
    "    local w = st.kind == 'lm_head' and 1 or 0\n"
    "    add(0, plan.partials, n, w, 'argmax values')\n"
    "    add(0, idx, n, w, 'argmax indices')\n"
    "  end\n"
    "  out[i] = { kind = st.kind, grid = (st.sync.kind == 'grid' or st.sync.kind == 'flow') and 1 "
    "or 0, ranges = rs }\n"
    "end\n"
    "return out\n";

static int field_int(lua_State *L, const char *name) {
  lua_getfield(L, -1, name);
  int v = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

static int plan_load(const char *graph, const char *preset, int draft_max, plan *p) {
  memset(p, 0, sizeof *p);
  lua_State *L = mkc_codegen_state();
  if (!L) return -1;
  int rc = luaL_loadstring(L, PLAN_LUA);
  lua_pushstring(L, mkc_home());
  lua_pushstring(L, graph);
  lua_pushstring(L, preset);
  lua_pushinteger(L, draft_max);
  if (rc != LUA_OK || lua_pcall(L, 4, 1, 0) != LUA_OK) {
    printf("     | plan: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return -1;
  }
  p->n_stages = (int)luaL_len(L, -1);
  if (p->n_stages > MAX_STAGES) p->n_stages = MAX_STAGES;
  for (int i = 0; i < p->n_stages; i++) {
    lua_geti(L, -1, i + 1);
    lua_getfield(L, -1, "kind");
    snprintf(p->kind[i], sizeof p->kind[i], "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    p->grid[i] = field_int(L, "grid");
    lua_getfield(L, -1, "ranges");
    int n = (int)luaL_len(L, -1);
    p->n_ranges[i] = n < MAX_RANGES ? n : MAX_RANGES;
    for (int k = 0; k < p->n_ranges[i]; k++) {
      range *r = &p->ranges[i][k];
      lua_geti(L, -1, k + 1);
      r->kv = field_int(L, "kv");
      r->write = field_int(L, "write");
      lua_getfield(L, -1, "lo");
      r->lo = (long)lua_tointeger(L, -1);
      lua_getfield(L, -2, "hi");
      r->hi = (long)lua_tointeger(L, -1);
      lua_getfield(L, -3, "name");
      snprintf(r->name, sizeof r->name, "%s", lua_tostring(L, -1));
      lua_pop(L, 4);
    }
    lua_pop(L, 2);
  }
  lua_close(L);
  return 0;
}

static int conflict(const range *a, const range *b) {
  return a->kv == b->kv && a->lo < b->hi && b->lo < a->hi && (a->write || b->write);
}

/* Stage pairs with no barrier between them that touch the same memory, one of them writing. */
static int races(const plan *p, int print) {
  int n = 0;
  for (int i = 0; i < p->n_stages; i++)
    for (int j = i + 1; j < p->n_stages && !p->grid[j - 1]; j++)
      for (int a = 0; a < p->n_ranges[i]; a++)
        for (int b = 0; b < p->n_ranges[j]; b++)
          if (conflict(&p->ranges[i][a], &p->ranges[j][b])) {
            if (print && n < 4)
              printf("     | stages %d and %d race: %s %s, %s %s\n", i + 1, j + 1,
                     p->ranges[i][a].write ? "writes" : "reads", p->ranges[i][a].name,
                     p->ranges[j][b].write ? "writes" : "reads", p->ranges[j][b].name);
            n++;
          }
  return n;
}

static void presets(void) {
  static const char *const names[] = {"tiny", "odd", "llama-3.2-1b", "qwen2-tiny", "qwen3-tiny"};
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    plan p;
    if (!CHECK(plan_load(graph, names[i], 4, &p) == 0, "%s: planned", names[i])) continue;
    int grids = 0;
    for (int s = 0; s < p.n_stages; s++) grids += p.grid[s];
    CHECK_INT(races(&p, 1), 0,
              "%s: no two stages between barriers touch one range (%d stages, "
              "%d barriers)",
              names[i], p.n_stages, grids);
  }
}

/* Stages of scratch_reuse.lua, 0-based: 2 last reads a, 3 is independent, 4 writes d over a. */
static void scratch_reuse(void) {
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/tests/graphs/scratch_reuse.lua", mkc_home());
  for (int draft_max = 0; draft_max <= 4; draft_max += 2) {
    plan p;
    if (!CHECK(plan_load(graph, "reuse", draft_max, &p) == 0, "scratch_reuse, T <= %d: planned",
               draft_max + 1))
      continue;
    CHECK(p.n_stages == 11 && strcmp(p.kind[2], "gate_up_swiglu") == 0 &&
              strcmp(p.kind[4], "gate_up_swiglu") == 0,
          "scratch_reuse, T <= %d: the stages the graph file lists (%d)", draft_max + 1,
          p.n_stages);
    if (p.n_stages != 11) continue;
    /* the graph does what it claims: stage 5 writes where stage 3 reads, another value */
    int reused = 0;
    for (int a = 0; a < p.n_ranges[2]; a++)
      for (int b = 0; b < p.n_ranges[4]; b++)
        reused += !p.ranges[2][a].write && p.ranges[4][b].write &&
                  conflict(&p.ranges[2][a], &p.ranges[4][b]) &&
                  strcmp(p.ranges[2][a].name, p.ranges[4][b].name) != 0;
    CHECK(reused == 1,
          "scratch_reuse, T <= %d: stage 5 writes a new value over the region "
          "stage 3 reads",
          draft_max + 1);
    CHECK(!p.grid[2] && p.grid[3],
          "scratch_reuse, T <= %d: no barrier after stage 3, one after stage 4 (before the "
          "rewrite)",
          draft_max + 1);
    CHECK_INT(races(&p, 1), 0,
              "scratch_reuse, T <= %d: no two stages between barriers touch "
              "one range",
              draft_max + 1);
  }
}

int main(void) {
  scratch_reuse();
  presets();
  return check_done();
}
