"""The peer mkc bench is compared with on a GPU: Hugging Face transformers
decoding the same Llama shapes in bf16 on random weights, with a static KV
cache and generate's own torch.compile of the decode step (transformers'
recipe for fast decode: CUDA graphs, eager prefill), greedy.

For each shape and each depth d (tokens already in the cache) it times a
prefill of d + 1 tokens alone, then the prefill and N more tokens, and
reports N / (difference) as decode tokens/s, as a markdown table like
mkc bench's. Run by tests/gpu/bench.sh; needs torch and transformers.

    python3 tests/gpu/hf_peer.py [--shapes llama-3.2-1b,smollm2-135m] [--depths 0,512,4096] [-n 128]
"""
import argparse
import sys
import time

SHAPES = {
    # graphs/llama.lua's presets of the same names
    "llama-3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                         vocab_size=128256, rope_theta=500000.0, tie_word_embeddings=True,
                         max_position_embeddings=131072, rms_norm_eps=1e-5,
                         rope_scaling={"rope_type": "llama3", "factor": 32.0,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192}),
    "smollm2-135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, head_dim=64,
                         vocab_size=49152, rope_theta=100000.0, tie_word_embeddings=True,
                         max_position_embeddings=8192, rms_norm_eps=1e-5),
}


def config_args(shape, version):
    """transformers 5 folds rope_theta and rope_scaling into rope_parameters."""
    args = dict(shape)
    if int(version.split(".")[0]) >= 5:
        rope = dict(args.pop("rope_scaling", None) or {"rope_type": "default"})
        rope["rope_theta"] = args.pop("rope_theta")
        args["rope_parameters"] = rope
    return args


def timed(fn, reps):
    import torch
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]  # the median


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="llama-3.2-1b,smollm2-135m")
    ap.add_argument("--depths", default="0,512,4096")
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    import torch
    import transformers
    from transformers import CompileConfig, LlamaConfig, LlamaForCausalLM, StaticCache

    dev = torch.cuda.get_device_name(0)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, {dev}")
    print("| model | size | params | backend | test | t/s |")
    print("| --- | ---: | ---: | --- | --- | ---: |")
    depths = [int(x) for x in args.depths.split(",")]
    for shape in args.shapes.split(","):
        try:
            torch.manual_seed(1)
            cfg = LlamaConfig(**config_args(SHAPES[shape], transformers.__version__))
            with torch.device("cuda"):
                model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
            params = sum(p.numel() for p in model.parameters())
            size = sum(p.numel() * p.element_size() for p in model.parameters())
            # One static cache per shape, long enough for every depth, reset
            # before each generate: generate compiles its decode step
            # (CompileConfig: reduce-overhead, CUDA graphs) once, for this
            # cache's shape; the prefill stays eager (transformers' recipe).
            cache = StaticCache(config=cfg, max_cache_len=max(depths) + 2 + args.n)
            model.generation_config.compile_config = CompileConfig(mode="reduce-overhead")
            for d in depths:
                ids = torch.randint(0, cfg.vocab_size, (1, d + 1), device="cuda")

                def gen(n):
                    with torch.inference_mode():  # the cache's tensors are inference tensors
                        cache.reset()
                        out = model.generate(ids, max_new_tokens=n, min_new_tokens=n,
                                             past_key_values=cache, do_sample=False,
                                             eos_token_id=None, pad_token_id=0)
                    assert out.shape[1] == d + 1 + n, out.shape

                for n in (2, 1 + args.n):  # compile and capture first
                    gen(n)
                    gen(n)
                # Dynamo's count says whether generate compiled at all (its
                # auto-compile is skipped, with one log line, when it cannot).
                graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
                t1 = timed(lambda: gen(1), args.reps)
                tn = timed(lambda: gen(1 + args.n), args.reps)
                tps = args.n / (tn - t1)
                at = f" @ d{d}" if d else ""
                print(f"| {shape} bf16 | {size / 2**20:.2f} MiB | {params / 1e6:.2f} M | "
                      f"transformers+compile ({graphs} graphs) | tg{args.n}{at} | {tps:.2f} |",
                      flush=True)
            del model
            torch.cuda.empty_cache()
        except Exception as e:  # one shape failing must not lose the others' rows
            print(f"| {shape} | | | transformers+compile | error | {type(e).__name__}: {e} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
