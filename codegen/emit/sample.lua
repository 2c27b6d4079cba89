-- Stage: sampling, only when the request samples or penalizes (plain greedy keeps the argmax path
-- and skips this stage and its barrier): one block per input position (templates/sample.cuh), on the
-- candidates stage's union when it ran (emit/sample_cands.lua). In a slot kernel, per slot.
return function(st, ctx)
  local smem = { { "red", ctx.warps }, { "part", ctx.threads }, { "winner", 3 }, { "hist", 256 } }
  local at = ctx.smem_layout(smem)
  local seq, row = ctx.seq, ctx.seq.row
  local on = ("mkc_sampling_on(%s)"):format(seq.sampling)
  return {
    work = "T positions, one block each: penalties, top-k/top-p/min-p thresholds, draws",
    smem = smem,
    items = { t = 1, unit = "block" },
    flops = {},
    reads = {}, -- the logits again, in the stage that runs only when sampling: not counted
    writes = {},
    -- drafts are argmaxes
    condition = ctx.slots > 0 and "mkc_slots_sampling(state, rm)" or "!drafting && " .. on,
    code = ctx.per_slot(ctx.call("mkc_sample", { st = seq.st, history = seq.history("const int"),
      logits = row(ctx.value(st.logits), ctx.vstride(st.logits)), logits_stride = ctx.vstride(st.logits),
      vocab = ctx.vocab, pos = seq.pos, t0 = "t0", T = seq.T, b0 = seq.b0,
      work = row(("scratch + %d"):format(ctx.sample_work), ctx.vocab),
      lists = row(("(int *)(scratch + %d)"):format(ctx.sample_lists), ctx.vocab),
      cands = ("mkc_cands_on(%s, %d)"):format(seq.sampling, ctx.vocab),
      cand_max = row(("scratch + %d"):format(ctx.sample_cands), ctx.max_blocks),
      cand_n = row(("(const int *)(scratch + %d)"):format(ctx.sample_cands + ctx.step_rows * ctx.max_blocks),
        ctx.max_blocks),
      cand_kth = row(("scratch + %d"):format(ctx.sample_cands + 2 * ctx.step_rows * ctx.max_blocks), ctx.max_blocks),
      uni = row(("(int *)(scratch + %d)"):format(ctx.sample_union), ctx.vocab),
      drawn = row(("(int *)(scratch + %d)"):format(ctx.drawn), 2),
      p_draft_out = row(("scratch + %d"):format(ctx.drawn + 2 * ctx.step_rows), 1),
      lp = row(("scratch + %d"):format(ctx.logprobs), 64),
      red = ctx.smem_ptr("float", at.red), part = ctx.smem_ptr("float", at.part),
      winner = ctx.smem_ptr("int", at.winner), hist = ctx.smem_ptr("unsigned", at.hist) }) .. ";", on),
  }
end
