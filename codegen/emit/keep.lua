-- Stage: a layer's output kept for the host (codegen/main.lua's keep stages, a drafter head's
-- features): every input's row of the residual stream entering the next layer, copied into the
-- layer's slot, or nothing (slot 0: a layer no one asked for, so that every layer has the stage).
return function(st, ctx)
  return {
    work = ("layer %d's output, every input's row, into slot %d (0: none)"):format(st.layer, st.slot),
    smem = {},
    items = { t = st.x.n, unit = "thread" },
    flops = {},
    reads = {}, -- a copy of a few KB, only in kernels generated to keep layers: not counted
    writes = {},
    code = ctx.call("mkc_keep", { x = ctx.value(st.x), x_stride = ctx.vstride(st.x), n = st.x.n, T = "T",
      keep = ("scratch + %d"):format(ctx.keep), slot_floats = ctx.keep_slot, slot = st.slot }) .. ";",
  }
end
