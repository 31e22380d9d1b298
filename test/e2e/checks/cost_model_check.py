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
- links across nodes (2 ranks a node, 4 ranks): the shard group's ring spans
  two nodes and crosses them on one interface per rank of a node, up to the
  profile's nics_per_node (1 unless given), each at inter_node's bandwidth b,
  the extra ones no faster than intra_node: sent / b with one interface;
  sent / 2b with two and a fast intra_node; sent / 1.5b when intra_node runs
  at 1.5b.
- both, with asynchronous progress: communication hides behind the products,
  so less than all of it is exposed and the step is shorter than the sum;
  without asynchronous progress, the step is exactly the sum.
- memory by footprint (only memory finite, with measured rates by footprint):
  each op moves its bytes at the rate of its footprint (its distinct buffers),
  log-linear between the measured footprints, the first's rate below them and
  memory_bandwidth beyond; every op of the trace is summed by hand.
- serial reductions (only the adder's latency finite): a loop nest reducing
  floats along its innermost dimension accumulates one point after the other.
  The MLP's cross-entropy over B rows of C classes reduces every row twice in
  forward (its maximum: two dependent steps a point, a max and a select on
  NaN; its sum of exponentials: one) and again in backward, and the batch
  once: 2·(2 + 1)·B·C + B dependent steps.
- the divider (only divisions and square roots finite): AdamW's update has a
  square root and two divisions per element of every unit's flat shard, the
  softmax's gradient a division per logit (B·C); with the other arithmetic
  finite too, a loop's divisions add to it rather than hide behind it.
- measured collectives (only links finite, each kind with measured times):
  a group of the measured size takes the measured time of the whole buffer
  (2 x the bytes a rank sends, at 2 ranks), linear between the points and
  along the last two points' line beyond; a group of another size the
  alpha-beta rates.
- products in a loop (GPT, only products finite): the attention's products
  cost the same FLOPs whatever the key block (each block's share is linear in
  its keys), so the step's products take the same time with one block of all
  32 keys as with the loop over 2 blocks of 16 or 4 of 8 that the lowering
  emits: a loop's body counts once per iteration.
- fused attention (GPT in bf16 on --target=cuda, only the fused attention's
  rates finite): each of the L blocks' causal attention [B, H, T, D] is one
  call forward, 2 products of 2·B·H·T·T·D/2 FLOPs (the causal half), and one
  backward, 5 such products; the step is L·(2/forward + 5/backward) of that.
- offload (--target=cuda, offload = optimizer), only the host link and the
  host's memory finite: each unit's f32 gradient shard goes to the host and its
  shard comes back (8 bytes per element over the link), and AdamW on the host
  moves the gradient, the master and two moments (16 bytes per element). One
  copy is in flight and each update sits between its gradient's arrival and its
  shard's copy back, so nothing overlaps: the step is their sum.

    cost_model_check.py --fsdpc FSDPC --model examples/mlp.mlir --gpt examples/gpt.mlir --work DIR
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys

INFINITE = 1e30


def profile(path, matmul=INFINITE, bandwidth=INFINITE, asynchronous=False, host=None,
            reduce_bandwidth=None, extra=None, gather_measured=None, reduce_measured=None,
            intra_bandwidth=None):
    """`host`: (host-device bandwidth, host memory bandwidth), for a device;
    `reduce_bandwidth`: the reduce-scatter's own (else the link's); `extra`:
    more fields; `*_measured`: a kind's measured times, {ranks, seconds_by_bytes};
    `intra_bandwidth`: intra_node's own (else the same link as inter_node)."""
    extra = dict(extra or {})
    if host is not None:
        extra.update({"host_device_bandwidth": host[0],
                      "host": {"memory_bandwidth": host[1], "vector_flops": INFINITE,
                               "vector_divides": INFINITE}})
    link = {"latency": 0, "bandwidth": bandwidth}
    if gather_measured:
        link["measured"] = gather_measured
    if reduce_bandwidth is not None or reduce_measured:
        link["reduce_scatter"] = {"latency": 0, "bandwidth": reduce_bandwidth or bandwidth}
        if reduce_measured:
            link["reduce_scatter"]["measured"] = reduce_measured
    with open(path, "w") as f:
        json.dump({**{
            "name": os.path.basename(path),
            "matmul_flops": {"f32": matmul, "bf16": matmul},
            "vector_flops": INFINITE,
            "vector_divides": INFINITE,
            "memory_bandwidth": INFINITE,
            "op_overhead": 0,
            "ranks_per_node": 8,
            "intra_node": link if intra_bandwidth is None else
            {"latency": 0, "bandwidth": intra_bandwidth},
            "inter_node": link,
            "host_device_bandwidth": 0,
            "async_collectives": asynchronous,
            "runtime_bytes": {"context": 0, "collectives": 0, "workspace": 0},
        }, **extra}, f)
    return path


def timeline(fsdpc, model, grid, profile_path, path):
    """The predicted trace's compute ops: (bytes, footprint) of each."""
    command = [fsdpc, model, f"--grid={grid}", f"--device-profile={profile_path}",
               f"--timeline={path}", "--report=json"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\n{result.stderr}")
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    return json.loads(result.stdout), [
        (e["args"]["bytes"], e["args"].get("footprint", 0)) for e in events
        if e.get("ph") == "X" and e.get("tid") == 0]


def report(fsdpc, model, grid, profile_path, extra=()):
    command = [fsdpc, model, f"--grid={grid}", "--report=json", f"--device-profile={profile_path}",
               *extra]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\n{result.stderr}")
    return json.loads(result.stdout)


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b))


class Checks:
    """Prints each check's verdict as it comes; keeps the names of those that failed."""

    def __init__(self):
        self.failures = []

    def __call__(self, name, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if not ok:
            self.failures.append(name)


# The MLP of examples/mlp.mlir: 784 -> 256 -> 256 -> 10, batch 64.
MLP_LAYERS, MLP_BATCH = [(784, 256), (256, 256), (256, 10)], 64
# The links' bandwidth of the profiles that time the collectives.
LINK_BANDWIDTH = 1e6


def check_products_only(args, check):
    layers, batch = MLP_LAYERS, MLP_BATCH
    rate = 1e9
    products = report(args.fsdpc, args.model, 1, profile(f"{args.work}/products.json", matmul=rate))
    for ranks in [1, 2]:
        per_rank = batch // ranks
        flops = 3 * 2 * per_rank * sum(i * o for i, o in layers) - 2 * per_rank * 784 * 256
        predicted = (products if ranks == 1 else report(
            args.fsdpc, args.model, ranks, f"{args.work}/products.json"))["predicted"]
        check(f"products only, {ranks} rank(s)", close(predicted["step_seconds"], flops / rate)
              and predicted["matmul_flops"] == flops,
              f"step {predicted['step_seconds']:.9f} s, {predicted['matmul_flops']:.0f} FLOPs "
              f"counted, {flops} by hand / {rate:g} = {flops / rate:.9f} s")


def check_links_only(args, check):
    """Returns the 2-rank MLP's units and the bytes a rank sends."""
    bandwidth = LINK_BANDWIDTH
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
    return units, sent


def check_links_across_nodes(args, check):
    bandwidth = LINK_BANDWIDTH

    # A ring across two nodes of 2 ranks each.
    def across(nics, intra):
        extra = {"ranks_per_node": 2, **({"nics_per_node": nics} if nics else {})}
        return report(args.fsdpc, args.model, 4, profile(
            f"{args.work}/across-{nics}-{intra:g}.json", bandwidth=bandwidth,
            intra_bandwidth=intra, extra=extra))

    for nics, intra, rate in [(None, INFINITE, bandwidth), (2, INFINITE, 2 * bandwidth),
                              (2, 1.5 * bandwidth, 1.5 * bandwidth)]:
        p = across(nics, intra)
        sent4 = sum(u["all_gather_forward_bytes"] + u["reduce_scatter_bytes"] for u in p["units"])
        sent4 += sum(u["all_gather_backward_bytes"] for u in p["units"][1:])
        seconds = p["predicted"]["communication_seconds"]
        check(f"links across nodes, nics_per_node {nics or 'unset'}, intra_node {intra:g} B/s",
              close(seconds, sent4 / rate),
              f"communication {seconds:.9f} s; {sent4} B sent / {rate:g} B/s = "
              f"{sent4 / rate:.9f} s")


def check_links_by_kind(args, check, units):
    """Returns the bytes a rank gathers and those it reduces, of the 2-rank MLP's units."""
    bandwidth = LINK_BANDWIDTH
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
    return gathered, reduced


def check_overlap(args, check, sent):
    bandwidth = LINK_BANDWIDTH
    # Products and links of similar size: overlap hides some communication.
    flops = 3 * 2 * 32 * sum(i * o for i, o in MLP_LAYERS) - 2 * 32 * 784 * 256
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


def check_memory_by_footprint(args, check):
    # Memory rates by footprint: an op in cache moves its bytes faster.
    curve, dram = [[20000, 8e9], [400000, 2e9]], 1e9
    path = profile(f"{args.work}/footprint.json",
                   extra={"memory_bandwidth": dram, "memory_bandwidth_by_footprint": curve})
    by_footprint, ops = timeline(args.fsdpc, args.model, 1, path, f"{args.work}/footprint-trace.json")

    def rate(footprint):
        if footprint <= curve[0][0]:
            return curve[0][1]
        for (f0, r0), (f1, r1) in zip(curve, curve[1:]):
            if footprint <= f1:
                return r0 + math.log(footprint / f0) / math.log(f1 / f0) * (r1 - r0)
        return dram

    expected = sum(b / rate(f) for b, f in ops)
    regions = [sum(1 for _, f in ops if f <= curve[0][0]),
               sum(1 for _, f in ops if curve[0][0] < f <= curve[-1][0]),
               sum(1 for _, f in ops if f > curve[-1][0])]
    p = by_footprint["predicted"]
    compute = p["matmul_seconds"] + p["other_compute_seconds"]
    check("memory by footprint", close(compute, expected) and min(regions) > 0 and
          all(f > 0 for _, f in ops),
          f"compute {compute:.9f} s, {len(ops)} ops by hand {expected:.9f} s; ops below, "
          f"between and beyond the measured footprints: {regions}")


def check_serial_reductions(args, check):
    batch, classes = MLP_BATCH, MLP_LAYERS[-1][1]
    # Reductions along the innermost dimension run one addition at a time.
    dependent = 1e6
    serial = report(args.fsdpc, args.model, 1, profile(
        f"{args.work}/serial.json", extra={"scalar_flops": INFINITE, "dependent_flops": dependent}))
    steps = 2 * (2 + 1) * batch * classes + batch
    p = serial["predicted"]
    check("serial reductions", close(p["other_compute_seconds"], steps / dependent) and
          close(p["step_seconds"], steps / dependent),
          f"other compute {p['other_compute_seconds']:.9f} s; 2 x (2 + 1) x {batch} x {classes} + "
          f"{batch} = {steps} steps / {dependent:g} per s = {steps / dependent:.9f} s")


def check_divider(args, check):
    batch, classes = MLP_BATCH, MLP_LAYERS[-1][1]

    # The divider: AdamW's 3 per shard element and the softmax gradient's one
    # per logit; its time adds to the other arithmetic's.
    def loops(name, vector, divides):
        return report(args.fsdpc, args.model, 1, profile(
            f"{args.work}/{name}.json", extra={"vector_flops": vector, "vector_divides": divides}))
    divider, vector = 1e6, 1e9
    divided = loops("divider", INFINITE, divider)
    shard = sum(u["shard_elements"] for u in divided["units"])
    divisions = 3 * shard + batch * classes
    alone = divided["predicted"]["other_compute_seconds"]
    arithmetic = loops("arithmetic", vector, INFINITE)["predicted"]["other_compute_seconds"]
    both = loops("both", vector, divider)["predicted"]["other_compute_seconds"]
    check("the divider", close(alone, divisions / divider) and arithmetic > 0 and
          close(both, alone + arithmetic),
          f"divisions {alone:.9f} s; 3 x {shard} + {batch} x {classes} = {divisions} / "
          f"{divider:g} per s = {divisions / divider:.9f} s; with the other arithmetic "
          f"({arithmetic:.9f} s) {both:.9f} s")


def check_measured_collectives(args, check, gathered, reduced):
    bandwidth = LINK_BANDWIDTH
    # Measured collectives: the gather's times are 1 ns per byte of the whole
    # buffer, measured up to 1 KiB only (the MLP's are larger: along the last
    # line), the reduce-scatter's 4 ns per byte.
    gather_ns, reduce_ns = 1e-9, 4e-9
    measured = report(args.fsdpc, args.model, 2, profile(
        f"{args.work}/measured.json", bandwidth=bandwidth,
        gather_measured={"ranks": 2, "seconds_by_bytes": [[8, 8 * gather_ns],
                                                          [1024, 1024 * gather_ns]]},
        reduce_measured={"ranks": 2, "seconds_by_bytes": [[8, 8 * reduce_ns],
                                                          [1e9, 1e9 * reduce_ns]]}))
    expected = 2 * gathered * gather_ns + 2 * reduced * reduce_ns
    p = measured["predicted"]
    grid4 = report(args.fsdpc, args.model, 4, f"{args.work}/measured.json")
    sent4 = sum(u["all_gather_forward_bytes"] + u["reduce_scatter_bytes"] for u in grid4["units"])
    sent4 += sum(u["all_gather_backward_bytes"] for u in grid4["units"][1:])
    check("measured collectives", close(p["communication_seconds"], expected) and
          close(grid4["predicted"]["communication_seconds"], sent4 / bandwidth),
          f"2 ranks: communication {p['communication_seconds']:.9f} s, by hand 2 x ({gathered} B "
          f"x 1 ns + {reduced} B x 4 ns) = {expected:.9f} s; 4 ranks (not measured): "
          f"{grid4['predicted']['communication_seconds']:.9f} s, {sent4} B / {bandwidth:g} B/s")


def check_products_in_loop(args, check, gpt):
    # Key blocks in a loop: the same product FLOPs whatever the block.
    matmul = {}
    for block in [32, 16, 8]:
        path = f"{args.work}/gpt-block{block}.mlir"
        with open(path, "w") as f:
            f.write(gpt.replace("key_block 16", f"key_block {block}"))
        matmul[block] = report(args.fsdpc, path, 1,
                               f"{args.work}/products.json")["predicted"]["matmul_seconds"]
    check("products in a loop", matmul[32] > 0 and close(matmul[16], matmul[32]) and
          close(matmul[8], matmul[32]),
          "products with key blocks of 32, 16, 8: " +
          ", ".join(f"{matmul[b]:.9f} s" for b in [32, 16, 8]))


def check_fused_attention(args, check, gpt):
    # Fused attention: bf16 GPT on the CUDA target, only its rates finite.
    bf16_gpt = f"{args.work}/gpt-bf16.mlir"
    with open(bf16_gpt, "w") as f:
        f.write(gpt.replace("#fsdp.plan<", "#fsdp.plan<param_dtype = bf16, ", 1))
    shapes = re.findall(r"fsdp\.attention [^:]*causal[^:]*: tensor<(\d+)x(\d+)x(\d+)x(\d+)x", gpt)
    forward_rate, backward_rate = 3e9, 2e9
    fused = report(args.fsdpc, bf16_gpt, 1,
                   profile(f"{args.work}/attention.json",
                           extra={"attention_flops": {"forward": forward_rate,
                                                      "backward": backward_rate}}),
                   ["--target=cuda"])["predicted"]
    product = sum(2 * b * h * t * t * d / 2 for b, h, t, d in
                  (tuple(map(int, shape)) for shape in shapes))
    expected = 2 * product / forward_rate + 5 * product / backward_rate
    check("fused attention", len(shapes) == 2 and close(fused["attention_flops"], 7 * product)
          and close(fused["attention_seconds"], expected)
          and close(fused["step_seconds"], expected),
          f"{len(shapes)} attentions: {fused['attention_flops']:.0f} FLOPs (7 x {product:.0f}), "
          f"{fused['attention_seconds']:.9f} s, step {fused['step_seconds']:.9f} s, by hand "
          f"{expected:.9f} s")


def check_offload(args, check):
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--gpt", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    check = Checks()
    check_products_only(args, check)
    units, sent = check_links_only(args, check)
    check_links_across_nodes(args, check)
    gathered, reduced = check_links_by_kind(args, check, units)
    check_overlap(args, check, sent)
    check_memory_by_footprint(args, check)
    check_serial_reductions(args, check)
    check_divider(args, check)
    check_measured_collectives(args, check, gathered, reduced)
    with open(args.gpt) as f:
        gpt = f.read()
    check_products_in_loop(args, check, gpt)
    check_fused_attention(args, check, gpt)
    check_offload(args, check)
    if check.failures:
        sys.exit(f"FAILED: {', '.join(check.failures)}")
    print("PASS: the predicted step matches the hand-derived figures")


if __name__ == "__main__":
    main()
