-- Stage: the sampler's candidates, when the request's top-k is small (templates/sample.cuh,
-- mkc_cands_on): every block takes a slice of the vocabulary and keeps its top k, so the sampler
-- stage after it reads their union rather than the whole vocabulary. In a slot kernel, per slot.
return function(st, ctx)
  local smem = { { "red", ctx.warps }, { "part", ctx.threads }, { "sel", 2 }, { "hist", 256 } }
  local at = ctx.smem_layout(smem)
  local seq, row = ctx.seq, ctx.seq.row
  local on = ("mkc_cands_on(%s, %d)"):format(seq.sampling, ctx.vocab)
  return {
    work = "T positions x every block's slice of the vocabulary: penalties, the slice's top-k",
    smem = smem,
    items = { t = ctx.vocab, unit = "thread" },
    flops = {},
    reads = {}, -- the logits again, in a stage that runs only when sampling: not counted
    writes = {},
    condition = ctx.slots > 0 and ("mkc_slots_cands(state, rm, %d)"):format(ctx.vocab) or "!drafting && " .. on,
    code = ctx.per_slot(ctx.call("mkc_sample_cands", { st = seq.st, history = seq.history("const int"),
      logits = row(ctx.value(st.logits), ctx.vstride(st.logits)), logits_stride = ctx.vstride(st.logits),
      vocab = ctx.vocab, pos = seq.pos, t0 = "t0", T = seq.T,
      work = row(("scratch + %d"):format(ctx.sample_work), ctx.vocab),
      lists = row(("(int *)(scratch + %d)"):format(ctx.sample_lists), ctx.vocab),
      cand_max = row(("scratch + %d"):format(ctx.sample_cands), ctx.max_blocks),
      cand_n = row(("(int *)(scratch + %d)"):format(ctx.sample_cands + ctx.step_rows * ctx.max_blocks), ctx.max_blocks),
      cand_kth = row(("scratch + %d"):format(ctx.sample_cands + 2 * ctx.step_rows * ctx.max_blocks), ctx.max_blocks),
      red = ctx.smem_ptr("float", at.red), part = ctx.smem_ptr("float", at.part),
      hist = ctx.smem_ptr("unsigned", at.hist), sel = ctx.smem_ptr("int", at.sel) }) .. ";", on),
  }
end
