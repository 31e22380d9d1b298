#!/usr/bin/env python3
"""Lays a predicted step (fsdpc --timeline) beside a measured one (the trainer's
--trace) and prints how far apart they are, quantity by quantity:

    compare_timeline.py PREDICTED.json MEASURED.json [--max-error 0.25]

- step: the predicted step against the measured call of the step function;
- products: the matrix products' busy time (events with FLOPs);
- other compute: the rest of the compute track (generated loops and copies),
  without the waits;
- exposed communication: what the compute stream waits for (measured: the
  time spent in fsdprt_wait; predicted: the gaps of the compute track);
- collectives: the count of each kind must be equal (the same compiled step),
  and their busy time (from start to completion) is compared too.

With --max-error E the exit status is 1 when the step differs by more than
E (relative to the measurement).
"""

import argparse
import json
import sys


def load(path):
    with open(path) as f:
        trace = json.load(f)
    return trace, [e for e in trace["traceEvents"] if e.get("ph") == "X"]


def summary(trace, spans, measured):
    compute = [e for e in spans if e["tid"] == 0]
    waits = [e for e in compute if e["name"].startswith("wait ")]
    work = [e for e in compute if not e["name"].startswith("wait ")]
    products = sum(e["dur"] for e in work if e.get("args", {}).get("flops", 0) > 0) / 1e6
    other = sum(e["dur"] for e in work if e.get("args", {}).get("flops", 0) == 0) / 1e6
    step = trace["otherData"]["step_seconds"]
    if measured:
        exposed = sum(e["dur"] for e in waits) / 1e6
    else:
        exposed = trace["otherData"].get("exposed_communication_seconds",
                                         step - products - other)
    kinds = {}
    for e in spans:
        if e["tid"] != 0:
            name = e["name"].split()[0]
            count, busy = kinds.get(name, (0, 0.0))
            kinds[name] = (count + 1, busy + e["dur"] / 1e6)
    return {"step": step, "products": products, "other compute": other,
            "exposed communication": exposed}, kinds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("predicted")
    parser.add_argument("measured")
    parser.add_argument("--max-error", type=float, default=None)
    args = parser.parse_args()
    predicted, predicted_kinds = summary(*load(args.predicted), measured=False)
    trace, spans = load(args.measured)
    measured, measured_kinds = summary(trace, spans, measured=True)
    # The measured compute track tiles the step: products, waits and the
    # generated loops between them.
    tiled = sum(e["dur"] for e in spans if e["tid"] == 0) / 1e6
    if abs(tiled - measured["step"]) > 1e-6 * max(1.0, measured["step"]) + 1e-9:
        sys.exit(f"FAILED: the measured compute track covers {tiled:.9f} s of a "
                 f"{measured['step']:.9f} s step")

    print(f"{'':28}{'predicted s':>14}{'measured s':>14}{'pred/meas':>11}")
    for key in predicted:
        p, m = predicted[key], measured[key]
        ratio = f"{p / m:10.3f}" if m > 0 else f"{'-':>10}"
        print(f"{key:28}{p:14.6f}{m:14.6f} {ratio}")
    mismatched = []
    for kind in sorted(set(predicted_kinds) | set(measured_kinds)):
        pc, pb = predicted_kinds.get(kind, (0, 0.0))
        mc, mb = measured_kinds.get(kind, (0, 0.0))
        print(f"{kind + ' (' + str(pc) + '/' + str(mc) + ')':28}{pb:14.6f}{mb:14.6f}")
        if pc != mc:
            mismatched.append(f"{kind}: {pc} predicted, {mc} measured")
    if mismatched:
        sys.exit("FAILED: the traces are not of the same step: " + "; ".join(mismatched))
    error = predicted["step"] / measured["step"] - 1
    print(f"step error: {100 * error:+.1f}%")
    if args.max_error is not None and abs(error) > args.max_error:
        sys.exit(f"FAILED: the predicted step is {100 * error:+.1f}% off the measured one "
                 f"(more than {100 * args.max_error:.0f}%)")


if __name__ == "__main__":
    main()
