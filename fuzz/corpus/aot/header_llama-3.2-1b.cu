/* mkc 0.1.0 -- generated: do not edit.
 * graph:   graphs/llama.lua, preset llama-3.2-1b
 * hashes:  graph e6e62959529fb48a, templates cb0ac2a837d12021, options 380dc56497bb469f
 * options: draft_max 4 (T <= 5 tokens per step), max_ctx 4096, 128 threads per block, <= 1024 blocks, KV bf16, prompt chunks <= 128 (tiled, tensor cores)
 * plan:    85 stages, 0 grid barriers, 84 flow waits; scratch 4701568 floats, KV 67108864 bf16, weights 1235814400 bf16, smem 44544 bytes
 * kernel:  mkc_step(weights, scratch, kv, state) runs one whole step; pos lives in state.
 * inspect: format 1: each stage comment lists its graph nodes, work items, smem, global reads
 *          and writes (bytes per step, t tokens, ctx cached positions) and flops (docs/INSPECT.md).
 */
