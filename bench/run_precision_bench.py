#!/usr/bin/env python3
"""The small Llama's training step in f32 and in bf16 mixed precision, against PyTorch.

In one run:
  1. writes the small Llama (examples/generate_llama.py --layers 4 --dim 512 --heads 8
     --kv-heads 8 --ffn 1408 --vocab 4096 --seq 256 --batch 8) for each --precisions
     (--param-dtype f32 | bf16) and each --ranks G (--grid G), and compiles each with
     `fsdpc model.mlir --grid=G -o trainer`; also `--emit=mlir` at grid 1, to check that
     the step's GEMM calls are the ones counted below;
  2. runs each trainer as `mpirun --oversubscribe --bind-to none -np G trainer --steps W+N
     --log-json log` on synthetic data with --threads / G OpenBLAS (and OpenMP) threads
     per rank; step time = batch / samples_per_sec of each logged step (the trainer's own
     clock: batch write + fsdp_train_step + the loss's average over the ranks), the
     median of the N steps after the W warm-up steps;
  3. runs the same model in PyTorch (bench/torch_llama.py), one process with
     torch.set_num_threads(--threads):
     eager fp32 and bf16 autocast (torch.autocast("cpu", dtype=torch.bfloat16)), each with
     the attention as the model file writes it and with F.scaled_dot_product_attention
     (is_causal=True); AdamW with the plan's hyperparameters, clip_grad_norm 1.0; one step
     = zero_grad + forward + backward + clip + optimizer.step, on random tokens;
  (2 and 3 alternate --rounds times: each result is the median over all rounds' steps;)
  4. times the step's GEMMs (the shapes derived from the model below) alone: OpenBLAS
     sgemm (bench/sgemm_bench.cpp), the f32 and bf16 GEMMs the trainers call
     (fsdp-bench-gemm --dtype f32 / bf16: the runtime's rule for this CPU, docs/Runtime.md
     section 1; --gemm-bench; skipped with a note when there is none), and
     torch.matmul in fp32 and bf16 (PyTorch's MKL / oneDNN) as a second reference;
  5. prints ms/step, tokens/s and the ratio to PyTorch at the same precision, with the
     targets: our f32 step <= PyTorch eager fp32's, our bf16 step <= PyTorch bf16
     autocast's (the faster of its two attentions), at the same thread count.

A benchmark, not a test: it exits 0 whether or not a target is met, 1 when a trainer
failed to compile or run (the rest is still measured and reported). PyTorch is optional:
without it (in the interpreter given by --torch-python) its columns say "not installed".

    python3 bench/run_precision_bench.py --fsdpc build/bin/fsdpc [--steps 10] [--warmup 3]
        [--rounds 2] [--torch-python VENV/bin/python] [--gemm-bench BIN] [--json FILE]
"""

import argparse
import collections
import dataclasses
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from run_mlp_bench import (BenchError, OtherLoad, cpu_busy, find_sgemm_bench,  # noqa: E402
                           machine_info, read_log, run)

# The plan generate_llama.py writes (AdamW; beta1 and eps are the dialect's defaults), and
# the model in PyTorch: bench/torch_llama.py (imports without torch).
import torch_llama  # noqa: E402
from torch_llama import ADAMW, CLIP_GRAD_NORM  # noqa: E402,F401

TORCH_VARIANTS = [
    # name, dtype, attention
    ("torch-f32", "f32", "explicit"),
    ("torch-f32-sdpa", "f32", "sdpa"),
    ("torch-bf16", "bf16", "explicit"),
    ("torch-bf16-sdpa", "bf16", "sdpa"),
]
TORCH_LABELS = {
    "torch-f32": "PyTorch eager fp32",
    "torch-f32-sdpa": "PyTorch eager fp32 + SDPA",
    "torch-bf16": "PyTorch bf16 autocast",
    "torch-bf16-sdpa": "PyTorch bf16 autocast + SDPA",
}


# ---------------------------------------------------------------------------
# The model's GEMMs
# ---------------------------------------------------------------------------
#
# Every product of the model file, as the compiled step performs it (row-major, C = op(A)
# op(B), op(A) M x K, op(B) K x N; a batched product is `batch` such GEMMs). A matmul
# Y[M x N] = X[M x K] . W[K x N] is, forward (N,N, M,N,K); backward dX = dY . W^T
# (N,T, M,K,N) and, for a trained W, dW = X^T . dY (T,N, K,N,M). Every activation needs
# its dX (even block 0's: it comes from the trained embedding). Per block, with
# BT = batch*seq rows:
#   q (C x C), k and v (C x KV*D), wo (C x C), w1 and w3 (C x F), w2 (F x C);
#   scores S = Q K^T: batch*H x (T,T,D) N,T; dQ = dS K (T,D,T) N,N; dK = dS^T Q (T,D,T) T,N;
#   O = P V: (T,D,T) N,N; dP = dO V^T (T,T,D) N,T; dV = P^T dO (T,D,T) T,N;
# and the head (C x V). The embedding is a gather and the rotary embedding of q and k
# (fsdp.rope) elementwise: neither is a GEMM.


def model_gemms(cfg):
    """[(name, ta, tb, batch, m, n, k, count)] of one step, identical shapes merged."""
    B, T, C, H, KV, F, V, L = (cfg[x] for x in ("batch", "seq", "dim", "heads", "kv_heads",
                                                  "ffn", "vocab", "layers"))
    D = C // H
    BT = B * T
    raw = []

    def matmul(name, m, k, n, count=1, trained=True):
        """x [m, k] W^T, W [n, k] as Hugging Face stores it (fsdp.matmul transpose_rhs)."""
        raw.append((f"{name} fwd", 0, 1, 1, m, n, k, count))
        raw.append((f"{name} dX", 0, 0, 1, m, k, n, count))
        if trained:
            raw.append((f"{name} dW", 1, 0, 1, n, k, m, count))

    for name, n in (("wq", C), ("wk", KV * D), ("wv", KV * D), ("wo", C)):
        matmul(name, BT, C, n, L)
    for name, k, n in (("w1", C, F), ("w3", C, F), ("w2", F, C)):
        matmul(name, BT, k, n, L)
    bh = B * H
    raw += [
        ("QK^T fwd", 0, 1, bh, T, T, D, L), ("QK^T dQ", 0, 0, bh, T, D, T, L),
        ("QK^T dK", 1, 0, bh, T, D, T, L),
        ("PV fwd", 0, 0, bh, T, D, T, L), ("PV dP", 0, 1, bh, T, T, D, L),
        ("PV dV", 1, 0, bh, T, D, T, L),
    ]
    matmul("head", BT, C, V)
    merged = collections.OrderedDict()
    for name, ta, tb, batch, m, n, k, count in raw:
        key = (ta, tb, batch, m, n, k)
        if key in merged:
            names, total = merged[key]
            merged[key] = (names + [name], total + count)
        else:
            merged[key] = ([name], count)
    return [(", ".join(names), *key, count) for key, (names, count) in merged.items()]


def gemm_flops(g):
    _, _, _, batch, m, n, k, count = g
    return 2 * batch * m * n * k * count


def fmt_shape(g):
    _, ta, tb, batch, m, n, k, _ = g
    return (f"{'T' if ta else 'N'}{'T' if tb else 'N'} "
            + (f"{batch}x" if batch > 1 else "") + f"{m}x{n}x{k}")


CONST_RE = re.compile(r"^\s*(%[\w.$-]+)\s*=\s*llvm\.mlir\.constant\(([^:()]+?)\s*:\s*(\w+)\)")
CALL_RE = re.compile(r"llvm\.call\s+@(fsdprt_(?:sgemm|gemm_bf16)(?:_batched)?)\(([^)]*)\)")


def compiled_gemms(lowered):
    """Counter of (ta, tb, batch, m, n, k) over the GEMM calls of the lowered module
    (constants resolved per function), the callee names, and the set of (alpha, beta);
    None if a call's shape is not made of constants."""
    shapes, callees, scalars = collections.Counter(), set(), set()
    for func in re.split(r"\n  llvm\.func ", lowered):
        constants = {}
        for line in func.splitlines():
            match = CONST_RE.match(line)
            if match:
                constants[match.group(1)] = match.group(2).strip()
        for callee, operands in CALL_RE.findall(func):
            ops = [o.strip() for o in operands.split(",")]
            batched = callee.endswith("_batched")
            idx = [0, 1, 2, 3, 4, 5] if batched else [0, 1, None, 2, 3, 4]
            try:
                vals = [1 if i is None else int(constants[ops[i]]) for i in idx]
                alpha = float(constants[ops[6 if batched else 5]])
                beta = float(constants[ops[13 if batched else 10]])
            except (KeyError, ValueError, IndexError):
                return None
            shapes[tuple(vals)] += 1
            callees.add(callee)
            scalars.add((alpha, beta))
    return shapes, callees, scalars


def check_gemms(gemms, lowered_path):
    with open(lowered_path) as f:
        found = compiled_gemms(f.read())
    if found is None:
        return "not checked (a GEMM call of the lowered step has non-constant shape operands)", None
    shapes, callees, scalars = found
    expected = collections.Counter({g[1:7]: g[7] for g in gemms})
    what = "/".join(sorted(callees)) or "no GEMM calls"
    if shapes == expected:
        msg = f"matches the compiled step ({sum(shapes.values())} calls: {what})"
    elif set(shapes) == set(expected):
        msg = (f"same shapes as the compiled step ({what}), other counts (a call inside a loop "
               f"or an outlined function is counted once): compiled {dict(shapes)}")
    else:
        msg = (f"MISMATCH: compiled {dict(shapes)} ({what}); counted {dict(expected)}")
    return msg, (scalars.pop() if len(scalars) == 1 else None)


# ---------------------------------------------------------------------------
# Our trainers
# ---------------------------------------------------------------------------


def llama_args(cfg):
    return ["--layers", str(cfg["layers"]), "--dim", str(cfg["dim"]), "--heads", str(cfg["heads"]),
            "--kv-heads", str(cfg["kv_heads"]), "--ffn", str(cfg["ffn"]), "--vocab",
            str(cfg["vocab"]), "--seq", str(cfg["seq"]), "--batch", str(cfg["batch"])]


def mpi_env(threads):
    env = dict(os.environ)
    # Open MPI refuses to start as root unless told (as test/e2e/checks/trainer_checks.py).
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    return env


def mpirun_prefix(ranks):
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if not mpirun:
        raise BenchError("mpirun not found on PATH")
    # --bind-to none: Open MPI binds each rank to one core by default when -np <= 2,
    # which would leave a 2-thread rank one core.
    return [mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(ranks)]


class Trainer:
    def __init__(self, precision, ranks, threads):
        self.precision, self.ranks = precision, ranks
        self.threads = max(1, threads // ranks)
        self.name = f"fsdpc-{precision}-{ranks}r"
        self.label = (f"fsdpc {precision:4} {ranks} rank{'s' if ranks > 1 else ' '} x "
                      f"{self.threads} thread{'s' if self.threads > 1 else ''}")
        self.path = None
        self.error = None
        self.times, self.losses = [], []

    def build(self, fsdpc, cfg, workdir):
        model = os.path.join(workdir, f"llama-{self.precision}-g{self.ranks}.mlir")
        text = run([sys.executable, os.path.join(REPO, "examples", "generate_llama.py"),
                    *llama_args(cfg), "--grid", str(self.ranks), "--param-dtype", self.precision],
                   "generate_llama.py").stdout
        with open(model, "w") as f:
            f.write(text)
        self.path = os.path.join(workdir, f"trainer-{self.precision}-g{self.ranks}")
        cmd = [fsdpc, model, f"--grid={self.ranks}", f"--cpu={cfg['cpu']}",
               f"--cpu-features={cfg['cpu_features']}", "-o", self.path]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            self.error = (f"fsdpc failed (exit {result.returncode}): {' '.join(cmd)}\n"
                          + (result.stderr + result.stdout).strip())
        return model

    def measure(self, cfg, steps, warmup, log):
        if self.error:
            return
        total = warmup + steps
        cmd = mpirun_prefix(self.ranks) + [self.path, "--steps", str(total), "--log-every",
                                           str(total), "--log-json", log]
        if os.path.exists(log):
            os.remove(log)
        result = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(self.threads))
        if result.returncode != 0:
            self.error = (f"trainer failed (exit {result.returncode}): {' '.join(cmd)}\n"
                          + (result.stderr + result.stdout).strip())
            return
        records, timed = read_log(log, warmup)
        self.times += [cfg["batch"] / r["samples_per_sec"] for r in timed]
        self.losses = [records[0]["loss"], records[-1]["loss"]]


# ---------------------------------------------------------------------------
# PyTorch (in a child process: --torch-worker SPEC OUT)
# ---------------------------------------------------------------------------


def torch_worker(spec_path, out_path):
    with open(spec_path) as f:
        spec = json.load(f)
    import torch

    torch.set_num_threads(spec["threads"])
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(),
           "cpu_capability": getattr(torch.backends.cpu, "get_cpu_capability", lambda: "?")(),
           "mkldnn": torch.backends.mkldnn.is_available(), "variants": {}, "gemm": {}}
    if spec["mode"] == "gemm":
        for dtype_name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
            out["gemm"][dtype_name] = [torch_gemm_time(torch, dtype, g, spec["warmup"], spec["reps"])
                                       for g in spec["gemms"]]
        with open(out_path, "w") as f:
            json.dump(out, f)
        return 0

    # The model, the optimizer and the step: bench/torch_llama.py.
    cfg = spec["model"]
    for name, dtype, attention in spec["variants"]:
        model = torch_llama.build_llama(torch, cfg, attention=attention, seed=0)
        opt = torch_llama.make_optimizer(
            torch, model, fused=True if spec["adamw_impl"] == "fused" else None,
            foreach=True if spec["adamw_impl"] == "foreach" else None)
        batches = torch_llama.random_batches(torch, cfg, count=4, seed=1)
        times, losses = [], []
        try:
            for step in range(spec["warmup"] + spec["steps"]):
                tokens, targets = batches[step % len(batches)]
                start = time.perf_counter()
                loss = torch_llama.train_step(torch, model, opt, tokens, targets,
                                              autocast="cpu" if dtype == "bf16" else None)
                value = loss.item()
                elapsed = time.perf_counter() - start
                losses.append(value)
                if step >= spec["warmup"]:
                    times.append(elapsed)
            out["variants"][name] = {"times": times, "losses": [losses[0], losses[-1]]}
        except Exception as error:  # noqa: BLE001 - reported, the others still run
            out["variants"][name] = {"error": f"{type(error).__name__}: {error}"}
        del model, opt
    with open(out_path, "w") as f:
        json.dump(out, f)
    return 0


def torch_gemm_time(torch, dtype, g, warmup, reps):
    """Median seconds of one call of GEMM g (a batched one as one torch.bmm) in dtype."""
    _, ta, tb, batch, m, n, k, _ = g
    a = torch.rand(batch, *((k, m) if ta else (m, k)), dtype=dtype) * 2 - 1
    b = torch.rand(batch, *((n, k) if tb else (k, n)), dtype=dtype) * 2 - 1
    a = a.transpose(1, 2) if ta else a
    b = b.transpose(1, 2) if tb else b
    if batch == 1:
        a, b = a[0], b[0]
    times = []
    for i in range(warmup + reps):
        start = time.perf_counter()
        torch.matmul(a, b)
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


class Torch:
    def __init__(self, python, threads, workdir):
        self.python, self.threads, self.workdir = python, threads, workdir
        self.version, self.note = None, None
        probe = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                               capture_output=True, text=True) if python else None
        if probe is not None and probe.returncode == 0:
            self.version = probe.stdout.strip()
        else:
            self.note = (f"PyTorch not installed (no `import torch` in {python}; "
                         "pass --torch-python VENV/bin/python)")
        self.results = {name: {"times": []} for name, _, _ in TORCH_VARIANTS}
        self.info = {}

    def call(self, spec, tag):
        spec_path = os.path.join(self.workdir, f"torch-{tag}.spec.json")
        out_path = os.path.join(self.workdir, f"torch-{tag}.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        env = dict(os.environ, OMP_NUM_THREADS=str(self.threads), MKL_NUM_THREADS=str(self.threads))
        result = subprocess.run([self.python, os.path.abspath(__file__), "--torch-worker",
                                 spec_path, out_path], capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise BenchError(f"the PyTorch worker failed (exit {result.returncode}):\n"
                             + (result.stderr + result.stdout).strip()[-4000:])
        with open(out_path) as f:
            return json.load(f)

    def measure(self, cfg, variants, steps, warmup, adamw_impl, tag):
        out = self.call({"mode": "steps", "model": cfg, "variants": variants, "steps": steps,
                         "warmup": warmup, "threads": self.threads, "adamw_impl": adamw_impl}, tag)
        self.info = {k: out[k] for k in ("torch", "threads", "cpu_capability", "mkldnn")}
        for name, res in out["variants"].items():
            if "error" in res:
                self.results[name]["error"] = res["error"]
            else:
                self.results[name]["times"] += res["times"]
                self.results[name]["losses"] = res["losses"]


# ---------------------------------------------------------------------------
# GEMM references
# ---------------------------------------------------------------------------


def gemm_bench_json(binary, extra, gemms, reps, alpha, beta, threads, what):
    """Median seconds of one call of each GEMM (a batched one: batch x one instance's)."""
    lines = "".join(f"{m},{n},{k},{ta},{tb}\n" for _, ta, tb, _, m, n, k, _ in gemms)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    cmd = [binary, *extra, "--reps", str(reps), "--warmup", "2", "--alpha", repr(alpha),
           "--beta", repr(beta)]
    result = subprocess.run(cmd, input=lines, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise BenchError(f"{what} failed (exit {result.returncode}): {' '.join(cmd)}\n"
                         + result.stderr.strip())
    try:
        data = json.loads(result.stdout)
        per_call = [s["median_s"] * g[3] for s, g in zip(data["shapes"], gemms, strict=True)]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise BenchError(f"{what}: unexpected output ({error}): {result.stdout[:500]}")
    return per_call, data


def find_bf16_gemm_bench(requested, fsdpc):
    """(binary, None) or (None, why not)."""
    if requested:
        candidates = [requested]
    else:
        bindir = os.path.dirname(os.path.abspath(fsdpc))
        candidates = [os.path.join(bindir, n) for n in ("fsdp-bench-gemm", "fsdp-bench-sgemm")]
    for binary in candidates:
        if not os.access(binary, os.X_OK):
            continue
        helptext = subprocess.run([binary, "--help"], capture_output=True, text=True)
        if "bf16" in (helptext.stdout + helptext.stderr):
            return binary, None
        if requested:
            return None, f"{binary} has no bf16 mode (its --help does not mention bf16)"
    if requested:
        return None, f"--gemm-bench: '{requested}' is not an executable"
    return None, ("no bf16 GEMM benchmark (no fsdp-bench-gemm or bf16-capable fsdp-bench-sgemm "
                  "next to fsdpc; pass --gemm-bench)")


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def median_or_none(xs):
    return statistics.median(xs) if xs else None


@dataclasses.dataclass
class PrecisionBench:
    """What the steps of bench() share: the run's settings and model, and what it measured."""
    args: argparse.Namespace
    workdir: str
    fsdpc: str
    cfg: dict
    precisions: list
    ranks: list
    gemms: list
    tokens: int
    step_flops: int
    notes: list = dataclasses.field(default_factory=list)
    trainers: list = dataclasses.field(default_factory=list)
    checks: dict = dataclasses.field(default_factory=dict)
    alpha: float = 1.0
    beta: float = 0.0
    torch_ref: Torch | None = None
    machine: dict = dataclasses.field(default_factory=dict)
    busy: float | None = None
    other: float | None = None
    gemm_cols: dict = dataclasses.field(default_factory=collections.OrderedDict)


def start_precision_bench(args, workdir):
    fsdpc = os.path.abspath(args.fsdpc)
    if not os.access(fsdpc, os.X_OK):
        raise BenchError(f"--fsdpc: '{fsdpc}' is not an executable (build it, or pass --fsdpc)")
    cfg = {k: getattr(args, k) for k in ("layers", "dim", "heads", "kv_heads", "ffn", "vocab",
                                         "seq", "batch", "cpu", "cpu_features")}
    tokens = cfg["batch"] * cfg["seq"]
    gemms = model_gemms(cfg)
    step_flops = sum(gemm_flops(g) for g in gemms)
    precisions = args.precisions.split(",")
    ranks = [int(r) for r in args.ranks.split(",")]
    return PrecisionBench(args=args, workdir=workdir, fsdpc=fsdpc, cfg=cfg, precisions=precisions,
                          ranks=ranks, gemms=gemms, tokens=tokens, step_flops=step_flops)


def build_trainers_and_check_gemms(state):
    """Step 1: models and trainers; the GEMM check at grid 1."""
    state.trainers = [Trainer(p, g, state.args.threads)
                      for p in state.precisions for g in state.ranks]
    alpha_beta = None
    for tr in state.trainers:
        model = tr.build(state.fsdpc, state.cfg, state.workdir)
        if tr.error or tr.ranks != 1:
            continue
        lowered = os.path.join(state.workdir, f"step-{tr.precision}.lowered.mlir")
        res = subprocess.run([state.fsdpc, model, "--grid=1", "--emit=mlir", "-o", lowered],
                             capture_output=True, text=True)
        if res.returncode == 0:
            state.checks[tr.precision], ab = check_gemms(state.gemms, lowered)
            alpha_beta = alpha_beta or ab
        else:
            state.checks[tr.precision] = ("not checked (fsdpc --emit=mlir failed: "
                                          f"{res.stderr.strip()[:300]})")
    state.alpha, state.beta = alpha_beta or (1.0, 0.0)


def measure_rounds(state, variants):
    """Steps 2 and 3, alternating --rounds times."""
    args, torch_ref = state.args, state.torch_ref
    for r in range(args.rounds):
        for tr in state.trainers:
            tr.measure(state.cfg, args.steps, args.warmup,
                       os.path.join(state.workdir, f"{tr.name}.{r}.jsonl"))
        if torch_ref and torch_ref.version:
            torch_ref.measure(state.cfg, variants, args.steps, args.warmup, args.torch_adamw,
                              f"steps{r}")
        print(f"round {r + 1}/{args.rounds}: "
              + ", ".join(f"{tr.name} {1e3 * statistics.median(tr.times):.1f} ms"
                          for tr in state.trainers if tr.times)
              + ("".join(f", {n} {1e3 * statistics.median(v['times']):.1f} ms"
                         for n, v in torch_ref.results.items() if v["times"])
                 if torch_ref else ""), flush=True)


def measure_gemms_alone(state):
    """Step 4: the GEMMs alone, one column (seconds per call of each GEMM) per benchmark."""
    args = state.args
    try:
        sgemm = find_sgemm_bench(args.sgemm_bench, state.fsdpc, state.workdir)
        state.gemm_cols["sgemm f32"], data = gemm_bench_json(
            sgemm, [], state.gemms, args.gemm_reps, state.alpha, state.beta, args.threads,
            "fsdp-bench-sgemm")
        state.machine["openblas_threads"] = data.get("openblas_threads")
        state.machine["openblas_config"] = data.get("openblas_config")
    except BenchError as error:
        state.notes.append(f"sgemm column skipped: {error}")
    binary, why = find_bf16_gemm_bench(args.gemm_bench, state.fsdpc)
    if binary:
        measure_runtime_gemms_alone(state, binary)
    else:
        state.notes.append(f"bf16 GEMM column skipped: {why}")
    if state.torch_ref and state.torch_ref.version:
        out = state.torch_ref.call({"mode": "gemm", "gemms": state.gemms, "warmup": 2,
                                    "reps": args.gemm_reps, "threads": args.threads}, "gemm")
        state.gemm_cols["torch f32"] = out["gemm"]["f32"]
        state.gemm_cols["torch bf16"] = out["gemm"]["bf16"]


def measure_runtime_gemms_alone(state, binary):
    """The bf16 GEMM column of the GEMM benchmark binary, and its f32 one if it has one."""
    args = state.args
    try:
        state.gemm_cols["bf16 GEMM"], _ = gemm_bench_json(
            binary, shlex.split(args.gemm_bench_args), state.gemms, args.gemm_reps, state.alpha,
            state.beta, args.threads, os.path.basename(binary))
    except BenchError as error:
        state.notes.append(f"bf16 GEMM column skipped: {error}")
    if "--dtype f32" in subprocess.run([binary, "--help"], capture_output=True,
                                       text=True).stdout:
        try:
            state.gemm_cols["f32 GEMM"], _ = gemm_bench_json(
                binary, ["--dtype", "f32"], state.gemms, args.gemm_reps, state.alpha, state.beta,
                args.threads, os.path.basename(binary))
        except BenchError as error:
            state.notes.append(f"f32 GEMM column skipped: {error}")


def result_rows(state, variants):
    """One row per trainer, then one per PyTorch variant of the precisions run."""
    torch_ref = state.torch_ref
    rows = []
    for tr in state.trainers:
        rows.append({"config": tr.name, "label": tr.label, "precision": tr.precision,
                     "ranks": tr.ranks, "threads_per_rank": tr.threads, "times_s": tr.times,
                     "step_s": median_or_none(tr.times), "losses": tr.losses, "error": tr.error})
    for name, dtype, attention in TORCH_VARIANTS:
        if (name, dtype, attention) not in variants:
            continue
        res = torch_ref.results[name] if torch_ref else {"times": []}
        error = res.get("error")
        if torch_ref is None:
            error = "skipped (--no-torch)"
        elif not torch_ref.version:
            error = "not installed"
        rows.append({"config": name, "label": TORCH_LABELS[name], "precision": dtype,
                     "ranks": 1, "threads_per_rank": state.args.threads, "times_s": res["times"],
                     "step_s": median_or_none(res["times"]), "losses": res.get("losses"),
                     "error": error})
    return rows


def torch_step_s(by_name, precision, sdpa):
    """PyTorch's step time at that precision, with SDPA or the model's attention (or None)."""
    row = by_name.get(f"torch-{precision}{'-sdpa' if sdpa else ''}")
    return row["step_s"] if row else None


def add_rates_and_ratios(rows, tokens, step_flops):
    by_name = {r["config"]: r for r in rows}
    for row in rows:
        s = row["step_s"]
        row["tokens_per_s"] = tokens / s if s else None
        row["gemm_tflops"] = step_flops / s * 1e-12 if s else None
        for key, sdpa in (("ratio_torch", False), ("ratio_torch_sdpa", True)):
            ref = torch_step_s(by_name, row["precision"], sdpa)
            row[key] = s / ref if s and ref else None


def print_run_header(state):
    args, cfg, machine, torch_ref = state.args, state.cfg, state.machine, state.torch_ref
    busy, other = state.busy, state.other
    print()
    print("small Llama training step, f32 and bf16, against PyTorch  (bench/run_precision_bench.py)")
    print(f"model: {cfg['layers']} blocks, dim {cfg['dim']}, {cfg['heads']} heads "
          f"({cfg['kv_heads']} kv), ffn {cfg['ffn']}, vocab {cfg['vocab']}; batch {cfg['batch']} x "
          f"{cfg['seq']} tokens = {state.tokens} tokens/step; AdamW lr {ADAMW['lr']:g} betas "
          f"({ADAMW['beta1']:g}, {ADAMW['beta2']:g}) wd {ADAMW['weight_decay']:g}, clip {CLIP_GRAD_NORM:g}")
    print(f"machine: nproc {machine['nproc']}, {machine['cpu']}, load average {machine.get('loadavg', '?')}"
          + (f", CPU busy before {100 * busy:.0f}%" if busy is not None else "")
          + (f", other processes during {100 * other:.0f}%" if other is not None else ""))
    print(f"trainers: fsdpc --cpu={cfg['cpu']}"
          + (f" --cpu-features={cfg['cpu_features']}" if cfg["cpu_features"] else "")
          + "".join(f", {v}={os.environ[v]}" for v in ("DNNL_MAX_CPU_ISA", "OPENBLAS_CORETYPE")
                    if v in os.environ))
    if max(busy or 0.0, other or 0.0) > 0.10:
        print("warning: other processes used the CPUs around or during the measurement: "
              "these numbers are noise; run again on an idle machine")
    print(f"threads: {args.threads} in all (OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = {args.threads} / ranks;"
          f" torch.set_num_threads({args.threads})); {args.rounds} round(s) of {args.warmup} warm-up +"
          f" {args.steps} timed steps, medians")
    if torch_ref and torch_ref.version:
        print(f"PyTorch {torch_ref.info.get('torch', torch_ref.version)}, CPU capability "
              f"{torch_ref.info.get('cpu_capability')}, {torch_ref.info.get('threads')} threads, "
              f"AdamW implementation: {args.torch_adamw}")
    print(f"GEMMs: {state.step_flops / 1e9:.2f} GFLOP per step (model, 1 rank); "
          + "; ".join(f"{p}: {c}" for p, c in state.checks.items()))


def print_result_table(rows):
    ms = lambda s: f"{s * 1e3:9.1f}" if s else f"{'-':>9}"  # noqa: E731
    rt = lambda x: f"{x:8.3f}" if x else f"{'-':>8}"  # noqa: E731
    print()
    print(f"  {'config':<34} {'ms/step':>9} {'tokens/s':>9} {'GEMM TF/s':>9} {'vs torch':>8} "
          f"{'vs SDPA':>8}  loss")
    for row in rows:
        if row["step_s"] is None:
            print(f"  {row['label']:<34} {'-':>9} {'-':>9} {'-':>9} {'-':>8} {'-':>8}  "
                  f"{(row['error'] or 'no result').splitlines()[0]}")
            continue
        loss = (f"{row['losses'][0]:.3f} -> {row['losses'][1]:.3f}" if row["losses"] else "")
        print(f"  {row['label']:<34} {ms(row['step_s'])} {row['tokens_per_s']:9.0f} "
              f"{row['gemm_tflops']:9.3f} {rt(row['ratio_torch'])} {rt(row['ratio_torch_sdpa'])}  {loss}")
    print("  (vs torch: ms/step over PyTorch's at the same precision with the model's attention;"
          " vs SDPA: with F.scaled_dot_product_attention)")


def report_targets(rows):
    """Prints whether each trainer met its target; returns them."""
    by_name = {r["config"]: r for r in rows}
    targets = []
    for row in rows:
        if not row["config"].startswith("fsdpc-") or row["step_s"] is None:
            continue
        if row["precision"] == "f32":
            ref, what = torch_step_s(by_name, "f32", False), "PyTorch eager fp32"
        else:
            refs = [x for x in (torch_step_s(by_name, "bf16", False),
                                torch_step_s(by_name, "bf16", True)) if x]
            ref, what = (min(refs) if refs else None), "PyTorch bf16 autocast (faster attention)"
        met = None if ref is None else row["step_s"] <= ref
        targets.append({"config": row["config"], "reference": what, "reference_s": ref,
                        "step_s": row["step_s"], "met": met})
        print(f"target {row['label']} <= {what}: "
              + ("no reference" if ref is None else
                 f"{1e3 * row['step_s']:.1f} vs {1e3 * ref:.1f} ms: {'MET' if met else 'NOT MET'}"))
    return targets


def report_gemms_alone(state, rows):
    """Prints the GEMMs' table and shares, if measured; returns its rows and per-column totals."""
    if not state.gemm_cols:
        return [], {}
    gemm_rows, totals = print_gemm_table(state)
    print_gemm_shares(rows, totals)
    return gemm_rows, totals


def print_gemm_table(state):
    args, gemms, gemm_cols, step_flops = state.args, state.gemms, state.gemm_cols, state.step_flops
    gemm_rows = []
    print()
    print(f"GEMMs of one step alone (1 process, {args.threads} threads; a batched product: batch x"
          f" one instance for the GEMM benchmarks, one torch.bmm for torch): ms per step (GFLOP/s)")
    header = f"  {'GEMM':<32} {'shape':<22} {'n':>3} {'GFLOP':>7}"
    for col in gemm_cols:
        header += f" {col:>17}"
    print(header)
    totals = {col: 0.0 for col in gemm_cols}
    for i, g in enumerate(gemms):
        line = f"  {g[0][:32]:<32} {fmt_shape(g):<22} {g[7]:>3} {gemm_flops(g) / 1e9:7.2f}"
        entry = {"names": g[0], "trans_a": g[1], "trans_b": g[2], "batch": g[3], "m": g[4],
                 "n": g[5], "k": g[6], "count": g[7], "flops": gemm_flops(g)}
        for col, per_call in gemm_cols.items():
            t = per_call[i] * g[7]
            totals[col] += t
            entry[col + " s/call"] = per_call[i]
            line += f" {t * 1e3:8.1f} ({gemm_flops(g) / t * 1e-9:6.1f})"
        gemm_rows.append(entry)
        print(line)
    line = f"  {'all GEMMs of the step':<32} {'':<22} {'':>3} {step_flops / 1e9:7.2f}"
    for col in gemm_cols:
        line += f" {totals[col] * 1e3:8.1f} ({step_flops / totals[col] * 1e-9:6.1f})"
    print(line)
    return gemm_rows, totals


def print_gemm_shares(rows, totals):
    """Each row's GEMM time alone over its step time (row["gemm_share"])."""
    shares = []
    for row in rows:
        col = {"f32": "f32 GEMM" if "f32 GEMM" in totals else "sgemm f32",
               "bf16": "bf16 GEMM"}[row["precision"]]
        if row["config"].startswith("torch"):
            col = f"torch {row['precision']}"
        if row["step_s"] and col in totals:
            row["gemm_share"] = totals[col] / row["step_s"]
            shares.append(f"{row['config']} {100 * row['gemm_share']:.0f}% ({col})")
    if shares:
        print("  GEMM time alone / step time: " + ", ".join(shares))


def write_json_report(state, rows, targets, gemm_rows, totals):
    args, torch_ref, machine = state.args, state.torch_ref, state.machine
    out = {"model": state.cfg, "tokens_per_step": state.tokens, "step_gemm_flops": state.step_flops,
           "adamw": ADAMW, "clip_grad_norm": CLIP_GRAD_NORM, "threads": args.threads,
           "steps": args.steps, "warmup": args.warmup, "rounds": args.rounds,
           "gemm_check": state.checks, "results": rows, "targets": targets,
           "gemm": gemm_rows, "gemm_totals_s": totals,
           "gemm_alpha_beta": [state.alpha, state.beta],
           "torch": (torch_ref.info or {"version": torch_ref.version}) if torch_ref else None,
           "torch_adamw": args.torch_adamw, "notes": state.notes, "machine": machine}
    if state.busy is not None:
        machine["cpu_busy_before"] = round(state.busy, 3)
    if state.other is not None:
        machine["other_load_during"] = round(state.other, 3)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")


def bench(args, workdir):
    state = start_precision_bench(args, workdir)
    build_trainers_and_check_gemms(state)
    state.torch_ref = None if args.no_torch else Torch(args.torch_python, args.threads, workdir)
    if state.torch_ref and state.torch_ref.note:
        state.notes.append(state.torch_ref.note)
    variants = [v for v in TORCH_VARIANTS if v[1] in state.precisions]

    # 2 and 3, alternating --rounds times; 4. the GEMMs alone.
    state.machine = machine_info()
    state.busy = cpu_busy()
    with OtherLoad() as load:
        measure_rounds(state, variants)
        if not args.no_gemm:
            measure_gemms_alone(state)
    state.other = load.fraction

    # 5. Report.
    rows = result_rows(state, variants)
    add_rates_and_ratios(rows, state.tokens, state.step_flops)
    print_run_header(state)
    print_result_table(rows)
    targets = report_targets(rows)
    gemm_rows, totals = report_gemms_alone(state, rows)
    for tr in state.trainers:
        if tr.error:
            print(f"\n{tr.label} FAILED:\n{tr.error}")
    for note in state.notes:
        print(f"note: {note}")
    if args.json:
        write_json_report(state, rows, targets, gemm_rows, totals)
    return 1 if any(tr.error is not None for tr in state.trainers) else 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--torch-worker"]:
        return torch_worker(argv[1], argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fsdpc", default=os.path.join(REPO, "build", "bin", "fsdpc"))
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--ffn", type=int, default=1408)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--cpu", default="native",
                    help="the CPU the trainers are built for (fsdpc --cpu; default native)")
    ap.add_argument("--cpu-features", default="",
                    help="fsdpc --cpu-features: -avx512bf16,-amx-bf16 (with "
                         "DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI) is a Xeon without BF16 on a "
                         "machine with it")
    ap.add_argument("--precisions", default="f32,bf16", help="of f32,bf16 (default both)")
    ap.add_argument("--ranks", default="1,2", help="grids to run (default 1,2)")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads in all: per rank threads / ranks; PyTorch's (default 2)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per round (default 10)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed first steps (default 3)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    ap.add_argument("--torch-python", default=os.environ.get("FSDP_BENCH_TORCH_PYTHON", sys.executable),
                    help="a Python with torch (default $FSDP_BENCH_TORCH_PYTHON, else this one)")
    ap.add_argument("--torch-adamw", choices=["default", "foreach", "fused"], default="default",
                    help="torch.optim.AdamW's implementation (default: PyTorch's choice)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-gemm", action="store_true", help="skip the GEMM references")
    ap.add_argument("--sgemm-bench", default=None,
                    help="fsdp-bench-sgemm (default: next to fsdpc, else built with c++)")
    ap.add_argument("--gemm-bench", default=None,
                    help="a bf16 GEMM benchmark with sgemm_bench's interface (default: "
                         "fsdp-bench-gemm next to fsdpc if its --help mentions bf16)")
    ap.add_argument("--gemm-bench-args", default="--dtype bf16",
                    help="its arguments that select bf16 (default '--dtype bf16')")
    ap.add_argument("--gemm-reps", type=int, default=10)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if not set(args.precisions.split(",")) <= {"f32", "bf16"}:
        ap.error("--precisions: f32 and/or bf16")
    for name in ("steps", "rounds", "threads", "gemm_reps", "layers"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.dim % args.heads or args.heads % args.kv_heads:
        ap.error("--dim must be a multiple of --heads, --heads of --kv-heads")
    temp = None
    if args.workdir:
        workdir = os.path.abspath(args.workdir)
        os.makedirs(workdir, exist_ok=True)
    else:
        workdir = temp = tempfile.mkdtemp(prefix="fsdp-bench-precision-")
    try:
        return bench(args, workdir)
    except BenchError as error:
        print(f"run_precision_bench: error: {error}", file=sys.stderr)
        return 1
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
