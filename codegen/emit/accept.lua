-- Stage: block 0 reduces the argmax partials, accepts drafts, moves pos (in a slot kernel, each
-- slot's).
return function(st, ctx)
  local smem = { { "choice", ctx.t_max }, { "red_v", ctx.warps }, { "red_i", ctx.warps } }
  local at = ctx.smem_layout(smem)
  local seq, row = ctx.seq, ctx.seq.row
  return {
    -- a slot kernel's slots accept on blocks side by side (block first[s] of the row map)
    work = ctx.slots > 0
      and "each slot's T tokens, one block per slot (its threads share the argmax over the blocks' partials)"
      or "T tokens, block 0 only (its threads share the argmax over the blocks' partials)",
    smem = smem,
    items = { t = 1, unit = "thread of block 0" },
    flops = {},
    reads = {}, -- argmax partials and the state: a few bytes per block, not counted
    writes = {},
    code = ctx.per_slot(ctx.call("mkc_accept", { st = seq.st,
      part_val = row(("scratch + %d"):format(ctx.partials), 1),
      part_idx = row(("(const int *)(scratch + %d)"):format(ctx.partials_idx), 1),
      drawn = row(("(const int *)(scratch + %d)"):format(ctx.drawn), 2),
      p_draft = row(("scratch + %d"):format(ctx.drawn + 2 * ctx.step_rows), 1),
      history = seq.history("int"), vocab = ctx.vocab, pos = seq.pos,
      work = row(("scratch + %d"):format(ctx.sample_work), ctx.vocab),
      lp = row(("scratch + %d"):format(ctx.logprobs), 64),
      choices = row(("(int *)(scratch + %d)"):format(ctx.choices), 1),
      t0 = "t0", T = seq.T, b0 = seq.b0, choice = ctx.smem_ptr("int", at.choice), red_v = ctx.smem_ptr("float", at.red_v),
      red_i = ctx.smem_ptr("int", at.red_i) }) .. ";"),
  }
end
