#!/usr/bin/env python3
"""fsdpc --timeline (a Chrome trace) and --memory-svg (the memory over the
step) read back, against the plan's own figures in fsdpc --report=json:

- the trace is valid JSON in the Trace Event Format; its compute events add up
  to the report's predicted compute, its collective events to the predicted
  communication, the last one ends at the predicted step; every all-gather and
  reduce-scatter names a unit of the plan;
- the memory counters' highest total is the persistent arena plus the most
  transient bytes live at once that fsdp-assign-buffers found
  (`transient_live_bytes`);
- the SVG parses as XML; its figures are the plan's (arena, persistent,
  budget, runtime); the top of its stacked layers, read back from the drawn
  coordinates, is that same highest total (plus the runtime).

    pictures_check.py --fsdpc FSDPC --model MODEL --work DIR [fsdpc flags...]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def close(a, b, rel=1e-9, absolute=0.0):
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), absolute)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--budget", type=int, default=0, help="the --device-memory in bytes")
    parser.add_argument("--runtime", type=int, default=0, help="the --runtime-memory in bytes")
    args, flags = parser.parse_known_args()
    os.makedirs(args.work, exist_ok=True)
    trace_path, svg_path = f"{args.work}/step.json", f"{args.work}/memory.svg"
    command = [args.fsdpc, args.model, "--report=json", f"--timeline={trace_path}",
               f"--memory-svg={svg_path}"] + flags
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\n{result.stderr}")
    report = json.loads(result.stdout)
    predicted, arena = report["predicted"], report["per_rank_bytes"]["arena"]
    units = {u["name"] for u in report["units"]}
    failures = []

    def check(name, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if not ok:
            failures.append(name)

    with open(trace_path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    compute = sum(e["dur"] for e in spans if e["tid"] == 0) / 1e6
    communication = sum(e["dur"] for e in spans if e["tid"] != 0) / 1e6
    end = max(e["ts"] + e["dur"] for e in spans) / 1e6
    expected_compute = predicted["matmul_seconds"] + predicted["other_compute_seconds"]
    check("trace: compute events", close(compute, expected_compute, 1e-6),
          f"{compute:.9f} s, predicted {expected_compute:.9f} s")
    check("trace: collective events", close(communication, predicted["communication_seconds"], 1e-6),
          f"{communication:.9f} s, predicted {predicted['communication_seconds']:.9f} s")
    check("trace: last event ends the step", close(end, predicted["step_seconds"], 1e-6),
          f"{end:.9f} s, predicted {predicted['step_seconds']:.9f} s")
    collectives = [e for e in spans if e["tid"] != 0 and e["name"].split()[0] != "all_reduce_start"]
    named = [e for e in collectives if e["args"].get("unit") in units]
    check("trace: collectives name their units", collectives and len(named) == len(collectives),
          f"{len(named)} of {len(collectives)}")
    counters = [e for e in events if e["ph"] == "C"]
    highest = max(sum(e["args"].values()) for e in counters)
    expected = arena["persistent_bytes"] + arena["transient_live_bytes"]
    check("trace: memory counters", highest == expected,
          f"highest {highest} B, persistent + most live {expected} B")

    root = ET.parse(svg_path).getroot()
    figures = {k: float(root.get(f"data-{k}")) for k in
               ["arena-bytes", "persistent-bytes", "peak-live-bytes", "budget-bytes",
                "runtime-bytes", "y-bottom", "y-top", "top-bytes"]}
    check("svg: figures", figures["arena-bytes"] == arena["arena_bytes"] and
          figures["persistent-bytes"] == arena["persistent_bytes"] and
          figures["peak-live-bytes"] == arena["transient_live_bytes"] and
          figures["budget-bytes"] == args.budget and figures["runtime-bytes"] == args.runtime,
          " ".join(f"{k}={int(v)}" for k, v in figures.items() if k.endswith("bytes")))
    ns = "{http://www.w3.org/2000/svg}"
    lines = {l.get("class"): int(l.get("data-bytes")) for l in root.iter(f"{ns}line")
             if l.get("data-bytes")}
    check("svg: lines", lines.get("arena") == args.runtime + arena["arena_bytes"] and
          lines.get("budget", 0) == args.budget, f"{lines}")

    def bytes_at(y):
        scale = (figures["y-bottom"] - figures["y-top"]) / figures["top-bytes"]
        return (figures["y-bottom"] - y) / scale

    ys = [float(y) for path in root.iter(f"{ns}path")
          for y in re.findall(r"[ML][-0-9.]+,([-0-9.]+)", path.get("d"))]
    drawn = bytes_at(min(ys))
    # Coordinates have two decimals: half a hundredth of a pixel.
    tolerance = 0.005 * figures["top-bytes"] / (figures["y-bottom"] - figures["y-top"])
    check("svg: top of the stack", close(drawn, args.runtime + expected, 0, tolerance),
          f"{drawn:.0f} B drawn, runtime + persistent + most live {args.runtime + expected} B "
          f"(within {tolerance:.0f} B)")
    kinds = {p.get("data-kind") for p in root.iter(f"{ns}path")}
    check("svg: a layer per kind", {"activation", "gathered", "gradient", "gradient_shard"} <= kinds,
          f"{sorted(kinds)}")

    if failures:
        sys.exit(f"FAILED: {', '.join(failures)}")
    print("PASS: the trace and the picture show the plan's figures")


if __name__ == "__main__":
    main()
