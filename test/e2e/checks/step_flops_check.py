"""The manifest's step_flops and tokens_per_step (fsdp-record-step-flops, what the
trainer's TFLOP/s and MFU divide by time) against counts derived by hand from the
models' text: examples/mlp.mlir and examples/gpt.mlir, at 1 and 2 ranks, f32 on the CPU
(attention tiled into products) and bf16 on the CUDA target (attention fused), with
micro-batches and with recompute.

By hand, per rank of a step:
- every linear layer of `in x out` over `rows` rows takes 2 rows in out FLOPs forward
  and twice that backward (the input's gradient and the weight's), except the first
  layer of the MLP, whose input (the data) needs no gradient;
- an attention of batch B, H heads, T queries and S keys of width D is P = 2 B H T S D
  per product, 2 forward and 5 backward (the scores recomputed, the gradients of the
  probabilities, queries, keys and values): tiled, all 7 P are products, the masked
  blocks included (with a sliding window, T S is the band's pairs: each block of
  queries against the keys its window reaches, scored_pairs); fused, they are "attention" and a causal one counts half; the
  backward's scores are "recomputed" (1 P), so the model's FLOPs, products + attention -
  recomputed, count 6 P, PaLM's 2 forward and 4 backward;
- recompute (remat = unit) adds products and attention that "recomputed" names too: the
  model's FLOPs are the step's without it.
"""

import argparse
import json
import os
import re
import subprocess
import sys

import trainer_checks


def manifest_of(fsdpc, model, grid, extra=()):
    """The manifest of the step fsdpc compiles: the fsdp_manifest global of --emit=mlir,
    its string as MLIR escapes it (\\22 for a quote, \\\\ for a backslash)."""
    text = subprocess.run([fsdpc, model, f"--grid={grid}", "--emit=mlir", "-o", "-", *extra],
                          check=True, capture_output=True, text=True).stdout
    found = re.search(r'@fsdp_manifest\("((?:[^"\\]|\\.)*)"\)', text)
    raw = re.sub(r"\\(\\|[0-9A-Fa-f]{2})",
                 lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1), 16)),
                 found.group(1))
    return json.loads(raw.rstrip("\0"))


def counts(manifest):
    """What the checks compare: step_flops, the tokens of a step, whether other ops count."""
    flops = manifest["step_flops"]
    return {**flops, "tokens": manifest.get("tokens_per_step"), "other > 0": flops["other"] > 0}


def weights(text, skip=()):
    """(in, out) of each 2-D parameter, in the order the model declares them."""
    return [(int(i), int(o)) for name, i, o in
            re.findall(r"fsdp\.param @(\S+) [^:]*: tensor<(\d+)x(\d+)xf32>", text)
            if name not in skip]


def attentions(text):
    """(B, H, T, S, D, causal, window or None, key block) of each fsdp.attention of the
    model."""
    found = re.findall(r"fsdp\.attention ([^:\n]*): tensor<(\d+)x(\d+)x(\d+)x(\d+)x\w+>, "
                       r"tensor<\d+x\d+x(\d+)x", text)
    number = lambda name, text: int(re.search(name + r" (\d+)", text).group(1)) \
        if name + " " in text else None  # noqa: E731
    return [(int(b), int(h), int(t), int(s), int(d), " causal" in operands,
             number("window", operands), number("key_block", operands) or 512)
            for operands, b, h, t, d, s in found]


def scored_pairs(t, s, window, block):
    """The (query, key) pairs a tiled attention scores: all T S, or with a sliding window
    of W, for each block of queries (of the key block's size; the last one shorter), the
    W + n - 1 keys its n queries reach (at most S)."""
    if window is None:
        return t * s
    return sum(min(block, t - first) * min(s, window + min(block, t - first) - 1)
               for first in range(0, t, block))


def with_plan(path, text, fields):
    with open(path, "w") as f:
        f.write(text.replace("#fsdp.plan<", f"#fsdp.plan<{fields}, ", 1))
    return path


PROGRESS = re.compile(r"^step (\d+) \| loss \d+\.\d{6} \| lr \S+ \| (\d+) tokens/s \| "
                      r"(\d+\.\d\d) GFLOP/s \| MFU (\d+\.\d)% \| mem \d+\.\d MiB$")


def trainer_reports(args, failures):
    """GPT's trainer on 2 ranks: its first line names its products' kernels, its second
    what a step holds and the peak (the CPU's device profile, or --peak-tflops), its
    progress lines and JSON log the rates, in the proportions the manifest gives (one clock: tokens/s is 32 x samples/s, FLOP/s the
    model's FLOPs x steps/s, MFU FLOP/s over the peak)."""
    trainer = f"{args.work}/gpt"
    subprocess.run([*trainer_checks.fsdpc_command(args.fsdpc), args.gpt, "-o", trainer], check=True)
    flops = manifest_of(args.fsdpc, args.gpt, 2)["step_flops"]
    model = flops["products"] + flops["attention"] - flops["recomputed"]
    for peak, flags in [(100e9, []), (0.5e12, ["--peak-tflops", "0.5"])]:
        log = f"{args.work}/gpt-{len(flags)}.jsonl"
        out = trainer_checks.run_trainer(2, trainer, "--steps", "4", "--log-every", "2",
                                         "--log-json", log, *flags).stdout.splitlines()
        source = "--peak-tflops: 500.00 GFLOP/s bf16, 500.00 GFLOP/s f32" if flags else \
            "device profile cpu: 200.00 GFLOP/s bf16, 100.00 GFLOP/s f32"
        first = (f"throughput: 256 tokens (8 samples) a step; each rank's step "
                 f"{flops['products'] / 1e6:.2f} MFLOP of products, less "
                 f"{flops['recomputed'] / 1e6:.2f} MFLOP recomputed (and ")
        steps = [json.loads(line) for line in open(log) if line.startswith('{"step"')]
        rel = lambda a, b: abs(a - b) <= 2e-5 * abs(b)
        # The products' kernels come first (GPT is f32: one line), then what a step holds.
        ok = (len(out) > 3 and out[0].startswith("f32 gemm: ") and out[1].startswith(first)
              and out[1].endswith(f"not counted); MFU against {source}")
              and all(PROGRESS.match(line) for line in out[2:4])
              and len(steps) == 4 and all(
                  rel(r["tokens_per_sec"], 32 * r["samples_per_sec"])
                  and rel(r["flops_per_sec"], model * r["samples_per_sec"] / 8)
                  and rel(r["mfu"], r["flops_per_sec"] / peak) for r in steps))
        name = f"trainer, peak {'--peak-tflops' if flags else 'of the device profile'}"
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {out[1:3]!r}, {steps[-1] if steps else None}")
        if not ok:
            failures.append(name)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--mlp", required=True)
    parser.add_argument("--gpt", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failures = []

    def check(name, flops, expected):
        got = {key: flops.get(key) for key in expected}
        ok = got == expected
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {got}" + ("" if ok else f", by hand {expected}"))
        if not ok:
            failures.append(name)

    # The MLP: batch 64 of 784 features, no tokens.
    with open(args.mlp) as f:
        mlp = f.read()
    layers = weights(mlp)
    for ranks in [1, 2]:
        rows = 64 // ranks
        manifest = manifest_of(args.fsdpc, args.mlp, ranks)
        products = 3 * 2 * rows * sum(i * o for i, o in layers) - 2 * rows * layers[0][0] * layers[0][1]
        check(f"mlp, {ranks} rank(s)", counts(manifest),
              {"products": products, "bf16_products": 0, "attention": 0, "recomputed": 0,
               "tokens": None, "other > 0": True})

    # GPT: batch 8 sequences of 32 tokens; its embeddings are lookups, not products.
    with open(args.gpt) as f:
        gpt = f.read()
    linear = sum(i * o for i, o in weights(gpt, skip=("wte", "wpe")))
    heads = attentions(gpt)
    sequences, context = 8, heads[0][2]
    bf16 = with_plan(f"{args.work}/gpt-bf16.mlir", gpt, "param_dtype = bf16")

    def by_hand(ranks, fused, heads=heads):
        rows = sequences // ranks * context
        dense = 3 * 2 * rows * linear
        share = [2 * (b // ranks) * h * scored_pairs(t, s, window, block) * d
                 for b, h, t, s, d, _, window, block in heads]
        if not fused:
            return {"products": dense + 7 * sum(share), "attention": 0, "recomputed": sum(share)}
        computed = [p // 2 if causal else p for p, (*_, causal, _, _) in zip(share, heads)]
        return {"products": dense, "attention": 7 * sum(computed), "recomputed": sum(computed)}

    def model_flops(counts):
        return counts["products"] + counts["attention"] - counts["recomputed"]

    for ranks in [1, 2]:
        manifest = manifest_of(args.fsdpc, args.gpt, ranks)
        expected = by_hand(ranks, fused=False)
        check(f"gpt, {ranks} rank(s), tiled attention", counts(manifest),
              {**expected, "bf16_products": 0, "tokens": sequences * context})
        fused = manifest_of(args.fsdpc, bf16, ranks, ["--target=cuda"])
        expected = by_hand(ranks, fused=True)
        check(f"gpt bf16, {ranks} rank(s), fused attention", fused["step_flops"],
              {**expected, "bf16_products": expected["products"]})

    # A sliding window of 8 over GPT's 32 positions in blocks of 16: the band's pairs,
    # 16 x 23 + 16 x 23 = 736 of 1024 per head, not the square's (the attention in
    # `heads` is read from the windowed text).
    windowed = gpt.replace(" causal key_block", " causal window 8 key_block")
    window_path = f"{args.work}/gpt-window.mlir"
    with open(window_path, "w") as f:
        f.write(windowed)
    band = by_hand(1, fused=False, heads=attentions(windowed))
    check("gpt, sliding window 8: the band's products",
          counts(manifest_of(args.fsdpc, window_path, 1)),
          {**band, "bf16_products": 0, "tokens": sequences * context})
    remat = with_plan(f"{args.work}/gpt-window-remat.mlir", windowed, "remat = unit")
    flops = manifest_of(args.fsdpc, remat, 1)["step_flops"]
    check("gpt, sliding window 8, remat = unit: products + attention - recomputed",
          {"model": model_flops(flops)}, {"model": model_flops(band)})

    # Micro-batches split the rows, not the work.
    micro = with_plan(f"{args.work}/gpt-micro.mlir", gpt, "micro_batches = 2")
    manifest = manifest_of(args.fsdpc, micro, 2)
    check("gpt, 2 micro-batches", counts(manifest),
          {**by_hand(2, fused=False), "tokens": sequences * context})

    # Recompute: the step does more, the model's FLOPs stay.
    for name, model, extra, fused in [("gpt", args.gpt, [], False),
                                      ("gpt bf16", bf16, ["--target=cuda"], True)]:
        remat = with_plan(f"{args.work}/{name.replace(' ', '-')}-remat.mlir",
                          open(model).read(), "remat = unit")
        flops = manifest_of(args.fsdpc, remat, 2, extra)["step_flops"]
        expected = by_hand(2, fused)
        check(f"{name}, remat = unit: products + attention - recomputed",
              {"model": model_flops(flops), "remat": flops["recomputed"] > expected["recomputed"]},
              {"model": model_flops(expected), "remat": True})

    trainer_reports(args, failures)
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
