#!/usr/bin/env python3
"""The functions of LLVM IR files of one model at several depths, and whether they grow.

    llvm_functions.py --step fsdp_train_step 2:a.ll 4:b.ll 6:c.ll

Each argument is BLOCKS:FILE (the file `fsdpc --emit=llvm` wrote for the model with that
many identical blocks). Prints, per file, the number of defined functions, the largest
one other than the step and the step's size (instructions), then checks that

  - the step does not branch: every loop is in a kernel function of its own,
  - the number of functions and the largest one but the step do not change with depth
    (identical blocks share their kernels), and
  - the step grows by the same number of instructions for every block added (a
    straight line of calls: linear in depth).

Exit status 1 with the reason when a check fails.
"""

import argparse
import re
import sys

DEFINE = re.compile(r"^define [^@]*@([\w.$]+)\(")


def function_sizes(path):
    """{name: instructions} and {name: branches} for every function defined in the file."""
    sizes, branches, name = {}, {}, None
    with open(path) as f:
        for line in f:
            match = DEFINE.match(line)
            if match:
                name = match.group(1)
                sizes[name] = branches[name] = 0
            elif name is not None:
                text = line.strip()
                if text == "}":
                    name = None
                elif text and not text.startswith(";") and not text.endswith(":"):
                    sizes[name] += 1
                    branches[name] += text.startswith(("br ", "switch "))
    return sizes, branches


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--step", default="fsdp_train_step")
    ap.add_argument("files", nargs="+", help="BLOCKS:FILE")
    args = ap.parse_args(argv)
    rows = []
    for item in args.files:
        blocks, path = item.split(":", 1)
        sizes, branches = function_sizes(path)
        if args.step not in sizes:
            sys.exit(f"{path}: no function {args.step}")
        others = {k: v for k, v in sizes.items() if k != args.step}
        largest = max(others.items(), key=lambda kv: kv[1]) if others else ("-", 0)
        rows.append((int(blocks), len(sizes), largest, sizes[args.step], branches[args.step]))
        print(f"{blocks} blocks: {len(sizes)} functions, largest but the step "
              f"{largest[1]} instructions ({largest[0]}), step {sizes[args.step]} instructions, "
              f"{branches[args.step]} branches")

    failures = []
    if any(r[4] for r in rows):
        failures.append("the step branches: loops are left in it, not in kernels")
    if len({r[1] for r in rows}) != 1:
        failures.append("the number of functions changes with depth")
    if len({r[2][1] for r in rows}) != 1:
        failures.append("the largest function but the step changes with depth")
    per_block = [(b[3] - a[3]) / (b[0] - a[0]) for a, b in zip(rows, rows[1:])]
    if len(set(per_block)) > 1:
        failures.append(f"the step does not grow linearly: {per_block} instructions per block")
    for failure in failures:
        print(f"FAIL: {failure}")
    if failures:
        return 1
    print(f"PASS: {rows[0][1]} functions at every depth; the step grows by "
          f"{per_block[0]:g} instructions per block")
    return 0


if __name__ == "__main__":
    sys.exit(main())
