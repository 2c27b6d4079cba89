-- A graph whose buffer plan reuses a freed scratch region while the stage that
-- last read it may still be running (tests/test_sync.c). Stages, in order:
--   1 embed                       -> x
--   2 matvec  x                   -> a
--   3 swiglu(a @ w_g, a @ w_u)    -> s   (a's last reader)
--   4 swiglu(x @ w_1, x @ w_2)    -> c   (independent of stage 3: no barrier before it)
--   5 swiglu(x @ w_3, x @ w_4)    -> d   (a's region is free from here: d is placed on it)
--   6 d @ w_m + c                 -> m   (c's region, in place)
--   7 m @ w_o + s                 -> o   (s's region, in place)
--   8, 9 LM head, accept
-- d and a are different values in one region: stage 5 writes it while blocks may
-- still be in stage 3 reading a, so a barrier must end stage 4. A plan that keys
-- hazards by value sees no conflict there.

preset "reuse" {
  dim = 64, vocab = 96, max_ctx = 16,
}

function build(g, p)
  local function w(name, rows) return g.weight(name .. ".weight", rows or p.dim, p.dim) end
  local function swiglu(v, n) return g.swiglu(g.matmul(v, w("gate_" .. n)), g.matmul(v, w("up_" .. n))) end
  local x = g.embed(w("token_embd", p.vocab), g.tokens())
  local a = g.matmul(x, w("a"))
  local s = swiglu(a, "s")
  local c = swiglu(x, "c")
  local d = swiglu(x, "d")
  local m = g.add(c, g.matmul(d, w("m")))
  local o = g.add(s, g.matmul(m, w("o")))
  g.logits(g.matmul(o, w("output", p.vocab)))
end
