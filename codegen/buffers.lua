-- Buffer plan, fixed at generation time: the weight arena (bf16 rows padded
-- to 8 elements for 16-byte loads; a matrix the model file stores in a block
-- type the kernel reads keeps its blocks as stored, rows back to back), the float scratch arena (one region per
-- live value, reused once its last reader's stage is behind a barrier), the
-- KV cache slots (elements of the KV type: bf16, f16 or f32), and each
-- stage's shared-memory regions.
local util = require("util")
local wtypes = require("wtypes")
local buffers = {}

local ALIGN_FLOATS = 64    -- 256-byte alignment of scratch regions
local ALIGN_WEIGHTS = 128  -- 256-byte alignment of weights in the arena

function buffers.stride(n) return util.round_up(n, 8) end

-- The query heads split-KV attention serves per pass over a kv head's K and V: its GQA group, up to
-- MKC_ATT_HEADS (templates/attention.cuh, register accumulators per head).
function buffers.att_pass_heads(att) return math.min(att.heads // att.kv_heads, 4) end

-- What each stage kind reads and writes, as graph values.
local function reads_writes(st)
  local k = st.kind
  if k == "embed" then return {}, { st.out } end
  -- with a K head norm, raw K rows wait in scratch (float) for the warp that completes the head
  if k == "qkv_rope" then return { st.x }, { st.q_rope, st.k_norm and st.k or nil } end
  if k == "attention" then return { st.q }, { st.out } end
  if k == "matvec_residual" or k == "norm_residual" then return { st.x, st.resid }, { st.out } end
  if k == "moe_up" then return { st.x, st.router }, { st.hidden, st.choice } end
  if k == "moe_down" then return { st.hidden, st.choice, st.resid }, { st.out } end
  if k == "lm_head" then return { st.x }, { st.out } end
  if k == "sample" or k == "sample_cands" then return { st.logits }, {} end
  if k == "keep" then return { st.x }, {} end
  if k == "accept" then return {}, {} end
  return { st.x }, { st.out } -- matvec, gate_up_swiglu
end

-- The weight arena, in plan.weights (a list, and by node) and plan.weight_elems: bf16 rows padded to
-- 8 elements; a matrix the model file stores in a block type (opts.weight_type) keeps its blocks.
function buffers.weights(graph, opts, plan)
  -- Matrices (a matmul's weight, an embedding table, the experts' and their router's, nothing
  -- else) may keep the model file's blocks; norms and biases are read as bf16 vectors.
  local matrix, vector = {}, {}
  for _, node in ipairs(graph.order) do
    for j, inp in ipairs(node.inputs or {}) do
      if inp.op == "weight" then
        if (node.op == "matmul" and j == 2) or (node.op == "embed" and j == 1) or (node.op == "moe" and j >= 2) then
          matrix[inp] = true
        else
          vector[inp] = true
        end
      end
    end
  end
  local function weight_type(node)
    local t = opts.weight_type and matrix[node] and not vector[node] and opts.weight_type(node.name)
    local b = t and wtypes.BLOCKS[t]
    if not b then return wtypes.BF16, buffers.stride(node.cols) * 2 end
    if node.cols % b.block ~= 0 then
      util.raise(graph.path, node.line, ("weight %s: %s stores rows in blocks of %d, but it has %d columns")
        :format(node.name, b.name, b.block, node.cols))
    end
    return t, node.cols // b.block * b.bytes -- even: rows stay 2-byte aligned, as the decoders need
  end

  -- weight arena, in order of first use; offsets and strides in 2-byte units
  local off = 0
  for _, node in ipairs(graph.order) do
    if node.op == "weight" then
      off = util.round_up(off, ALIGN_WEIGHTS)
      local ty, row_bytes = weight_type(node)
      local w = { node = node, name = node.name, rows = node.rows, cols = node.cols, offset = off,
                  row_stride = row_bytes // 2, row_bytes = row_bytes, type = ty,
                  chunks = util.round_up(node.cols, 8) // 8 }
      plan.weights[#plan.weights + 1] = w
      plan.weights[node] = w
      off = off + w.rows * w.row_stride
    end
  end
  plan.weight_elems = util.round_up(off, ALIGN_WEIGHTS)
end

function buffers.plan(graph, stages, opts)
  -- the rows that get logits: a step's inputs (a prompt chunk's last only), or a slot kernel's
  -- step rows (templates/slots.cuh)
  local logit_rows = opts.step_rows or opts.t_max
  local plan = { weights = {}, weight_elems = 0, values = {}, kv = {}, stages = stages }

  buffers.weights(graph, opts, plan)

  -- KV cache: one slot per attention node, [k|v][kv_heads][rows][head_dim], in elements. rows:
  -- max_ctx, or for a sliding window a ring of window + t_chunk rows (position p at row p % rows), so
  -- the rows a step writes past pos (a prompt chunk's, or drafts it may reject) never evict one that
  -- an earlier input of the same step still sees in its window
  local kv_off, layers = 0, {}
  for _, node in ipairs(graph.order) do
    if node.op == "attention" then
      if layers[node.layer] then
        util.raise(graph.path, node.line, ("attention layer %d already used at line %d"):format(
                   node.layer, layers[node.layer].line))
      end
      layers[node.layer] = node
      local rows = opts.max_ctx
      if node.window > 0 then rows = math.min(rows, node.window + opts.t_chunk) end
      if opts.kv_pages > 0 then
        -- the pool, page after page (templates/slots.cuh); a sliding window's layer keeps its
        -- positions on the slot's pages as a global one does, and reads only its window of them
        rows = opts.kv_pages * opts.kv_page
      end
      local size = node.kv_heads * rows * node.head_dim
      plan.kv[node] = { k = kv_off, v = kv_off + size, rows = rows }
      kv_off = kv_off + 2 * size
    end
  end
  -- a slot kernel (templates/slots.cuh): each slot a whole cache of this layout, one after another;
  -- paged, one pool
  plan.kv_elems = kv_off
  plan.kv_bytes = kv_off * (opts.kv_pages > 0 and 1 or math.max(opts.slots, 1)) * opts.kv_elem_bytes

  -- scratch values: residual adds write into their residual operand's region
  local root, first, last = {}, {}, {}
  local function rootof(v) while root[v] do v = root[v] end return v end
  for i, st in ipairs(stages) do
    local reads, writes = reads_writes(st)
    st.reads, st.writes = reads, writes
    if st.kind == "matvec_residual" or st.kind == "norm_residual" or st.kind == "moe_down" then
      root[st.out] = st.resid
    end
    for _, v in ipairs(writes) do
      local r = rootof(v)
      first[r] = first[r] or i
      last[r] = math.max(last[r] or i, i)
    end
    for _, v in ipairs(reads) do
      local r = rootof(v)
      last[r] = math.max(last[r] or i, i)
    end
  end
  -- the feature: written by the host before the step, so taken from its start
  for r in pairs(last) do
    if r.op == "feature" then first[r] = 0 end
  end
  local placed, roots = {}, {}
  for r in pairs(first) do roots[#roots + 1] = r end
  table.sort(roots, function(a, b) return first[a] < first[b] or (first[a] == first[b] and a.id < b.id) end)
  for _, r in ipairs(roots) do
    -- a region stays taken one stage past its last reader, so reuse never depends on the sync plan;
    -- a value has a row per input of a prompt chunk (t_chunk), the logits one per input a step can
    -- choose after (t_max, or a slot kernel's step rows: a prompt chunk's LM head runs for its last
    -- input only)
    local rows = r.op == "logits" and logit_rows or opts.t_chunk
    local size = util.round_up(rows * buffers.stride(r.n), ALIGN_FLOATS)
    local lo, hi = first[r], (r.op == "logits") and math.huge or last[r] + 1
    local at = 0
    local moved = true
    while moved do
      moved = false
      for _, p in ipairs(placed) do
        if p.lo <= hi and lo <= p.hi and at < p.offset + p.size and p.offset < at + size then
          at, moved = p.offset + p.size, true
        end
      end
    end
    local region = { node = r, offset = at, size = size, lo = lo, hi = hi, stride = buffers.stride(r.n),
                     floats = rows * buffers.stride(r.n) } -- the floats a stage may touch
    placed[#placed + 1] = region
    plan.values[r] = region
  end
  local top = 0
  for _, p in ipairs(placed) do top = math.max(top, p.offset + p.size) end
  -- per-block argmax partials of the LM head: values then indices
  plan.partials = top
  plan.partials_floats = 2 * util.round_up(logit_rows * opts.max_blocks, ALIGN_FLOATS)
  top = top + plan.partials_floats
  -- split-KV attention (templates/attention.cuh): a partial per work item of a split step (items
  -- < blocks: acc[head_dim], m and l per query head of a pass), then a counter per unit (< blocks)
  local att_slot = 0
  for _, st in ipairs(stages) do
    if st.kind == "attention" then
      -- whole 16-byte vectors, as mkc_att_slot_floats rounds them (the merge reads 4 floats at once)
      att_slot = math.max(att_slot, util.round_up(buffers.att_pass_heads(st.att) * (st.att.head_dim + 2), 4))
    end
  end
  if att_slot > 0 then
    plan.att_partials = top
    plan.att_partials_floats = util.round_up(opts.max_blocks * att_slot, ALIGN_FLOATS)
    top = top + plan.att_partials_floats
    plan.att_counters, plan.att_counters_floats = top, util.round_up(opts.max_blocks, ALIGN_FLOATS)
    top = top + plan.att_counters_floats
  end
  -- sampling (templates/sample.cuh): the token at every position (the penalties' window; mkc_accept
  -- writes it), each input position's penalized and cut logits, its two draws and p(draft)
  local vocab = graph.output.n
  plan.history, plan.history_floats = top, util.round_up(opts.max_ctx, ALIGN_FLOATS)
  top = top + plan.history_floats * math.max(opts.slots, 1) -- one per slot (templates/slots.cuh)
  plan.sample_work, plan.sample_work_floats = top, util.round_up(logit_rows * vocab, ALIGN_FLOATS)
  top = top + plan.sample_work_floats
  plan.sample_lists, plan.sample_lists_floats = top, util.round_up(logit_rows * vocab, ALIGN_FLOATS) -- ints
  top = top + plan.sample_lists_floats
  -- the candidates stage's slice maxima, list sizes and k-th values [t][max_blocks] each, and their
  -- union [t][vocab]
  plan.sample_cands, plan.sample_cands_floats = top, util.round_up(3 * logit_rows * opts.max_blocks, ALIGN_FLOATS)
  top = top + plan.sample_cands_floats
  plan.sample_union, plan.sample_union_floats = top, util.round_up(logit_rows * vocab, ALIGN_FLOATS) -- ints
  top = top + plan.sample_union_floats
  plan.drawn, plan.drawn_floats = top, util.round_up(3 * logit_rows, ALIGN_FLOATS) -- tokens [t][2], p [t]
  top = top + plan.drawn_floats
  -- the greedy choice after each input (mkc_accept: the argmax of its logits), ints, for the host
  -- (mkc_session_choices: a drafter head's block reads these, not its rows of logits)
  plan.choices = top
  top = top + util.round_up(logit_rows, ALIGN_FLOATS)
  -- a paged slot kernel's page tables, [slots][slot_pages] ints the host writes
  if opts.kv_pages > 0 then
    plan.page_table = top
    top = top + util.round_up(opts.slots * opts.slot_pages, ALIGN_FLOATS)
  end
  -- layer outputs kept for the host (codegen/main.lua, keep stages): a slot per layer asked for,
  -- every input's row at the residual's stride
  if opts.keep_layers then
    plan.keep_slot = util.round_up(opts.t_chunk * buffers.stride(graph.params.dim), ALIGN_FLOATS)
    plan.keep = top
    top = top + #opts.keep_layers * plan.keep_slot
  end
  -- log-probabilities when asked: per input position MKC_LP_STRIDE floats (templates/sample.cuh)
  plan.logprobs, plan.logprobs_floats = top, util.round_up(64 * logit_rows, ALIGN_FLOATS)
  top = top + plan.logprobs_floats
  -- per-head ready counters of the QKV epilogue's head norms, one per q and k head, shared by
  -- every layer: zero at the start (the host zeroes scratch) and again at the end of each stage
  local counters = 0
  for _, st in ipairs(stages) do
    if st.kind == "qkv_rope" and (st.q_norm or st.k_norm) then
      counters = math.max(counters, st.att.heads + st.att.kv_heads)
    end
  end
  if counters > 0 then
    plan.head_ready, plan.head_ready_floats = top, counters
    top = top + util.round_up(counters, ALIGN_FLOATS)
  end
  -- split-K of the tensor-core decode matmuls (MKC_SPLITK=1, templates/matvec.cuh): a slice's
  -- partials (8 rows of gate and 8 of up at most, every input) for as many slices as the grid
  -- has warps, then a counter per group (fewer groups than warps)
  if opts.splitk then
    local warps = opts.max_blocks * opts.threads // 32
    plan.splitk, plan.splitk_part_floats = top, util.round_up(warps * 16 * opts.t_max, ALIGN_FLOATS)
    plan.splitk_floats = plan.splitk_part_floats + util.round_up(warps, ALIGN_FLOATS)
    top = top + plan.splitk_floats
  end
  -- stage timers (bench --stages): block 0's u64 %globaltimer at the step's start and after each stage
  if opts.stage_timers then
    plan.timers = top
    top = top + util.round_up(2 * (#stages + 1), ALIGN_FLOATS)
  end
  -- an imatrix kernel (mkc imatrix): per matmul stage, its input's squares summed column by column
  -- over the steps until the host takes them (mkc_session_imatrix); each matmul of the stage maps
  -- to them (codegen/main.lua's imatrix node field), and a MOE node to its experts' below.
  if opts.imatrix then
    plan.imatrix, plan.imatrix_at, plan.imatrix_of = top, {}, {}
    local moe_at = {}
    for _, st in ipairs(stages) do
      local mms = {}
      for _, n in ipairs(st.nodes) do if n.op == "matmul" then mms[#mms + 1] = n end end
      if st.kind == "moe_up" then
        -- a MOE node's: the router's input [dim], each expert's [E][dim], their inputs counted [E],
        -- then down's inputs [E][ffn] (templates/imatrix.cuh: mkc_imatrix_add with a router, mkc_imatrix_add_down)
        local moe, dim = st.moe, st.x.n
        local E, ffn = moe.experts, moe.inputs[5].cols
        plan.imatrix_at[st], plan.imatrix_of[moe] = top, top
        moe_at[moe] = top + dim + E * dim + E
        top = top + util.round_up(dim + E * dim + E + E * ffn, ALIGN_FLOATS)
      elseif st.kind == "moe_down" then
        plan.imatrix_at[st] = assert(moe_at[st.moe], "moe_down after its moe_up")
      elseif #mms > 0 then
        assert(st.x and (not st.norm or st.norm.group == st.norm.n), "an imatrix stage's input, normed whole")
        plan.imatrix_at[st] = top
        for _, n in ipairs(mms) do plan.imatrix_of[n] = top end
        top = top + util.round_up(st.x.n, ALIGN_FLOATS)
      end
    end
    plan.imatrix_floats = top - plan.imatrix
  end
  plan.scratch_floats = top
  plan.value = function(v) return plan.values[rootof(v)] end
  return plan
end

-- Shared memory of one stage: regions laid out from 0, 16-byte aligned. A region marked
-- `variant = true` starts over at 0: it and the ones after it belong to a variant of the stage
-- that never runs beside the regions before it (a prompt chunk's tiles), so they share bytes.
-- `tiled = true` marks a region only the tiled variant uses: the third result, the bytes the
-- decode path uses, leaves it out (the matvec's ring, MKC_CP_RING, may lie over it).
function buffers.smem(regions)
  local layout, off, top, decode_top = {}, 0, 0, 0
  for _, r in ipairs(regions) do
    if r.variant then off = 0 end
    layout[r[1]] = off
    off = off + util.round_up(r[2] * 4, 16)
    top = math.max(top, off)
    if not r.tiled then decode_top = math.max(decode_top, off) end
  end
  return layout, top, decode_top
end

return buffers
