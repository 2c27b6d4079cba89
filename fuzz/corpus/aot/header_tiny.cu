/* mkc 0.1.0 -- generated: do not edit.
 * graph:   graphs/llama.lua, preset tiny
 * hashes:  graph e6e62959529fb48a, templates cb0ac2a837d12021, options 1dafad5a1c6b2df3
 * options: draft_max 4 (T <= 5 tokens per step), max_ctx 512, 128 threads per block, <= 1024 blocks, KV bf16, prompt chunks <= 128 (tiled, tensor cores)
 * plan:    15 stages, 0 grid barriers, 14 flow waits; scratch 117376 floats, KV 65536 bf16, weights 115328 bf16, smem 39792 bytes
 * kernel:  mkc_step(weights, scratch, kv, state) runs one whole step; pos lives in state.
 * inspect: format 1: each stage comment lists its graph nodes, work items, smem, global reads
 *          and writes (bytes per step, t tokens, ctx cached positions) and flops (docs/INSPECT.md).
 */
