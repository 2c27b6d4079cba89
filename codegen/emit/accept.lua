-- Stage: block 0 reduces the argmax partials, accepts drafts, moves pos.
return function(st, ctx)
  local smem = { { "choice", ctx.t_max }, { "red_v", ctx.warps }, { "red_i", ctx.warps } }
  local at = ctx.smem_layout(smem)
  return {
    work = "T tokens, block 0 only (its threads share the argmax over the blocks' partials)",
    smem = smem,
    items = { t = 1, unit = "thread of block 0" },
    flops = {},
    reads = {}, -- argmax partials and the state: a few bytes per block, not counted
    writes = {},
    code = ctx.call("mkc_accept", { st = "state", part_val = ("scratch + %d"):format(ctx.partials),
      part_idx = ("(const int *)(scratch + %d)"):format(ctx.partials_idx),
      drawn = ("(const int *)(scratch + %d)"):format(ctx.drawn),
      p_draft = ("scratch + %d"):format(ctx.drawn + 2 * ctx.t_max),
      history = ("(int *)(scratch + %d)"):format(ctx.history), vocab = ctx.vocab, pos = "pos",
      work = ("scratch + %d"):format(ctx.sample_work), lp = ("scratch + %d"):format(ctx.logprobs),
      t0 = "t0", T = "T", choice = ctx.smem_ptr("int", at.choice), red_v = ctx.smem_ptr("float", at.red_v),
      red_i = ctx.smem_ptr("int", at.red_i) }) .. ";",
  }
end
