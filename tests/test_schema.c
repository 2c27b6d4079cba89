/* The node schema both sides share (runtime/codegen/graph.h's MKC_OPS and
 * MKC_NODE_FIELDS, given to codegen as module "schema"): codegen refuses to
 * load when its ops or the node fields it derives disagree with C's, naming
 * the odd one; and the nodes C reads back carry the fields codegen derives. */
#include "check.h"
#include "codegen/host.h"

#include <lauxlib.h>
#include <lua.h>
#include <string.h>

/* Runs edit (Lua; s is the schema) in a fresh codegen state, then requires
 * module; returns the error message (to free), or NULL if it loaded. */
static char *load_with(const char *edit, const char *module) {
  lua_State *L = mkc_codegen_state();
  if (!L) return strdup("no codegen state");
  char code[512];
  snprintf(code, sizeof code, "local s = package.loaded.schema; %s", edit);
  char *err = NULL;
  if (luaL_dostring(L, code) != LUA_OK) {
    err = strdup(lua_tostring(L, -1));
  } else {
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) err = strdup(lua_tostring(L, -1));
  }
  lua_close(L);
  return err;
}

static void expect_refused(const char *what, const char *edit, const char *module,
                           const char *message) {
  char *err = load_with(edit, module);
  if (!CHECK(err && strstr(err, message), "%s: require(\"%s\") fails with \"%s\"", what, module,
             message))
    printf("  got: %s\n", err ? err : "no error");
  free(err);
}

static void schema_agreement(void) {
  char *err = load_with("", "main");
  if (!CHECK(!err, "codegen loads with C's schema")) printf("  got: %s\n", err);
  free(err);
  expect_refused(
      "an op C lacks",
      "for i, op in ipairs(s.ops) do if op == 'swiglu' then table.remove(s.ops, i) end end", "ir",
      "codegen makes op swiglu, which runtime/codegen/graph.h lacks");
  expect_refused(
      "weight missing from C's ops",
      "for i, op in ipairs(s.ops) do if op == 'weight' then table.remove(s.ops, i) end end", "ir",
      "codegen makes op weight, which runtime/codegen/graph.h lacks");
  expect_refused("an op codegen does not make", "table.insert(s.ops, 'conv')", "ir",
                 "op conv of runtime/codegen/graph.h is not one codegen makes (ir.ops)");
  expect_refused("a derived node field C lacks",
                 "for i, f in ipairs(s.node_fields) do if f == 'kv_k' then "
                 "table.remove(s.node_fields, i) end end",
                 "main", "codegen exports node field kv_k, which runtime/codegen/graph.h lacks");
}

/* The fields codegen derives rather than copies, as C reads them for tiny. */
static void derived_fields(void) {
  mkc_gen_opts o = {.graph_path = MKC_SOURCE_DIR "/graphs/llama.lua", .preset = "tiny"};
  mkc_graph g;
  mkc_kernel_src src;
  if (!CHECK(mkc_codegen(&o, &g, &src) == 0, "codegen of llama tiny")) return;
  int weights = 0, bad_weight = 0, attention = 0, bad_kv = 0, bad_inputs = 0,
      seen[MKC_OP_COUNT] = {0};
  for (int i = 0; i < g.n_nodes; i++) {
    const mkc_node *nd = &g.nodes[i];
    seen[nd->op] = 1;
    if (nd->op == MKC_OP_WEIGHT) {
      bad_weight += nd->weight != weights++ || nd->n != g.weights[nd->weight].rows;
    } else {
      bad_weight += nd->weight != -1;
    }
    if (nd->op == MKC_OP_ATTENTION) {
      size_t slot = (size_t)nd->kv_heads * (size_t)g.max_ctx * (size_t)nd->head_dim;
      bad_kv += nd->layer != attention++ || nd->kv_v < nd->kv_k + slot;
    } else {
      bad_kv += nd->kv_k != 0 || nd->kv_v != 0;
    }
    for (int j = 0; j < MKC_NODE_INPUTS; j++) bad_inputs += nd->in[j] < -1 || nd->in[j] >= i;
  }
  CHECK_INT(weights, g.n_weights, "one weight node per weight");
  CHECK_INT(bad_weight, 0, "weight nodes index the weights in order; other nodes have -1");
  CHECK_INT(attention, g.n_layers, "one attention node per layer");
  CHECK_INT(bad_kv, 0, "attention nodes' K and V slots are apart; other nodes have 0");
  CHECK_INT(bad_inputs, 0, "inputs are earlier nodes or -1");
  /* the feature is a drafter head's input (graphs/draft_head.lua), not a model's */
  mkc_gen_opts h = {.graph_path = MKC_SOURCE_DIR "/graphs/draft_head.lua", .preset = "tiny"};
  mkc_graph hg;
  mkc_kernel_src hsrc;
  int head = mkc_codegen(&h, &hg, &hsrc) == 0, in_head[MKC_OP_COUNT] = {0};
  for (int i = 0; head && i < hg.n_nodes; i++) in_head[hg.nodes[i].op] = 1;
  /* the recurrence is hybrid-tiny's, which only the reference runs (no kernel, no stages) */
  mkc_gen_opts y = {.graph_path = o.graph_path, .preset = "hybrid-tiny", .reference_only = 1};
  mkc_graph yg;
  mkc_kernel_src ysrc;
  int hybrid = mkc_codegen(&y, &yg, &ysrc) == 0, in_hybrid[MKC_OP_COUNT] = {0};
  for (int i = 0; hybrid && i < yg.n_nodes; i++) in_hybrid[yg.nodes[i].op] = 1;
  CHECK(hybrid && yg.n_stages == 0 && ysrc.source[0] == '\0' && yg.t_max == 1,
        "hybrid-tiny for the reference: the graph, no source, no stages, one input a step");
  /* experts are moe-tiny's (a kernel of its own) */
  mkc_gen_opts e = {.graph_path = o.graph_path, .preset = "moe-tiny"};
  mkc_graph eg;
  mkc_kernel_src esrc;
  int moe = mkc_codegen(&e, &eg, &esrc) == 0, in_moe[MKC_OP_COUNT] = {0};
  for (int i = 0; moe && i < eg.n_nodes; i++) in_moe[eg.nodes[i].op] = 1;
  for (int op = 0; op < MKC_OP_COUNT; op++)
    if (op == MKC_OP_MOE)
      CHECK(moe && in_moe[op] && !seen[op], "llama moe-tiny has %s nodes, tiny none",
            mkc_op_name(op));
    else if (op == MKC_OP_FEATURE)
      CHECK(head && in_head[op] && !seen[op], "the draft head (tiny) has %s nodes, llama none",
            mkc_op_name(op));
    else if (op == MKC_OP_RECURRENT)
      CHECK(hybrid && in_hybrid[op] && !seen[op], "llama hybrid-tiny has %s nodes, tiny none",
            mkc_op_name(op));
    else
      CHECK(seen[op], "llama tiny has %s nodes", mkc_op_name(op));
  if (head) {
    mkc_graph_free(&hg);
    mkc_kernel_src_free(&hsrc);
  }
  if (hybrid) {
    mkc_graph_free(&yg);
    mkc_kernel_src_free(&ysrc);
  }
  if (moe) {
    mkc_graph_free(&eg);
    mkc_kernel_src_free(&esrc);
  }
  mkc_graph_free(&g);
  mkc_kernel_src_free(&src);
}

int main(void) {
  schema_agreement();
  derived_fields();
  return check_done();
}
