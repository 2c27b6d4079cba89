-- Errors in the graph file's own terms, hashing, and small helpers.
local util = {}

-- Errors meant for the user are tables { mkc_error = "file:line: error: msg\n    <line>" };
-- anything else reaching the host is an mkc bug and is printed with a traceback.
local function source_line(path, line)
  local f = io.open(path, "r")
  if not f then return nil end
  local n, text = 0, nil
  for l in f:lines() do
    n = n + 1
    if n == line then text = l break end
  end
  f:close()
  return text
end

function util.raise(path, line, msg)
  local text = ("%s:%d: error: %s"):format(path, line or 0, msg)
  local src = line and source_line(path, line)
  if src then text = text .. "\n    " .. src:gsub("^%s+", "") end
  error({ mkc_error = text }, 0)
end

-- A user's value in a message: strings quoted, so "128" and 128 read differently.
function util.show(v)
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end

-- Plain "mkc: error:" for problems with no place in a file (CLI options).
function util.fail(msg) error({ mkc_error = "mkc: error: " .. msg }, 0) end

-- An integer tuning knob from the environment: nil when unset or empty, else its
-- value, which ok must accept ("NAME must be SAYS, got ..." otherwise).
function util.knob(name, says, ok)
  local v = os.getenv(name)
  if not v or v == "" then return nil end
  local n = tonumber(v)
  if not n or n ~= math.floor(n) or not ok(n) then
    util.fail(("%s must be %s, got %s"):format(name, says, util.show(v)))
  end
  return math.tointeger(n)
end

-- The line of the innermost stack frame that runs code from `path`.
function util.caller_line(path)
  local want = "@" .. path
  for level = 2, 64 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.source == want then return info.currentline end
  end
  return nil
end

-- 64-bit FNV-1a of a string, as 16 hex digits (Lua integers wrap modulo 2^64).
function util.hash(s)
  local h = -3750763034362895579 -- 0xcbf29ce484222325
  for i = 1, #s do
    h = h ~ s:byte(i)
    h = h * 1099511628211
  end
  return ("%016x"):format(h)
end

function util.read_file(path)
  local f, err = io.open(path, "rb")
  if not f then util.fail("cannot read " .. tostring(err)) end
  local s = f:read("a")
  f:close()
  return s
end

function util.round_up(n, m) return (n + m - 1) // m * m end

return util
