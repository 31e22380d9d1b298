#!/usr/bin/env python3
"""The functions of LLVM IR files of one model at several depths, and whether they grow.

    llvm_functions.py 4:a.ll 8:b.ll 12:c.ll

Each argument is BLOCKS:FILE (what `fsdpc --emit=llvm` wrote for the model with that many
identical blocks), in increasing depth. The step is `fsdp_train_step` and its parts
`fsdp_step_part_<n>` (fsdp-split-step), with the evaluation step fsdpc links beside it,
`fsdp_eval_step` and its parts `fsdp_eval_fsdp_step_part_<n>`; every other function is a
kernel (the evaluation step's prefixed `fsdp_eval_`). Prints, per
file, the kernels (how many, the largest), the step's functions (how many, the largest,
their instructions in all), then checks that

  - the step's functions do not branch: every loop is in a kernel,
  - the number of kernels and the largest kernel do not change with depth (identical
    blocks share their kernels), and
  - neither the largest function nor the largest of the step grows with depth (at most
    25% more in the deepest file than in the shallowest): a deeper model adds calls and
    parts of the step, not larger functions. A part holds at most a fixed number of ops
    (fsdp-split-step), but how many instructions those take depends on which ops fall
    into it, which moves with the model's ops per block (a part's size varied by 9%
    between 8 and 12 blocks of the Llama); a function growing with depth grows in
    proportion, 200% from 4 blocks to 12.

Exit status 1 with the reason when a check fails.
"""

import argparse
import re
import sys

DEFINE = re.compile(r"^define [^@]*@([\w.$]+)\(")
STEP = re.compile(r"^(fsdp_train_step|fsdp_eval_step|(fsdp_eval_)?fsdp_step_part_\d+)$")


def function_sizes(path):
    """{name: (instructions, branches)} for every function defined in the .ll file."""
    sizes, name = {}, None
    with open(path) as f:
        for line in f:
            match = DEFINE.match(line)
            if match:
                name = match.group(1)
                sizes[name] = [0, 0]
            elif name is not None:
                text = line.strip()
                if text == "}":
                    name = None
                elif text and not text.startswith(";") and not text.endswith(":"):
                    sizes[name][0] += 1
                    sizes[name][1] += text.startswith(("br ", "switch "))
    return sizes


def largest(functions):
    return max(functions.items(), key=lambda kv: kv[1][0], default=("-", (0, 0)))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+", help="BLOCKS:FILE, in increasing depth")
    args = ap.parse_args(argv)
    rows = []
    for item in args.files:
        blocks, path = item.split(":", 1)
        sizes = function_sizes(path)
        step = {k: v for k, v in sizes.items() if STEP.match(k)}
        if "fsdp_train_step" not in step:
            sys.exit(f"{path}: no function fsdp_train_step")
        kernels = {k: v for k, v in sizes.items() if k not in step}
        row = {"blocks": int(blocks), "kernels": len(kernels), "kernel": largest(kernels),
               "step_functions": len(step), "step": largest(step),
               "step_total": sum(v[0] for v in step.values()),
               "branches": sum(v[1] for v in step.values()), "all": largest(sizes)}
        rows.append(row)
        print(f"{blocks} blocks: {row['kernels']} kernels, the largest {row['kernel'][1][0]} "
              f"instructions; step in {row['step_functions']} functions, the largest "
              f"{row['step'][1][0]} instructions, {row['step_total']} in all, "
              f"{row['branches']} branches")

    failures = []
    if any(r["branches"] for r in rows):
        failures.append("the step branches: loops are left in it, not in kernels")
    if len({r["kernels"] for r in rows}) != 1:
        failures.append("the number of kernels changes with depth")
    if len({r["kernel"][1][0] for r in rows}) != 1:
        failures.append("the largest kernel changes with depth")
    for key, what in (("all", "function"), ("step", "function of the step")):
        if len(rows) < 2:
            break
        first, last = rows[0][key][1][0], rows[-1][key][1][0]
        if last > 1.25 * first:
            failures.append(f"the largest {what} grows with depth: {first} instructions at "
                            f"{rows[0]['blocks']} blocks, {last} at {rows[-1]['blocks']}")
    for failure in failures:
        print(f"FAIL: {failure}")
    if failures:
        return 1
    print(f"PASS: {rows[0]['kernels']} kernels at every depth, the largest function "
          f"{rows[-1]['all'][1][0]} instructions at {rows[-1]['blocks']} blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
