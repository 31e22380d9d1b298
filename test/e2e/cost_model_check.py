#!/usr/bin/env python3
"""The cost model's predicted step (fsdpc --report=json, docs/CostModel.md)
against figures derived by hand from the model, with device profiles that
isolate one term at a time:

- products only (every other rate infinite): the step is the matrix products'
  FLOPs, 2·M·N·K each, over the product rate. For the MLP of width in -> out
  layers and batch B: forward X·W, backward dW = Xᵀ·dY for every layer and
  dX = dY·Wᵀ for every layer but the first: 3·2B·Σ in·out − 2B·in₁·out₁.
- links only: every collective is a ring of (g − 1)/g of its bytes over the
  link's bandwidth, so the step is the bytes a rank sends (the report's
  traffic) over the bandwidth; without asynchronous progress (MPI today)
  all of it is exposed.
- both, with asynchronous progress: communication hides behind the products,
  so less than all of it is exposed and the step is shorter than the sum;
  without asynchronous progress, the step is exactly the sum.
- offload (--target=cuda, offload = optimizer), only the host link and the
  host's memory finite: each unit's f32 gradient shard goes to the host and its
  shard comes back (8 bytes per element over the link), and AdamW on the host
  moves the gradient, the master and two moments (16 bytes per element). One
  copy is in flight and each update sits between its gradient's arrival and its
  shard's copy back, so nothing overlaps: the step is their sum.

    cost_model_check.py --fsdpc FSDPC --model examples/mlp.mlir --work DIR
"""

import argparse
import json
import os
import subprocess
import sys

INFINITE = 1e30


def profile(path, matmul=INFINITE, bandwidth=INFINITE, asynchronous=False, host=None,
            reduce_bandwidth=None):
    """`host`: (host-device bandwidth, host memory bandwidth), for a device;
    `reduce_bandwidth`: the reduce-scatter's own (else the link's)."""
    extra = {} if host is None else {
        "host_device_bandwidth": host[0],
        "host": {"memory_bandwidth": host[1], "vector_flops": INFINITE}}
    link = {"latency": 0, "bandwidth": bandwidth}
    if reduce_bandwidth is not None:
        link["reduce_scatter"] = {"latency": 0, "bandwidth": reduce_bandwidth}
    with open(path, "w") as f:
        json.dump({**{
            "name": os.path.basename(path),
            "matmul_flops": {"f32": matmul, "bf16": matmul},
            "vector_flops": INFINITE,
            "memory_bandwidth": INFINITE,
            "op_overhead": 0,
            "ranks_per_node": 8,
            "intra_node": link,
            "inter_node": link,
            "host_device_bandwidth": 0,
            "async_collectives": asynchronous,
            "runtime_bytes": {"context": 0, "collectives": 0, "workspace": 0},
        }, **extra}, f)
    return path


def report(fsdpc, model, grid, profile_path, extra=()):
    command = [fsdpc, model, f"--grid={grid}", "--report=json", f"--device-profile={profile_path}",
               *extra]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\n{result.stderr}")
    return json.loads(result.stdout)


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failures = []

    def check(name, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if not ok:
            failures.append(name)

    # The MLP of examples/mlp.mlir: 784 -> 256 -> 256 -> 10, batch 64.
    layers, batch = [(784, 256), (256, 256), (256, 10)], 64
    rate = 1e9
    products = report(args.fsdpc, args.model, 1, profile(f"{args.work}/products.json", matmul=rate))
    for ranks in [1, 2]:
        per_rank = batch // ranks
        flops = 3 * 2 * per_rank * sum(i * o for i, o in layers) - 2 * per_rank * 784 * 256
        predicted = (products if ranks == 1 else report(
            args.fsdpc, args.model, ranks, f"{args.work}/products.json"))["predicted"]
        check(f"products only, {ranks} rank(s)", close(predicted["step_seconds"], flops / rate),
              f"step {predicted['step_seconds']:.9f} s, {flops} FLOPs / {rate:g} = {flops / rate:.9f} s")

    bandwidth = 1e6
    links = report(args.fsdpc, args.model, 2, profile(f"{args.work}/links.json", bandwidth=bandwidth))
    # Every unit gathered for forward and reduce-scattered; gathered again
    # for backward except the first layer's, whose weights backward never
    # reads (dW = Xᵀ·dY, and no dX for the data).
    units = links["units"]
    sent = sum(u["all_gather_forward_bytes"] + u["reduce_scatter_bytes"] for u in units)
    sent += sum(u["all_gather_backward_bytes"] for u in units[1:])
    predicted = links["predicted"]
    check("links only", close(predicted["communication_seconds"], sent / bandwidth) and
          close(predicted["step_seconds"], sent / bandwidth) and
          close(predicted["exposed_communication_seconds"], sent / bandwidth),
          f"communication {predicted['communication_seconds']:.9f} s, exposed "
          f"{predicted['exposed_communication_seconds']:.9f} s, step {predicted['step_seconds']:.9f}"
          f" s; {sent} B sent / {bandwidth:g} B/s = {sent / bandwidth:.9f} s")

    # A reduce-scatter at a rate of its own (MPI's is slower than its
    # all-gather): the gathers' bytes at the link's bandwidth, the
    # reductions' at theirs.
    slower = bandwidth / 4
    kinds = report(args.fsdpc, args.model, 2, profile(f"{args.work}/kinds.json", bandwidth=bandwidth,
                                                       reduce_bandwidth=slower))
    gathered = sum(u["all_gather_forward_bytes"] for u in units)
    gathered += sum(u["all_gather_backward_bytes"] for u in units[1:])
    reduced = sum(u["reduce_scatter_bytes"] for u in units)
    expected = gathered / bandwidth + reduced / slower
    predicted = kinds["predicted"]
    check("links by kind", close(predicted["communication_seconds"], expected) and
          close(predicted["step_seconds"], expected),
          f"communication {predicted['communication_seconds']:.9f} s, step "
          f"{predicted['step_seconds']:.9f} s; {gathered} B gathered / {bandwidth:g} B/s + "
          f"{reduced} B reduced / {slower:g} B/s = {expected:.9f} s")

    # Products and links of similar size: overlap hides some communication.
    flops = 3 * 2 * 32 * sum(i * o for i, o in layers) - 2 * 32 * 784 * 256
    both_rate = flops / (sent / bandwidth)
    for asynchronous in [False, True]:
        path = profile(f"{args.work}/both-{asynchronous}.json", matmul=both_rate,
                       bandwidth=bandwidth, asynchronous=asynchronous)
        p = report(args.fsdpc, args.model, 2, path)["predicted"]
        compute = p["matmul_seconds"] + p["other_compute_seconds"]
        if asynchronous:
            ok = (p["exposed_communication_seconds"] < 0.9 * p["communication_seconds"] and
                  close(p["step_seconds"], compute + p["exposed_communication_seconds"]) and
                  p["step_seconds"] < compute + p["communication_seconds"])
        else:
            ok = (close(p["exposed_communication_seconds"], p["communication_seconds"]) and
                  close(p["step_seconds"], compute + p["communication_seconds"]))
        check(f"overlap, async_collectives={str(asynchronous).lower()}", ok,
              f"compute {compute:.6f} s, communication {p['communication_seconds']:.6f} s, "
              f"exposed {p['exposed_communication_seconds']:.6f} s, step {p['step_seconds']:.6f} s")

    # Offload: the plan's optimizer on the host.
    with open(args.model) as f:
        text = f.read().replace("#fsdp.plan<", "#fsdp.plan<offload = optimizer, ", 1)
    offload_model = f"{args.work}/offload.mlir"
    with open(offload_model, "w") as f:
        f.write(text)
    link, memory = 1e6, 2e6
    offloaded = report(args.fsdpc, offload_model, 2,
                       profile(f"{args.work}/offload.json", host=(link, memory)),
                       ["--target=cuda"])
    shard = sum(u["shard_elements"] for u in offloaded["units"])
    copies, updates = 8 * shard / link, 16 * shard / memory
    p = offloaded["predicted"]
    check("offload", close(p["copy_seconds"], copies) and close(p["host_seconds"], updates) and
          close(p["step_seconds"], copies + updates),
          f"copies {p['copy_seconds']:.9f} s, host {p['host_seconds']:.9f} s, step "
          f"{p['step_seconds']:.9f} s; {shard} elements: 8 B / {link:g} B/s = {copies:.9f} s, "
          f"16 B / {memory:g} B/s = {updates:.9f} s")

    if failures:
        sys.exit(f"FAILED: {', '.join(failures)}")
    print("PASS: the predicted step matches the hand-derived figures")


if __name__ == "__main__":
    main()
