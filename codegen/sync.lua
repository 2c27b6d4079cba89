-- The sync plan: stages run in graph order; a grid barrier ends a stage when
-- a later stage reads or overwrites what it wrote (every stage partitions
-- work differently, so any such dependency crosses blocks).
local sync = {}

-- Values each stage touches, with the KV cache and the argmax partials as
-- pseudo-values so their hazards are planned like any buffer's.
-- Lists of { key, value }, in a fixed order so the emitted comments are stable.
local function touched(st, plan)
  local r, w = {}, {}
  for _, v in ipairs(st.reads) do r[#r + 1] = { plan.value(v), v } end
  for _, v in ipairs(st.writes) do w[#w + 1] = { plan.value(v), v } end
  if st.kind == "qkv_rope" then w[#w + 1] = { "kv:" .. st.att.layer, "KV cache" } end
  if st.kind == "qkv_rope" and (st.q_norm or st.k_norm) then
    w[#w + 1] = { "head_ready", "head norm counters" }
  end
  if st.kind == "attention" then r[#r + 1] = { "kv:" .. st.att.layer, "KV cache" } end
  if st.kind == "lm_head" then w[#w + 1] = { "partials", "argmax partials" } end
  if st.kind == "accept" then r[#r + 1] = { "partials", "argmax partials" } end
  return r, w
end

local function describe(v)
  if type(v) == "string" then return v end
  return v.value_name or (v.op .. " (line " .. v.line .. ")")
end

-- Marks st.sync = { kind = "grid", reason = ... } on stages whose successor depends on them.
function sync.plan(stages, plan)
  local pending_w, pending_r = {}, {} -- since the last barrier
  for i, st in ipairs(stages) do
    local r, w = touched(st, plan)
    local reason
    for _, kv in ipairs(r) do
      local key, v = kv[1], kv[2]
      if pending_w[key] then reason = reason or ("reads " .. describe(v) .. " written by another block") end
    end
    for _, kv in ipairs(w) do
      local key, v = kv[1], kv[2]
      if pending_r[key] or pending_w[key] then
        reason = reason or ("overwrites " .. describe(v) .. " still read by another block")
      end
    end
    if reason and i > 1 then
      stages[i - 1].sync = { kind = "grid", reason = "next stage " .. reason }
      pending_w, pending_r = {}, {}
    end
    for _, kv in ipairs(r) do pending_r[kv[1]] = true end
    for _, kv in ipairs(w) do pending_w[kv[1]] = true end
  end
  stages[#stages].sync = { kind = "end", reason = "end of step" }
  for _, st in ipairs(stages) do st.sync = st.sync or { kind = "none", reason = "no dependency" } end
  return stages
end

return sync
