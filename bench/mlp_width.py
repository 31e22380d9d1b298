#!/usr/bin/env python3
"""Writes the benchmark model: examples/mlp.mlir's 3-layer MLP at a chosen width and batch.

The architecture is the one of examples/mlp.mlir (matmul + bias add + ReLU for fc1 and
fc2, matmul + bias add for fc3, cross-entropy over the classes; one FSDP unit per layer;
AdamW with lr = 1e-3, weight_decay = 0), with the input and both hidden layers WIDTH wide:

    x[BATCH x WIDTH] -> fc1 -> WIDTH -> fc2 -> WIDTH -> fc3 -> CLASSES logits

The plan's grid is [1]: the benchmark measures a single rank.

    python3 bench/mlp_width.py --width 1024 --batch 256 -o /tmp/mlp_1024.mlir
"""

import argparse
import sys


def layer_dims(width, in_features=None, classes=10):
    """(in, out) of fc1, fc2, fc3."""
    in_features = width if in_features is None else in_features
    return [(in_features, width), (width, width), (width, classes)]


def generate(width=1024, batch=256, in_features=None, classes=10):
    """Returns the model's text."""
    for name, value in (("width", width), ("batch", batch), ("classes", classes)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    dims = layer_dims(width, in_features, classes)
    d_in = dims[0][0]
    B = batch

    def t(*shape):
        return "tensor<" + "x".join(str(s) for s in shape) + "xf32>"

    lines = [
        f"// Benchmark model written by bench/mlp_width.py (width {width}, batch {batch}).",
        f"// examples/mlp.mlir's 3-layer MLP: {d_in} -> {width} -> {width} -> {classes},"
        " ReLU, cross-entropy.",
        "// One FSDP unit per linear layer; grid [1] (a single rank).",
        "module attributes {fsdp.plan = #fsdp.plan<grid = [1], strategy = full_shard,",
        "                                          optimizer = #fsdp.adamw<lr = 1.0e-3,"
        " weight_decay = 0.0>>} {",
    ]
    for i, (k, n) in enumerate(dims, start=1):
        lines.append(f"  fsdp.param @fc{i}.w unit \"fc{i}\" : {t(k, n)} = #fsdp.fan_in_uniform")
        lines.append(f"  fsdp.param @fc{i}.b unit \"fc{i}\" : {t(n)} = #fsdp.zeros")
    lines.append("")
    lines.append(f"  func.func @loss(%x: {t(B, d_in)}, %y: tensor<{B}xi32>) -> tensor<f32> {{")
    prev = "%x"
    for i, (k, n) in enumerate(dims, start=1):
        last = i == len(dims)
        lines.append(f"    %w{i} = fsdp.use @fc{i}.w : {t(k, n)}")
        lines.append(f"    %b{i} = fsdp.use @fc{i}.b : {t(n)}")
        lines.append(f"    %m{i} = fsdp.matmul {prev}, %w{i} : {t(B, k)}, {t(k, n)} -> {t(B, n)}")
        out = "%logits" if last else f"%z{i}"
        lines.append(f"    {out} = fsdp.add %m{i}, %b{i} : {t(B, n)}, {t(n)} -> {t(B, n)}")
        if not last:
            lines.append(f"    %h{i} = fsdp.relu %z{i} : {t(B, n)}")
            lines.append("")
            prev = f"%h{i}"
    lines.append("")
    lines.append(f"    %l = fsdp.cross_entropy %logits, %y : {t(B, classes)}, tensor<{B}xi32>"
                 " -> tensor<f32>")
    lines.append("    return %l : tensor<f32>")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=1024, help="hidden width (default 1024)")
    parser.add_argument("--batch", type=int, default=256, help="global batch (default 256)")
    parser.add_argument("--in-features", type=int, default=None,
                        help="input features (default: the width)")
    parser.add_argument("--classes", type=int, default=10, help="output classes (default 10)")
    parser.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = parser.parse_args(argv)
    try:
        text = generate(args.width, args.batch, args.in_features, args.classes)
    except ValueError as error:
        parser.error(str(error))
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
