-- The layer loop: a model's layers emit the same stages with other offsets, so the longest run of
-- stage groups whose text differs only in integer literals is emitted once, as the body of
-- `for (int layer = 0; layer < N; layer++)`, each differing literal read from a per-layer table.
-- It works on the emitted text, not on the graph, so whatever a stage's code or comment carries
-- (weight, scratch and KV offsets, a window, a stage number, a tensor's name) folds the same way,
-- and substituting each layer's row gives back exactly the text the unrolled kernel would have:
-- runtime/codegen/unfold.c does that for inspect and bench --stages.
local fold = {}

-- The text split at its integer literals: parts[1] ints[1] parts[2] ... parts[#ints + 1]. An
-- integer literal is a run of digits not inside an identifier, a float or a suffixed literal.
function fold.split(text)
  local parts, ints, i, start, n = {}, {}, 1, 1, #text
  while i <= n do
    local c = text:sub(i, i)
    if c:match("[%a_]") then
      i = select(2, text:find("^[%w_]*", i)) + 1
    elseif c:match("%d") then
      local e = select(2, text:find("^%d+%.%d+[eE][%+%-]?%d+[fF]?", i)) or
                select(2, text:find("^%d+%.%d+[fF]?", i)) or select(2, text:find("^%d+[eE][%+%-]?%d+[fF]?", i)) or
                select(2, text:find("^0[xX]%x+[%w_]*", i))
      if not e then
        local d = select(2, text:find("^%d+", i))
        if text:find("^[%w_]", d + 1) then
          e = select(2, text:find("^[%w_]*", d + 1)) -- a suffixed literal: 16u, 1ull
        else
          parts[#parts + 1] = text:sub(start, i - 1)
          ints[#ints + 1] = math.tointeger(tonumber(text:sub(i, d)))
          start = d + 1
        end
      end
      i = (e or select(2, text:find("^%d+", i))) + 1
    else
      i = i + 1
    end
  end
  parts[#parts + 1] = text:sub(start)
  return parts, ints
end

-- The best run: `count` >= 2 consecutive groups of `period` stages from stage `first`, each
-- group's texts equal to the first group's but for integer literals; the most stages covered,
-- then the shortest period (a layer, not two). nil when no two groups match.
function fold.find(texts)
  local n, keys, ids = #texts, {}, {}
  for i, t in ipairs(texts) do
    local parts = fold.split(t)
    local k = table.concat(parts, "\0#\0")
    if not ids[k] then ids[k] = i end
    keys[i] = ids[k]
  end
  local best
  for period = 1, n // 2 do
    for first = 1, n - 2 * period + 1 do
      if best and n - first + 1 <= best.count * best.period then break end -- cannot cover more
      local count = 1
      while first + (count + 1) * period - 1 <= n do
        local same = true
        for j = 0, period - 1 do
          if keys[first + count * period + j] ~= keys[first + j] then same = false break end
        end
        if not same then break end
        count = count + 1
      end
      if count >= 2 and (not best or count * period > best.count * best.period) then
        best = { first = first, period = period, count = count }
      end
    end
  end
  return best
end

local INT_MAX = 2147483647

-- The loop for run r over stage texts: its body (layer 0's texts with each differing literal
-- replaced by lay_i[j] or lay_w[j]), and the tables' rows. Columns that hold the same values in
-- every layer are one column; values past int's range go to the 64-bit table.
function fold.loop(texts, r)
  local split = {}
  for l = 0, r.count - 1 do
    local parts, ints = {}, {}
    for j = 0, r.period - 1 do
      local p, v = fold.split(texts[r.first + l * r.period + j])
      parts[j + 1], ints[j + 1] = p, v
    end
    split[l + 1] = { parts = parts, ints = ints }
  end
  local cols = { i = {}, w = {} }
  local index = {} -- a column's values as a string -> its name
  local body = {}
  for j = 1, r.period do
    local parts, ints = split[1].parts[j], split[1].ints[j]
    local out = {}
    for k = 1, #ints do
      out[#out + 1] = parts[k]
      local values, differ, wide = {}, false, false
      for l = 1, r.count do
        local v = split[l].ints[j][k]
        values[l] = v
        differ = differ or v ~= ints[k]
        wide = wide or v > INT_MAX
      end
      if not differ then
        out[#out + 1] = tostring(ints[k])
      else
        local key = (wide and "w" or "i") .. table.concat(values, ",")
        if not index[key] then
          local c = wide and cols.w or cols.i
          c[#c + 1] = values
          index[key] = ("lay_%s[%d]"):format(wide and "w" or "i", #c - 1)
        end
        out[#out + 1] = index[key]
      end
    end
    out[#out + 1] = parts[#ints + 1]
    body[j] = table.concat(out)
  end
  return { body = body, cols_i = cols.i, cols_w = cols.w }
end

-- The tables, defined before the kernel: one row per layer.
function fold.tables(lp, count)
  local out = {}
  for _, t in ipairs({ { "i", "int", lp.cols_i }, { "w", "long long", lp.cols_w } }) do
    local name, ty, cols = t[1], t[2], t[3]
    if #cols > 0 then
      out[#out + 1] = ("MKC_CONSTANT %s mkc_layer_%s[%d][%d] = {"):format(ty, name, count, #cols)
      for l = 1, count do
        local row = {}
        for c = 1, #cols do row[c] = tostring(cols[c][l]) end
        out[#out + 1] = ("  {%s},"):format(table.concat(row, ", "))
      end
      out[#out + 1] = "};"
    end
  end
  return table.concat(out, "\n")
end

return fold
