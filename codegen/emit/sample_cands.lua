-- Stage: the sampler's candidates, when the request's top-k is small (templates/sample.cuh,
-- mkc_cands_on): every block takes a slice of the vocabulary and keeps its top k, so the sampler
-- stage after it reads their union rather than the whole vocabulary.
return function(st, ctx)
  local smem = { { "red", ctx.warps }, { "part", ctx.threads }, { "sel", 2 }, { "hist", 256 } }
  local at = ctx.smem_layout(smem)
  return {
    work = "T positions x every block's slice of the vocabulary: penalties, the slice's top-k",
    smem = smem,
    items = { t = ctx.vocab, unit = "thread" },
    flops = {},
    reads = {}, -- the logits again, in a stage that runs only when sampling: not counted
    writes = {},
    condition = ("!drafting && mkc_cands_on(&state->sampling, %d)"):format(ctx.vocab),
    code = ctx.call("mkc_sample_cands", { st = "state",
      history = ("(const int *)(scratch + %d)"):format(ctx.history),
      logits = ctx.value(st.logits), logits_stride = ctx.vstride(st.logits), vocab = ctx.vocab, pos = "pos",
      t0 = "t0", T = "T", work = ("scratch + %d"):format(ctx.sample_work),
      lists = ("(int *)(scratch + %d)"):format(ctx.sample_lists),
      cand_max = ("scratch + %d"):format(ctx.sample_cands),
      cand_n = ("(int *)(scratch + %d)"):format(ctx.sample_cands + ctx.t_max * ctx.max_blocks),
      red = ctx.smem_ptr("float", at.red), part = ctx.smem_ptr("float", at.part),
      hist = ctx.smem_ptr("unsigned", at.hist), sel = ctx.smem_ptr("int", at.sel) }) .. ";",
  }
end
