/* Embeds Lua 5.4, runs codegen/main.lua's generate(), and copies its export
 * table into C structures. User-facing errors arrive from Lua as tables
 * { mkc_error = "..." } and are printed as they are; anything else is an mkc
 * bug and is printed with a Lua traceback. */
#include "host.h"
#include "mkc_state.h"
#include "util/version.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MKC_SOURCE_DIR
#define MKC_SOURCE_DIR "."
#endif

static int has_codegen(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/codegen/main.lua", dir);
  return access(path, R_OK) == 0;
}

const char *mkc_home(void) {
  static char home[4096];
  if (home[0]) return home;
  const char *env = getenv("MKC_HOME");
  if (env && *env) {
    snprintf(home, sizeof home, "%s", env);
    return home;
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    for (int up = 0; up < 2; up++) { /* build/mkc -> build -> the repo */
      char *slash = strrchr(exe, '/');
      if (!slash) break;
      *slash = 0;
    }
    if (has_codegen(exe)) {
      snprintf(home, sizeof home, "%s", exe);
      return home;
    }
  }
  snprintf(home, sizeof home, "%s", MKC_SOURCE_DIR);
  return home;
}

/* longrope's fields of a preset's rope_scaling table (on the stack's top). */
static void push_longrope(lua_State *L, const mkc_rope_scaling *s) {
  lua_pushinteger(L, s->orig_ctx);
  lua_setfield(L, -2, "orig_ctx");
  lua_pushnumber(L, s->attn_factor);
  lua_setfield(L, -2, "attn_factor");
  const struct {
    const char *key;
    const double *v;
  } lists[] = {{"short_factor", s->short_factor}, {"long_factor", s->long_factor}};
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
    lua_createtable(L, s->n_factors, 0);
    for (int j = 0; j < s->n_factors; j++) {
      lua_pushnumber(L, lists[i].v[j]);
      lua_rawseti(L, -2, j + 1);
    }
    lua_setfield(L, -2, lists[i].key);
  }
}

/* A preset's rope_scaling: "none", or a table of the type and the parameters
 * that type reads (codegen/ir.lua's rope checks which). */
static void push_rope_scaling(lua_State *L, const mkc_rope_scaling *s) {
  if (s->type == MKC_ROPE_SCALING_NONE) {
    lua_pushstring(L, "none");
    return;
  }
  lua_newtable(L);
  lua_pushstring(L, mkc_rope_scaling_name(s->type));
  lua_setfield(L, -2, "type");
  if (s->type == MKC_ROPE_SCALING_LONGROPE) {
    push_longrope(L, s);
    return;
  }
  lua_pushnumber(L, s->factor);
  lua_setfield(L, -2, "factor");
  if (s->type == MKC_ROPE_SCALING_LINEAR) return;
  lua_pushinteger(L, s->orig_ctx);
  lua_setfield(L, -2, "orig_ctx");
  const struct {
    const char *key;
    double v;
  } llama3[] = {{"low_freq_factor", s->low_freq_factor}, {"high_freq_factor", s->high_freq_factor}},
    yarn[] = {{"beta_fast", s->beta_fast},
              {"beta_slow", s->beta_slow},
              {"ext_factor", s->ext_factor},
              {"attn_factor", s->attn_factor}};
  int is_llama3 = s->type == MKC_ROPE_SCALING_LLAMA3;
  size_t n = is_llama3 ? sizeof llama3 / sizeof *llama3 : sizeof yarn / sizeof *yarn;
  for (size_t i = 0; i < n; i++) {
    lua_pushnumber(L, is_llama3 ? llama3[i].v : yarn[i].v);
    lua_setfield(L, -2, is_llama3 ? llama3[i].key : yarn[i].key);
  }
}

/* The preset fields graphs/llama.lua reads, from a model file's description
 * (deliberately alike hf_write.c's config.json fields: other names, other target). */
static void push_model_preset(lua_State *L, const mkc_model_desc *d) {
  lua_newtable(L);
  const struct {
    const char *key;
    int v;
  } ints[] = {{"vocab", d->vocab},
              {"dim", d->dim},
              {"n_layers", d->n_layers},
              {"n_heads", d->n_heads},
              {"n_kv_heads", d->n_kv_heads},
              {"head_dim", d->head_dim},
              {"ffn", d->ffn},
              {"max_ctx", d->ctx_train},
              {"nope_interval", d->nope_interval}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    lua_pushinteger(L, ints[i].v);
    lua_setfield(L, -2, ints[i].key);
  }
  lua_pushnumber(L, d->rope_theta);
  lua_setfield(L, -2, "rope_theta");
  lua_pushinteger(L, d->rope_dim > 0 ? d->rope_dim : d->head_dim);
  lua_setfield(L, -2, "rope_dim");
  lua_pushnumber(L, d->norm_eps);
  lua_setfield(L, -2, "norm_eps");
  lua_pushstring(L, d->rope_layout == MKC_ROPE_NEOX ? "neox" : "interleaved");
  lua_setfield(L, -2, "rope_layout");
  push_rope_scaling(L, &d->rope_scaling);
  lua_setfield(L, -2, "rope_scaling");
  /* A Mistral config's window clamps its context instead (formats/hf_config.c); Gemma 3's
   * local layers keep theirs. */
  if (d->sliding_window > 0 && d->swa_local > 0) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "%d local : %d global", d->swa_local, d->swa_global);
    lua_newtable(L);
    lua_pushinteger(L, d->sliding_window);
    lua_setfield(L, -2, "size");
    lua_pushstring(L, pattern);
    lua_setfield(L, -2, "pattern");
    if (d->rope_theta_swa > 0) {
      lua_pushnumber(L, d->rope_theta_swa);
      lua_setfield(L, -2, "rope_theta");
    }
  } else {
    lua_pushstring(L, "none");
  }
  lua_setfield(L, -2, "sliding_window");
  lua_pushnumber(L, d->embed_scale > 0 ? d->embed_scale : 1);
  lua_setfield(L, -2, "embed_scale");
  lua_pushnumber(L, d->attn_scale);
  lua_setfield(L, -2, "attn_scale");
  lua_pushnumber(L, d->attn_softcap);
  lua_setfield(L, -2, "attn_softcap");
  lua_pushnumber(L, d->final_softcap);
  lua_setfield(L, -2, "final_softcap");
  lua_pushnumber(L, d->residual_scale > 0 ? d->residual_scale : 1);
  lua_setfield(L, -2, "residual_scale");
  lua_pushnumber(L, d->logit_scale > 0 ? d->logit_scale : 1);
  lua_setfield(L, -2, "logit_scale");
  int gptoss = mkc_gptoss(d->arch);
  lua_pushstring(L, gptoss ? "swiglu_oai" : d->ffn_gelu ? "gelu_tanh" : "silu");
  lua_setfield(L, -2, "ffn_act");
  lua_pushstring(L, gptoss ? "post_attention_norm" : "ffn_norm");
  lua_setfield(L, -2, "ffn_norm_name");
  lua_pushstring(L, "none"); /* no model file format mkc reads has recurrent layers yet */
  lua_setfield(L, -2, "linear_attention");
  if (d->n_experts > 0) {
    lua_newtable(L);
    const struct {
      const char *key;
      int v;
    } moe[] = {{"experts", d->n_experts}, {"used", d->n_experts_used}, {"ffn", d->expert_ffn}};
    for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++) {
      lua_pushinteger(L, moe[i].v);
      lua_setfield(L, -2, moe[i].key);
    }
    lua_pushboolean(L, d->norm_topk);
    lua_setfield(L, -2, "norm_topk");
    lua_pushboolean(L, gptoss);
    lua_setfield(L, -2, "bias");
  } else {
    lua_pushstring(L, "none");
  }
  lua_setfield(L, -2, "moe");
  const struct {
    const char *key;
    int v;
  } flags[] = {{"tied", d->tied},
               {"qkv_bias", d->qkv_bias},
               {"qk_norm", d->qk_norm},
               {"post_norms", d->post_norms},
               {"pre_norms", !d->no_pre_norms},
               {"attn_sinks", gptoss},
               {"o_bias", gptoss}};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    lua_pushboolean(L, flags[i].v);
    lua_setfield(L, -2, flags[i].key);
  }
}

/* Message handler: keeps user errors, adds a traceback to internal ones. */
static int on_error(lua_State *L) {
  if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "mkc_error");
    if (lua_isstring(L, -1)) return 1;
    lua_pop(L, 1);
  }
  const char *msg = lua_tostring(L, 1);
  luaL_traceback(L, L, msg ? msg : "(non-string error)", 1);
  lua_pushfstring(L, "mkc: internal error in codegen: %s", lua_tostring(L, -1));
  return 1;
}

/* The integer on top of the stack, or absent where it is not one. */
static long top_int(lua_State *L, long absent) {
  return lua_isinteger(L, -1) ? (long)lua_tointeger(L, -1) : absent;
}

static long get_int(lua_State *L, int table, const char *key) {
  lua_getfield(L, table, key);
  long v = top_int(L, 0);
  lua_pop(L, 1);
  return v;
}

static char *get_str(lua_State *L, int table, const char *key) {
  lua_getfield(L, table, key);
  size_t len = 0;
  const char *s = lua_tolstring(L, -1, &len);
  char *copy = malloc(len + 1);
  if (copy) {
    if (s) memcpy(copy, s, len);
    copy[len] = 0;
  }
  lua_pop(L, 1);
  return copy;
}

static int op_from_name(const char *name) {
  for (int op = 0; op < MKC_OP_COUNT; op++)
    if (strcmp(mkc_op_name(op), name) == 0) return op;
  return -1;
}

/* graph.h's node fields: the Lua field each is read from, how, and where to. */
enum field_kind {
  FIELD_OP,
  FIELD_INPUTS,
  FIELD_INT,
  FIELD_INDEX,
  FIELD_DOUBLE,
  FIELD_SIZE,
  FIELD_LAYOUT,
  FIELD_SCALING,
  FIELD_FACTORS
};
static const struct node_field {
  const char *lua;
  enum field_kind kind;
  size_t offset;
} NODE_FIELDS[] = {
#define NODE_FIELD(kind, member, lua) {#lua, FIELD_##kind, offsetof(mkc_node, member)},
    MKC_NODE_FIELDS(NODE_FIELD)
#undef NODE_FIELD
};
enum { N_NODE_FIELDS = sizeof NODE_FIELDS / sizeof NODE_FIELDS[0] };

/* Reads field f of the node table at index e into nd. */
static void read_field(lua_State *L, int e, const struct node_field *f, mkc_node *nd) {
  char *at = (char *)nd + f->offset;
  lua_getfield(L, e, f->lua);
  switch (f->kind) {
  case FIELD_OP: {
    const char *name = lua_tostring(L, -1);
    *(int *)at = op_from_name(name ? name : "");
    break;
  }
  case FIELD_INPUTS: {
    int *in = (int *)at, n_in = (int)luaL_len(L, -1);
    for (int j = 0; j < MKC_NODE_INPUTS; j++) {
      in[j] = -1;
      if (j >= n_in) continue;
      lua_geti(L, -1, j + 1);
      in[j] = (int)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    break;
  }
  case FIELD_INT:
    *(int *)at = (int)top_int(L, 0);
    break;
  case FIELD_INDEX:
    *(int *)at = (int)top_int(L, -1);
    break;
  case FIELD_DOUBLE:
    *(double *)at = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0.0;
    break;
  case FIELD_SIZE:
    *(size_t *)at = (size_t)top_int(L, 0);
    break;
  case FIELD_LAYOUT: {
    const char *layout = lua_tostring(L, -1);
    *(int *)at = layout && strcmp(layout, "neox") == 0 ? MKC_ROPE_NEOX : MKC_ROPE_INTERLEAVED;
    break;
  }
  case FIELD_SCALING: {
    const char *name = lua_tostring(L, -1);
    *(int *)at = name ? mkc_rope_scaling_from_name(name) : MKC_ROPE_SCALING_NONE;
    break;
  }
  case FIELD_FACTORS: {
    mkc_factors *fs = (mkc_factors *)at;
    int n = lua_istable(L, -1) ? (int)luaL_len(L, -1) : 0;
    *fs = (mkc_factors){0, n > 0 ? malloc((size_t)n * sizeof *fs->v) : NULL};
    if (!fs->v) break; /* empty, or out of memory: the reference refuses the node */
    fs->n = n;
    for (int j = 0; j < n; j++) {
      lua_geti(L, -1, j + 1);
      fs->v[j] = lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
    break;
  }
  }
  lua_pop(L, 1);
}

static int read_nodes(lua_State *L, int res, mkc_graph *g) {
  lua_getfield(L, res, "nodes");
  int t = lua_gettop(L);
  g->n_nodes = (int)luaL_len(L, t);
  g->nodes = calloc((size_t)g->n_nodes, sizeof *g->nodes);
  if (!g->nodes) return -1;
  for (int i = 0; i < g->n_nodes; i++) {
    lua_geti(L, t, i + 1);
    for (int f = 0; f < N_NODE_FIELDS; f++)
      read_field(L, lua_gettop(L), &NODE_FIELDS[f], &g->nodes[i]);
    if (g->nodes[i].op < 0) {
      fprintf(stderr, "mkc: internal error: codegen exported an unknown op\n");
      return -1;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 0;
}

/* Deliberately alike read_nodes: another array of records from the export. */
static int read_weights(lua_State *L, int res, mkc_graph *g) {
  lua_getfield(L, res, "weights");
  int t = lua_gettop(L);
  g->n_weights = (int)luaL_len(L, t);
  g->weights = calloc((size_t)g->n_weights, sizeof *g->weights);
  if (!g->weights) return -1;
  for (int i = 0; i < g->n_weights; i++) {
    lua_geti(L, t, i + 1);
    int e = lua_gettop(L);
    mkc_weight_info *w = &g->weights[i];
    w->name = get_str(L, e, "name");
    w->rows = (int)get_int(L, e, "rows");
    w->cols = (int)get_int(L, e, "cols");
    w->offset = (size_t)get_int(L, e, "offset");
    w->row_stride = (int)get_int(L, e, "row_stride");
    w->type = (int)get_int(L, e, "type");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 0;
}

static int read_result(lua_State *L, int res, mkc_graph *g, mkc_kernel_src *src) {
  src->source = get_str(L, res, "source");
  src->file_name = get_str(L, res, "file_name");
  g->graph_path = get_str(L, res, "graph");
  g->preset = get_str(L, res, "preset");
  if (read_nodes(L, res, g) || read_weights(L, res, g)) return -1;
  lua_getfield(L, res, "config");
  int c = lua_gettop(L);
  g->vocab = (int)get_int(L, c, "vocab");
  g->dim = (int)get_int(L, c, "dim");
  g->n_layers = (int)get_int(L, c, "n_layers");
  g->n_heads = (int)get_int(L, c, "n_heads");
  g->n_kv_heads = (int)get_int(L, c, "n_kv_heads");
  g->head_dim = (int)get_int(L, c, "head_dim");
  g->ffn = (int)get_int(L, c, "ffn");
  g->max_ctx = (int)get_int(L, c, "max_ctx");
  lua_pop(L, 1);
  lua_getfield(L, res, "plan");
  int p = lua_gettop(L);
  g->t_max = (int)get_int(L, p, "t_max");
  g->t_chunk = (int)get_int(L, p, "t_chunk");
  g->step_rows = (int)get_int(L, p, "step_rows");
  g->threads = (int)get_int(L, p, "threads");
  g->weight_elems = (size_t)get_int(L, p, "weight_elems");
  g->scratch_floats = (size_t)get_int(L, p, "scratch_floats");
  char *kv_dtype = get_str(L, p, "kv_dtype");
  g->kv_dtype = mkc_kv_dtype_from_name(kv_dtype);
  free(kv_dtype);
  g->kv_bytes = (size_t)get_int(L, p, "kv_bytes");
  g->smem_bytes = (size_t)get_int(L, p, "smem_bytes");
  g->blocks_per_sm = (int)get_int(L, p, "blocks_per_sm");
  g->logits_offset = (size_t)get_int(L, p, "logits_offset");
  g->logits_stride = (size_t)get_int(L, p, "logits_stride");
  g->logprobs_offset = (size_t)get_int(L, p, "logprobs_offset");
  g->history_offset = (size_t)get_int(L, p, "history_offset");
  g->choices_offset = (size_t)get_int(L, p, "choices_offset");
  g->timers_offset = (size_t)get_int(L, p, "timers_offset");
  g->draft_in_kernel = (int)get_int(L, p, "draft_in_kernel");
  g->n_stages = (int)get_int(L, p, "n_stages");
  g->hidden_offset = (size_t)get_int(L, p, "hidden_offset");
  g->hidden_stride = (size_t)get_int(L, p, "hidden_stride");
  g->feature_n = (int)get_int(L, p, "feature_n");
  g->feature_offset = (size_t)get_int(L, p, "feature_offset");
  g->keep_offset = (size_t)get_int(L, p, "keep_offset");
  g->keep_slot = (size_t)get_int(L, p, "keep_slot");
  lua_getfield(L, p, "keep_layers");
  g->n_keep = (int)luaL_len(L, -1);
  if (g->n_keep > MKC_KEEP_MAX) g->n_keep = MKC_KEEP_MAX; /* the options were checked */
  for (int i = 0; i < g->n_keep; i++) {
    lua_geti(L, -1, i + 1);
    g->keep_layers[i] = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  g->feature_stride = (size_t)get_int(L, p, "feature_stride");
  g->slots = (int)get_int(L, p, "slots");
  g->history_floats = (size_t)get_int(L, p, "history_floats");
  g->kv_pages = (int)get_int(L, p, "kv_pages");
  g->slot_pages = (int)get_int(L, p, "slot_pages");
  g->page_table_offset = (size_t)get_int(L, p, "page_table_offset");
  g->imatrix_offset = (size_t)get_int(L, p, "imatrix_offset");
  g->imatrix_floats = (size_t)get_int(L, p, "imatrix_floats");
  lua_pop(L, 1);
  return src->source && src->file_name && g->graph_path && g->preset && g->kv_dtype >= 0 ? 0 : -1;
}

/* package.loaded.schema: graph.h's op and node field names, in its order. */
static void set_schema(lua_State *L) {
  static const char *const fields[N_NODE_FIELDS] = {
#define FIELD_NAME(kind, member, lua) #lua,
      MKC_NODE_FIELDS(FIELD_NAME)
#undef FIELD_NAME
  };
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_newtable(L);
  lua_createtable(L, MKC_OP_COUNT, 0);
  for (int op = 0; op < MKC_OP_COUNT; op++) {
    lua_pushstring(L, mkc_op_name(op));
    lua_seti(L, -2, op + 1);
  }
  lua_setfield(L, -2, "ops");
  lua_createtable(L, N_NODE_FIELDS, 0);
  for (int f = 0; f < N_NODE_FIELDS; f++) {
    lua_pushstring(L, fields[f]);
    lua_seti(L, -2, f + 1);
  }
  lua_setfield(L, -2, "node_fields");
  lua_setfield(L, -2, "schema");
  lua_pop(L, 2);
}

lua_State *mkc_codegen_state(void) {
  const char *home = mkc_home();
  if (!has_codegen(home)) {
    fprintf(stderr,
            "mkc: error: cannot find %s/codegen/main.lua (set MKC_HOME to the mkc source tree)\n",
            home);
    return NULL;
  }
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "mkc: error: cannot create a Lua state (out of memory)\n");
    return NULL;
  }
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_pushfstring(L, "%s/codegen/?.lua", home);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  set_schema(L);
  return L;
}

/* opts.weight_type(name): the model file's type of the weight, or nil. */
static int lua_weight_type(lua_State *L) {
  const mkc_gen_opts *o = lua_touserdata(L, lua_upvalueindex(1));
  int type = o->weight_type(o->weight_type_ctx, luaL_checkstring(L, 1));
  if (type < 0)
    lua_pushnil(L);
  else
    lua_pushinteger(L, type);
  return 1;
}

/* Pushes the options table codegen/main.lua's generate() takes. */
static void push_gen_opts(lua_State *L, const mkc_gen_opts *o) {
  lua_newtable(L);
  lua_pushstring(L, o->graph_path);
  lua_setfield(L, -2, "graph");
  lua_pushstring(L, o->preset ? o->preset : o->model ? o->model->name : NULL);
  lua_setfield(L, -2, "preset");
  if (o->model) {
    push_model_preset(L, o->model);
    lua_setfield(L, -2, "model_preset");
  }
  lua_pushinteger(L, o->draft_max);
  lua_setfield(L, -2, "draft_max");
  if (o->max_ctx > 0) {
    lua_pushinteger(L, o->max_ctx);
    lua_setfield(L, -2, "max_ctx");
  }
  if (o->n_layers > 0) {
    lua_pushinteger(L, o->n_layers);
    lua_setfield(L, -2, "n_layers");
  }
  if (o->vocab > 0) {
    lua_pushinteger(L, o->vocab);
    lua_setfield(L, -2, "vocab");
  }
  lua_pushinteger(L, o->threads > 0 ? o->threads : 0); /* 0: codegen's default (MKC_THREADS) */
  lua_setfield(L, -2, "threads");
  const char *kv_dtype = o->kv_dtype ? o->kv_dtype : getenv("MKC_KV_DTYPE");
  if (kv_dtype && *kv_dtype) {
    lua_pushstring(L, kv_dtype);
    lua_setfield(L, -2, "kv_dtype");
  }
  if (o->weight_type) {
    lua_pushlightuserdata(L, (void *)o);
    lua_pushcclosure(L, lua_weight_type, 1);
    lua_setfield(L, -2, "weight_type");
  }
  lua_pushboolean(L, o->stage_timers);
  lua_setfield(L, -2, "stage_timers");
  lua_pushboolean(L, o->imatrix);
  lua_setfield(L, -2, "imatrix");
  if (o->n_keep_layers > 0) {
    lua_createtable(L, o->n_keep_layers, 0);
    for (int i = 0; i < o->n_keep_layers; i++) {
      lua_pushinteger(L, o->keep_layers[i]);
      lua_seti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "keep_layers");
  }
  lua_pushinteger(L, MKC_KEEP_MAX);
  lua_setfield(L, -2, "keep_max");
  lua_pushinteger(L, o->slots);
  lua_setfield(L, -2, "slots");
  lua_pushinteger(L, MKC_SLOTS_CAP);
  lua_setfield(L, -2, "slots_cap");
  lua_pushinteger(L, o->kv_pages);
  lua_setfield(L, -2, "kv_pages");
  lua_pushinteger(L, o->step_rows);
  lua_setfield(L, -2, "step_rows");
  lua_pushboolean(L, o->reference_only);
  lua_setfield(L, -2, "reference_only");
  lua_pushinteger(L, MKC_KV_PAGE);
  lua_setfield(L, -2, "kv_page");
  lua_pushinteger(L, MKC_MAX_BLOCKS);
  lua_setfield(L, -2, "max_blocks");
  lua_pushinteger(L, MKC_T_CAP);
  lua_setfield(L, -2, "t_cap");
  if (o->ubatch > 0) {
    lua_pushinteger(L, o->ubatch);
    lua_setfield(L, -2, "ubatch");
  }
  lua_pushinteger(L, MKC_CHUNK_CAP);
  lua_setfield(L, -2, "chunk_cap");
  lua_pushstring(L, "mkc " MKC_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushfstring(L, "%s/templates", mkc_home());
  lua_setfield(L, -2, "templates_dir");
}

int mkc_codegen(const mkc_gen_opts *o, mkc_graph *g, mkc_kernel_src *src) {
  memset(g, 0, sizeof *g);
  memset(src, 0, sizeof *src);
  lua_State *L = mkc_codegen_state();
  if (!L) return -1;
  lua_pushcfunction(L, on_error);
  int handler = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushstring(L, "main");
  int rc = lua_pcall(L, 1, 1, handler);
  if (rc == LUA_OK) {
    lua_getfield(L, -1, "generate");
    push_gen_opts(L, o);
    rc = lua_pcall(L, 1, 1, handler);
  }
  int result = -1;
  if (rc != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "%s\n", msg ? msg : "mkc: internal error in codegen");
  } else if (read_result(L, lua_gettop(L), g, src) != 0) {
    fprintf(stderr, "mkc: error: out of memory reading the codegen result\n");
  } else {
    result = 0;
  }
  lua_close(L);
  if (result != 0) {
    mkc_graph_free(g);
    mkc_kernel_src_free(src);
  }
  return result;
}

void mkc_kernel_src_free(mkc_kernel_src *src) {
  if (!src) return;
  free(src->source);
  free(src->file_name);
  src->source = src->file_name = NULL;
}
