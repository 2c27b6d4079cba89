-- Codegen entry point, called by the C host: graph file + preset + options ->
-- kernel source and the plan the runtime needs to feed it.
local util = require("util")
local dsl = require("dsl")
local fusion = require("fusion")
local buffers = require("buffers")
local sync = require("sync")
local emit = require("emit")
local wtypes = require("wtypes")
local schema = require("schema") -- from the C host: runtime/codegen/graph.h

local M = {}

local function basename(path) return (path:match("([^/]+)$") or path):gsub("%.lua$", "") end

-- The KV cache's element types: bytes per element. K and V are rounded to the type once, when
-- appended (templates/common.cuh), and the reference executor rounds them the same way.
M.KV_DTYPES = { bf16 = 2, f16 = 2, f32 = 4 }

-- Prompt chunks (templates/gemm.cuh): tiles of bm tokens x bn weight rows, slices of bk columns
-- staged in shared memory; the kernel gets them as literals, the buffer plan sizes smem by them.
M.GEMM = { bm = 64, bn = 64, bk = 32 }
M.UBATCH = 128 -- prompt chunk capacity when not asked for (--ubatch)

-- The prompt chunk capacity: ubatch (or M.UBATCH) within the context, at least t_max; past t_max
-- chunks run tiled, which needs blocks of 128 or 256 threads.
local function chunk_capacity(opts, t_max, max_ctx)
  local ubatch = opts.ubatch
  if ubatch ~= nil and (math.type(ubatch) ~= "integer" or ubatch < 1 or ubatch > opts.chunk_cap) then
    util.fail(("--ubatch must be 1..%d, got %s"):format(opts.chunk_cap, tostring(ubatch)))
  end
  local tiled_ok = opts.threads == 128 or opts.threads == 256
  if ubatch and ubatch > t_max and not tiled_ok then
    util.fail(("--ubatch %d: prompt chunks past --draft-max + 1 run tiled, on blocks of 128 or 256 threads, not %d")
      :format(ubatch, opts.threads))
  end
  if not ubatch then ubatch = tiled_ok and M.UBATCH or t_max end
  return math.max(t_max, math.min(ubatch, max_ctx))
end

-- Layer outputs each step keeps for the host (a drafter head's features, mkc_session_hidden_layer):
-- a keep stage before every layer's QKV stage copies the residual stream entering it, the output of
-- the layer before, into its slot (1 + its index in `layers`) or nowhere (slot 0). Every layer gets
-- one, so the layer loop still folds; the last layer's output is the hidden state every step
-- leaves anyway. Returns the layers, checked, or nil when none are asked for.
local function keep_stages(graph, stages, layers, max)
  if not layers or #layers == 0 then return nil end
  if #layers > max then util.fail(("keep layers: %d asked for, at most %d"):format(#layers, max)) end
  local n = graph.params.n_layers
  for i, l in ipairs(layers) do
    if math.type(l) ~= "integer" or l < 0 or l >= n then
      util.fail(("keep layers: layer %s is not one of the model's 0..%d"):format(util.show(l), n - 1))
    end
    for j = 1, i - 1 do
      if layers[j] == l then util.fail(("keep layers: layer %d is named twice"):format(l)) end
    end
  end
  local slot = {}
  for i, l in ipairs(layers) do slot[l] = i end
  local out = {}
  for _, st in ipairs(stages) do
    if st.kind == "qkv_rope" then
      local kept = st.att.layer - 1
      out[#out + 1] = { kind = "keep", x = st.x, nodes = {}, layer = kept,
                        slot = kept >= 0 and kept < n - 1 and slot[kept] or 0 }
    end
    out[#out + 1] = st
  end
  for i, st in ipairs(out) do stages[i] = st end
  return layers
end

-- opts: graph, preset, draft_max, max_ctx (or nil), threads, max_blocks, t_cap, version, templates_dir,
-- model_preset (or nil: the preset's fields, from a model file, in place of the graph file's preset),
-- kv_dtype (or nil: bf16), n_layers (or nil: the preset's; else its first n_layers only),
-- ubatch (or nil: M.UBATCH), chunk_cap, keep_layers (or nil: layer outputs each step keeps),
-- slots (or nil: 0, a plain kernel; else the sequences one step serves, templates/slots.cuh), and
-- with slots: slots_cap, kv_page, kv_pages (or nil: 0; else the KV pool's pages; -1: as many as
-- whole caches); imatrix (or nil: each matmul stage adds its input's squares for mkc imatrix)
function M.generate(opts)
  -- threads per block: the caller's, else 128, or MKC_THREADS (a knob for the GPU's A/B: fewer,
  -- larger blocks make fewer arrivals at each flow wait's one counter; tests/gpu/probe_flow.cu
  -- measures what a wait costs by block shape). Past 256 prompt chunks are not tiled.
  if (opts.threads or 0) == 0 then
    opts.threads = util.knob("MKC_THREADS", "128, 256 or 512", function(n) return n == 128 or n == 256 or n == 512 end)
      or 128
  end
  if math.type(opts.draft_max) ~= "integer" or opts.draft_max < 0 or opts.draft_max + 1 > opts.t_cap then
    util.fail(("--draft-max must be 0..%d, got %s"):format(opts.t_cap - 1, tostring(opts.draft_max)))
  end
  local kv_dtype = opts.kv_dtype or "bf16"
  if not M.KV_DTYPES[kv_dtype] then
    util.fail(("--kv-dtype (MKC_KV_DTYPE) must be bf16, f16 or f32, got %s"):format(util.show(kv_dtype)))
  end
  local overrides = { max_ctx = opts.max_ctx, n_layers = opts.n_layers, vocab = opts.vocab }
  local graph = dsl.load(opts.graph, opts.preset, overrides, opts.model_preset)
  -- the first n_layers only (self-speculation's draft): a preset of its own name
  if opts.n_layers then graph.preset = ("%s-L%d"):format(graph.preset, opts.n_layers) end
  local slots = opts.slots or 0
  if math.type(slots) ~= "integer" or (slots ~= 0 and (slots < 2 or slots > opts.slots_cap)) then
    util.fail(("--slots must be 2..%d (0: a plain kernel), got %s"):format(opts.slots_cap, tostring(slots)))
  end
  local kv_pages = opts.kv_pages or 0
  if math.type(kv_pages) ~= "integer" or kv_pages < -1 or (kv_pages ~= 0 and slots == 0) then
    util.fail(("--kv-pages must be a page count for a slot kernel (--slots B), got %s"):format(tostring(kv_pages)))
  end
  local slot_pages = slots > 0 and (graph.params.max_ctx + opts.kv_page - 1) // opts.kv_page or 0
  if kv_pages == -1 then kv_pages = slots * slot_pages end -- a pool as large as whole caches
  local t_max = opts.draft_max + 1
  local t_chunk = chunk_capacity(opts, t_max, graph.params.max_ctx)
  -- a slot kernel's step: up to step_rows rows, each slot's at most t_max; past t_max a wide step
  -- on the tiled path (templates/slots.cuh)
  local step_rows = opts.step_rows or 0
  if step_rows == 0 then step_rows = t_max end
  if math.type(step_rows) ~= "integer" or (slots == 0 and step_rows ~= t_max) then
    util.fail(("--step-rows is a slot kernel's (--slots B), got %s"):format(tostring(opts.step_rows)))
  end
  if step_rows < t_max or step_rows > t_chunk then
    util.fail(("--step-rows must be %d..%d (--draft-max + 1 to the prompt chunk capacity, --ubatch), got %d")
      :format(t_max, t_chunk, step_rows))
  end
  -- an op no kernel emits yet: the graph alone, for the reference executor (--backend ref)
  for _, node in ipairs(graph.order) do
    if node.op == "recurrent" then
      if not opts.reference_only then
        util.raise(graph.path, node.line, "recurrent (gated_delta): no kernel emits this op yet; the reference "
                   .. "executor runs it (--backend ref)")
      end
      if slots > 0 then util.fail("--slots: the reference executor runs one sequence") end
      return M.export_reference(graph, opts, t_max, t_chunk)
    end
  end
  local gen = {
    t_max = t_max, t_chunk = t_chunk, tiled = t_chunk > t_max, gemm = M.GEMM, step_rows = step_rows,
    max_ctx = graph.params.max_ctx, threads = opts.threads,
    max_blocks = opts.max_blocks, version = opts.version,
    kv_dtype = kv_dtype, kv_elem_bytes = M.KV_DTYPES[kv_dtype], slots = slots, kv_pages = kv_pages,
    kv_page = opts.kv_page, slot_pages = slot_pages,
    file_name = basename(opts.graph) .. "." .. graph.preset .. ".cu",
    templates = {},
  }
  local all = {}
  -- the imatrix kernel's template is in its hash alone: the other kernels never splice it
  gen.imatrix = opts.imatrix and true or false
  if gen.imatrix and slots > 0 then util.fail("--imatrix-kernel: a plain kernel's (not with --slots)") end
  for _, name in ipairs({ "prelude_cuda.cuh", "prelude_cpu.h", table.unpack(emit.TEMPLATES) }) do
    gen.templates[name] = util.read_file(opts.templates_dir .. "/" .. name)
    if gen.imatrix or not emit.IMATRIX_ONLY[name] then all[#all + 1] = name .. "\0" .. gen.templates[name] end
  end
  gen.graph_hash = util.hash(util.read_file(opts.graph))
  gen.templates_hash = util.hash(table.concat(all, "\0"))
  gen.weight_type = opts.weight_type
  gen.stage_timers = opts.stage_timers and true or false
  -- The weights' storage types, as the plan will lay them out (buffers.weights takes only the
  -- model's types): part of the kernel, where a Q4_K file and a bf16 one differ, and whether
  -- every matrix is bf16, which the defaults below were measured on alone.
  local stored, pre = {}, { weights = {} }
  buffers.weights(graph, { weight_type = opts.weight_type }, pre)
  for _, w in ipairs(pre.weights) do
    if w.type ~= wtypes.BF16 then stored[#stored + 1] = w.name .. "=" .. wtypes.name(w.type) end
  end
  local all_bf16 = #stored == 0
  gen.all_bf16 = all_bf16
  local binary = function(v) return v == 0 or v == 1 end
  -- The decode matmuls of bf16 matrices on tensor cores (MKC_MMA_DECODE, templates/matvec.cuh),
  -- and their short stages split-K over the grid's warps (MKC_SPLITK): by default in slot kernels
  -- of 16 slots or more, where the H200 ran 16 slots' steps 3.3 x faster with both (4319 against
  -- 1318 t/s; the plain kernel spilled 592 B) and 4 slots' slower with the tensor cores alone
  -- (docs/PERF.md, 2026-12-04, second session). Knobs for any kernel.
  local mma, splitk = util.knob("MKC_MMA_DECODE", "0 or 1", binary), util.knob("MKC_SPLITK", "0 or 1", binary)
  local wide_slots = slots >= 16 and all_bf16 and mma == nil and splitk == nil
  gen.mma_decode = mma == 1 or wide_slots
  if splitk == 1 and not gen.mma_decode then
    util.fail("MKC_SPLITK=1 splits the tensor-core decode matmuls: it needs MKC_MMA_DECODE=1")
  end
  gen.splitk = splitk == 1 or wide_slots
  -- The short matmuls' row blocks split over a block's warps (MKC_SPLIT): by default in kernels of
  -- one input a step, where the H200 ran llama-3.2-1b 18 % faster with it (871 against 737 t/s);
  -- at T <= 5 it lost 15 % and spilled 40 B (docs/PERF.md, 2026-12-04, second session).
  local split = util.knob("MKC_SPLIT", "0 or 1", binary)
  gen.split = split == 1 or (split == nil and t_max == 1 and slots == 0 and all_bf16)

  -- Each decode stage of a kernel taking several inputs a step has a copy for steps of one input
  -- (codegen/emit.lua, ctx.one_input); not in a slot kernel, whose T is a slot's. By default where
  -- every matrix is bf16: the H200 ran such T = 1 steps 9.6 % faster with it (docs/PERF.md,
  -- 2026-12-04), and unmeasured elsewhere, where it costs registers (blocks-tiny's quantized
  -- kernels spilled 24-36 B at T <= 5). MKC_T1_PATH=0 or 1 decides it for any kernel.
  local t1_path = util.knob("MKC_T1_PATH", "0 or 1", binary)
  gen.t1_path = (t1_path == 1 or (t1_path == nil and all_bf16)) and t_max > 1 and slots == 0

  local stages = fusion.stages(graph)
  gen.keep_layers = keep_stages(graph, stages, opts.keep_layers, opts.keep_max)
  local plan = buffers.plan(graph, stages, gen)
  gen.options_hash = util.hash(("preset=%s;t_max=%d;t_chunk=%d;max_ctx=%d;threads=%d;max_blocks=%d;kv=%s;w=%s%s%s")
    :format(graph.preset, gen.t_max, gen.t_chunk, gen.max_ctx, gen.threads, gen.max_blocks, gen.kv_dtype,
            table.concat(stored, ","), gen.stage_timers and ";timers" or "",
            gen.keep_layers and (";keep=" .. table.concat(gen.keep_layers, ",")) or "")
    .. (gen.imatrix and ";imatrix" or "")
    .. (slots > 0 and (";slots=%d"):format(slots) or "") .. (kv_pages > 0 and (";pages=%d"):format(kv_pages) or "")
    .. (step_rows > t_max and (";rows=%d"):format(step_rows) or ""))
  sync.plan(stages, plan)
  plan.smem_bytes = emit.stages(graph, plan, gen)
  -- MKC_CP_RING=N (a knob for the GPU's A/B): N 16-byte pieces of shared memory per thread, where
  -- the decode matvec's weight rows land ahead of use (templates/matvec.cuh)
  local ring = util.knob("MKC_CP_RING", "0 to 64 (16-byte pieces per thread)",
    function(v) return v >= 0 and v <= 64 end)
  if ring and ring > 0 then
    -- past the bytes decode steps use; over a prompt chunk's tiles, which it never meets: the
    -- ring lives within one matvec call of a decode step
    plan.cp_ring, plan.cp_ring_off = ring, util.round_up(plan.smem_decode_bytes, 16)
    plan.smem_bytes = math.max(plan.smem_bytes, plan.cp_ring_off + 16 * ring * gen.threads)
  end
  local source = emit.source(graph, plan, gen)
  return M.export(graph, plan, gen, source)
end

-- The node fields C reads (schema.node_fields) that are not the node's own attribute of that name.
local DERIVED = {
  inputs = function(node)
    local ids = {}
    for j, inp in ipairs(node.inputs) do ids[j] = inp.id - 1 end
    return ids
  end,
  weight = function(node, plan)
    if node.op ~= "weight" then return nil end
    for wi, w in ipairs(plan.weights) do if w.node == node then return wi - 1 end end
  end,
  -- 0 without a kernel (export_reference): the reference keeps every position
  kv_k = function(node, plan) if node.op == "attention" and plan.kv then return plan.kv[node].k end end,
  kv_v = function(node, plan) if node.op == "attention" and plan.kv then return plan.kv[node].v end end,
  kv_rows = function(node, plan) if node.op == "attention" and plan.kv then return plan.kv[node].rows end end,
  -- an imatrix kernel's: where a matmul's input squares are added (buffers.lua), 0: nowhere
  imatrix = function(node, plan)
    if (node.op == "matmul" or node.op == "moe") and plan.imatrix_of then return plan.imatrix_of[node] end
  end,
}
do
  local known = {}
  for _, name in ipairs(schema.node_fields) do known[name] = true end
  for name in pairs(DERIVED) do
    if not known[name] then
      error(("codegen exports node field %s, which runtime/codegen/graph.h lacks"):format(name))
    end
  end
end

-- The nodes and weights as C reads them.
local function export_graph(graph, plan)
  local nodes = {}
  for i, node in ipairs(graph.order) do
    local e = {}
    for _, name in ipairs(schema.node_fields) do
      if DERIVED[name] then e[name] = DERIVED[name](node, plan) else e[name] = node[name] end
    end
    nodes[i] = e
  end
  local weights = {}
  for i, w in ipairs(plan.weights) do
    weights[i] = { name = w.name, rows = w.rows, cols = w.cols, offset = w.offset, row_stride = w.row_stride,
                   type = w.type }
  end
  return nodes, weights
end

local function config_of(graph, max_ctx)
  local p = graph.params
  return { vocab = graph.output.n, dim = p.dim, n_layers = p.n_layers, n_heads = p.n_heads,
           n_kv_heads = p.n_kv_heads, head_dim = p.head_dim, ffn = p.ffn, max_ctx = max_ctx }
end

-- A graph no kernel runs (an op no template emits yet): its nodes, weights and step sizes for the
-- reference executor, with no source, stages or buffers.
function M.export_reference(graph, opts, t_max, t_chunk)
  local plan = { weights = {} }
  buffers.weights(graph, { weight_type = opts.weight_type }, plan)
  local nodes, weights = export_graph(graph, plan)
  return {
    source = "", file_name = basename(opts.graph) .. "." .. graph.preset .. ".cu", nodes = nodes,
    weights = weights, stages = {}, graph = graph.path, preset = graph.preset,
    config = config_of(graph, graph.params.max_ctx),
    plan = { t_max = t_max, t_chunk = t_chunk, step_rows = t_max, threads = opts.threads,
             weight_elems = plan.weight_elems, kv_dtype = opts.kv_dtype or "bf16", keep_layers = {} },
  }
end

-- Flattens what C needs into plain tables.
function M.export(graph, plan, gen, source)
  local nodes, weights = export_graph(graph, plan)
  local stages = {}
  for i, st in ipairs(plan.stages) do
    stages[i] = { kind = st.kind, labels = st.labels, work = st.emitted.work, sync = st.sync.kind,
                  sync_reason = st.sync.reason, smem_bytes = st.smem_bytes }
  end
  local logits = plan.value(graph.output)
  -- the hidden state a drafter head reads (mkc_session_hidden): the LM head's input before its
  -- norm, every input's row; and the feature the host writes (mkc_session_set_feature), if any
  local hidden_x
  for _, st in ipairs(plan.stages) do
    if st.kind == "lm_head" then hidden_x = st.x end
  end
  local hidden = plan.value(hidden_x)
  local feature = graph.feature and plan.value(graph.feature)
  return {
    source = source, file_name = gen.file_name, nodes = nodes, weights = weights, stages = stages,
    graph = graph.path, preset = graph.preset,
    config = config_of(graph, gen.max_ctx),
    plan = { t_max = gen.t_max, t_chunk = gen.t_chunk, step_rows = gen.step_rows, threads = gen.threads,
             weight_elems = plan.weight_elems,
             scratch_floats = plan.scratch_floats, kv_dtype = gen.kv_dtype, kv_bytes = plan.kv_bytes,
             smem_bytes = plan.smem_bytes, blocks_per_sm = plan.blocks_per_sm or 0,
             logits_offset = logits.offset, logits_stride = logits.stride, n_stages = #plan.stages,
             logprobs_offset = plan.logprobs, history_offset = plan.history, choices_offset = plan.choices,
             timers_offset = plan.timers or 0, draft_in_kernel = plan.draft_in_kernel and 1 or 0,
             hidden_offset = hidden.offset, hidden_stride = hidden.stride,
             feature_n = feature and graph.feature.n or 0, feature_offset = feature and feature.offset or 0,
             feature_stride = feature and feature.stride or 0,
             keep_layers = gen.keep_layers or {}, keep_offset = plan.keep or 0, keep_slot = plan.keep_slot or 0,
             slots = gen.slots, history_floats = plan.history_floats, kv_pages = gen.kv_pages,
             page_table_offset = plan.page_table or 0, slot_pages = gen.slot_pages,
             imatrix_offset = plan.imatrix or 0, imatrix_floats = plan.imatrix_floats or 0 },
  }
end

return M
