-- Fusion: groups graph nodes into stages, each one pass over the grid that a
-- template implements. Norms fold into the next matmuls' input; Q/K/V biases,
-- per-head Q/K norms, RoPE and the KV append into the QKV epilogue; SwiGLU
-- into gate/up, residual adds into the matmul that feeds them, the greedy
-- choice into the LM head. A norm on a matmul's output before a residual add
-- (Gemma's post-norms) is a stage of its own after the matmul's. A sparse MLP (moe) is three: the
-- router's matvec, then its experts' gate and up, then their down into the residual.
local util = require("util")
local fusion = {}

local function only_consumer(graph, node, op)
  local c = graph.consumers[node]
  return #c == 1 and c[1].op == op and c[1] or nil
end

-- The matmul's (or sparse MLP's) input, seen through a norm that only they consume.
local function matmul_input(graph, mm)
  local x = mm.inputs[1]
  if x.op == "rmsnorm" then
    for _, c in ipairs(graph.consumers[x]) do
      if c.op ~= "matmul" and c.op ~= "moe" then return x, nil end
    end
    return x.inputs[1], x
  end
  return x, nil
end

-- The attention a q/k/v matmul feeds, through its rope and a per-head norm: the QKV epilogue.
local function attention_of(graph, mm)
  local v = mm
  for _ = 1, 3 do
    local c = graph.consumers[v]
    if #c ~= 1 then return nil end
    if c[1].op == "attention" then return c[1] end
    if c[1].op ~= "rmsnorm" and c[1].op ~= "rope" then return nil end
    v = c[1]
  end
  return nil
end

-- q or k of an attention: rope(matmul) or rope(rmsnorm(matmul)), each value read once;
-- returns the matmul and the norm (or nil), or nil.
local function roped(graph, r)
  if r.op ~= "rope" or #graph.consumers[r] ~= 1 then return nil end
  local x, norm = r.inputs[1], nil
  if x.op == "rmsnorm" and #graph.consumers[x] == 1 then x, norm = x.inputs[1], x end
  if x.op ~= "matmul" or #graph.consumers[x] ~= 1 then return nil end
  return x, norm
end

local function no_emitter(graph, node, why)
  util.raise(graph.path, node.line, ("codegen: no emitter for %s %s"):format(node.op, why))
end

function fusion.stages(graph)
  local stages, staged = {}, {}
  local function stage(kind, fields, nodes)
    fields.kind, fields.nodes = kind, nodes
    for _, n in ipairs(nodes) do staged[n] = fields end
    stages[#stages + 1] = fields
    return fields
  end
  -- add(resid, branch) fused into the branch's stage: resid is updated in place, so it must have
  -- no later reader but the add (and norm, a norm of it folded into the branch's input); a scale
  -- must be on the branch, the add's second operand (what names the branch). Returns resid.
  local function residual(add, branch, norm, what)
    local resid = add.inputs[1] == branch and add.inputs[2] or add.inputs[1]
    if add.scale and add.inputs[2] ~= branch then
      no_emitter(graph, add, ("whose scale is not on %s (its second operand)"):format(what))
    end
    for _, c in ipairs(graph.consumers[resid]) do
      if c ~= add and not staged[c] and c ~= norm then
        no_emitter(graph, add, "whose residual operand is still read after it (in-place update)")
      end
    end
    return resid
  end

  for _, node in ipairs(graph.order) do
    if staged[node] or node.op == "weight" or node.op == "tokens" then goto continue end
    if node.op == "feature" then -- the host writes it: no stage, but only a matmul may read it
      for _, c in ipairs(graph.consumers[node]) do
        if c.op ~= "matmul" or c.inputs[1] ~= node then
          util.raise(graph.path, c.line, ("%s reads the feature of line %d: only a matmul's input may"):format(
                     c.op, node.line))
        end
      end
      goto continue
    end
    if node.op == "embed" then
      stage("embed", { out = node, table_w = node.inputs[1] }, { node })
    elseif node.op == "matmul" then
      local x, norm = matmul_input(graph, node)
      local nodes = norm and { norm } or {}
      local base = { x = x, norm = norm }
      local att = attention_of(graph, node)
      local swiglu = only_consumer(graph, node, "swiglu")
      local add = only_consumer(graph, node, "add")
      local logits = only_consumer(graph, node, "logits")
      if att then
        -- q = rope(matmul), k = rope(matmul), v = matmul, all from one input; each matmul may
        -- have a bias, and q and k a per-head norm before RoPE (rope(rmsnorm(matmul)))
        local q_rope, k_rope, v = att.inputs[1], att.inputs[2], att.inputs[3]
        local q, q_norm = roped(graph, q_rope)
        local k, k_norm = roped(graph, k_rope)
        local ok = q and k and v.op == "matmul" and #graph.consumers[v] == 1
        for _, mm in ipairs(ok and { q, k, v } or {}) do
          local mx, mnorm = matmul_input(graph, mm)
          ok = ok and mx == x and mnorm == norm
        end
        if not ok then
          no_emitter(graph, att, "whose q/k/v are not rope(matmul), rope(matmul), matmul of one input"
                                 .. " (a per-head rmsnorm may sit between a matmul and its rope)")
        end
        local same = q_rope.head_dim == att.head_dim and k_rope.head_dim == att.head_dim
        for _, key in ipairs({ "layout", "theta", "nope", "rope_scaling", "rope_factor", "rope_low_freq_factor",
                               "rope_high_freq_factor", "rope_orig_ctx", "rope_beta_fast", "rope_beta_slow",
                               "rope_ext_factor", "rope_attn_factor" }) do
          same = same and q_rope[key] == k_rope[key]
        end
        if not same then
          util.raise(graph.path, att.line, "attention: q and k rope settings differ from each other or from the attention")
        end
        for _, hn in ipairs({ q_norm or false, k_norm or false }) do
          if hn and hn.group ~= att.head_dim then
            no_emitter(graph, hn, ("in groups of %d before RoPE (only a per-head norm, groups of head_dim %d)")
                       :format(hn.group, att.head_dim))
          end
        end
        if q_norm and k_norm and q_norm.eps ~= k_norm.eps then
          util.raise(graph.path, k_norm.line, ("codegen: the q and k head norms have different eps (%g, %g)")
                     :format(q_norm.eps, k_norm.eps))
        end
        base.q, base.k, base.v, base.q_rope, base.k_rope, base.att = q, k, v, q_rope, k_rope, att
        base.q_norm, base.k_norm = q_norm, k_norm
        for _, n in ipairs({ q, k, v, q_norm or false, k_norm or false, q_rope, k_rope }) do
          if n then nodes[#nodes + 1] = n end
        end
        stage("qkv_rope", base, nodes)
      elseif node.inputs[3] and logits then
        no_emitter(graph, node, "with a bias into the logits")
      elseif swiglu then
        local gate, up = swiglu.inputs[1], swiglu.inputs[2]
        for _, mm in ipairs({ gate, up }) do
          if mm.op == "matmul" and mm.inputs[3] then no_emitter(graph, mm, "with a bias into a gated MLP") end
        end
        local ok = gate.op == "matmul" and up.op == "matmul" and gate ~= up
                   and only_consumer(graph, gate, "swiglu") and only_consumer(graph, up, "swiglu")
        for _, mm in ipairs(ok and { gate, up } or {}) do
          local mx, mnorm = matmul_input(graph, mm)
          ok = ok and mx == x and mnorm == norm
        end
        if not ok then no_emitter(graph, swiglu, "whose gate and up are not matmuls of one input") end
        base.gate, base.up, base.out = gate, up, swiglu
        table.move({ gate, up, swiglu }, 1, 3, #nodes + 1, nodes)
        stage("gate_up_swiglu", base, nodes)
      elseif add then
        local resid = residual(add, node, norm, "the matmul")
        base.w, base.mm, base.resid, base.out, base.bias = node.inputs[2], node, resid, add, node.inputs[3]
        table.move({ node, add }, 1, 2, #nodes + 1, nodes)
        stage("matvec_residual", base, nodes)
      elseif logits then
        base.w, base.mm, base.out = node.inputs[2], node, logits
        table.move({ node, logits }, 1, 2, #nodes + 1, nodes)
        stage("lm_head", base, nodes)
        stage("sample_cands", { logits = logits }, {})
        stage("sample", { logits = logits }, {})
        stage("accept", { logits = logits }, {})
      else
        base.w, base.mm, base.out, base.bias = node.inputs[2], node, node, node.inputs[3]
        nodes[#nodes + 1] = node
        stage("matvec", base, nodes)
      end
    elseif node.op == "moe" then
      local x, norm = matmul_input(graph, node)
      local add = only_consumer(graph, node, "add")
      if not add then no_emitter(graph, node, "whose output is not added into a residual") end
      local resid = residual(add, node, norm, "the experts' output")
      local gate = node.inputs[3]
      local ffn = gate.rows // node.experts
      if ffn % 8 ~= 0 then
        no_emitter(graph, node, ("whose experts are %d wide (the kernel's are a multiple of 8)"):format(ffn))
      end
      -- the stages' own values: the router's scores, the experts' hidden rows, the choices
      local function value(op, n, k)
        return { op = op, n = n, id = node.id + k / 4, line = node.line, inputs = {} }
      end
      local router = value("moe router", node.experts, 1)
      local hidden = value("moe hidden", node.experts_used * ffn, 2)
      local choice = value("moe choice", 2 * node.experts_used, 3)
      stage("matvec", { x = x, norm = norm, w = node.inputs[2], mm = node, out = router, bias = node.inputs[6] },
            norm and { norm } or {})
      stage("moe_up", { x = x, norm = norm, moe = node, router = router, hidden = hidden, choice = choice },
            { node })
      stage("moe_down", { moe = node, hidden = hidden, choice = choice, resid = resid, out = add }, { add })
    elseif node.op == "attention" then
      if not staged[node.inputs[2]] then no_emitter(graph, node, "without the fused qkv stage before it") end
      stage("attention", { att = node, q = node.inputs[1], out = node }, { node })
    elseif node.op == "rmsnorm" then
      local x, norm = nil, nil
      for _, c in ipairs(graph.consumers[node]) do x, norm = matmul_input(graph, c) end
      if norm then goto continue end -- folded into the matmuls that read it
      -- x + rmsnorm(matmul(...)): the matmul's stage stores its rows, this one adds them normed
      local add, o = only_consumer(graph, node, "add"), node.inputs[1]
      if add and node.group == node.n and o.op == "matmul" and staged[o] and staged[o].kind == "matvec"
          and #graph.consumers[o] == 1 then
        local resid = residual(add, node, nil, "the normed matmul")
        stage("norm_residual", { x = o, norm = node, w = node.inputs[2], resid = resid, out = add }, { node, add })
        goto continue
      end
      no_emitter(graph, node, "outside a matmul input or a residual add of a matmul's output")
    else
      no_emitter(graph, node, "outside a fused matmul epilogue")
    end
    ::continue::
  end
  return stages
end

return fusion
