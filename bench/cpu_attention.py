#!/usr/bin/env python3
"""Does the CPU runtime's fused attention pay? A bf16 Llama's training step on one
CPU rank with the attention as the key-block loops (the CPU target's default: batched
BLAS products and the online softmax's loops) against the same step with
`fsdpc --fuse-attention` (one call of the CPU runtime's fsdprt_attention_bf16 each way:
runtime/lib/cpu/HostAttention.cpp, exact loops that round where cuDNN does), at a
sequence long enough for the attention to matter. oneDNN 2.6 (Debian's) has no fused
attention primitive to try instead.

    python3 bench/cpu_attention.py [--fsdpc build/bin/fsdpc] [--seq 512] [--steps 3]

Prints each trainer's median step time (after one warm-up step) and the ratio; the CPU
target fuses only if the fused step is faster (docs/CUDA.md, section 1).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from run_mlp_bench import machine_info, read_log  # noqa: E402
from run_precision_bench import mpirun_prefix  # noqa: E402


def median_step(trainer, batch, steps, log):
    total = steps + 1
    subprocess.run(mpirun_prefix(1) + [trainer, "--steps", str(total), "--log-every", "1",
                                       "--log-json", log], check=True, capture_output=True)
    _, timed = read_log(log, 1)
    return statistics.median(batch / r["samples_per_sec"] for r in timed)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", default=os.path.join(ROOT, "build/bin/fsdpc"))
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per trainer")
    args = parser.parse_args()
    batch = 2
    shape = ["--layers", "2", "--dim", "256", "--heads", "4", "--kv-heads", "2", "--ffn", "512",
             "--vocab", "512", "--seq", str(args.seq), "--batch", str(batch), "--grid", "1",
             "--param-dtype", "bf16"]
    results = {}
    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "llama.mlir")
        with open(model, "w") as f:
            subprocess.run([sys.executable, os.path.join(ROOT, "examples", "generate_llama.py"),
                            *shape], stdout=f, check=True)
        for name, flags in [("key-block loops", []), ("fused", ["--fuse-attention"])]:
            trainer = os.path.join(work, name.replace(" ", "-"))
            subprocess.run([args.fsdpc, model, "-o", trainer, *flags], check=True)
            results[name] = median_step(trainer, batch, args.steps,
                                        os.path.join(work, "log.json"))
    loops, fused = results["key-block loops"], results["fused"]
    print(f"bf16 Llama, 2 blocks of 256, 4 heads (2 key/value) of 64, {batch} x {args.seq} "
          f"tokens, 1 rank: {machine_info()}")
    print(f"  key-block loops: {1e3 * loops:.1f} ms/step")
    print(f"  fused (the CPU runtime's attention): {1e3 * fused:.1f} ms/step, "
          f"{fused / loops:.2f} x the loops' time")
    print(json.dumps({"seq": args.seq, "loops_s": loops, "fused_s": fused}))


if __name__ == "__main__":
    main()
