-- Graph IR: nodes with per-token shapes, checked as they are made; then
-- forward references resolved and a topological order (or a cycle reported).
local util = require("util")
local schema = require("schema") -- from the C host: runtime/codegen/graph.h
local ir = {}

local Node = {}
Node.__index = Node
Node.__name = "mkc node"

function ir.is_node(v) return getmetatable(v) == Node end

local function need(cond, fmt, ...)
  if not cond then error({ shape_error = fmt:format(...) }, 0) end
end

local function value(v, what)
  need(ir.is_node(v), "%s: expected a graph value, got %s", what, type(v))
  need(v.op ~= "weight", "%s: got weight %s where a value was expected", what, tostring(v.name))
  return v
end

local function weight(v, what)
  need(v ~= nil, "%s: missing weight", what)
  need(ir.is_node(v) and v.op == "weight", "%s: expected a weight, got %s", what,
       ir.is_node(v) and v.op or type(v))
  return v
end

local function count(v, what)
  need(math.type(v) == "integer" and v > 0, "%s must be a positive integer, got %s", what, util.show(v))
  return v
end

-- at.scale: nil (1 is taken as nil), or a positive multiplier (add: of its second operand;
-- logits: of each logit).
local function scale_of(at, what)
  if at.scale == 1 then at.scale = nil end
  need(at.scale == nil or (type(at.scale) == "number" and at.scale > 0 and at.scale < math.huge),
       "%s: scale must be a positive number, got %s", what, util.show(at.scale))
end

-- at.softcap: nil, or a cap c > 0 that maps each value s to c * tanh(s / c) (Gemma 2's scores and
-- logits); 0 is taken as nil.
local function softcap(at, what)
  if at.softcap == 0 then at.softcap = nil end
  need(at.softcap == nil or (type(at.softcap) == "number" and at.softcap > 0 and at.softcap < math.huge),
       "%s: softcap must be a positive number, got %s", what, util.show(at.softcap))
end

-- RoPE scaling types (graph.h's MKC_ROPE_SCALINGS) and the parameters each reads: true where
-- required, else the default (YaRN's, as llama.cpp and transformers default them).
local ROPE_SCALING = {
  linear = { factor = true },
  llama3 = { factor = true, low_freq_factor = true, high_freq_factor = true, orig_ctx = true },
  yarn = { factor = true, orig_ctx = true, beta_fast = 32, beta_slow = 1, ext_factor = 1, attn_factor = 1 },
  -- Phi-3's: the pair's frequency divided by its factor (rot_dim / 2 of each list), cos and sin
  -- times attn_factor
  longrope = { short_factor = "list", long_factor = "list", orig_ctx = true, attn_factor = 1 },
}

-- A longrope list: rot_dim / 2 positive numbers.
local function factor_list(v, k, pairs_n)
  need(type(v) == "table" and #v == pairs_n,
       "rope: longrope scaling: %s must be a list of %d numbers (rot_dim / 2), got %s", k, pairs_n,
       type(v) == "table" and ("%d"):format(#v) or util.show(v))
  for j = 1, pairs_n do
    local f = v[j]
    need(type(f) == "number" and f > 0 and f < math.huge,
         "rope: longrope scaling: %s[%d] must be a positive number, got %s", k, j, util.show(f))
  end
end

-- A longrope node's frequency divisors for a kernel of max_ctx positions: the short ones where
-- that context is within the one the model was first trained on, else the long ones (llama.cpp's
-- choice, by the context; transformers picks by the sequence's length at each forward).
function ir.rope_factors(node, max_ctx)
  return max_ctx > node.rope_orig_ctx and node.rope_long_factor or node.rope_short_factor
end

-- A rope's scaling (nil, "none" or a table), checked, as the node's rope_* attributes.
local function rope_scaling(s, at)
  local pairs_n = at.rot_dim // 2
  at.scaling = nil
  if s == nil or s == "none" then
    at.rope_scaling = "none"
    return
  end
  need(type(s) == "table", "rope: scaling must be \"none\" or a table, got %s", util.show(s))
  local params = ROPE_SCALING[s.type]
  need(params, "rope: scaling type must be \"linear\", \"llama3\", \"yarn\" or \"longrope\", got %s",
       util.show(s.type))
  local v = {}
  for k, val in pairs(s) do
    need(k == "type" or params[k] ~= nil, "rope: %s scaling has no parameter %s", s.type, util.show(k))
    v[k] = val
  end
  local names = {}
  for k in pairs(params) do names[#names + 1] = k end
  table.sort(names) -- the first error the same every run
  for _, k in ipairs(names) do
    local default = params[k]
    if v[k] == nil then
      need(default ~= true and default ~= "list", "rope: %s scaling needs %s", s.type, k)
      v[k] = default
    end
    if default == "list" then
      factor_list(v[k], k, pairs_n)
    else
      need(type(v[k]) == "number" and v[k] == v[k] and v[k] > -math.huge and v[k] < math.huge,
           "rope: %s scaling: %s must be a number, got %s", s.type, k, util.show(v[k]))
    end
  end
  local function positive(k)
    need(v[k] > 0, "rope: %s scaling: %s must be > 0, got %s", s.type, k, util.show(v[k]))
  end
  if s.type ~= "longrope" then
    positive("factor")
    need(s.type == "linear" or v.factor >= 1, "rope: %s scaling: factor must be >= 1, got %s", s.type,
         util.show(v.factor))
  end
  if v.orig_ctx ~= nil then count(v.orig_ctx, "rope scaling orig_ctx") end
  if s.type == "llama3" then
    positive("low_freq_factor")
    need(v.high_freq_factor > v.low_freq_factor, "rope: llama3 scaling: high_freq_factor %s must exceed "
         .. "low_freq_factor %s", util.show(v.high_freq_factor), util.show(v.low_freq_factor))
  elseif s.type == "yarn" then
    positive("beta_fast")
    positive("beta_slow")
    positive("attn_factor")
    need(v.ext_factor >= 0, "rope: yarn scaling: ext_factor must be >= 0, got %s", util.show(v.ext_factor))
  elseif s.type == "longrope" then
    positive("attn_factor")
  end
  at.rope_scaling = s.type
  for k, val in pairs(v) do
    if k ~= "type" then at["rope_" .. k] = val end
  end
end

-- Each op: check(args, attrs) -> per-token output length; raises shape_error on misuse.
-- A gated MLP's gate activations, as node.act carries them (runtime/codegen/graph.h: MKC_ACT_*).
ir.ACTS = { silu = 0, gelu_tanh = 1, swiglu_oai = 2 }
-- gpt-oss's glu constants (runtime/codegen/graph.h: MKC_OAI_ALPHA, MKC_OAI_LIMIT; the kernel
-- against the reference checks they agree)
ir.OAI_ALPHA, ir.OAI_LIMIT = "1.702", "7.0"
-- The activations' names for a message, in ir.ACTS' order: "silu", "gelu_tanh" or "swiglu_oai".
function ir.act_names()
  local names = {}
  for name, v in pairs(ir.ACTS) do names[v + 1] = ('"%s"'):format(name) end
  return table.concat(names, ", ", 1, #names - 1) .. " or " .. names[#names]
end

ir.ops = {
  tokens = function(a) return 1 end,
  -- a per-input vector the host writes before each step (mkc_session_set_feature)
  feature = function(a, at)
    count(at.n, "feature size")
    return at.n
  end,
  -- scale: each embedding multiplied by it (Gemma's sqrt(dim)); nil: 1
  embed = function(a, at)
    local w = weight(a[1], "embed")
    need(ir.is_node(a[2]) and a[2].op == "tokens", "embed: second argument must be g.tokens()")
    need(at.scale == nil or (type(at.scale) == "number" and at.scale > 0 and at.scale < math.huge),
         "embed: scale must be a positive number, got %s", util.show(at.scale))
    return w.cols
  end,
  -- group: each run of `group` values is normalized on its own (per-head norm); the weight is [1, group]
  rmsnorm = function(a, at)
    local x, w = value(a[1], "rmsnorm"), weight(a[2], "rmsnorm")
    if at.group == nil then
      at.group = x.n
      need(w.rows == 1 and w.cols == x.n, "shape mismatch: rmsnorm of [%d] with %s [%d, %d], expected [1, %d]",
           x.n, w.name, w.rows, w.cols, x.n)
    else
      count(at.group, "rmsnorm group")
      need(x.n % at.group == 0, "rmsnorm: group %d does not divide [%d]", at.group, x.n)
      need(w.rows == 1 and w.cols == at.group,
           "shape mismatch: rmsnorm of [%d] in groups of %d with %s [%d, %d], expected [1, %d]", x.n, at.group,
           w.name, w.rows, w.cols, at.group)
    end
    need(type(at.eps) == "number" and at.eps > 0, "rmsnorm: eps must be a positive number")
    return x.n
  end,
  -- a[3], optional: a bias [1, rows] added to the product
  matmul = function(a)
    local x, w = value(a[1], "matmul"), weight(a[2], "matmul")
    need(w.cols == x.n, "shape mismatch: matmul with %s [%d, %d] needs an input of %d, got %d",
         w.name, w.rows, w.cols, w.cols, x.n)
    if a[3] ~= nil then
      local b = weight(a[3], "matmul bias")
      need(b.rows == 1 and b.cols == w.rows,
           "shape mismatch: matmul bias %s [%d, %d] for %s [%d, %d], expected [1, %d]", b.name, b.rows, b.cols,
           w.name, w.rows, w.cols, w.rows)
    end
    return w.rows
  end,
  rope = function(a, at)
    local x = value(a[1], "rope")
    count(at.heads, "rope heads")
    count(at.head_dim, "rope head_dim")
    need(at.head_dim % 2 == 0, "rope: head_dim must be even, got %d", at.head_dim)
    need(x.n == at.heads * at.head_dim, "shape mismatch: rope of [%d] as %d heads x %d", x.n, at.heads,
         at.head_dim)
    need(at.layout == "interleaved" or at.layout == "neox",
         "rope: layout must be \"interleaved\" or \"neox\", got %s", util.show(at.layout))
    need(type(at.theta) == "number" and at.theta > 0, "rope: theta must be a positive number")
    -- partial RoPE: the first rot_dim dims of each head rotated, the others passed through
    at.rot_dim = at.rot_dim or at.head_dim
    need(math.type(at.rot_dim) == "integer" and at.rot_dim >= 2 and at.rot_dim <= at.head_dim and
         at.rot_dim % 2 == 0, "rope: rot_dim must be an even integer from 2 to head_dim %d, got %s",
         at.head_dim, util.show(at.rot_dim))
    rope_scaling(at.scaling, at)
    need(at.nope == nil or type(at.nope) == "boolean", "rope: nope must be a boolean, got %s", util.show(at.nope))
    at.nope = at.nope and 1 or 0
    return x.n
  end,
  attention = function(a, at)
    local q, k, v = value(a[1], "attention q"), value(a[2], "attention k"), value(a[3], "attention v")
    count(at.heads, "attention heads")
    count(at.kv_heads, "attention kv_heads")
    count(at.head_dim, "attention head_dim")
    need(math.type(at.layer) == "integer" and at.layer >= 0, "attention: layer must be an integer >= 0")
    -- a sliding window: a token sees itself and the window - 1 positions before it
    at.window = at.window or 0
    need(math.type(at.window) == "integer" and at.window >= 0,
         "attention: window must be an integer >= 0 (0: every position), got %s", util.show(at.window))
    -- the scores' scale: nil for 1 / sqrt(head_dim)
    need(at.scale == nil or (type(at.scale) == "number" and at.scale > 0 and at.scale < math.huge),
         "attention: scale must be a positive number, got %s", util.show(at.scale))
    softcap(at, "attention")
    need(at.heads % at.kv_heads == 0, "attention: %d heads do not group over %d kv_heads", at.heads,
         at.kv_heads)
    need(q.n == at.heads * at.head_dim, "shape mismatch: attention q is [%d], expected %d x %d", q.n,
         at.heads, at.head_dim)
    for _, kv in ipairs({ { "k", k }, { "v", v } }) do
      need(kv[2].n == at.kv_heads * at.head_dim, "shape mismatch: attention %s is [%d], expected %d x %d",
           kv[1], kv[2].n, at.kv_heads, at.head_dim)
    end
    -- a[4], optional: the sinks [1, heads], a score per head that joins the softmax's sum (gpt-oss)
    if a[4] ~= nil then
      local s = weight(a[4], "attention sinks")
      need(s.rows == 1 and s.cols == at.heads, "shape mismatch: attention sinks %s [%d, %d], expected [1, %d]",
           s.name, s.rows, s.cols, at.heads)
    end
    return q.n
  end,
  -- a gated delta-rule layer (runtime/exec/delta_rule.h): mixed is [q | k | v] before the causal
  -- convolution, gates [a | b] (per head: the decay's input and the write strength's); the weights
  -- are the convolution's [channels, width], A_log [1, heads] and dt_bias [1, heads]
  recurrent = function(a, at)
    local mixed, gates = value(a[1], "recurrent mixed"), value(a[2], "recurrent gates")
    local conv = weight(a[3], "recurrent convolution")
    local a_log, dt_bias = weight(a[4], "recurrent A_log"), weight(a[5], "recurrent dt_bias")
    need(at.kind == "gated_delta", "recurrent: kind must be \"gated_delta\", got %s", util.show(at.kind))
    need(math.type(at.layer) == "integer" and at.layer >= 0, "recurrent: layer must be an integer >= 0")
    count(at.heads, "recurrent heads")
    count(at.head_dim, "recurrent k_dim")
    count(at.v_dim, "recurrent v_dim")
    local channels = at.heads * (2 * at.head_dim + at.v_dim)
    need(mixed.n == channels, "shape mismatch: recurrent mixed is [%d], expected %d x (2 x %d + %d)", mixed.n,
         at.heads, at.head_dim, at.v_dim)
    need(gates.n == 2 * at.heads, "shape mismatch: recurrent gates are [%d], expected 2 x %d", gates.n, at.heads)
    need(conv.rows == channels and conv.cols <= 64,
         "shape mismatch: recurrent convolution %s [%d, %d], expected [%d, width <= 64]", conv.name, conv.rows,
         conv.cols, channels)
    for _, w in ipairs({ a_log, dt_bias }) do
      need(w.rows == 1 and w.cols == at.heads, "shape mismatch: recurrent %s [%d, %d], expected [1, %d]", w.name,
           w.rows, w.cols, at.heads)
    end
    at.conv, at.kind = conv.cols, nil
    return at.heads * at.v_dim
  end,
  -- a sparse MLP (Qwen3-MoE, Mixtral): router [experts, dim] scores the experts, the experts_used
  -- best of softmax(router x) run, each down(act(gate x) * up x) weighted by its probability
  -- (renormalized over the chosen with norm_topk); expert e's rows of gate, up [experts * ffn, dim]
  -- and down [experts * dim, ffn] are its block from e * ffn (e * dim), as GGUF's 3-d _exps tensors
  -- lie. act: "silu" (nil) or "gelu_tanh", exported as ir.ACTS' number; norm_topk as 0 or 1
  moe = function(a, at)
    local x = value(a[1], "moe")
    local router, gate, up, down = weight(a[2], "moe router"), weight(a[3], "moe gate"), weight(a[4], "moe up"),
                                   weight(a[5], "moe down")
    count(at.experts, "moe experts")
    count(at.experts_used, "moe used")
    need(at.experts_used <= at.experts and at.experts_used <= 64 and at.experts <= 1024,
         "moe: used must be at most experts and 64, experts at most 1024, got used %d of %d", at.experts_used,
         at.experts)
    need(router.rows == at.experts and router.cols == x.n,
         "shape mismatch: moe router %s [%d, %d], expected [%d, %d] (experts x the input)", router.name, router.rows,
         router.cols, at.experts, x.n)
    need(gate.rows % at.experts == 0 and gate.cols == x.n,
         "shape mismatch: moe gate %s [%d, %d], expected [%d x ffn, %d]", gate.name, gate.rows, gate.cols,
         at.experts, x.n)
    local ffn = gate.rows // at.experts
    need(up.rows == gate.rows and up.cols == x.n, "shape mismatch: moe up %s [%d, %d], expected [%d, %d] as gate",
         up.name, up.rows, up.cols, gate.rows, x.n)
    need(down.rows == at.experts * x.n and down.cols == ffn,
         "shape mismatch: moe down %s [%d, %d], expected [%d, %d] (experts x the input, ffn)", down.name,
         down.rows, down.cols, at.experts * x.n, ffn)
    need(at.norm_topk == nil or type(at.norm_topk) == "boolean", "moe: norm_topk must be a boolean, got %s",
         util.show(at.norm_topk))
    at.norm_topk = at.norm_topk and 1 or 0
    -- a[6..9], optional, all four or none: the biases of router, gate, up and down (gpt-oss)
    if a[6] ~= nil or a[7] ~= nil or a[8] ~= nil or a[9] ~= nil then
      for i, m in ipairs({ { "router", at.experts }, { "gate", gate.rows }, { "up", up.rows }, { "down", down.rows } }) do
        local b = weight(a[5 + i], "moe " .. m[1] .. " bias")
        need(b.rows == 1 and b.cols == m[2], "shape mismatch: moe %s bias %s [%d, %d], expected [1, %d]", m[1],
             b.name, b.rows, b.cols, m[2])
      end
    end
    need(at.act == nil or ir.ACTS[at.act] ~= nil, "moe: act must be %s, got %s", ir.act_names(),
         util.show(at.act))
    at.act = ir.ACTS[at.act or "silu"]
    return x.n
  end,
  add = function(a, at)
    local x, y = value(a[1], "add"), value(a[2], "add")
    need(x.n == y.n, "shape mismatch: add of [%d] and [%d]", x.n, y.n)
    scale_of(at, "add")
    return x.n
  end,
  -- act: the gate's activation, "silu" (nil) or "gelu_tanh" (GeGLU), exported as ir.ACTS' number
  swiglu = function(a, at)
    local gate, up = value(a[1], "swiglu"), value(a[2], "swiglu")
    need(gate.n == up.n, "shape mismatch: swiglu of [%d] and [%d]", gate.n, up.n)
    need(at.act == nil or ir.ACTS[at.act] ~= nil, "swiglu: act must be %s, got %s", ir.act_names(),
         util.show(at.act))
    at.act = ir.ACTS[at.act or "silu"]
    return gate.n
  end,
  logits = function(a, at)
    softcap(at, "logits")
    scale_of(at, "logits")
    return value(a[1], "logits").n
  end,
}

-- C's ops (schema.ops) must be exactly the ops codegen makes: those checked above, and weight (ir.weight).
do
  local made = { weight = true }
  for op in pairs(ir.ops) do made[op] = true end
  local in_schema = {}
  for _, op in ipairs(schema.ops) do
    in_schema[op] = true
    if not made[op] then error(("op %s of runtime/codegen/graph.h is not one codegen makes (ir.ops)"):format(op)) end
  end
  for op in pairs(made) do
    if not in_schema[op] then error(("codegen makes op %s, which runtime/codegen/graph.h lacks"):format(op)) end
  end
end

function ir.new(path)
  return { path = path, nodes = {}, weights = {}, weight_list = {}, names = {}, name_lines = {}, refs = {} }
end

local function add(graph, node, line)
  node.id = #graph.nodes + 1
  node.line = line
  graph.nodes[node.id] = setmetatable(node, Node)
  return node
end

-- Makes an op node; a shape error is reported at the graph file's line.
function ir.op(graph, op, args, attrs, line)
  local check = ir.ops[op]
  local ok, n = pcall(check, args, attrs or {})
  if not ok then
    if type(n) == "table" and n.shape_error then util.raise(graph.path, line, n.shape_error) end
    error(n, 0)
  end
  local node = { op = op, inputs = {}, n = n }
  for i = 1, #args do node.inputs[i] = args[i] end
  for k, v in pairs(attrs or {}) do node[k] = v end
  return add(graph, node, line)
end

function ir.weight(graph, name, rows, cols, line)
  if type(name) ~= "string" or name == "" then util.raise(graph.path, line, "weight: name must be a string") end
  for _, d in ipairs({ { "rows", rows }, { "cols", cols } }) do
    if math.type(d[2]) ~= "integer" or d[2] <= 0 then
      util.raise(graph.path, line, ("weight %s: %s must be a positive integer, got %s"):format(name, d[1],
                 util.show(d[2])))
    end
  end
  local old = graph.weights[name]
  if old then
    if old.rows ~= rows or old.cols ~= cols then
      util.raise(graph.path, line, ("weight %s declared as [%d, %d] at line %d, now [%d, %d]"):format(
                 name, old.rows, old.cols, old.line, rows, cols))
    end
    return old
  end
  local w = add(graph, { op = "weight", name = name, rows = rows, cols = cols, n = rows, inputs = {} }, line)
  graph.weights[name] = w
  graph.weight_list[#graph.weight_list + 1] = w
  return w
end

-- A forward reference to a value named later with ir.name.
function ir.ref(graph, name, n, line)
  if type(name) ~= "string" or name == "" then util.raise(graph.path, line, "ref: name must be a string") end
  if math.type(n) ~= "integer" or n <= 0 then
    util.raise(graph.path, line, ("ref %s: size must be a positive integer, got %s"):format(name, util.show(n)))
  end
  local r = add(graph, { op = "ref", ref = name, n = n, inputs = {} }, line)
  graph.refs[#graph.refs + 1] = r
  return r
end

function ir.name(graph, node, name, line)
  if type(name) ~= "string" or name == "" then util.raise(graph.path, line, "name: name must be a string") end
  if not ir.is_node(node) then
    util.raise(graph.path, line, ("name %s: expected a graph value, got %s"):format(name, type(node)))
  end
  if graph.names[name] then
    util.raise(graph.path, line, ("value %s already named at line %d"):format(name, graph.name_lines[name]))
  end
  graph.names[name] = node
  graph.name_lines[name] = line
  node.value_name = name
end

-- Replaces references by their targets and orders the nodes the output needs.
function ir.finish(graph, output)
  local target = {}
  for _, r in ipairs(graph.refs) do
    local t = graph.names[r.ref]
    if not t then util.raise(graph.path, r.line, ("ref %s is never named (g.name)"):format(r.ref)) end
    if t.op == "weight" then
      util.raise(graph.path, r.line, ("ref %s names weight %s (line %d); a ref stands for a value"):format(
                 r.ref, t.name, graph.name_lines[r.ref]))
    end
    if t.n ~= r.n then
      util.raise(graph.path, r.line, ("shape mismatch: ref %s is [%d] but the value named at line %d is [%d]"):format(
                 r.ref, r.n, graph.name_lines[r.ref], t.n))
    end
    target[r] = t
  end
  -- A ref may name another ref; the chain must end at a value.
  local function resolve(r)
    local seen, chain = {}, {}
    while target[r] do
      if seen[r] then
        util.raise(graph.path, r.line, "cycle: " .. table.concat(chain, " -> ") .. " -> ref " .. r.ref)
      end
      seen[r] = true
      chain[#chain + 1] = ("ref %s (line %d)"):format(r.ref, r.line)
      r = target[r]
    end
    return r
  end
  for _, node in ipairs(graph.nodes) do
    for i, inp in ipairs(node.inputs) do node.inputs[i] = resolve(inp) end
  end
  -- Depth-first from the output; a node met again while on the stack closes a cycle.
  local state, order, stack = {}, {}, {}
  local function visit(node)
    if state[node] == "done" then return end
    if state[node] == "open" then
      local names = {}
      for i = #stack, 1, -1 do
        table.insert(names, 1, ("%s (line %d)"):format(stack[i].op, stack[i].line))
        if stack[i] == node then break end
      end
      util.raise(graph.path, node.line, "cycle: " .. table.concat(names, " -> ") .. " -> " .. node.op)
    end
    state[node] = "open"
    stack[#stack + 1] = node
    for _, inp in ipairs(node.inputs) do visit(inp) end
    stack[#stack] = nil
    state[node] = "done"
    order[#order + 1] = node
  end
  visit(output)
  for i, node in ipairs(order) do node.id = i end
  graph.order = order
  graph.consumers = {}
  for _, node in ipairs(order) do graph.consumers[node] = {} end
  for _, node in ipairs(order) do
    for _, inp in ipairs(node.inputs) do table.insert(graph.consumers[inp], node) end
  end
  return order
end

return ir
