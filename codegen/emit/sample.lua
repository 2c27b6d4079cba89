-- Stage: sampling, only when the request samples or penalizes (plain greedy keeps the argmax path
-- and skips this stage and its barrier): one block per input position (templates/sample.cuh), on the
-- candidates stage's union when it ran (emit/sample_cands.lua).
return function(st, ctx)
  local smem = { { "red", ctx.warps }, { "part", ctx.threads }, { "winner", 3 }, { "hist", 256 } }
  local at = ctx.smem_layout(smem)
  return {
    work = "T positions, one block each: penalties, top-k/top-p/min-p thresholds, draws",
    smem = smem,
    items = { t = 1, unit = "block" },
    flops = {},
    reads = {}, -- the logits again, in the stage that runs only when sampling: not counted
    writes = {},
    condition = "!drafting && mkc_sampling_on(&state->sampling)", -- drafts are argmaxes
    code = ctx.call("mkc_sample", { st = "state", history = ("(const int *)(scratch + %d)"):format(ctx.history),
      logits = ctx.value(st.logits), logits_stride = ctx.vstride(st.logits), vocab = ctx.vocab, pos = "pos",
      t0 = "t0", T = "T", work = ("scratch + %d"):format(ctx.sample_work),
      lists = ("(int *)(scratch + %d)"):format(ctx.sample_lists),
      cands = ("mkc_cands_on(&state->sampling, %d)"):format(ctx.vocab),
      cand_max = ("scratch + %d"):format(ctx.sample_cands),
      cand_n = ("(const int *)(scratch + %d)"):format(ctx.sample_cands + ctx.t_max * ctx.max_blocks),
      uni = ("(int *)(scratch + %d)"):format(ctx.sample_union),
      drawn = ("(int *)(scratch + %d)"):format(ctx.drawn),
      p_draft_out = ("scratch + %d"):format(ctx.drawn + 2 * ctx.t_max),
      lp = ("scratch + %d"):format(ctx.logprobs),
      red = ctx.smem_ptr("float", at.red), part = ctx.smem_ptr("float", at.part),
      winner = ctx.smem_ptr("int", at.winner), hist = ctx.smem_ptr("unsigned", at.hist) }) .. ";",
  }
end
