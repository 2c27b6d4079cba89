-- The sync plan: stages run in graph order; a grid barrier ends a stage when
-- a later stage reads or overwrites memory it wrote, or overwrites memory it
-- still reads (every stage partitions work differently, so any such dependency
-- crosses blocks). Hazards are found on memory, not on values: the buffer plan
-- reuses a freed scratch region for a later value, and a stage writing the new
-- value must not race a stage still reading the old one.
local sync = {}

-- A range [lo, hi) of one arena ("scratch" in floats, "kv" in elements), with the key of what it
-- holds (the value's region, or a name) and how the reason names it.
local function range(space, lo, len, key, what)
  return { space = space, lo = lo, hi = lo + len, key = key, what = what }
end

local function overlap(a, b) return a.space == b.space and a.lo < b.hi and b.lo < a.hi end

-- The ranges each stage reads and writes: its values' scratch regions (their rows at their stride),
-- the layer's KV cache slot, the argmax partials and the head-norm counters. Lists in a fixed
-- order, so the emitted comments are stable.
local function touched(st, plan)
  local r, w = {}, {}
  local function value(list, v)
    local reg = plan.value(v)
    list[#list + 1] = range("scratch", reg.offset, reg.floats, reg, v)
  end
  for _, v in ipairs(st.reads) do value(r, v) end
  for _, v in ipairs(st.writes) do value(w, v) end
  if st.kind == "qkv_rope" or st.kind == "attention" then
    local slot = plan.kv[st.att]
    local kv = range("kv", slot.k, 2 * (slot.v - slot.k), "kv:" .. st.att.layer, "KV cache")
    if st.kind == "qkv_rope" then w[#w + 1] = kv else r[#r + 1] = kv end
  end
  if st.kind == "attention" then -- split-KV partials: written, then merged by the unit's last block
    local parts = range("scratch", plan.att_partials, plan.att_partials_floats + plan.att_counters_floats,
                        "att_partials", "attention partials")
    r[#r + 1] = parts
    w[#w + 1] = parts
  end
  if plan.splitk and (st.kind == "matvec" or st.kind == "matvec_residual" or st.kind == "gate_up_swiglu"
      or st.kind == "qkv_rope") then -- split-K's slices: written, then added by the group's last warp
    local parts = range("scratch", plan.splitk, plan.splitk_floats, "splitk", "split-K partials")
    r[#r + 1] = parts
    w[#w + 1] = parts
  end
  if st.kind == "qkv_rope" and (st.q_norm or st.k_norm) then
    w[#w + 1] = range("scratch", plan.head_ready, plan.head_ready_floats, "head_ready",
                      "head norm counters")
  end
  local partials = range("scratch", plan.partials, plan.partials_floats, "partials", "argmax partials")
  if st.kind == "lm_head" then w[#w + 1] = partials end
  if st.kind == "accept" then r[#r + 1] = partials end
  local history = range("scratch", plan.history, plan.history_floats, "history", "token history")
  local drawn = range("scratch", plan.drawn, plan.drawn_floats, "drawn", "sampled tokens")
  local logprobs = range("scratch", plan.logprobs, plan.logprobs_floats, "logprobs", "log-probabilities")
  local work = range("scratch", plan.sample_work, plan.sample_work_floats, "sample_work", "sampler logits")
  local lists = range("scratch", plan.sample_lists, plan.sample_lists_floats, "sample_lists", "top-k survivors")
  local cands = range("scratch", plan.sample_cands, plan.sample_cands_floats, "sample_cands",
                      "the candidates' maxima, counts and k-th values")
  if st.kind == "sample_cands" then
    r[#r + 1] = history
    w[#w + 1] = work
    w[#w + 1] = lists
    w[#w + 1] = cands
  end
  if st.kind == "sample" then
    w[#w + 1] = logprobs
    r[#r + 1] = history
    r[#r + 1] = cands
    w[#w + 1] = work
    w[#w + 1] = lists
    w[#w + 1] = range("scratch", plan.sample_union, plan.sample_union_floats, "sample_union",
                      "the candidates' union")
    w[#w + 1] = drawn
  end
  if st.kind == "keep" and st.slot > 0 then -- its own slot: the keep stages need no barrier between them
    w[#w + 1] = range("scratch", plan.keep + (st.slot - 1) * plan.keep_slot, plan.keep_slot, "keep" .. st.slot,
                      "layer " .. st.layer .. "'s kept output")
  end
  if st.kind == "accept" then
    r[#r + 1] = drawn
    r[#r + 1] = work
    w[#w + 1] = logprobs
    w[#w + 1] = history
  end
  return r, w
end

local function describe(v)
  if type(v) == "string" then return v end
  return v.value_name or (v.op .. " (line " .. v.line .. ")")
end

-- The first pending range that a overlaps, or nil.
local function conflict(a, pending)
  for _, p in ipairs(pending) do
    if overlap(a, p) then return p end
  end
  return nil
end

-- Marks st.sync = { kind = "grid", reason = ... } on stages whose successor depends on them.
function sync.plan(stages, plan)
  local pending_w, pending_r = {}, {} -- ranges touched since the last barrier
  for i, st in ipairs(stages) do
    local r, w = touched(st, plan)
    local reason
    for _, a in ipairs(r) do
      local p = conflict(a, pending_w)
      if p and not reason then
        reason = p.key == a.key and ("reads " .. describe(a.what) .. " written by another block")
                 or ("reads " .. describe(a.what) .. " from memory where another block wrote "
                     .. describe(p.what))
      end
    end
    for _, a in ipairs(w) do
      local p = conflict(a, pending_r) or conflict(a, pending_w)
      if p and not reason then
        reason = p.key == a.key and ("overwrites " .. describe(a.what) .. " still read by another block")
                 or ("writes " .. describe(a.what) .. " over " .. describe(p.what)
                     .. " still used by another block (a reused scratch region)")
      end
    end
    if reason and i > 1 then
      stages[i - 1].sync = { kind = "grid", reason = "next stage " .. reason }
      pending_w, pending_r = {}, {}
    end
    for _, a in ipairs(r) do pending_r[#pending_r + 1] = a end
    for _, a in ipairs(w) do pending_w[#pending_w + 1] = a end
  end
  stages[#stages].sync = { kind = "end", reason = "end of step" }
  for _, st in ipairs(stages) do st.sync = st.sync or { kind = "none", reason = "no dependency" } end
  return stages
end

return sync
