-- Emission: the kernel file = header, the device prelude, the templates
-- verbatim (with #line back to each), then ONE __global__ kernel that calls
-- each stage's template with this model's sizes as literals.
local util = require("util")
local buffers = require("buffers")
local calls = require("calls")
local wtypes = require("wtypes")
local fold = require("fold")
local emit = {}

-- Device-side files spliced into every kernel, in order.
emit.TEMPLATES = { "mkc_state.h", "common.cuh", "slots.cuh", "iq_grids.cuh", "weights.cuh", "embed.cuh", "matvec.cuh", "norm.cuh", "qkv_rope.cuh",
                   "gemm.cuh", "gemm_attn.cuh", "attention.cuh", "moe.cuh", "lm_head.cuh", "sample.cuh", "accept.cuh",
                   "rounds.cuh", "imatrix.cuh" }
-- Spliced only into a kernel with a tiled path (prompt chunks past t_max).
local TILED_ONLY = { ["gemm.cuh"] = true, ["gemm_attn.cuh"] = true }
-- Spliced (and hashed: codegen/main.lua) only into an imatrix kernel (mkc_gen_opts.imatrix).
emit.IMATRIX_ONLY = { ["imatrix.cuh"] = true }

local knob = util.knob

-- A prompt chunk's attention tile (templates/gemm_attn.cuh): bm query rows, bn positions at a
-- time (16 for heads wider than 64, so the tiles stay within a tiled matmul's shared memory), dt
-- n8 tiles of the widest head. A stage whose heads are wider than 128 or whose group of query
-- heads is more than bm keeps the CUDA-core attention for chunks too.
local function attn_tile(plan)
  local head_dim = 8
  for _, st in ipairs(plan.stages) do
    if st.kind == "attention" then head_dim = math.max(head_dim, st.att.head_dim) end
  end
  local dt = math.min(16, (head_dim + 7) // 8)
  return { bm = 64, bn = dt <= 8 and 32 or 16, dt = dt }
end

local EMITTERS = {}
for _, kind in ipairs({ "embed", "matvec", "matvec_residual", "norm_residual", "gate_up_swiglu", "qkv_rope",
                        "attention", "moe_up", "moe_down", "lm_head", "sample_cands", "sample", "accept", "keep" }) do
  EMITTERS[kind] = require("emit." .. (kind == "matvec_residual" and "matvec" or kind))
end

local function flt(x)
  local s = ("%.9g"):format(x)
  if not s:find("[%.eEn]") then s = s .. ".0" end
  return s .. "f"
end

-- A matrix as templates/weights.cuh takes it: first row, bytes per row, storage type.
local function wmat_of(plan, w)
  local pw = plan.weights[w]
  return ("mkc_wmat_of(weights + %d, %d, %s)"):format(pw.offset, pw.row_bytes, wtypes.macro(pw.type))
end

local function context(graph, plan, opts)
  local ctx = { t_max = opts.t_max, t_chunk = opts.t_chunk, step_rows = opts.step_rows or opts.t_max,
                max_ctx = opts.max_ctx,
                warps = opts.threads // 32, flt = flt,
                vocab = graph.output.n, kv_elem_bytes = opts.kv_elem_bytes, tiled = opts.tiled,
                attn_tile = attn_tile(plan) }
  local signatures = calls.signatures(opts.templates, emit.TEMPLATES)
  -- A template call, its arguments by parameter name (codegen/calls.lua).
  function ctx.call(fn, args, wrap_after) return calls.format(signatures, fn, args, wrap_after) end
  ctx.partials = plan.partials
  ctx.partials_idx = plan.partials + util.round_up(ctx.step_rows * opts.max_blocks, 64)
  ctx.history, ctx.sample_work, ctx.drawn = plan.history, plan.sample_work, plan.drawn
  ctx.choices = plan.choices
  ctx.logprobs, ctx.sample_lists = plan.logprobs, plan.sample_lists
  ctx.sample_cands, ctx.sample_union, ctx.max_blocks = plan.sample_cands, plan.sample_union, opts.max_blocks
  ctx.keep, ctx.keep_slot = plan.keep, plan.keep_slot
  ctx.threads = opts.threads
  -- slots (templates/slots.cuh): the step's row map, absent in a plain kernel; a wide step (more
  -- rows than t_max, several slots) runs the tiled path
  ctx.slots = opts.slots
  ctx.rows = opts.slots > 0 and "rows" or "(const mkc_rowmap *)0"
  ctx.wide = opts.slots > 0 and ctx.step_rows > opts.t_max
  -- The arguments of a per-sequence stage (sampler, accept): the state, pos, the inputs, the
  -- history; an array of per-row entries (k elements each) from the sequence's first row. In a
  -- slot kernel they name slot s (ctx.per_slot's loop).
  if opts.slots > 0 then
    -- b0: the block that takes the slot's first row (its sampler and accept beside the others')
    ctx.seq = { st = "state + s", pos = "rm->spos[s]", T = "rm->count[s]", sampling = "&state[s].sampling",
                b0 = "rm->first[s]" }
    function ctx.seq.history(ty)
      return ("(%s *)(scratch + %d + (long)s * %d)"):format(ty, plan.history, plan.history_floats)
    end
    function ctx.seq.row(base, k) return ("%s + rm->first[s] * %d"):format(base, k) end
  else
    ctx.seq = { st = "state", pos = "pos", T = "T", sampling = "&state->sampling", b0 = "0" }
    function ctx.seq.history(ty) return ("(%s *)(scratch + %d)"):format(ty, plan.history) end
    function ctx.seq.row(base) return base end
  end
  -- A per-sequence stage's code: as is, or in a slot kernel once per slot in the step (and for
  -- which cond, an expression of s, holds), on that slot's rows.
  function ctx.per_slot(code, cond)
    if opts.slots == 0 then return code end
    -- the barrier: a block's shared memory is the next slot's (a stage's own end is a flow wait's)
    return ("for (int s = 0; s < MKC_SLOTS; s++) { /* each slot in the step, on its rows */\n" ..
            "    if (rm->count[s] == 0%s) continue;\n    %s\n    mkc_sync_block();\n  }"):format(
            cond and (" || !" .. cond) or "", code)
  end
  -- a bf16 vector (norm, bias)
  function ctx.weight(w)
    assert(plan.weights[w].type == wtypes.BF16, "a bf16 weight")
    return ("weights + %d"):format(plan.weights[w].offset)
  end
  function ctx.wmat(w) return wmat_of(plan, w) end
  -- chunks of 8 columns per row, and the columns they cover (the input's padded length)
  function ctx.chunks(w) return plan.weights[w].chunks end
  function ctx.wcols(w) return plan.weights[w].chunks * 8 end
  function ctx.wrow_bytes(w) return plan.weights[w].row_bytes end
  function ctx.value(v) return ("scratch + %d"):format(plan.value(v).offset) end
  function ctx.vstride(v) return plan.value(v).stride end
  function ctx.kv(att) return plan.kv[att] end
  -- One position's K (or V) of every kv head, in bytes of the KV type.
  function ctx.kv_row(att) return opts.kv_elem_bytes * att.kv_heads * att.head_dim end
  function ctx.head_ready() return ("(unsigned *)(scratch + %d)"):format(plan.head_ready) end
  -- split-KV attention's partials and per-unit counters (codegen/buffers.lua)
  function ctx.att_partials() return ("scratch + %d"):format(plan.att_partials) end
  function ctx.splitk() return plan.splitk and ("scratch + %d"):format(plan.splitk) or "(float *)0" end
  function ctx.att_counters() return ("(unsigned *)(scratch + %d)"):format(plan.att_counters) end
  function ctx.smem_layout(regions) return (buffers.smem(regions)) end
  -- Global traffic a stage declares for `mkc inspect` (docs/INSPECT.md): one entry per
  -- buffer range, bytes as { c = per step, t = per input token, ctx = per cached position }.
  function ctx.wread(w)
    local pw = plan.weights[w]
    return { "weights", pw.offset, { c = w.rows * pw.row_bytes }, w.name }
  end
  -- The same for a matrix of which each input reads its own rows (the experts it runs): bytes per
  -- input token.
  function ctx.wread_rows(w, rows)
    local pw = plan.weights[w]
    return { "weights", pw.offset, { t = rows * pw.row_bytes }, w.name }
  end
  -- n values of a vector weight [1, cols] per input (the experts' biases: K experts' of E); the
  -- arena keeps vectors in bf16
  function ctx.wread_values(w, n)
    return { "weights", plan.weights[w].offset, { t = 2 * n }, w.name }
  end
  function ctx.vbytes(v, floats_per_token)
    return { "scratch", plan.value(v).offset, { t = 4 * floats_per_token }, ctx.label(v) }
  end
  function ctx.label(node) return emit.node_label(node) end
  function ctx.smem_ptr(ty, off) return ("(%s *)(smem + %d)"):format(ty, off) end
  -- The fused RMSNorm input of a matmul stage: prologue call, its smem, and the call arguments.
  -- A matvec's, gate/up's or Q/K/V's call (templates/matvec.cuh, mkc_norm_first) is preceded by
  -- `before` and given `red`: in a kernel whose short matmuls may split (MKC_SPLIT) the template
  -- takes the norm itself (before "", red its smem); else the prologue is written first, as it
  -- was (red 0: taken). The LM head writes `prologue` always.
  function ctx.norm(st, extra)
    local smem = {}
    if st.norm then smem = { { "inv_rms", opts.t_max }, { "red", ctx.warps } } end
    for _, r in ipairs(extra or {}) do smem[#smem + 1] = r end
    if not st.norm then
      return { smem = smem, prologue = "", before = "", w = "(const mkc_bf16 *)0", inv_rms = "(float *)0",
               reads = {}, eps = flt(0), n = st.x.n, red = "(float *)0" }
    end
    local at = buffers.smem(smem)
    local x, nw = st.x, st.norm.inputs[2]
    local r = {
      smem = smem,
      reads = { { "weights", plan.weights[nw].offset, { c = plan.weights[nw].row_stride * 2 }, nw.name } },
      w = ctx.weight(nw), eps = flt(st.norm.eps), n = x.n,
      inv_rms = ctx.smem_ptr("float", at.inv_rms),
      red = opts.split and ctx.smem_ptr("float", at.red) or "(float *)0",
      prologue = ctx.call("mkc_rms_prologue", { x = ctx.value(x), x_stride = ctx.vstride(x), n = x.n,
        eps = flt(st.norm.eps), t0 = st.kind == "lm_head" and "t0" or "0", T = "T",
        inv_rms = ctx.smem_ptr("float", at.inv_rms), red = ctx.smem_ptr("float", at.red) }) .. ";\n  ",
    }
    r.before = opts.split and "" or r.prologue
    return r
  end
  -- The shared memory of a tiled stage (templates/gemm.cuh): the staged slice of inputs and of
  -- weights, the finished tile of c_cols columns, the sums of squares and 1 / rms of its tokens.
  function ctx.gemm_smem(c_cols)
    local g = opts.gemm
    local ld = g.bk + 4
    return { { "a_tile", g.bm * ld, tiled = true }, { "w_tile", g.bn * ld, tiled = true },
             { "c_tile", g.bm * (c_cols + 4), tiled = true }, { "ssq", g.bm * g.bk // 4, tiled = true },
             { "inv_tile", g.bm, tiled = true } }
  end
  -- The tiled call's smem arguments, from the stage's layout.
  function ctx.gemm_args(args, at)
    for _, r in ipairs({ { "a_tile", "a_tile" }, { "w_tile", "w_tile" }, { "c_tile", "c_tile" }, { "ssq", "ssq" },
                         { "inv_tile", "inv_rms" } }) do
      args[r[2]] = ctx.smem_ptr("float", at[r[1]])
    end
    return args
  end
  -- Whether any of the matrices is stored in blocks (the tiled path splits its weights too).
  function ctx.quantized(...)
    for _, w in ipairs({ ... }) do
      if plan.weights[w].type ~= wtypes.BF16 then return 1 end
    end
    return 0
  end
  -- A decode stage's code twice where a step may have more inputs than one: once for a step of one
  -- input, with T (and t0, the first input with logits, then 0) written as literals, so the loops
  -- over inputs fold and their unused accumulators go; then for any T. The same statements in the
  -- same order: the same bits for the one input.
  function ctx.one_input(decode)
    if not opts.t1_path then return decode end
    local one = decode:gsub("%f[%w_]T%f[^%w_]", "1"):gsub("%f[%w_]t0%f[^%w_]", "0")
    return ("if (T == 1) { /* one input: T = 1, t0 = 0 written as literals */\n    %s\n  } else {\n    %s\n  }")
      :format((one:gsub("\n  ", "\n    ")), (decode:gsub("\n  ", "\n    ")))
  end
  -- A stage's code with its tiled variant (prompt chunks past t_max, a wide slot step) where the
  -- kernel has one; cond (C) and says (its comment) narrow it.
  function ctx.variants(tiled, decode, cond, says)
    decode = ctx.one_input(decode)
    if not opts.tiled then return decode end
    cond = cond or "T > MKC_T_MAX"
    says = says or (opts.slots > 0 and "a prompt chunk or a wide step" or "a prompt chunk")
    return ("if (%s) { /* %s: tiled, on tensor cores */\n    %s;\n  } else {\n    %s\n  }")
      :format(cond, says, (tiled:gsub("\n  ", "\n    ")), (decode:gsub("\n  ", "\n    ")))
  end
  return ctx
end

function emit.node_label(node)
  local what = node.op
  if node.op == "matmul" then
    what = "matmul " .. node.inputs[2].name .. (node.inputs[3] and " + " .. node.inputs[3].name or "")
  elseif node.op == "rmsnorm" then what = "rmsnorm " .. node.inputs[2].name
  elseif node.op == "embed" then what = "embed " .. node.inputs[1].name
  elseif node.op == "attention" then
    what = "attention layer " .. node.layer .. (node.window > 0 and ", window " .. node.window or "")
  end
  return ("%s (line %d)"):format(what, node.line)
end

-- Fills st.emitted for every stage and returns the max shared memory per block; plan.smem_decode_bytes:
-- the part of it that the decode paths of stages reading weights use (regions marked tiled are a
-- prompt chunk's or a wide step's): past it, the matvec's ring.
function emit.stages(graph, plan, opts)
  local ctx = context(graph, plan, opts)
  local smem_max, decode_max = 0, 0 -- decode: the bytes a weight-reading stage's decode path uses
  for _, st in ipairs(plan.stages) do
    local emitter = EMITTERS[st.kind]
    if not emitter then util.fail("codegen: no emitter for stage kind " .. st.kind) end
    st.emitted = emitter(st, ctx)
    for _, field in ipairs({ "items", "flops", "reads", "writes" }) do
      if not st.emitted[field] then util.fail(("codegen: the %s emitter gives no %s"):format(st.kind, field)) end
    end
    local _, bytes, decode_bytes = buffers.smem(st.emitted.smem)
    st.smem_bytes = bytes
    smem_max = math.max(smem_max, bytes)
    -- the matvec's ring (MKC_CP_RING) is live only inside stages that read weights: others may share it
    local weights = false
    for _, r in ipairs(st.emitted.reads) do if r[1] == "weights" then weights = true end end
    if weights then decode_max = math.max(decode_max, decode_bytes) end
    -- an imatrix kernel's matmul stage adds its input's squares first (templates/imatrix.cuh)
    local im = plan.imatrix_at and plan.imatrix_at[st]
    if im then
      local acc, call = ("scratch + %d"):format(im), nil
      local input = st.x and {
        x = ctx.value(st.x), x_stride = ctx.vstride(st.x), n = st.x.n, T = "T", acc = acc,
        norm_w = st.norm and ctx.weight(st.norm.inputs[2]) or "(const mkc_bf16 *)0",
        eps = flt(st.norm and st.norm.eps or 0), router = "(const float *)0", r_stride = 0, E = 0, K = 0,
        norm_topk = 0 }
      if st.kind == "moe_up" then -- the router's input, and each expert's (chosen as mkc_moe_up does)
        input.router, input.r_stride = ctx.value(st.router), ctx.vstride(st.router)
        input.E, input.K, input.norm_topk = st.moe.experts, st.moe.experts_used, st.moe.norm_topk
        call = ctx.call("mkc_imatrix_add", input)
      elseif st.kind == "moe_down" then -- each expert's hidden rows, as mkc_moe_up stored them
        call = ctx.call("mkc_imatrix_add_down", { hidden = ctx.value(st.hidden), h_stride = ctx.vstride(st.hidden),
          ffn = st.moe.inputs[5].cols, choice = ctx.value(st.choice), c_stride = ctx.vstride(st.choice),
          K = st.moe.experts_used, T = "T", acc = acc })
      else
        call = ctx.call("mkc_imatrix_add", input)
      end
      st.emitted.imatrix = call .. "; /* mkc imatrix: the input's squares */"
    end
    local labels = {}
    for _, n in ipairs(st.nodes) do labels[#labels + 1] = emit.node_label(n) end
    st.labels = labels
  end
  smem_max = math.max(smem_max, 4 * (ctx.warps + 2)) -- mkc_round_next's, after the stages
  decode_max = math.max(decode_max, 4 * (ctx.warps + 2))
  plan.smem_decode_bytes = decode_max + emit.rowmap_bytes(opts)
  return smem_max + emit.rowmap_bytes(opts) -- a slot kernel's row map before the stages'
end

-- A slot kernel's row map (templates/slots.cuh, mkc_rowmap), in shared memory ahead of the stages':
-- room for its ints and its pointer, which the template checks.
function emit.rowmap_bytes(opts)
  if opts.slots == 0 then return 0 end
  return util.round_up(4 * (3 * opts.slots + 3 * opts.step_rows + 2) + 16, 16)
end

-- The weight matrices a stage streams: its matmuls' (the embedding's lookup reads a few rows only).
local function matrices(st)
  local out = {}
  for _, n in ipairs(st.nodes) do
    if n.op == "matmul" then out[#out + 1] = n.inputs[2] end
  end
  if st.kind == "matvec" and st.mm.op == "moe" then out[#out + 1] = st.w end -- experts' router
  return out
end

-- A step-dependent quantity as "c+N*t+N*ctx+N*att" (t: input tokens, ctx: cached
-- positions after the step, att: attended query-position pairs), zero terms left out.
local function qty(q)
  local parts = {}
  if (q.c or 0) ~= 0 then parts[#parts + 1] = tostring(q.c) end
  for _, k in ipairs({ "t", "ctx", "att" }) do
    if (q[k] or 0) ~= 0 then parts[#parts + 1] = ("%d*%s"):format(q[k], k) end
  end
  return #parts > 0 and table.concat(parts, "+") or "0"
end

local function traffic(list)
  local parts = {}
  for _, r in ipairs(list) do parts[#parts + 1] = ("%s+%d %s (%s)"):format(r[1], r[2], qty(r[3]), r[4]) end
  return #parts > 0 and table.concat(parts, ", ") or "none"
end

-- The machine-readable lines of a stage comment (docs/INSPECT.md, format 1).
local function stage_meta(st)
  local e, ids, smem = st.emitted, {}, {}
  for _, n in ipairs(st.nodes) do ids[#ids + 1] = tostring(n.id - 1) end
  local at = buffers.smem(e.smem)
  for _, r in ipairs(e.smem) do -- padded to 16 bytes, as the plan lays them out
    smem[#smem + 1] = ("%s %d+%d"):format(r[1], at[r[1]], util.round_up(r[2] * 4, 16))
  end
  return table.concat({
    ("   * nodes: %s; items: %s, one %s each; flops: %s; sync: %s"):format(
      #ids > 0 and table.concat(ids, " ") or "none", qty(e.items), e.items.unit, qty(e.flops), st.sync.kind),
    ("   * smem: %s"):format(#smem > 0 and table.concat(smem, ", ") or "none"),
    ("   * reads: %s"):format(traffic(e.reads)),
    ("   * writes: %s"):format(traffic(e.writes)),
  }, "\n")
end

function emit.source(graph, plan, opts)
  local out, lines, draft_in_kernel = {}, 0, false
  local function put(s)
    out[#out + 1] = s
    local _, n = s:gsub("\n", "")
    lines = lines + n + 1
  end
  local function splice(name)
    put(("#line 1 \"templates/%s\""):format(name))
    put((opts.templates[name]:gsub("\n$", "")))
  end
  -- a dependency between stages is a flow wait (templates/common.cuh: arrive, prefetch the next
  -- stage's weights, wait), or with MKC_SYNC=grid a grid barrier (to compare them)
  local sync_mode = os.getenv("MKC_SYNC") or ""
  if sync_mode ~= "" and sync_mode ~= "flow" and sync_mode ~= "grid" then
    util.fail(("MKC_SYNC must be flow or grid, got %s"):format(util.show(sync_mode)))
  end
  if sync_mode ~= "grid" then
    for _, st in ipairs(plan.stages) do if st.sync.kind == "grid" then st.sync.kind = "flow" end end
  end
  local n_sync, n_flow = 0, 0
  for _, st in ipairs(plan.stages) do
    if st.sync.kind == "grid" then n_sync = n_sync + 1 end
    if st.sync.kind == "flow" then n_flow = n_flow + 1 end
  end
  local p = graph.params
  put(table.concat({
    ("/* %s -- generated: do not edit."):format(opts.version),
    (" * graph:   %s, preset %s"):format(graph.path, graph.preset),
    (" * hashes:  graph %s, templates %s, options %s"):format(opts.graph_hash, opts.templates_hash,
      opts.options_hash),
    (" * options: draft_max %d (T <= %d tokens per step), max_ctx %d, %d threads per block, <= %d blocks, KV %s, prompt chunks <= %d%s"):format(
      opts.t_max - 1, opts.t_max, opts.max_ctx, opts.threads, opts.max_blocks, opts.kv_dtype, opts.t_chunk,
      opts.tiled and " (tiled, tensor cores)" or ""),
    (" * plan:    %d stages, %d grid barriers, %d flow waits; scratch %d floats, KV %d %s, weights %d bf16, smem %d bytes"):format(
      #plan.stages, n_sync, n_flow, plan.scratch_floats, plan.kv_elems, opts.kv_dtype, plan.weight_elems, plan.smem_bytes),
    " * kernel:  mkc_step(weights, scratch, kv, state) runs one whole step; pos lives in state.",
    " * inspect: format 1: each stage comment lists its graph nodes, work items, smem, global reads",
    " *          and writes (bytes per step, t tokens, ctx cached positions) and flops (docs/INSPECT.md).",
    " */",
  }, "\n"))
  put(("#define MKC_THREADS %d\n#define MKC_T_MAX %d\n#define MKC_KV_%s 1 /* the KV cache's element type */"):format(
    opts.threads, opts.t_max, opts.kv_dtype:upper()))
  -- the gated MLPs' activation, one for the kernel (templates/common.cuh: mkc_glu)
  local act
  local moe_k = 0 -- the experts an input runs, at most (templates/moe.cuh)
  for _, st in ipairs(plan.stages) do
    local node = (st.kind == "gate_up_swiglu" and st.out) or (st.kind == "moe_up" and st.moe)
    if node then
      if act and act ~= node.act then
        util.raise(graph.path, node.line, "codegen: a kernel's gated MLPs must share one activation")
      end
      act = node.act
    end
    if st.kind == "moe_up" then moe_k = math.max(moe_k, st.moe.experts_used) end
  end
  if moe_k > 0 then put(("#define MKC_MOE_K %d /* experts an input runs, at most */"):format(moe_k)) end
  local ir = require("ir")
  if act == ir.ACTS.gelu_tanh then put("#define MKC_GEGLU 1 /* the gated MLPs' gate: GELU's tanh form (GeGLU) */") end
  if act == ir.ACTS.swiglu_oai then
    put(("#define MKC_OAI_GLU 1 /* the gated MLPs' glu: gpt-oss's, clamped */\n#define MKC_OAI_ALPHA %s\n#define MKC_OAI_LIMIT %s")
        :format(ir.OAI_ALPHA, ir.OAI_LIMIT))
  end
  -- soft caps (Gemma 2), one for the kernel's attention and one for its logits (templates/common.cuh:
  -- mkc_score, mkc_logit)
  local caps = {}
  for _, st in ipairs(plan.stages) do
    local node, name = st.kind == "attention" and st.att, "MKC_ATTN_SOFTCAP"
    if st.kind == "lm_head" then node, name = st.out, "MKC_LOGIT_SOFTCAP" end
    if node then
      local cap = node.softcap or 0
      if caps[name] and caps[name] ~= cap then
        util.raise(graph.path, node.line, "codegen: a kernel's attention layers must share one softcap")
      end
      caps[name] = cap
    end
  end
  if (caps.MKC_ATTN_SOFTCAP or 0) > 0 then
    put(("#define MKC_ATTN_SOFTCAP %s /* scores s -> c tanh(s / c) */"):format(flt(caps.MKC_ATTN_SOFTCAP)))
  end
  if (caps.MKC_LOGIT_SOFTCAP or 0) > 0 then
    put(("#define MKC_LOGIT_SOFTCAP %s /* logits z -> c tanh(z / c) */"):format(flt(caps.MKC_LOGIT_SOFTCAP)))
  end
  -- Granite's multipliers, one for the kernel's residual adds and one for its logits
  -- (templates/common.cuh: mkc_branch, mkc_logit)
  local resid
  for _, node in ipairs(graph.order) do
    if node.op == "add" then
      if resid ~= nil and resid ~= (node.scale or 1) then
        util.raise(graph.path, node.line, "codegen: a kernel's residual adds must share one scale")
      end
      resid = node.scale or 1
    end
  end
  if resid and resid ~= 1 then
    put(("#define MKC_RESIDUAL_SCALE %s /* a residual branch times it before it is added */"):format(flt(resid)))
  end
  if graph.output.scale then
    put(("#define MKC_LOGIT_SCALE %s /* the logits times it */"):format(flt(graph.output.scale)))
  end
  if opts.slots > 0 then
    put(("#define MKC_SLOTS %d /* sequences a step serves (templates/slots.cuh) */"):format(opts.slots))
    put(("#define MKC_STEP_ROWS %d /* a step's rows, every slot's; past MKC_T_MAX tiled */"):format(opts.step_rows))
    put(("#define MKC_ROWMAP_BYTES %d /* the row map's shared memory */"):format(emit.rowmap_bytes(opts)))
    if opts.kv_pages > 0 then
      put(("#define MKC_KV_PAGES %d /* the KV pool's pages */\n#define MKC_SLOT_PAGES %d /* a slot's page table */"):format(
        opts.kv_pages, opts.slot_pages))
    else
      put(("#define MKC_KV_SLOT %dL /* KV elements of each slot's cache */"):format(plan.kv_elems))
    end
  end
  -- Blocks per SM the registers must leave room for: at 128 threads, 3 (<= 168 registers). The
  -- layer loop keeps a pass's offsets live that an unrolled kernel folds into its instructions;
  -- unbounded, ptxas gave it 212 registers (2 blocks per SM) where 168 fit without a spill.
  -- MKC_MIN_BLOCKS, a knob for the GPU's A/B: ptxas fits T = 1 in 128 registers (4 blocks)
  -- without a spill, T = 5 with 16 bytes (docs/PERF.md, 2026-11-27).
  local asked = knob("MKC_MIN_BLOCKS", "1 to 8", function(b) return b >= 1 and b <= 8 end)
  -- A kernel of one input a step, every matrix bf16, no experts, asks 4: ptxas then fits
  -- llama-3.2-1b's, Gemma 3's and SmolLM2's in 126-128 registers with no spill. Left at 3 it
  -- chose up to 135 (llama-3.2-1b's 132 since the split takes its own norm, 2026-12-04, fourth
  -- session), and the grid took 3 blocks an SM, which the H200 ran 3.3 % slower than 4. Experts'
  -- kernels keep 3 (Qwen3-MoE's spilled 92 B at 4), as do quantized ones (a Q4_1 file's: 16 B).
  local dense_t1 = opts.threads == 128 and opts.t_max == 1 and opts.slots == 0 and opts.all_bf16 and
    moe_k == 0
  -- (at 256 or 512 threads, MKC_THREADS: the same warps an SM as 4 blocks of 128, <= 128 registers)
  local min_blocks = asked or (dense_t1 and 4) or (opts.threads == 128 and 3) or
    ((opts.threads == 256 or opts.threads == 512) and 512 // opts.threads or nil)
  put(("#define MKC_MIN_BLOCKS %d /* blocks per SM the registers must allow */"):format(
    min_blocks or 1))
  -- ... and the blocks per SM the grid takes (0, none planned: as many as fit). A kernel of one
  -- input a step (no slots) takes as many as its registers allow: llama-3.2-1b's fits 4 at 122
  -- registers, and 4 an SM ran 3.3 % faster than 3 on the H200 (docs/PERF.md, 2026-12-04; on the
  -- H100, 2026-11-27, an older kernel forced to 128 registers ran 9.5 % slower). Others keep the
  -- planned 3 where ptxas needs fewer registers.
  local all_fit = not asked and opts.t_max == 1 and opts.slots == 0
  plan.blocks_per_sm = (not all_fit and min_blocks) or 0
  -- A tuning knob for benchmarks (docs/PERF.md): the chunks a matvec lane loads per row at once.
  local unroll = knob("MKC_MV_UNROLL", "1, 2, 3 or 4", function(u) return u >= 1 and u <= 4 end)
  if unroll and unroll > 1 and plan.cp_ring then
    util.fail("MKC_CP_RING takes the place of the loads MKC_MV_UNROLL unrolls: set one of the two")
  end
  if unroll then
    put(("#define MKC_MV_UNROLL %d /* MKC_MV_UNROLL: chunks a matvec lane loads per row at once */"):format(unroll))
  end
  -- ... and the matvecs that leave warps idle taking one row a warp, this many of its chunks per
  -- lane at once (templates/matvec.cuh: MKC_MV_ROW1; off: on the H200 it gained less than the split
  -- at T = 1 and cost the verify steps 7 %, docs/PERF.md, 2026-12-04)
  local row1 = knob("MKC_MV_ROW1", "0, 2, 4 or 8", function(u) return u == 0 or u == 2 or u == 4 or u == 8 end)
  if row1 and row1 > 0 and plan.cp_ring then
    util.fail("MKC_CP_RING takes the place of the loads MKC_MV_ROW1 unrolls: set one of the two")
  end
  if row1 and row1 > 0 then
    put(("#define MKC_MV_ROW1 %d /* MKC_MV_ROW1: the idle-warp matvecs' rows one a warp, chunks per lane at once */")
      :format(row1))
  end
  -- Weight rows read past L1 (templates/prelude_cuda.cuh): on by default since the
  -- H100's A/B (docs/PERF.md, 2026-11-27); MKC_WEIGHT_NC=0 for the plain load.
  local nc = knob("MKC_WEIGHT_NC", "0 or 1", function(v) return v == 0 or v == 1 end)
  put(("#define MKC_WEIGHT_NC %d /* MKC_WEIGHT_NC: weight rows read past L1 */"):format(nc or 1))
  -- The short matmuls' row blocks given to a block's warps together: by default in all-bf16
  -- kernels of one input a step, MKC_SPLIT=0 or 1 for any (codegen/main.lua says why)
  if opts.split then
    put("#define MKC_SPLIT 1 /* short matmuls split a row's columns over a block's warps (MKC_SPLIT) */")
  end
  -- The decode matmuls of bf16 matrices on tensor cores (templates/matvec.cuh): by default in
  -- all-bf16 kernels of 16 slots or more, MKC_MMA_DECODE=0 or 1 for any (codegen/main.lua)
  if opts.mma_decode then
    put("#define MKC_MMA_DECODE 1 /* bf16 decode matmuls on tensor cores (MKC_MMA_DECODE) */")
  end
  -- with it, MKC_SPLITK=1: their short stages split over the grid's warps (codegen/main.lua)
  if plan.splitk then
    put(("#define MKC_SPLITK 1 /* MKC_SPLITK=1: short matmuls split-K over the grid's warps */\n" ..
      "#define MKC_SPLITK_PART_FLOATS %d /* their partials; the groups' counters after them */"):format(
      plan.splitk_part_floats))
  end
  -- with it, the k-steps whose weight loads a lane has in flight (default 4)
  local mma_unroll = knob("MKC_MMA_UNROLL", "1 to 8", function(u) return u >= 1 and u <= 8 end)
  if mma_unroll then
    put(("#define MKC_MMA_UNROLL %d /* MKC_MMA_UNROLL: k-steps a tensor-core matvec lane loads at once */"):format(
      mma_unroll))
  end
  if plan.cp_ring then
    put(("#define MKC_CP_RING %d /* MKC_CP_RING: 16-byte pieces per thread for weight rows in flight */\n" ..
      "#define MKC_CP_RING_OFF %d /* their start in shared memory: past what matmul stages use */"):format(
      plan.cp_ring, plan.cp_ring_off))
  end
  -- A knob for the GPU's A/B: attention asks L2 for each tile's K and V rows as the tile begins.
  if knob("MKC_ATT_PREFETCH", "0 or 1", function(v) return v == 0 or v == 1 end) == 1 then
    put("#define MKC_ATT_PREFETCH 1 /* MKC_ATT_PREFETCH=1: a tile's K and V rows prefetched into L2 */")
  end
  -- ... and the K or V rows (and the merge's partials) a thread loads before it uses the first
  -- (templates/attention.cuh: 4 by default since 2026-12-05; 1 was the kernel before, for the A/B)
  local ahead = knob("MKC_ATT_AHEAD", "1 to 8", function(a) return a >= 1 and a <= 8 end)
  if ahead then
    put(("#define MKC_ATT_AHEAD %d /* MKC_ATT_AHEAD: K/V rows a thread loads before using them */"):format(ahead))
  end
  -- ... and whether a bf16 row's chunk is unpacked once for all of a step's inputs (templates/
  -- matvec.cuh: by default where no matrix is quantized since 2026-12-05; 0 is the loop before)
  local once = knob("MKC_DOT_ONCE", "0 or 1", function(v) return v == 0 or v == 1 end)
  if once then
    put(("#define MKC_DOT_ONCE %d /* MKC_DOT_ONCE: a bf16 row's chunk unpacked once for all inputs */"):format(once))
  end
  -- ... and whether the sampler's union is also bounded by the slices' maxima (templates/
  -- sample.cuh: since 2026-12-05's third session; 0 is the gather before, for the A/B)
  local bound = knob("MKC_CANDS_BOUND", "0 or 1", function(v) return v == 0 or v == 1 end)
  if bound then
    put(("#define MKC_CANDS_BOUND %d /* MKC_CANDS_BOUND: the sampler's union bounded by the slices' maxima */"):format(bound))
  end
  -- The stages' copies for one input (codegen/main.lua; MKC_T1_PATH=0 leaves them out): said
  if opts.t1_path then
    put("#define MKC_T1_PATH 1 /* each decode stage also written for steps of one input (MKC_T1_PATH=0: not) */")
  end
  -- A tuning knob for benchmarks: bytes of its first rows a warp prefetches while it waits.
  local prefetch = knob("MKC_PREFETCH_BYTES", "a multiple of 128 in 0..65536",
    function(b) return b >= 0 and b <= 65536 and b % 128 == 0 end)
  if prefetch then
    put(("#define MKC_PREFETCH_BYTES %d /* MKC_PREFETCH_BYTES: a warp's prefetch during a flow wait */"):format(prefetch))
  end
  if opts.tiled then
    put(("#define MKC_T_CHUNK %d /* a prompt chunk's inputs: past MKC_T_MAX, tiled */"):format(opts.t_chunk))
    put(("#define MKC_GEMM_BM %d /* tiles: tokens */\n#define MKC_GEMM_BN %d /* tiles: weight rows */"):format(
      opts.gemm.bm, opts.gemm.bn))
    put(("#define MKC_GEMM_BK %d /* columns staged at a time */"):format(opts.gemm.bk))
    local a = attn_tile(plan)
    put(("#define MKC_ATTN_BM %d /* attention tiles: query rows */\n#define MKC_ATTN_BN %d /* positions at a time */"):format(
      a.bm, a.bn))
    put(("#define MKC_ATTN_DT %d /* n8 tiles of a head */"):format(a.dt))
  end
  -- the block types the matrices are stored in: only their decoders are compiled
  local used, names, grids = {}, {}, false -- grids: the IQ tables, where a matrix's type reads them
  for _, w in ipairs(plan.weights) do
    if w.type ~= wtypes.BF16 and not used[w.type] then
      used[w.type] = true
      names[#names + 1] = wtypes.name(w.type)
      grids = grids or wtypes.BLOCKS[w.type].grid or false
    end
  end
  table.sort(names)
  for _, n in ipairs(names) do put(("#define MKC_W_USES_%s 1 /* matrices stored as %s blocks */"):format(n, n)) end
  if #names > 0 then put("#define MKC_W_QUANTIZED 1 /* some matrices are stored in blocks */") end
  put("#if defined(__CUDACC__)")
  splice("prelude_cuda.cuh")
  put("#else\n#include \"prelude_cpu.h\"\n#endif")
  for _, name in ipairs(emit.TEMPLATES) do
    if (opts.tiled or not TILED_ONLY[name]) and (grids or name ~= "iq_grids.cuh") and
        (moe_k > 0 or name ~= "moe.cuh") and (opts.imatrix or not emit.IMATRIX_ONLY[name]) then
      splice(name)
    end
  end
  -- longrope's frequency divisors, one list for the kernel (templates/qkv_rope.cuh: mkc_rope_longrope)
  local factors, which
  for _, node in ipairs(graph.order) do
    if node.op == "rope" and node.rope_scaling == "longrope" then
      local list = require("ir").rope_factors(node, opts.max_ctx)
      if factors and table.concat(factors, ",") ~= table.concat(list, ",") then
        util.raise(graph.path, node.line, "codegen: a kernel's longrope layers must share one list of factors")
      end
      factors = list
      which = list == node.rope_long_factor and ("long: max_ctx %d > %d"):format(opts.max_ctx, node.rope_orig_ctx)
        or ("short: max_ctx %d <= %d"):format(opts.max_ctx, node.rope_orig_ctx)
    end
  end
  if factors then
    local items = {}
    for j, f in ipairs(factors) do items[j] = flt(f) end
    put(("/* longrope: pair j's frequency divided by mkc_rope_factors[j], the %s */"):format(which))
    put(("MKC_TABLE float mkc_rope_factors[%d] = {%s};"):format(#items, table.concat(items, ", ")))
  end
  -- each stage's text: its comment, its code, its barrier (and timer)
  local timer = opts.stage_timers and ("(unsigned long long *)(scratch + %d)"):format(plan.timers)
  local comments, texts = {}, {}
  -- MKC_NEXT_PREFETCH=1 (a knob until a GPU has measured it): a stage that streams no weights
  -- (attention) asks L2 for all of the next stage's, where they fit in 16 MiB (o-proj's 8 MB in
  -- llama-3.2-1b): the short stages after attention spent about 5 us a stage beyond their bytes
  -- on the H200 (docs/PERF.md, 2026-12-04)
  -- MKC_NEXT_PREFETCH=2 also has a layer's matmul stage, its own rows done, ask L2 for the next
  -- matmul stage's first 16 MiB (o-proj for gate/up, gate/up for down; not across layers, whose
  -- loop would not fold, nor for the LM head or experts): the next stage's rows stream while the
  -- last blocks finish this one and every block waits for them
  local next_pf = knob("MKC_NEXT_PREFETCH", "0, 1 or 2", function(v) return v >= 0 and v <= 2 end) or 0
  local after_kinds = { matvec = true, matvec_residual = true, gate_up_swiglu = true }
  local next_pf_bytes = 16 * 1024 * 1024 -- int offsets in mkc_prefetch_next; L2 holds 50 MB
  for i, st in ipairs(plan.stages) do
    comments[i] = table.concat({
      ("  /* stage %d/%d: %s -- %s"):format(i, #plan.stages, st.kind,
        #st.labels > 0 and table.concat(st.labels, ", ") or "no graph node"),
      ("   * work: %s; smem %d bytes"):format(st.emitted.work, st.smem_bytes),
      stage_meta(st) .. " */" }, "\n")
    local t = {}
    -- a stage with a condition (sampling) runs, and ends with its barrier, only when it holds:
    -- the condition reads the state, the same in every block
    local indent = st.emitted.condition and "    " or "  "
    if st.emitted.condition then t[#t + 1] = ("  if (%s) {"):format(st.emitted.condition) end
    local mats, nxt = matrices(st), plan.stages[i + 1]
    local next_mats = nxt and matrices(nxt) or {}
    if next_pf >= 1 and #mats == 0 then
      local bytes = 0
      for _, w in ipairs(next_mats) do bytes = bytes + w.rows * plan.weights[w].row_bytes end
      for _, w in ipairs(bytes <= next_pf_bytes and next_mats or {}) do
        t[#t + 1] = ("%smkc_prefetch_next(%s, %d); /* the next stage's weights */"):format(indent,
          wmat_of(plan, w), w.rows)
      end
    end
    local prev = plan.stages[i - 1]
    if prev and prev.sync.kind == "flow" then
      -- this stage's first weight rows stream into L2 while the other blocks finish the last one
      -- (the rows a warp takes first: mkc_matvec's may be one, MKC_MV_ROW1)
      local n = (st.kind == "matvec" or st.kind == "matvec_residual") and "mkc_matvec_rows_n(%d)" or "MKC_ROWS"
      for _, w in ipairs(mats) do
        t[#t + 1] = ("%smkc_prefetch_first(%s, %d, %s, %d);"):format(indent, wmat_of(plan, w), w.rows,
          n:format(w.rows), #mats)
      end
      t[#t + 1] = ("%smkc_flow_wait(state, &flow_waited); /* the last stage's writes, every block's */"):format(indent)
    end
    if st.emitted.imatrix then t[#t + 1] = indent .. st.emitted.imatrix end
    -- a code's later lines are indented for the body's two spaces: under a condition, two more
    t[#t + 1] = indent .. st.emitted.code:gsub("\n", "\n" .. indent:sub(3))
    if next_pf == 2 and #mats > 0 and nxt and after_kinds[st.kind] and after_kinds[nxt.kind] then
      for _, w in ipairs(next_mats) do
        local rows = math.min(w.rows, next_pf_bytes // #next_mats // plan.weights[w].row_bytes)
        t[#t + 1] = ("%smkc_prefetch_next(%s, %d); /* the next stage's first rows */"):format(indent,
          wmat_of(plan, w), rows)
      end
    end
    if st.sync.kind == "grid" then
      t[#t + 1] = ("%smkc_grid_sync(state); /* %s */"):format(indent, st.sync.reason)
    elseif st.sync.kind == "flow" then
      t[#t + 1] = ("%smkc_flow_arrive(state); /* %s */"):format(indent, st.sync.reason)
    end
    if st.emitted.condition then t[#t + 1] = "  }" end
    if timer then t[#t + 1] = ("  mkc_stage_time(%s, %d);"):format(timer, i) end
    texts[i] = table.concat(t, "\n")
  end
  -- the layers as one loop (codegen/fold.lua) over the stages' code; MKC_UNFOLD=1 writes every
  -- stage out (to compare). folds: the run that folds, even then (mkc_step's parameter below).
  local folds = fold.find(texts)
  local folded = folds and fold.loop(texts, folds)
  if not folded then folds = nil end
  local unfold = os.getenv("MKC_UNFOLD") == "1"
  local run, lp = not unfold and folds, not unfold and folded
  -- Drafts by the first layers in the kernel need the loop's passes to be the model's layers, in
  -- order: pass l holds layer l's attention, and every layer is in the loop.
  draft_in_kernel = opts.slots == 0 and lp and run.count == graph.params.n_layers or false
  for l = 0, (draft_in_kernel and run.count or 0) - 1 do
    local seen = false
    for j = 0, run.period - 1 do
      local st = plan.stages[run.first + l * run.period + j]
      if st.kind == "attention" then seen = seen or st.att.layer == l end
    end
    draft_in_kernel = draft_in_kernel and seen
  end
  plan.draft_in_kernel = draft_in_kernel
  if lp then
    put("/* The layer loop's values that differ from pass to pass (mkc_step: lay_i, lay_w). */")
    put(fold.tables(lp, run.count))
  end
  put(("#line %d \"%s\""):format(lines + 2, opts.file_name))
  put("")
  -- A layer's stage outside the layer loop names its matrices as the weights plus a literal
  -- offset, which NVVM hoisted out of the round loop and held through the step (spilled in a
  -- kernel of several block types). There the weights' base is read opaque each round, so
  -- those sums stay in their stages; elsewhere the base stays a parameter, which costs no
  -- register (read opaque, it took two, and a kernel near the cap spilled). docs/DECISIONS.md
  -- Judged on the folded kernel even under MKC_UNFOLD=1, whose text inspect's unfolding of the
  -- folded one must reproduce byte for byte.
  local NOT_LAYER = { embed = true, lm_head = true, sample_cands = true, sample = true, accept = true, keep = true }
  local layer_unrolled = false
  for k, st in ipairs(plan.stages) do
    local looped = folds and k >= folds.first and k < folds.first + folds.count * folds.period
    if not looped and not NOT_LAYER[st.kind] then layer_unrolled = true end
  end
  put(("MKC_KERNEL mkc_step(const mkc_bf16 *%s, float *scratch, mkc_kv *kv, mkc_state *state) {"):format(
    layer_unrolled and "weights_in" or "weights"))
  put("  char *smem = mkc_smem();")
  put("  (void)smem;")
  if opts.slots > 0 then
    put("  mkc_rowmap *const rm = (mkc_rowmap *)smem; /* the step's rows, each block's (templates/slots.cuh) */")
    put("  smem += MKC_ROWMAP_BYTES; /* the stages' shared memory after it */")
  end
  -- a step, and with state->round_max > 1 more rounds of it (templates/rounds.cuh); the stages
  -- keep the indentation they have without the loop, which inspect and the tests read
  if n_flow > 0 then put("  unsigned flow_waited = 0; /* flow arrivals waited for, in blocks (mkc_flow_wait) */") end
  if opts.slots > 0 then
    put("  for (int round = 0; round < 1; round++) { /* a slot kernel: one round, the loop's shape kept */")
  else
    put("  for (int round = 0;; round++) { /* state->round_max > 1: more rounds (templates/rounds.cuh) */")
  end
  if layer_unrolled then
    put("  const mkc_bf16 *const weights = mkc_opaque_weights(weights_in); /* offsets from it stay in their stage */")
  end
  put("  if (round == 0 && mkc_bid() == 0 && mkc_tid() == 0) state->n_rounds = 0; /* none recorded yet */")
  -- a self-speculation draft pass (templates/rounds.cuh): one input, the next draft's position,
  -- the first draft_layers layers; it is the host's or the last round's setting, checked there
  if opts.slots > 0 then
    -- the slots' rows (templates/slots.cuh): one slot's step is the plain kernel's on its cache
    local table = opts.kv_pages > 0 and ("(const int *)(scratch + %d)"):format(plan.page_table) or "(const int *)0"
    put(("  const int T = mkc_slots_begin(state, %d, %d, %d, %d, %s, rm);"):format(graph.output.n, opts.max_ctx,
      opts.t_max, opts.t_chunk, table))
    put("  if (T == 0) return;")
    if opts.kv_pages > 0 then
      put("  const mkc_rowmap *rows = rm; /* paged: every row's K/V through its slot's page table */")
    else
      put("  const mkc_rowmap *rows = rm->single >= 0 ? (const mkc_rowmap *)0 : rm;")
      put("  if (rm->single >= 0) kv += rm->single * MKC_KV_SLOT; /* its cache */")
    end
    put("  const int pos = rm->single >= 0 ? rm->spos[rm->single] : 0;")
    put("  const int *inputs = rm->single >= 0 ? state[rm->single].inputs : rm->tok;")
  else
    put("  const int drafting = state->draft_left > 0; /* a pass that drafts (templates/rounds.cuh) */")
    put(("  if (!drafting && !mkc_step_begin(state, %d, %d, %d, %d)) return;"):format(graph.output.n, opts.max_ctx,
      opts.t_max, opts.t_chunk))
    put("  const int pos = state->pos + (drafting ? state->draft_n : 0), T = drafting ? 1 : state->n_inputs;")
    put("  const int *inputs = state->inputs + (drafting ? state->draft_n : 0);")
  end
  if opts.slots > 0 then
    put("  /* the first input with logits: a prompt chunk's last; a wide step's rows all have theirs */")
    put("  const int t0 = T > MKC_T_MAX && rm->single >= 0 ? T - 1 : 0;")
  else
    put("  const int t0 = T > MKC_T_MAX ? T - 1 : 0; /* the first input with logits: a prompt chunk's last */")
  end
  if timer then put(("  mkc_stage_time(%s, 0); /* bench --stages */"):format(timer)) end
  local i = 1
  while i <= #texts do
    if lp and i == run.first then
      local last = run.first + run.count * run.period - 1
      put("")
      put(("  /* layer loop: stages %d-%d are %d passes of the %d below, whose code differs only in"):format(
        run.first, last, run.count, run.period))
      put("   * the pass's values lay_i[j] and lay_w[j] (offsets, a window, stage numbers), read from")
      put("   * mkc_layer_i and mkc_layer_w above. Each pass's stages, in order (inspect unfolds the loop): */")
      for k = run.first, last do put(comments[k]) end
      -- a draft pass runs the first draft_layers passes, where the passes are the model's layers
      local bound = tostring(run.count)
      if draft_in_kernel then bound = ("(drafting ? state->draft_layers : %d)"):format(run.count) end
      put(("  for (int layer = 0; layer < %s; layer++) { /* layer loop */"):format(bound))
      if #lp.cols_i > 0 then put("  const int *lay_i = mkc_layer_i[layer];") end
      if #lp.cols_w > 0 then put("  const long long *lay_w = mkc_layer_w[layer];") end
      for j, b in ipairs(lp.body) do
        local st = plan.stages[run.first + j - 1]
        put("")
        put(("  /* pass stage %d/%d: %s */"):format(j, run.period, st.kind))
        put(b)
      end
      put("  } /* layer loop */")
      i = last + 1
    else
      put("")
      put(comments[i])
      put(texts[i])
      i = i + 1
    end
  end
  put("")
  if opts.slots == 0 then
    put(("  if (!mkc_round_next(state, (const int *)(scratch + %d), %d, drafting, (int *)smem)) return;"):format(
      plan.history, opts.max_ctx))
  end
  put("  } /* rounds */")
  put("}")
  return table.concat(out, "\n") .. "\n"
end

return emit
