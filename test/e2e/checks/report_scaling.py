#!/usr/bin/env python3
"""From fsdp-report alone (nothing runs): a rank's parameter, gradient and
optimizer bytes scale as 1/N over N = 1, 2, 4, 8, 16 ranks, within padding.

    report_scaling.py --fsdp-opt FSDP_OPT MODEL.mlir

Padding: each unit's flat buffer is padded so that its N shards are whole
64-byte blocks, so N x (bytes on one rank of N) exceeds the bytes on one rank
by less than (units x N x 64 bytes) for each of the three kinds of state.
"""

import argparse
import json
import subprocess
import sys

KINDS = ["parameter_shards", "gradient_shards", "optimizer_state"]


def report(fsdp_opt, model, ranks):
    command = [fsdp_opt, model, f"--fsdp-set-grid=grid={ranks}", "--fsdp-form-units",
               "--fsdp-report=format=json", "-o", "/dev/null"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\n{result.stderr}")
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("model")
    args = parser.parse_args()

    base = report(args.fsdp_opt, args.model, 1)
    if base["parameters"] < 10**8:
        sys.exit(f"FAILED: the model has {base['parameters']} parameters, fewer than 1e8")
    units = len(base["units"])
    print(f"{base['parameters']} parameters in {units} units")
    failures = []
    for ranks in [1, 2, 4, 8, 16]:
        per_rank = report(args.fsdp_opt, args.model, ranks)["per_rank_bytes"]
        slots = {"parameter_shards": 1, "gradient_shards": 1, "optimizer_state": 2}
        line = [f"N={ranks:<3}"]
        for kind in KINDS:
            scaled = per_rank[kind] * ranks
            excess = scaled - base[ "per_rank_bytes"][kind]
            bound = units * ranks * 64 * slots[kind]
            line.append(f"{kind} {per_rank[kind]:>14} (x N - one rank: {excess:>8} <= {bound})")
            if not 0 <= excess <= bound:
                failures.append(f"N={ranks} {kind}: {per_rank[kind]} x {ranks} exceeds one "
                                f"rank's {base['per_rank_bytes'][kind]} by {excess}, bound {bound}")
        print("  ".join(line))
    if failures:
        sys.exit("FAILED:\n" + "\n".join(failures))
    print("PASS: parameter, gradient and optimizer bytes per rank scale as 1/N within padding")


if __name__ == "__main__":
    main()
