"""The CUDA runtime's fused attention (cuDNN, through fsdprt_attention_bf16 and its gradient)
on a GPU: correct against a float64 reference, then timed at the Llamas' shapes.

    attention_check.py --driver bin/fsdp-attention-check [--work DIR] [--parts correct,speed]

Correctness: random bf16 operands at small shapes (GQA, multi-head and one key head;
causal or not, with a sliding window or not (cuDNN's band's left bound); sequences that
are no multiple of a tile), the output, log-sum-exp and the
three gradients against NumPy float64 from the same bf16 operands (and the same bf16
output, which the gradient reads). cuDNN's kernels round the probabilities P to bf16 before
P V and P^T dO, and dS before dS K and dS^T Q, and each result once more when stored, so
each element carries at most a few bf16 unit roundoffs u = 2^-8 of relative error: the
bounds are 2u (the output: P, then the store) and 4u (the gradients: P or dS, the store,
and the same through the other operand's path) on ||x - ref|| / ||ref||, and 1e-4 absolute
on the log-sum-exp (f32 sums of exact bf16 products, |lse| < 20 here). A NaN fails: every
output is poisoned before the call. Each correctness shape runs once deterministic too.
`--rounded-once` is for the CPU runtime's loops (fsdp-attention-check-host), which round
where the fused kernel does (P and dS to bf16 before their products) with exact sums
otherwise: against a reference that rounds P and dS there too, every bf16 result is within
the one rounding of its store, u/2, and the log-sum-exp within 2^-24 |lse| (|lse| < 20).

Speed: the 1B Llama's, Llama-2-70B's and Llama-3-8B's attention (batch, heads, kv heads,
sequence, head dim as in sdpa_rate.py), causal, forward and backward, median of 20 calls,
TFLOP/s counting the causal half of the products (forward 2, backward 5); whether two
backward passes gave the same bits, with and without cuDNN's deterministic algorithm; the
workspace each plan asked for. One JSON line per case, then a table.
"""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np

U = 2.0 ** -8
CORRECT = [  # batch, heads, kv heads, sequence, head dim, causal, sliding window (0: none)
    (2, 8, 2, 128, 64, True, 0),
    (1, 4, 4, 96, 128, False, 0),
    (2, 4, 1, 200, 64, True, 0),
    (2, 8, 2, 128, 64, True, 32),
    (1, 4, 1, 200, 64, True, 77),
]
SPEED = {
    "llama-1b": (8, 32, 4, 2048, 64),
    "llama2-70b": (1, 64, 8, 4096, 128),
    "llama3-8b": (2, 32, 8, 8192, 128),
}


def bf16_bits(x):
    """Nearest-even bf16 bit patterns of float32 x."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def read(path, shape, dtype):
    data = np.fromfile(path, dtype=dtype)
    return (from_bits(data) if dtype == np.uint16 else data.astype(np.float64)).reshape(shape)


def round_bf16(x):
    """x (float64) rounded to the nearest bf16, ties to even, kept in float64."""
    mantissa, exponent = np.frexp(x)
    return np.ldexp(np.rint(np.ldexp(mantissa, 8)), exponent - 8)


def reference(q, k, v, o, do, causal, rounding=False, window=0):
    """Output, log-sum-exp and the three gradients in float64, the whole score matrix at
    once; the gradient reads the given bf16 output o, as the GPU's does. `rounding`: P
    and dS rounded to bf16 before their products, as the fused kernel does; `window` W:
    query i sees keys i - W < j <= i only."""
    operand = round_bf16 if rounding else (lambda x: x)
    b, h, t, d = q.shape
    g = h // k.shape[1]
    kk, vv = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = q @ kk.swapaxes(-1, -2) / math.sqrt(d)
    if causal:
        seen = np.tril(np.ones((t, t), dtype=bool))
        if window:
            seen &= np.triu(np.ones((t, t), dtype=bool), 1 - window)
        s = np.where(seen, s, -np.inf)
    top = s.max(-1, keepdims=True)
    unnormalised = np.exp(s - top)
    total = unnormalised.sum(-1, keepdims=True)
    lse = top + np.log(total)
    out = operand(unnormalised) @ vv / total
    p = np.exp(s - lse)
    ds = operand(p * (do @ vv.swapaxes(-1, -2) - (do * o).sum(-1, keepdims=True)) / math.sqrt(d))
    p = operand(p)
    dq = ds @ kk
    dk = (ds.swapaxes(-1, -2) @ q).reshape(b, k.shape[1], g, t, d).sum(2)
    dv = (p.swapaxes(-1, -2) @ do).reshape(b, k.shape[1], g, t, d).sum(2)
    return out, lse[..., 0], dq, dk, dv


def run_driver(driver, shape, causal, deterministic, work, repeats, rng, layout="bhsd",
               window=0):
    b, h, hkv, t, d = shape
    os.makedirs(work, exist_ok=True)
    operands = {}
    for name, dims in (("query", (b, h, t, d)), ("key", (b, hkv, t, d)),
                       ("value", (b, hkv, t, d)), ("out_grad", (b, h, t, d))):
        bits = bf16_bits(rng.standard_normal(dims, dtype=np.float32))
        bits.tofile(os.path.join(work, name + ".bin"))
        operands[name] = bits
    command = [driver, ",".join(map(str, shape))] + (["causal"] if causal else []) + \
        ([f"window={window}"] if window else []) + \
        (["deterministic"] if deterministic else []) + (["bshd"] if layout == "bshd" else []) + \
        [work, str(repeats)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return operands, {"error": (done.stderr or done.stdout).strip()[-600:]}
    return operands, json.loads(done.stdout.strip().splitlines()[-1])


def relative(x, ref):
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


def correct_case(driver, case, deterministic, work, rng, rounded_once, layout="bhsd"):
    *shape, causal, window = case
    b, h, hkv, t, d = shape
    operands, result = run_driver(driver, tuple(shape), causal, deterministic, work, 0, rng,
                                  layout, window)
    result.update(shape=shape, causal=causal, window=window, deterministic=deterministic)
    if "error" in result:
        result["ok"] = False
        return result
    q, k, v, do = (from_bits(operands[n]) for n in ("query", "key", "value", "out_grad"))
    o = read(os.path.join(work, "out.bin"), (b, h, t, d), np.uint16)
    got = {"out": o, "lse": read(os.path.join(work, "lse.bin"), (b, h, t), np.float32),
           "query_grad": read(os.path.join(work, "query_grad.bin"), (b, h, t, d), np.uint16),
           "key_grad": read(os.path.join(work, "key_grad.bin"), (b, hkv, t, d), np.uint16),
           "value_grad": read(os.path.join(work, "value_grad.bin"), (b, hkv, t, d), np.uint16)}
    ref = dict(zip(("out", "lse", "query_grad", "key_grad", "value_grad"),
                   reference(q, k, v, o, do, causal, rounding=rounded_once,
                             window=window)))
    errors = {name: (float(np.abs(got[name] - ref[name]).max()) if name == "lse"
                     else relative(got[name], ref[name])) for name in got}
    if rounded_once:
        bounds = {"out": U / 2, "lse": 20 * 2.0 ** -24, "query_grad": U / 2,
                  "key_grad": U / 2, "value_grad": U / 2}
    else:
        bounds = {"out": 2 * U, "lse": 1e-4, "query_grad": 4 * U, "key_grad": 4 * U,
                  "value_grad": 4 * U}
    result["errors"] = errors
    result["ok"] = all(np.isfinite(got[n]).all() and errors[n] <= bounds[n] for n in got)
    if deterministic:
        result["ok"] = result["ok"] and result["backward_repeatable"]
    return result


def speed_case(driver, name, deterministic, work, rng, layout="bhsd"):
    b, h, hkv, t, d = SPEED[name]
    _, result = run_driver(driver, SPEED[name], True, deterministic, work, 20, rng, layout)
    result.update(shape=name, deterministic=deterministic)
    if "error" in result:
        return result
    out = np.fromfile(os.path.join(work, "out.bin"), dtype=np.uint16)
    result["out_finite"] = bool(np.isfinite(from_bits(out[:1 << 22])).all())
    forward_flops = 2 * 2 * b * h * t * t * d / 2
    result["forward_tflops"] = forward_flops / result["forward_ms"] / 1e9
    result["backward_tflops"] = 2.5 * forward_flops / result["backward_ms"] / 1e9
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver", required=True)
    parser.add_argument("--work", default="/tmp/attention-check")
    parser.add_argument("--parts", default="correct,speed")
    parser.add_argument("--rounded-once", action="store_true",
                        help="the bounds of a driver that rounds each result once (the host's)")
    parser.add_argument("--layout", choices=["bhsd", "bshd"], default="bhsd",
                        help="how the calls' operands lie: [B, H, T, D], or [B, T, H, D] "
                             "(FSDPRT_ATTENTION_BSHD; the files stay [B, H, T, D])")
    args = parser.parse_args()
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    failed = False
    rows = []
    if "correct" in args.parts:
        for case in CORRECT:
            for deterministic in (False, True):
                result = correct_case(args.driver, case, deterministic, args.work, rng,
                                      args.rounded_once, args.layout)
                print(json.dumps(result), flush=True)
                failed |= not result["ok"]
                errors = result.get("errors", {})
                rows.append(f"correct {case} det={int(deterministic)}: "
                            + ("ok " if result["ok"] else "FAIL ")
                            + " ".join(f"{n}={e:.2e}" for n, e in errors.items())
                            + (" " + result["error"][-200:] if "error" in result else ""))
    if "speed" in args.parts:
        for name in SPEED:
            for deterministic in (False, True):
                result = speed_case(args.driver, name, deterministic, args.work, rng, args.layout)
                print(json.dumps(result), flush=True)
                if "error" in result:
                    rows.append(f"speed {name} det={int(deterministic)}: "
                                f"{result['error'][-300:]}")
                    continue
                rows.append(
                    f"speed {name} det={int(deterministic)}: fwd {result['forward_ms']:.3f} ms "
                    f"({result['forward_tflops']:.0f} TF/s) bwd {result['backward_ms']:.3f} ms "
                    f"({result['backward_tflops']:.0f} TF/s) ws {result['forward_workspace']}/"
                    f"{result['backward_workspace']} repeatable={result['backward_repeatable']} "
                    f"finite={result['out_finite']} engines {result['forward_engine']} / "
                    f"{result['backward_engine']}")
    print("\n".join(rows))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
