-- Calls to the templates by parameter name. A template's C signature in templates/*.cuh is the
-- one definition of its argument list (docs/DECISIONS.md): the order comes from the signature,
-- the emitters name each argument, and a name the two disagree on is an mkc bug, raised loudly.
local calls = {}

-- The parameter names of a C parameter list: the last identifier of each declaration.
local function param_names(list, fn, file)
  local names = {}
  if list:match("^%s*void%s*$") or list:match("^%s*$") then return names end
  for decl in (list .. ","):gmatch("([^,]*),") do
    local name = decl:match("([%a_][%w_]*)%s*$")
    if not name then error(("codegen: cannot read a parameter of %s in templates/%s"):format(fn, file)) end
    names[#names + 1] = name
  end
  return names
end

-- { mkc_xxx = { file = "x.cuh", "p1", "p2", ... } } for every `MKC_DEVICE void mkc_xxx(...)` (or
-- MKC_DEVICE_CALLED: a function called, not inlined).
function calls.signatures(templates, names)
  local sigs = {}
  for _, file in ipairs(names) do
    for fn, list in templates[file]:gmatch("MKC_DEVICE[%u_]*%s+void%s+(mkc_[%w_]+)%s*(%b())") do
      local params = param_names(list:sub(2, -2), fn, file)
      local seen = sigs[fn]
      if seen and table.concat(seen, ",") ~= table.concat(params, ",") then
        error(("codegen: %s is defined twice with different parameters (templates/%s, templates/%s)")
          :format(fn, seen.file, file))
      end
      params.file = file
      sigs[fn] = params
    end
  end
  return sigs
end

-- "fn(a, b, ...)": args maps each parameter name to its text (a number is written with %d, as
-- the emitters always have). The line breaks after the parameters listed in wrap_after and goes on
-- under the first argument (the kernel body is indented two spaces).
function calls.format(sigs, fn, args, wrap_after)
  local params = sigs[fn]
  if not params then error(("codegen: no template defines %s"):format(fn)) end
  local index = {}
  for i, p in ipairs(params) do index[p] = i end
  for name in pairs(args) do
    if not index[name] then
      error(("codegen: %s (templates/%s) has no parameter %s"):format(fn, params.file, name))
    end
  end
  local wrap = {}
  for _, p in ipairs(wrap_after or {}) do
    if not index[p] then error(("codegen: %s (templates/%s) has no parameter %s"):format(fn, params.file, p)) end
    wrap[p] = true
  end
  local out, indent = {}, "\n  " .. (" "):rep(#fn + 1)
  for i, p in ipairs(params) do
    local text = args[p]
    if text == nil then
      error(("codegen: the call to %s gives no %s (templates/%s)"):format(fn, p, params.file))
    end
    out[#out + 1] = type(text) == "number" and ("%d"):format(text) or text
    if i < #params then out[#out + 1] = wrap[p] and "," .. indent or ", " end
  end
  return fn .. "(" .. table.concat(out) .. ")"
end

return calls
