#!/usr/bin/env python3
"""Trains an example in one process with the compiled trainer, tracing its state after
every step (--trace-state), and checks every step from the trainer's own state against
the independent NumPy float64 reference (teacher forcing, test/reference/teacher.py):
the loss, the gradients, and the optimizer's new state and parameters.

    reference_check.py --fsdpc FSDPC --model mlp|gpt --work DIR [--steps 20] [--data-seed S]
"""

import argparse
import os
import sys

from trainer_checks import ROOT, fsdpc_command, make_data, read_log, run, teacher_forced


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--model", choices=["mlp", "gpt"], required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--data-seed", type=int, default=11)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    path = lambda name: os.path.join(args.work, name)

    # One process: the example's plan is for 2 ranks.
    trainer = path("trainer")
    run([*fsdpc_command(args.fsdpc), os.path.join(ROOT, "examples", f"{args.model}.mlir"),
         "--grid=1", "-o", trainer])
    make_data(args.model, args.data_seed, path("data.bin"))
    run([trainer, "--steps", str(args.steps), "--data", path("data.bin"), "--log-json",
         path("log.json"), "--trace-state", path("trace.bin")])

    losses, _ = read_log(path("log.json"))
    rows, failures = teacher_forced(args.model, path("data.bin"), path("trace.bin"), losses)
    print("step  loss rel.err  grad rel.L2  worst ulps of the update "
          f"({', '.join(rows[0][3]) if rows else ''})  ReLU slopes fitted")
    for step, loss_err, grad_err, worst, flipped in rows:
        print(f"step {step:3d}  {loss_err:9.1e}  {grad_err:11.1e}  "
              + "  ".join(f"{w:5.1f}" for w in worst.values()) + f"  {flipped}")
    if len(rows) != args.steps:
        failures.append(f"{len(rows)} steps checked, {args.steps} trained")
    if failures:
        sys.exit("FAILED:\n" + "\n".join(failures))
    print(f"PASS: {args.model}, {args.steps} teacher-forced steps match the float64 reference")


if __name__ == "__main__":
    main()
