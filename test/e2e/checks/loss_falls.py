#!/usr/bin/env python3
"""Checks a trainer's --log-json: the mean loss of the last WINDOW steps is at
most MAX_RATIO times that of the first WINDOW steps.

    loss_falls.py LOG --window 20 --max-ratio 0.5
"""

import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("log")
parser.add_argument("--window", type=int, default=20)
parser.add_argument("--max-ratio", type=float, default=0.5)
args = parser.parse_args()

with open(args.log) as f:
    # Step records; the last line holds the arena figures.
    losses = [r["loss"] for r in map(json.loads, f) if "step" in r]
if len(losses) < 2 * args.window:
    sys.exit(f"FAILED: {len(losses)} steps logged, need {2 * args.window}")
first = sum(losses[:args.window]) / args.window
last = sum(losses[-args.window:]) / args.window
print(f"mean loss: first {args.window} steps {first:.4f}, last {args.window} steps {last:.4f}")
if last > args.max_ratio * first:
    sys.exit(f"FAILED: the loss fell from {first:.4f} to {last:.4f}, "
             f"not below {args.max_ratio} x {first:.4f}")
