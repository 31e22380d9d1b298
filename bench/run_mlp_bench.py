#!/usr/bin/env python3
"""Benchmarks the compiled MLP training step against OpenBLAS sgemm on the same GEMMs.

In one run:
  1. writes the benchmark model (bench/mlp_width.py: examples/mlp.mlir's 3-layer MLP at
     --width, --batch, grid [1]);
  2. compiles it with fsdpc (--grid=1) into a trainer, and also to MLIR (--emit=mlir) to
     check that the step calls fsdprt_sgemm on exactly the GEMMs counted below;
  3. runs the trainer for --warmup + --steps steps on synthetic data with --log-json and
     takes the median step time of the timed steps (step time = batch / samples_per_sec,
     the trainer's own per-step clock: batch write + fsdp_train_step);
  4. runs the sgemm benchmark (bench/sgemm_bench.cpp) on those GEMM shapes, same
     transposes, same alpha and beta, same OpenBLAS, same default thread count;
  (3 and 4 alternate --rounds times; the step time is the median over every timed step
  of every round, each shape's sgemm time the median over the rounds;)
  5. prints step GFLOP/s (GEMM flops / step time) against sgemm GFLOP/s over the same
     shapes (GEMM flops / sum of the per-shape median sgemm times) and their ratio, with
     the target (ratio >= 0.60).

A benchmark, not a test: it exits 0 whether or not the target is met (1 only on errors).

    python3 bench/run_mlp_bench.py --fsdpc build/bin/fsdpc [--width 1024] [--batch 256]
"""

import argparse
import dataclasses
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import mlp_width  # noqa: E402

TARGET_RATIO = 0.60


class BenchError(Exception):
    pass


# ---------------------------------------------------------------------------
# FLOP counting
# ---------------------------------------------------------------------------
#
# Layer i of the MLP computes Y_i = X_i . W_i (+ bias, ReLU), with X_i [B x in_i],
# W_i [in_i x out_i] stored row-major as the right operand, Y_i [B x out_i]. The
# compiled step (fsdp-autodiff + fsdp-lower-gemms) performs exactly these GEMMs, each a
# row-major fsdprt_sgemm call (TA, TB, M, N, K), counted 2*M*N*K flops:
#
#   forward,  each layer:          Y_i  = X_i . W_i      (N, N, B,    out_i, in_i)
#   backward, each layer but fc1:  dX_i = dY_i . W_i^T   (N, T, B,    in_i,  out_i)
#   backward, each layer:          dW_i = X_i^T . dY_i   (T, N, in_i, out_i, B)
#
# The gradient of fc1's input is not computed (the input is data, not a parameter), so
#   step flops = 3 * 2*B*sum_i(in_i*out_i) - 2*B*in_1*out_1
#   (width 1024, batch 256: 3 * 1.079 GFLOP - 0.537 GFLOP = 2.700 GFLOP).
# Bias adds, ReLU, cross-entropy, the bias gradients (column sums) and the AdamW update
# are O(B*width + params) elementwise work: not counted in the flops, but their time is
# part of the step time (that is the point of the comparison). The list is checked
# against the fsdprt_sgemm calls of the compiled step (see compiled_gemms).


def step_gemms(batch, dims):
    """The (name, TA, TB, M, N, K) GEMMs of one training step, in execution order."""
    forward = []
    backward = []
    for i, (k, n) in enumerate(dims, start=1):
        forward.append((f"fc{i} fwd  Y=X.W", 0, 0, batch, n, k))
    for i in range(len(dims), 0, -1):
        k, n = dims[i - 1]
        if i > 1:
            backward.append((f"fc{i} bwd dX=dY.W^T", 0, 1, batch, k, n))
        backward.append((f"fc{i} bwd dW=X^T.dY", 1, 0, k, n, batch))
    return forward + backward


def gemm_flops(gemm):
    _, _, _, m, n, k = gemm
    return 2 * m * n * k


# ---------------------------------------------------------------------------
# Reading the compiled step's fsdprt_sgemm calls (a cross-check of the list above)
# ---------------------------------------------------------------------------

CONST_RE = re.compile(r"^\s*(%[\w.$-]+)\s*=\s*llvm\.mlir\.constant\(([^:()]+?)\s*:\s*(\w+)\)")
CALL_RE = re.compile(r"llvm\.call\s+@(fsdprt_sgemm(?:_batched)?)\(([^)]*)\)")


def compiled_gemms(lowered_mlir):
    """(calls, batched_calls, alphas, betas) from fsdp_train_step, or None if unreadable.

    calls: sorted (TA, TB, M, N, K) of every fsdprt_sgemm call whose operands are
    constants. A call inside a loop would be listed once; the MLP's step has none."""
    start = lowered_mlir.find("llvm.func @fsdp_train_step(")
    if start < 0:
        return None
    end = lowered_mlir.find("\n  llvm.func ", start + 1)
    body = lowered_mlir[start:end if end >= 0 else len(lowered_mlir)]
    constants = {}
    for line in body.splitlines():
        match = CONST_RE.match(line)
        if match:
            constants[match.group(1)] = match.group(2).strip()
    calls, batched, alphas, betas = [], 0, set(), set()
    for name, operands in CALL_RE.findall(body):
        if name == "fsdprt_sgemm_batched":
            batched += 1
            continue
        ops = [o.strip() for o in operands.split(",")]
        if len(ops) != 13:
            return None
        try:
            ta, tb, m, n, k = (int(constants[o]) for o in ops[:5])
            alphas.add(float(constants[ops[5]]))
            betas.add(float(constants[ops[10]]))
        except (KeyError, ValueError):
            return None
        calls.append((ta, tb, m, n, k))
    return sorted(calls), batched, alphas, betas


# ---------------------------------------------------------------------------
# Running things
# ---------------------------------------------------------------------------


def run(cmd, what, capture=True, env=None):
    try:
        result = subprocess.run(cmd, capture_output=capture, text=True, env=env)
    except OSError as error:
        raise BenchError(f"{what}: cannot run {cmd[0]}: {error}")
    if result.returncode != 0:
        detail = (result.stderr or result.stdout or "").strip() if capture else ""
        raise BenchError(f"{what} failed (exit {result.returncode}): {' '.join(cmd)}\n{detail}")
    return result


def find_sgemm_bench(requested, fsdpc, workdir):
    """--sgemm-bench, else fsdp-bench-sgemm next to fsdpc, else built here with c++."""
    if requested:
        if not os.access(requested, os.X_OK):
            raise BenchError(f"--sgemm-bench: '{requested}' is not an executable")
        return requested
    beside = os.path.join(os.path.dirname(os.path.abspath(fsdpc)), "fsdp-bench-sgemm")
    if os.access(beside, os.X_OK):
        return beside
    compiler = shutil.which("c++")
    if not compiler:
        raise BenchError("no --sgemm-bench, no fsdp-bench-sgemm next to fsdpc and no c++ to build it")
    out = os.path.join(workdir, "fsdp-bench-sgemm")
    cmd = [compiler, "-O2", "-std=c++17", os.path.join(HERE, "sgemm_bench.cpp")]
    for include in ("/usr/include/x86_64-linux-gnu/openblas-pthread", "/usr/include/openblas"):
        if os.path.exists(os.path.join(include, "cblas.h")):
            cmd += ["-I", include]
            break
    cmd += ["-lopenblas", "-o", out]
    run(cmd, "building sgemm_bench")
    return out


def read_log(path, warmup):
    records = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and "step" in json.loads(line):
                records.append(json.loads(line))
    timed = [r for r in records if r["step"] > warmup]
    if not timed:
        raise BenchError(f"{path}: no timed steps after the {warmup} warm-up steps")
    return records, timed


def cpu_jiffies():
    """(busy, total) CPU time of the whole machine from /proc/stat, in clock ticks."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return total - idle, total


def cpu_busy(seconds=0.5):
    """Fraction of the machine's CPU time spent busy over `seconds` while this process
    sleeps: other load, which makes every number here noisy. None if unknown."""
    try:
        busy0, total0 = cpu_jiffies()
        time.sleep(seconds)
        busy1, total1 = cpu_jiffies()
    except (OSError, ValueError, IndexError):
        return None
    return None if total1 <= total0 else (busy1 - busy0) / (total1 - total0)


class OtherLoad:
    """Measures the CPU time that processes other than this one's children (the trainer
    and sgemm_bench, OpenBLAS's threads included) used while it was open, as a fraction
    of the machine's CPU time."""

    def __enter__(self):
        self.fraction = None
        try:
            self.start = (cpu_jiffies(), self.children_seconds())
        except (OSError, ValueError, IndexError):
            self.start = None
        return self

    def __exit__(self, *exc):
        if self.start is None:
            return False
        try:
            (busy0, total0), child0 = self.start
            busy1, total1 = cpu_jiffies()
            child1 = self.children_seconds()
        except (OSError, ValueError, IndexError):
            return False
        tick = os.sysconf("SC_CLK_TCK")
        if total1 > total0:
            other = (busy1 - busy0) / tick - (child1 - child0)
            self.fraction = max(0.0, other / ((total1 - total0) / tick))
        return False

    @staticmethod
    def children_seconds():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime


def machine_info():
    info = {"nproc": os.cpu_count()}
    try:
        info["nproc_available"] = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    info["cpu"] = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        info["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "GOTO_NUM_THREADS"):
        if os.environ.get(var):
            info[var] = os.environ[var]
    return info


def fmt_shape(gemm):
    _, ta, tb, m, n, k = gemm
    return f"{'T' if ta else 'N'}{'T' if tb else 'N'} {m}x{n}x{k}"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="MLP training step GFLOP/s against OpenBLAS sgemm on the same GEMMs.")
    parser.add_argument("--width", type=int, default=1024, help="hidden (and input) width, default 1024")
    parser.add_argument("--batch", type=int, default=256, help="global batch, default 256")
    parser.add_argument("--steps", type=int, default=20, help="timed training steps, default 20")
    parser.add_argument("--warmup", type=int, default=3, help="untimed first steps, default 3")
    parser.add_argument("--fsdpc", default=os.path.join(REPO, "build", "bin", "fsdpc"),
                        help="the fsdpc to benchmark (default: build/bin/fsdpc)")
    parser.add_argument("--sgemm-bench", default=None,
                        help="sgemm benchmark binary (default: fsdp-bench-sgemm next to fsdpc, "
                             "else built from bench/sgemm_bench.cpp with c++)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="trainer + sgemm runs, alternating (default 3)")
    parser.add_argument("--sgemm-reps", type=int, default=20, help="timed sgemm rounds, default 20")
    parser.add_argument("--workdir", default=None,
                        help="where the model, trainer and logs go (default: a temporary directory, removed)")
    parser.add_argument("--json", default=None, help="also write the results as JSON to this file")
    args = parser.parse_args(argv)
    for name in ("width", "batch", "steps", "rounds", "sgemm_reps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.warmup < 0:
        parser.error("--warmup must be >= 0")

    temp = None
    if args.workdir:
        workdir = os.path.abspath(args.workdir)
        os.makedirs(workdir, exist_ok=True)
    else:
        temp = tempfile.mkdtemp(prefix="fsdp-bench-mlp-")
        workdir = temp
    try:
        return bench(args, workdir)
    except BenchError as error:
        print(f"run_mlp_bench: error: {error}", file=sys.stderr)
        return 1
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)


def measure_round(args, trainer, sgemm_bench, shape_lines, alpha, beta, log):
    """One trainer run (warm-up + timed steps), then one sgemm_bench run on the shapes.
    Returns the trainer's log records, the timed step times and sgemm_bench's JSON."""
    total_steps = args.warmup + args.steps
    run([trainer, "--steps", str(total_steps), "--log-every", str(total_steps),
         "--log-json", log], "trainer")
    records, timed = read_log(log, args.warmup)
    step_times = [args.batch / rec["samples_per_sec"] for rec in timed]

    result = subprocess.run(
        [sgemm_bench, "--reps", str(args.sgemm_reps), "--warmup", "3",
         "--alpha", repr(alpha), "--beta", repr(beta)],
        input=shape_lines, capture_output=True, text=True)
    if result.returncode != 0:
        raise BenchError(f"sgemm_bench failed (exit {result.returncode}): {result.stderr.strip()}")
    try:
        sgemm = json.loads(result.stdout)
    except json.JSONDecodeError as error:
        raise BenchError(f"sgemm_bench printed no JSON: {error}\n{result.stdout}")
    return records, step_times, sgemm


@dataclasses.dataclass
class MlpBench:
    """What the steps of bench() share: the model, its trainer and the check of its GEMMs,
    and what the rounds measured."""
    args: argparse.Namespace
    workdir: str
    fsdpc: str
    sgemm_bench: str
    dims: list
    model: str
    gemms: list
    total_flops: int
    trainer: str = ""
    check: str = ""
    # What fsdp-lower-gemms passes (C zero-filled first), if unreadable.
    alpha: float = 1.0
    beta: float = 1.0
    notes: list = dataclasses.field(default_factory=list)
    machine: dict = dataclasses.field(default_factory=dict)
    busy: float | None = None
    other: float | None = None
    step_times: list = dataclasses.field(default_factory=list)
    rounds: list = dataclasses.field(default_factory=list)
    first_loss: float | None = None
    last_loss: float | None = None
    sgemm: dict | None = None
    shape_medians: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class StepVsSgemm:
    """The rounds' figures: the step's time and the same GEMMs' in sgemm alone."""
    step_s: float
    step_gflops: float
    shape_s: list
    sgemm_s: float
    sgemm_gflops: float
    ratio: float
    met: bool
    round_ratios: list


def write_mlp_model(args, workdir):
    """Step 1: the model. Returns the MlpBench with it and its GEMMs."""
    fsdpc = args.fsdpc
    if not os.access(fsdpc, os.X_OK):
        raise BenchError(f"--fsdpc: '{fsdpc}' is not an executable (build it, or pass --fsdpc)")
    sgemm_bench = find_sgemm_bench(args.sgemm_bench, fsdpc, workdir)

    dims = mlp_width.layer_dims(args.width)
    model = os.path.join(workdir, f"mlp_w{args.width}_b{args.batch}.mlir")
    with open(model, "w") as f:
        f.write(mlp_width.generate(args.width, args.batch))
    gemms = step_gemms(args.batch, dims)
    total_flops = sum(gemm_flops(g) for g in gemms)
    return MlpBench(args=args, workdir=workdir, fsdpc=fsdpc, sgemm_bench=sgemm_bench, dims=dims,
                    model=model, gemms=gemms, total_flops=total_flops)


def compile_and_check_gemms(state):
    """Step 2: compile; read the step's GEMM calls back from the lowered MLIR."""
    fsdpc, model, workdir = state.fsdpc, state.model, state.workdir
    state.trainer = os.path.join(workdir, "trainer")
    run([fsdpc, model, "--grid=1", "-o", state.trainer], "fsdpc")
    lowered_path = os.path.join(workdir, "step.lowered.mlir")
    run([fsdpc, model, "--grid=1", "--emit=mlir", "-o", lowered_path], "fsdpc --emit=mlir")
    with open(lowered_path) as f:
        compiled = compiled_gemms(f.read())
    expected = sorted(g[1:] for g in state.gemms)
    if compiled is None:
        state.check = "not checked (could not read the fsdprt_sgemm calls of the lowered step)"
    else:
        calls, batched, alphas, betas = compiled
        if len(alphas) == 1 and len(betas) == 1:
            state.alpha, state.beta = alphas.pop(), betas.pop()
        if calls == expected and batched == 0:
            state.check = f"matches the compiled step ({len(calls)} fsdprt_sgemm calls)"
        else:
            state.check = (f"MISMATCH: the compiled step calls fsdprt_sgemm on {calls} "
                           f"(+{batched} batched calls); counted {expected}")
            state.notes.append("the GEMM list does not match the compiled step: FLOPs may be off")


def measure_rounds(state):
    """Steps 3 and 4, --rounds times: train (warm-up + timed steps), then sgemm on the same
    shapes in the step's order. Alternating the two spreads any outside load over both."""
    args = state.args
    shape_lines = "".join(f"{m},{n},{k},{ta},{tb}\n" for _, ta, tb, m, n, k in state.gemms)
    state.shape_medians = [[] for _ in state.gemms]
    for r in range(args.rounds):
        records, round_steps, state.sgemm = measure_round(
            args, state.trainer, state.sgemm_bench, shape_lines, state.alpha, state.beta,
            os.path.join(state.workdir, f"train.{r}.jsonl"))
        state.first_loss, state.last_loss = records[0]["loss"], records[-1]["loss"]
        state.step_times += round_steps
        for i, shape in enumerate(state.sgemm["shapes"]):
            state.shape_medians[i].append(shape["median_s"])
        state.rounds.append({"step_s": statistics.median(round_steps),
                             "sgemm_s": state.sgemm["total_median_s"], "sgemm": state.sgemm})


def step_vs_sgemm(state):
    # Step: the median of every timed step of every round. sgemm: per shape, the median
    # over the rounds of its per-round median; summed over the step's GEMMs.
    step_s = statistics.median(state.step_times)
    step_gflops = state.total_flops / step_s * 1e-9
    shape_s = [statistics.median(m) for m in state.shape_medians]
    sgemm_s = sum(shape_s)
    sgemm_gflops = state.total_flops / sgemm_s * 1e-9
    ratio = step_gflops / sgemm_gflops
    met = ratio >= TARGET_RATIO
    round_ratios = [rd["sgemm_s"] / rd["step_s"] for rd in state.rounds]
    return StepVsSgemm(step_s=step_s, step_gflops=step_gflops, shape_s=shape_s, sgemm_s=sgemm_s,
                       sgemm_gflops=sgemm_gflops, ratio=ratio, met=met, round_ratios=round_ratios)


def record_openblas_and_load(state):
    machine = state.machine
    machine["openblas_threads"] = state.sgemm["openblas_threads"]
    machine["openblas_config"] = state.sgemm["openblas_config"]
    if state.busy is not None:
        machine["cpu_busy_before"] = round(state.busy, 3)
    if state.other is not None:
        machine["other_load_during"] = round(state.other, 3)


def fmt_ms(s):
    return f"{s * 1e3:.3f} ms"


def print_run_header(state):
    args, machine, dims, sgemm = state.args, state.machine, state.dims, state.sgemm
    busy, other = state.busy, state.other
    print("MLP training step vs OpenBLAS sgemm  (bench/run_mlp_bench.py)")
    print(f"machine: nproc {machine['nproc']}"
          + (f" (available {machine['nproc_available']})" if "nproc_available" in machine else "")
          + f", {machine['cpu']}, load average {machine.get('loadavg', '?')}"
          + (f", CPU busy before the run {100 * busy:.0f}%" if busy is not None else "")
          + (f", other processes during it {100 * other:.0f}%" if other is not None else ""))
    if max(busy or 0.0, other or 0.0) > 0.10:
        print("warning: other processes used the CPUs around or during the measurement: "
              "these numbers are noise; run again on an idle machine")
    print(f"OpenBLAS: {machine['openblas_threads']} threads, {machine['openblas_config']}"
          + "".join(f", {v}={machine[v]}" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                     "GOTO_NUM_THREADS") if v in machine))
    print(f"model: {dims[0][0]} -> {args.width} -> {args.width} -> {dims[-1][1]}, batch {args.batch},"
          f" grid [1], AdamW; fsdpc {state.fsdpc}")
    print(f"GEMMs per step: {len(state.gemms)}, {state.total_flops / 1e9:.4f} GFLOP; {state.check}")
    print(f"trainer: {args.rounds} run(s) of {args.warmup} warm-up + {args.steps} timed steps"
          f" (synthetic data); loss {state.first_loss:.4f} -> {state.last_loss:.4f}")
    print(f"sgemm: {args.rounds} run(s) of {sgemm['warmup']} warm-up + {sgemm['reps']} timed"
          f" rounds over the shapes, alpha {sgemm['alpha']:g}, beta {sgemm['beta']:g}")


def print_gemm_times(gemms, shape_s):
    print()
    print(f"  {'GEMM':<20} {'shape TA TB MxNxK':<22} {'GFLOP':>8} {'sgemm time':>12} {'sgemm GFLOP/s':>14}")
    for g, t in zip(gemms, shape_s):
        print(f"  {g[0]:<20} {fmt_shape(g):<22} {gemm_flops(g) / 1e9:>8.4f}"
              f" {fmt_ms(t):>12} {gemm_flops(g) / t * 1e-9:>14.1f}")


def print_step_vs_sgemm(state, figures):
    step_s, sgemm_s, step_times = figures.step_s, figures.sgemm_s, state.step_times
    print()
    rows = [
        ("step time (median)", fmt_ms(step_s)
         + f"   (min {fmt_ms(min(step_times))}, max {fmt_ms(max(step_times))})"),
        ("sgemm time, same GEMMs",
         fmt_ms(sgemm_s) + f"   ({100 * sgemm_s / step_s:.1f}% of the step)"),
        ("step GFLOP/s", f"{figures.step_gflops:.1f}"),
        ("sgemm GFLOP/s", f"{figures.sgemm_gflops:.1f}"),
        ("ratio step / sgemm", f"{figures.ratio:.3f}"),
        ("target", f">= {TARGET_RATIO:.2f}: {'MET' if figures.met else 'NOT MET'}"),
    ]
    if len(state.rounds) > 1:
        rows.insert(5, ("ratio per round", ", ".join(f"{x:.3f}" for x in figures.round_ratios)))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


def write_json_report(state, figures):
    args, fig = state.args, figures
    out = {
        "width": args.width, "batch": args.batch, "dims": state.dims,
        "steps": args.steps, "warmup": args.warmup, "loss_first": state.first_loss,
        "loss_last": state.last_loss,
        "gemms": [{"name": g[0], "trans_a": g[1], "trans_b": g[2], "m": g[3], "n": g[4],
                   "k": g[5], "flops": gemm_flops(g)} for g in state.gemms],
        "step_flops": state.total_flops, "gemm_check": state.check,
        "step_times_s": state.step_times, "step_s": fig.step_s, "step_gflops": fig.step_gflops,
        "sgemm_shape_s": fig.shape_s, "sgemm_s": fig.sgemm_s, "sgemm_gflops": fig.sgemm_gflops,
        "rounds": state.rounds, "round_ratios": fig.round_ratios,
        "ratio": fig.ratio, "target": TARGET_RATIO, "target_met": fig.met, "machine": state.machine,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")


def bench(args, workdir):
    state = write_mlp_model(args, workdir)
    compile_and_check_gemms(state)

    state.machine = machine_info()
    state.busy = cpu_busy()
    with OtherLoad() as load:
        measure_rounds(state)
    state.other = load.fraction
    figures = step_vs_sgemm(state)

    # 5. Report.
    record_openblas_and_load(state)
    print_run_header(state)
    print_gemm_times(state.gemms, figures.shape_s)
    print_step_vs_sgemm(state, figures)
    for note in state.notes:
        print(f"note: {note}")
    if args.json:
        write_json_report(state, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
