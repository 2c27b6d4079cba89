-- Loads a graph file: its presets and its build(g, p) function, run against
-- a builder whose every op is checked and located at the graph file's line.
local util = require("util")
local ir = require("ir")
local dsl = {}

local PRESET_FIELDS = { max_ctx = "integer" }

-- Runs the graph file in a small environment and returns its presets and build function.
local function load_graph_file(path)
  local presets, order = {}, {}
  local env = {
    math = math, string = string, table = table, ipairs = ipairs, pairs = pairs,
    tostring = tostring, tonumber = tonumber, type = type, error = error, assert = assert,
  }
  -- optional(p, key, default): the preset's field, or default where it has none (a field added
  -- after presets were written: theirs keep working)
  env.optional = function(p, key, default)
    local mt = getmetatable(p)
    if type(mt) ~= "table" or type(mt.fields) ~= "table" then
      util.raise(path, util.caller_line(path), "optional: expected the preset build() is given")
    end
    local v = mt.fields[key]
    if v == nil then return default end
    return v
  end
  env.preset = function(name)
    local line = util.caller_line(path)
    if type(name) ~= "string" then util.raise(path, line, "preset: name must be a string") end
    if presets[name] then
      util.raise(path, line, ("preset %s already defined at line %d"):format(name, presets[name].line))
    end
    return function(fields)
      if type(fields) ~= "table" then util.raise(path, line, ("preset %s: expected a table"):format(name)) end
      presets[name] = { fields = fields, line = line }
      order[#order + 1] = name
    end
  end
  local chunk, err = loadfile(path, "t", env)
  if not chunk then
    local f = io.open(path, "r")
    if not f then util.fail(("cannot open graph %s"):format(path)) end
    f:close()
    local line, msg = err:match(":(%d+): (.*)$")
    util.raise(path, tonumber(line), msg or err)
  end
  dsl.call(path, chunk)
  if type(env.build) ~= "function" then util.raise(path, 1, "graph defines no build(g, p) function") end
  return presets, order, env.build
end

-- Calls fn(...), code of the graph file; Lua errors raised by the graph's own code
-- (runtime errors, error(...) and assert(...) in any form) become file:line: error:
-- messages. Errors raised inside mkc are left as they are: they are mkc bugs.
function dsl.call(path, fn, ...)
  local where
  local ok, e = xpcall(fn, function(err)
    if type(err) == "table" and err.mkc_error then return err end
    for level = 2, 64 do -- the first Lua frame: the code that raised the error
      local info = debug.getinfo(level, "Sl")
      if not info then break end
      if info.what ~= "C" then
        if info.source == "@" .. path then where = info.currentline end
        break
      end
    end
    return err
  end, ...)
  if ok then return e end
  if type(e) == "table" and e.mkc_error then error(e, 0) end
  local file, line, msg = tostring(e):match("^(.-):(%d+): (.*)$")
  if file and file == path then util.raise(path, tonumber(line), msg) end
  if where then
    util.raise(path, where, type(e) == "string" and e or ("(error object is a %s value)"):format(type(e)))
  end
  error(e, 0)
end

-- The preset as build() sees it: reading a field it lacks is an error at that line.
local function preset_view(path, name, p, overrides)
  local fields = {}
  for k, v in pairs(p.fields) do fields[k] = v end
  for k, v in pairs(overrides or {}) do
    -- fewer layers (self-speculation's draft): the first ones of the same model, never more
    if k == "n_layers" and not (math.type(v) == "integer" and math.type(fields.n_layers) == "integer"
                                and v >= 1 and v <= fields.n_layers) then
      util.raise(path, p.line, ("preset %s has %s layers: cannot keep the first %s"):format(name,
                 util.show(fields.n_layers), util.show(v)))
    end
    fields[k] = v
  end
  for field, kind in pairs(PRESET_FIELDS) do
    local v = fields[field]
    if math.type(v) ~= kind or v <= 0 then
      util.raise(path, p.line, ("preset %s: %s must be a positive %s, got %s"):format(name, field, kind,
                 util.show(v)))
    end
  end
  return setmetatable({}, {
    __index = function(_, k)
      local v = fields[k]
      if v == nil then
        util.raise(path, util.caller_line(path) or p.line, ("preset %s has no field %s"):format(name, k))
      end
      return v
    end,
    __newindex = function() util.raise(path, util.caller_line(path), "presets are read-only") end,
    fields = fields,
  }), fields
end

local function builder(graph)
  local path = graph.path
  local function line() return util.caller_line(path) end
  -- An op's options table: nil or a table whose keys the op knows, so a typo is an error.
  local function options(l, op, o, known)
    if o == nil then return {} end
    if type(o) ~= "table" then
      util.raise(path, l, ("%s: options must be a table, got %s"):format(op, type(o)))
    end
    for k in pairs(o) do
      if not known[k] then util.raise(path, l, ("%s: unknown option %s"):format(op, util.show(k))) end
    end
    return o
  end
  local g = {}
  g.tokens = function() return ir.op(graph, "tokens", {}, nil, line()) end
  -- n floats per input, written by the host before each step: what a drafter head is conditioned
  -- on (the target's hidden state, mkc_session_hidden); a graph has at most one, read by matmuls
  g.feature = function(n)
    local l = line()
    if graph.feature then
      util.raise(path, l, ("feature already declared at line %d: a graph has one"):format(graph.feature.line))
    end
    graph.feature = ir.op(graph, "feature", {}, { n = n }, l)
    return graph.feature
  end
  g.weight = function(name, rows, cols) return ir.weight(graph, name, rows, cols, line()) end
  -- o.scale (optional): each embedding multiplied by it (Gemma's sqrt(dim))
  g.embed = function(table_w, tokens, o)
    local l = line()
    o = options(l, "embed", o, { scale = true })
    return ir.op(graph, "embed", { table_w, tokens }, { scale = o.scale }, l)
  end
  -- o.group: normalize each run of that many values on its own (a per-head norm, weight [1, group])
  g.rmsnorm = function(x, w, eps, o)
    local l = line()
    o = options(l, "rmsnorm", o, { group = true })
    return ir.op(graph, "rmsnorm", { x, w }, { eps = eps, group = o.group }, l)
  end
  -- bias (optional): a weight [1, rows] added to the product
  g.matmul = function(x, w, bias) return ir.op(graph, "matmul", { x, w, bias }, nil, line()) end
  -- o.scaling (optional): "none", or a table { type = "linear" | "llama3" | "yarn" | "longrope",
  -- ... } (ir.lua)
  -- o.rot_dim (optional): rotate the first rot_dim dims of each head only (partial RoPE)
  -- o.nope (optional): true for a layer without positions (NoPE: SmolLM3's every 4th), x passed
  -- through as it is; the node stays, so the layer keeps its shape (one fused stage, one loop)
  g.rope = function(x, heads, o)
    o = o or {}
    return ir.op(graph, "rope", { x }, { heads = heads, head_dim = o.head_dim, theta = o.theta,
                                         layout = o.layout, scaling = o.scaling, rot_dim = o.rot_dim,
                                         nope = o.nope },
                 line())
  end
  -- o.window (optional): a sliding window of that many positions, the token's own included; 0 or
  -- nil: every position. o.scale (optional): the scores' scale, 1 / sqrt(head_dim) where absent.
  -- o.softcap (optional): scaled scores s become softcap * tanh(s / softcap) (Gemma 2)
  -- o.sinks (optional): a weight [1, heads], each head's score that joins the softmax's sum with no
  -- value (gpt-oss's attention sinks)
  g.attention = function(q, k, v, o)
    o = o or {}
    return ir.op(graph, "attention", { q, k, v, o.sinks }, { layer = o.layer, heads = o.heads,
                                                    kv_heads = o.kv_heads, head_dim = o.head_dim,
                                                    window = o.window, scale = o.scale,
                                                    softcap = o.softcap }, line())
  end
  -- a gated delta-rule layer's recurrence (ir.lua): o.layer, o.kind = "gated_delta", o.heads,
  -- o.k_dim, o.v_dim; the convolution's width is its weight's columns. The reference executor runs
  -- it (--backend ref); no kernel emits it yet.
  g.recurrent = function(mixed, gates, conv_w, a_log, dt_bias, o)
    local l = line()
    o = options(l, "recurrent", o, { layer = true, kind = true, heads = true, k_dim = true, v_dim = true })
    return ir.op(graph, "recurrent", { mixed, gates, conv_w, a_log, dt_bias },
                 { layer = o.layer, kind = o.kind, heads = o.heads, head_dim = o.k_dim, v_dim = o.v_dim }, l)
  end
  -- a sparse MLP of o.experts experts, o.used of them per input (ir.lua); o.norm_topk (optional):
  -- the chosen experts' weights renormalized to sum 1; o.act (optional): as swiglu's (the kernel's
  -- gated MLPs share one); o.biases (optional): { router = w, gate = w, up = w, down = w }, each
  -- matrix's bias (gpt-oss)
  g.moe = function(x, router, gate, up, down, o)
    local l = line()
    o = options(l, "moe", o, { experts = true, used = true, norm_topk = true, act = true, biases = true })
    local b = o.biases or {}
    if o.biases ~= nil and type(o.biases) ~= "table" then util.raise(path, l, "moe: biases must be a table") end
    return ir.op(graph, "moe", { x, router, gate, up, down, b.router, b.gate, b.up, b.down },
                 { experts = o.experts, experts_used = o.used, norm_topk = o.norm_topk, act = o.act }, l)
  end
  -- a + b; o.scale (optional): a + scale * b (Granite's residual_multiplier on each branch)
  g.add = function(a, b, o)
    local l = line()
    o = options(l, "add", o, { scale = true })
    return ir.op(graph, "add", { a, b }, { scale = o.scale }, l)
  end
  -- act(gate) * up; o.act (optional): "silu" (SwiGLU, the default) or "gelu_tanh" (GeGLU: Gemma)
  g.swiglu = function(gate, up, o)
    local l = line()
    o = options(l, "swiglu", o, { act = true })
    return ir.op(graph, "swiglu", { gate, up }, { act = o.act }, l)
  end
  -- o.softcap (optional): each logit z becomes softcap * tanh(z / softcap) (Gemma 2's final cap);
  -- o.scale (optional): each logit multiplied by it first (Granite's 1 / logits_scaling)
  g.logits = function(x, o)
    local l = line()
    if graph.output then
      util.raise(path, l, ("logits already set at line %d: a graph has one output"):format(graph.output.line))
    end
    o = options(l, "logits", o, { softcap = true, scale = true })
    graph.output = ir.op(graph, "logits", { x }, { softcap = o.softcap, scale = o.scale }, l)
    return graph.output
  end
  g.ref = function(name, n) return ir.ref(graph, name, n, line()) end
  g.name = function(node, name) ir.name(graph, node, name, line()); return node end
  return setmetatable(g, {
    __index = function(_, op) util.raise(path, line(), ("unknown op %s"):format(tostring(op))) end,
    __newindex = function() util.raise(path, line(), "the graph builder is read-only") end,
  })
end

-- Loads `path`, builds preset `preset_name`; returns the checked graph.
-- model_fields (or nil): the preset's fields as a model file gives them.
function dsl.load(path, preset_name, overrides, model_fields)
  local presets, order, build = load_graph_file(path)
  local p = presets[preset_name]
  if model_fields then
    local first = presets[order[1]]
    p = { fields = model_fields, line = first and first.line or 1 }
  end
  if not p then
    local first = presets[order[1]]
    util.raise(path, first and first.line or 1, ("unknown preset %s (this graph has: %s)"):format(
               tostring(preset_name), table.concat(order, ", ")))
  end
  local view, fields = preset_view(path, preset_name, p, overrides)
  local graph = ir.new(path)
  graph.preset, graph.params, graph.preset_line = preset_name, fields, p.line
  dsl.call(path, build, builder(graph), view)
  if not graph.output then
    util.raise(path, debug.getinfo(build, "S").linedefined, "build() made no g.logits(...) output")
  end
  ir.finish(graph, graph.output)
  return graph
end

return dsl
