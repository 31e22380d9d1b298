#!/usr/bin/env python3
"""Measures this machine's device profile for fsdpc's CPU target and writes it as JSON.

The profile is what `fsdpc --device-profile=FILE` predicts a training step's time from:

  GEMM (fsdprt_sgemm, fsdprt_gemm_bf16)  op_overhead + max(2*m*n*k / matmul_flops[dtype],
                                                           bytes / memory_bandwidth)
  elementwise / reduction loop            op_overhead + max(bytes / memory_bandwidth,
                                                           arith ops / vector_flops)
  all-gather / reduce-scatter of S bytes  (g-1)*latency + (g-1)/g * S / bandwidth, each
                                          kind at its own rates (all-reduce: the two)

Every rate is PER RANK with every rank of the node busy at once, the way a trainer runs
(`mpirun -np R`, one thread per rank: OPENBLAS_NUM_THREADS=1, which oneDNN follows too,
runtime/lib/cpu/OnednnMatmul.cpp). So each kernel runs on all R ranks simultaneously
(R = the physical cores, 2 on this project's machines) and the rate of one rank is kept:

  matmul_flops      build/bin/fsdp-bench-gemm --threads 1 --dtype f32|bf16 on the
                    small Llama's FFN shapes, R copies under mpirun: what fsdprt_sgemm and
                    fsdprt_gemm_bf16 run on this CPU (oneDNN, else OpenBLAS, per shape);
                    total flops / total median time
  memory_bandwidth  STREAM triad (a = b + s*c) on float arrays far larger than the
                    last-level cache; bytes read + written (as the compiler counts them)
  memory_bandwidth_by_footprint
                    triad again on footprints (all three arrays) of 16 KiB to twice the
                    last-level cache, each size repeated so that it runs from the cache
                    that holds it: a loop whose operands the op before it just wrote
                    (5-7x the DRAM rate on the machines this project runs on)
  vector_flops      a chain of separate float multiplies and adds on L1-resident arrays,
                    compiled -O3 -march=native -ffp-contract=off (the generated loops have no
                    fast-math flags, so LLVM does not fuse them into FMAs)
  vector_divides    a chain of float divisions and square roots on the same arrays: the
                    divider, about a tenth of the multiply-add rate (Adam's update has
                    three per element)
  scalar_flops      the multiply-add chain again, not vectorised: the body of a loop nest
                    whose innermost loop reduces floats in order, which LLVM cannot
                    vectorise without reassociating
  dependent_flops   one float accumulator, one addition after the other: such a loop's
                    additions wait for each other (the adder's latency)
  op_overhead       the runtime's f32 product of 1x1x1: the fixed cost of its call
  intra_node        MPI_Iallgather in place + MPI_Wait (the runtime's calls), 8 B to 64 MiB
                    in all, each size on one buffer (in cache up to the cache's size, as
                    a step whose working set fits meets it): latency from messages
                    <= 1 KiB, bandwidth from those >= 1 MiB; inter_node is the same (one
                    machine). MPI_Ireduce_scatter_block (f32 sum) fitted the same way is
                    the link's reduce_scatter (3-8x slower than the all-gather here).
                    Each kind's measured times themselves go in the profile too
                    (`measured`): a group of this many ranks takes them, which follow
                    the caches where one alpha-beta line cannot

The MPI kernels (bench/profile_kernels.c) are compiled with mpicc into a temporary
directory. The whole set runs --rounds times (9, or 2 with --quick), interleaved, and
each figure is the median over the rounds (and ranks) of the per-round medians.

    python3 bench/measure_cpu_profile.py [-o bench/out/cpu-profile.json] [--quick]

A benchmark, not a test: numbers taken while other processes are busy are noise. Rounds
during which other processes used more than 10% of the CPU are dropped when at least one
round was quiet; when none was, all are kept and the script warns.
"""

import argparse
import datetime
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_OUTPUT = os.path.join(HERE, "out", "cpu-profile.json")
DEFAULT_GEMM_BENCH = os.path.join(REPO, "build", "bin", "fsdp-bench-gemm")
KERNELS_SOURCE = os.path.join(HERE, "profile_kernels.c")

# The small Llama's FFN products (examples/generate_llama.py --dim 512 --ffn 1408, 2048
# tokens a step: bench/README.md's models), forward and backward, plus two square ones.
# M,N,K,TA,TB as fsdp-bench-gemm takes them.
GEMM_SHAPES = [
    "512,512,512,0,0",
    "1024,1024,1024,0,0",
    "2048,512,1408,0,0",   # w2 forward: Y = H . W2
    "2048,1408,512,0,0",   # w1, w3 forward: H = X . W1
    "2048,1408,512,0,1",   # w2 backward: dH = dY . W2^T
    "512,1408,2048,1,0",   # w1 backward: dW1 = X^T . dH
]
# (full, quick) settings.
SETTINGS = {
    "rounds": (9, 2),
    "gemm_reps": (15, 5),
    "gemm_warmup": (2, 1),
    "overhead_reps": (2000, 1000),
    "stream_reps": (20, 7),
    "vector_reps": (30, 10),
    "call_reps": (30, 10),
    "collective_reps": (15, 5),
}
SMALL_MESSAGE_MAX = 1024          # bytes: latency fitted from these
LARGE_MESSAGE_MIN = 1 << 20       # bytes: bandwidth fitted from these and the LLC's size up
MIN_COLLECTIVE_MAX = 64 << 20     # bytes: the largest collective, at least
MIN_STREAM_ARRAY = 64 << 20       # bytes per STREAM array, at least
BUSY_LIMIT = 0.10                 # share of the CPU others may use during a kept round


class ProfileError(Exception):
    pass


# ---------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def physical_cores():
    """Cores, not hardware threads: Open MPI gives each rank a core by default, and two
    threads of one core would share its vector units."""
    try:
        cores = set()
        physical = None
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "physical id":
                    physical = value.strip()
                elif key == "core id":
                    cores.add((physical, value.strip()))
        if cores:
            return len(cores)
    except OSError:
        pass
    return os.cpu_count() or 1


def last_level_cache_bytes():
    """The largest cache cpu0 sees (sysfs), 32 MiB where unknown."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            try:
                with open(os.path.join(base, entry, "size")) as f:
                    text = f.read().strip()
            except OSError:
                continue
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            digits = text.rstrip("KMG")
            if digits.isdigit():
                best = max(best, int(digits) * scale)
    except OSError:
        pass
    return best or 32 << 20


def power_of_two_at_least(n):
    p = 1
    while p < n:
        p *= 2
    return p


def cpu_jiffies():
    """(busy, total) CPU time of the whole machine from /proc/stat, in clock ticks."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields[:8]) - idle, sum(fields[:8])


class OtherLoad:
    """The share of the machine's CPU time that processes other than this script's
    children used while it was open (as bench/run_mlp_bench.py measures it)."""

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


def cpu_busy(seconds=0.5):
    """The share of the CPU busy over `seconds` while this process sleeps."""
    try:
        busy0, total0 = cpu_jiffies()
        time.sleep(seconds)
        busy1, total1 = cpu_jiffies()
    except (OSError, ValueError, IndexError):
        return None
    return None if total1 <= total0 else (busy1 - busy0) / (total1 - total0)


# ---------------------------------------------------------------------------
# Running things on every rank
# ---------------------------------------------------------------------------

class Machine:
    """mpirun, the compiled kernels and the environment every measurement runs in."""

    def __init__(self, args, workdir):
        self.ranks = args.ranks
        self.workdir = workdir
        self.gemm_bench = args.gemm_bench
        self.mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
        mpicc = shutil.which("mpicc")
        missing = [name for name, path in (("mpirun", self.mpirun), ("mpicc", mpicc)) if not path]
        if missing:
            raise ProfileError(f"{' and '.join(missing)} not found on PATH (apt-get install "
                               "openmpi-bin libopenmpi-dev)")
        if not os.access(self.gemm_bench, os.X_OK):
            raise ProfileError(f"{self.gemm_bench} not found: build it first "
                               "(cmake --build build --target fsdp-bench-gemm) or pass "
                               "--gemm-bench PATH")
        self.env = dict(os.environ)
        # Open MPI refuses to start as root unless told (as test/e2e/checks/trainer_checks.py).
        # One thread per rank, as a trainer runs on a node with a rank per core: oneDNN's
        # OpenMP threads follow OpenBLAS's count (OnednnMatmul.cpp), set both anyway.
        self.env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                        OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self.kernels = os.path.join(workdir, "profile_kernels")
        # -ffp-contract=off: see profile_kernels.c (vector_flops is of separate mul and add).
        # -fno-math-errno: the generated loops' square roots set no errno (math.sqrt is
        # llvm.sqrt), and GCC would not vectorise sqrtf with it.
        self.run([mpicc, "-O3", "-march=native", "-ffp-contract=off", "-fno-math-errno", "-o",
                  self.kernels,
                  KERNELS_SOURCE, "-lm"], "compiling profile_kernels.c")

    def mpirun_prefix(self):
        cmd = [self.mpirun, "-np", str(self.ranks)]
        # Only when asked for more ranks than cores: otherwise every rank gets its core,
        # Open MPI's default binding for a trainer too.
        if self.ranks > physical_cores():
            cmd.append("--oversubscribe")
        return cmd

    def run(self, cmd, what):
        result = subprocess.run(cmd, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            raise ProfileError(f"{what} failed (exit {result.returncode}): {' '.join(cmd)}\n"
                               + (result.stderr or result.stdout)[-3000:])
        return result.stdout

    def kernel(self, *args):
        """profile_kernels MODE ARGS on every rank: rank 0's JSON."""
        out = self.run(self.mpirun_prefix() + [self.kernels] + [str(a) for a in args],
                       f"profile_kernels {args[0]}")
        return json.loads(out)

    def gemm_bench_all(self, bench_args):
        """fsdp-bench-gemm BENCH_ARGS on every rank at once: each rank's JSON. Each rank
        writes its own file (their stdout would interleave)."""
        prefix = os.path.join(self.workdir, "gemm")
        script = 'out=$1; shift; exec "$@" > "$out.$OMPI_COMM_WORLD_RANK"'
        self.run(self.mpirun_prefix() + ["sh", "-c", script, "sh", prefix, self.gemm_bench,
                                         "--threads", "1"] + bench_args,
                 "fsdp-bench-gemm " + " ".join(bench_args[:4]))
        results = []
        for rank in range(self.ranks):
            with open(f"{prefix}.{rank}") as f:
                results.append(json.load(f))
        return results


# ---------------------------------------------------------------------------
# The measurements: each returns one round's figures
# ---------------------------------------------------------------------------

def gemm_round(machine, dtype, shapes, reps, warmup):
    """Per rank: the runtime's path for `dtype` on `shapes` (fsdp-bench-gemm --dtype: the
    rule of docs/Runtime.md, section 1). Returns (per-rank GFLOP/s over all shapes,
    per-shape median seconds per rank, the implementation and kernel of each shape)."""
    timing = ["--reps", str(reps), "--warmup", str(warmup)]
    runs = machine.gemm_bench_all(["--dtype", dtype] + timing + shapes)
    impl = runs[0]["impls"][0]
    # seconds[shape][rank], kernel[shape]
    seconds = [[run["shapes"][i]["impls"][impl]["median_s"] for run in runs]
               for i in range(len(shapes))]
    kernels = [f"{impl}: {runs[0]['shapes'][i]['impls'][impl]['kernel']}"
               for i in range(len(shapes))]
    total = sum(entry["flops"] for entry in runs[0]["shapes"])
    per_rank = [total / sum(seconds[i][r] for i in range(len(shapes)))
                for r in range(machine.ranks)]
    return per_rank, seconds, kernels, runs[0]


def overhead_round(machine, reps):
    """Seconds of the runtime's 1x1x1 f32 and bf16 products, per rank."""
    timing = ["--reps", str(reps), "--warmup", str(reps // 10)]
    out = {}
    for dtype in ("f32", "bf16"):
        runs = machine.gemm_bench_all(["--dtype", dtype] + timing + ["1,1,1,0,0"])
        impl = runs[0]["impls"][0]
        out[dtype] = [run["shapes"][0]["impls"][impl]["median_s"] for run in runs]
    return out


def fit_alpha_beta(sizes, times, g, large_min):
    """Ring alpha-beta, t(S) = (g-1)*alpha + (g-1)/g * S / beta: alpha from the messages
    of at most SMALL_MESSAGE_MAX bytes (where S / beta is noise), beta the median of each
    size's estimate from those of at least `large_min` bytes (where alpha is noise, and
    out of cache: the rate of groups of other sizes, whose times were not measured)."""
    small = [t for s, t in zip(sizes, times) if s <= SMALL_MESSAGE_MAX]
    alpha = statistics.median(small) / (g - 1)
    betas = [(g - 1) / g * s / (t - (g - 1) * alpha)
             for s, t in zip(sizes, times) if s >= large_min and t > (g - 1) * alpha]
    if not betas:
        raise ProfileError("no collective large enough to fit the bandwidth")
    return alpha, statistics.median(betas)


def ring_time(s, g, alpha, beta):
    return (g - 1) * alpha + (g - 1) / g * s / beta


# ---------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------

def fmt_bytes(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def spread(values):
    """'min-max' as a percentage of the median: the run-to-run spread of a figure."""
    m = statistics.median(values)
    return f"{100 * (max(values) - min(values)) / m:.1f}%" if m and len(values) > 1 else "-"


# ---------------------------------------------------------------------------

def measure_round(machine, setting, stream_mib, footprint_max, collective_max):
    """One round of every measurement; each figure per rank where there is one per rank."""
    rnd = {"gemm": {}, "gemm_shape_s": {}, "gemm_kernels": {}}
    for dtype in ("f32", "bf16"):
        rates, seconds, kernels, info = gemm_round(
            machine, dtype, GEMM_SHAPES, setting["gemm_reps"], setting["gemm_warmup"])
        rnd["gemm"][dtype], rnd["gemm_shape_s"][dtype] = rates, seconds
        rnd["gemm_kernels"][dtype], rnd["gemm_info"] = kernels, info
    rnd["overhead"] = overhead_round(machine, setting["overhead_reps"])
    result = machine.kernel("stream", stream_mib, setting["stream_reps"])
    rnd["stream_all"] = {k: result[k]["bytes_per_s_per_rank"]
                         for k in ("copy", "scale", "add", "triad")}
    rnd["footprints"] = machine.kernel("footprints", footprint_max,
                                       setting["stream_reps"])["sizes"]
    result = machine.kernel("vector", setting["vector_reps"])
    rnd["vector"] = result["mul_add"]["ops_per_s_per_rank"]
    rnd["vector_fma"] = result["fma"]["ops_per_s_per_rank"]
    rnd["divide"] = result["divide_sqrt"]["ops_per_s_per_rank"]
    rnd["scalar"] = result["scalar"]["ops_per_s_per_rank"]
    rnd["dependent"] = result["dependent"]["ops_per_s_per_rank"]
    rnd["call"] = machine.kernel("call", setting["call_reps"])["seconds_per_call"]
    rnd["collectives"] = machine.kernel("collectives", collective_max,
                                        setting["collective_reps"])["sizes"]
    return rnd


def measure(args, machine):
    q = 1 if args.quick else 0
    setting = {name: values[q] for name, values in SETTINGS.items()}
    if args.rounds:
        setting["rounds"] = args.rounds
    llc = last_level_cache_bytes()
    # Far larger than the last-level cache, which all ranks share: each rank's arrays
    # alone are twice its size.
    stream_mib = max(MIN_STREAM_ARRAY, 2 * llc) >> 20
    collective_max = power_of_two_at_least(max(MIN_COLLECTIVE_MAX, 2 * llc))
    footprint_max = power_of_two_at_least(2 * llc)

    rounds = []
    for r in range(setting["rounds"]):
        with OtherLoad() as load:
            rnd = measure_round(machine, setting, stream_mib, footprint_max, collective_max)
        rnd["other_load"] = load.fraction
        rounds.append(rnd)
        # Each round's headline figures and the other processes' load on one line: a
        # round that disagrees with the others usually had company.
        largest = rnd["collectives"][-1]
        other = f"{100 * load.fraction:.0f}%" if load.fraction is not None else "?"
        print(f"  round {r + 1}/{setting['rounds']}: GEMM f32 "
              f"{statistics.median(rnd['gemm']['f32']) / 1e9:.1f} bf16 "
              f"{statistics.median(rnd['gemm']['bf16']) / 1e9:.1f} GFLOP/s, triad "
              f"{rnd['stream_all']['triad'] / 1e9:.1f} GB/s, mul+add {rnd['vector'] / 1e9:.1f} "
              f"Gop/s, all-gather {fmt_bytes(largest['bytes'])} "
              f"{largest['all_gather_s'] * 1e3:.2f} ms; other load {other}", flush=True)

    # Other processes only ever slow a round down (on 2 cores a busy neighbour halves
    # every rate): keep the quiet rounds where there are any.
    quiet = [rnd for rnd in rounds if (rnd["other_load"] or 0.0) <= BUSY_LIMIT]
    kept = quiet or rounds
    print(f"  kept {len(kept)} of {len(rounds)} rounds"
          + ("" if quiet else f" (none had other load <= {100 * BUSY_LIMIT:.0f}%)")
          + (f" (dropped: other load > {100 * BUSY_LIMIT:.0f}%)"
             if quiet and len(quiet) < len(rounds) else ""))

    def per_rank(key, dtype):
        return [v for rnd in kept for v in rnd[key][dtype]]

    def per_round(key):
        return [rnd[key] for rnd in kept]

    # Collectives: per size the median over the rounds, then the fit.
    sizes = [entry["bytes"] for entry in kept[0]["collectives"]]

    def collective(name):
        return [statistics.median(rnd["collectives"][i][name] for rnd in kept)
                for i in range(len(sizes))]

    gather, reduce = collective("all_gather_s"), collective("reduce_scatter_s")
    footprints = [entry["footprint_bytes"] for entry in kept[0]["footprints"]]
    by_footprint = [statistics.median(rnd["footprints"][i]["bytes_per_s_per_rank"]
                                      for rnd in kept) for i in range(len(footprints))]
    large_min = max(LARGE_MESSAGE_MIN, llc)
    alpha, beta = fit_alpha_beta(sizes, gather, machine.ranks, large_min)
    reduce_alpha, reduce_beta = fit_alpha_beta(sizes, reduce, machine.ranks, large_min)
    return {
        "setting": setting, "llc": llc, "stream_mib": stream_mib, "pool": collective_max,
        "quiet": bool(quiet), "kept": len(kept),
        "gemm": {d: per_rank("gemm", d) for d in ("f32", "bf16")},
        "gemm_shape_s": {d: [rnd["gemm_shape_s"][d] for rnd in kept] for d in ("f32", "bf16")},
        "gemm_kernels": kept[-1]["gemm_kernels"], "gemm_info": kept[-1]["gemm_info"],
        "overhead": {d: per_rank("overhead", d) for d in ("f32", "bf16")},
        "stream_all": {k: [rnd["stream_all"][k] for rnd in kept]
                       for k in ("copy", "scale", "add", "triad")},
        "stream": [rnd["stream_all"]["triad"] for rnd in kept],
        "vector": per_round("vector"), "vector_fma": per_round("vector_fma"),
        "divide": per_round("divide"), "scalar": per_round("scalar"),
        "dependent": per_round("dependent"),
        "calls": per_round("call"),
        "footprints": footprints, "by_footprint": by_footprint,
        "large_min": large_min, "sizes": sizes, "gather": gather, "reduce": reduce, "alpha": alpha, "beta": beta,
        "reduce_alpha": reduce_alpha, "reduce_beta": reduce_beta,
    }


def report(m, machine):
    g = machine.ranks
    med = statistics.median
    print()
    info = m["gemm_info"]
    print(f"GEMMs, {g} ranks x 1 thread at once, per rank ({info['openblas_config'].split()[1]}"
          f" OpenBLAS, {info['onednn']}); median over ranks and kept rounds, GFLOP/s:")
    print(f"  {'M,N,K,TA,TB':22} {'f32':>8} {'bf16':>8}")
    for i, shape in enumerate(GEMM_SHAPES):
        m_, n_, k_ = (int(x) for x in shape.split(",")[:3])
        rates = {d: 2 * m_ * n_ * k_ / med(s for rnd in m["gemm_shape_s"][d] for s in rnd[i]) / 1e9
                 for d in ("f32", "bf16")}
        print(f"  {shape:22} {rates['f32']:8.1f} {rates['bf16']:8.1f}")
    for d in ("f32", "bf16"):
        kernels = sorted(set(m["gemm_kernels"][d]))
        print(f"  {d:4} all shapes (flops/time) {med(m['gemm'][d]) / 1e9:7.1f} GFLOP/s  "
              f"(spread {spread(m['gemm'][d])}; {'; '.join(kernels)})")
    print(f"memory bandwidth, STREAM on {m['stream_mib']} MiB arrays (LLC "
          f"{fmt_bytes(m['llc'])}), per rank: "
          + ", ".join(f"{k} {med(v) / 1e9:.2f}" for k, v in m["stream_all"].items())
          + f" GB/s; triad kept (spread {spread(m['stream'])})")
    print("memory bandwidth by footprint (triad from cache where it fits), per rank: "
          + ", ".join(f"{fmt_bytes(f)} {r / 1e9:.1f}" for f, r in zip(m["footprints"],
                                                                      m["by_footprint"]))
          + " GB/s")
    print(f"vector arithmetic, L1-resident, per rank: mul+add {med(m['vector']) / 1e9:.1f} "
          f"Gop/s (kept; spread {spread(m['vector'])}), fmaf {med(m['vector_fma']) / 1e9:.1f} "
          "Gflop/s (not used: generated loops do not fuse), division and square root "
          f"{med(m['divide']) / 1e9:.2f} Gop/s, scalar mul+add {med(m['scalar']) / 1e9:.2f} "
          f"Gop/s, dependent additions {med(m['dependent']) / 1e9:.2f} G/s")
    print(f"op overhead: 1x1x1 product f32 {med(m['overhead']['f32']) * 1e6:.3f} us (kept), "
          f"bf16 {med(m['overhead']['bf16']) * 1e6:.3f} us; a 16-element loop called "
          f"through a pointer {med(m['calls']) * 1e9:.1f} ns")
    alpha, beta = m["alpha"], m["beta"]
    print(f"collectives, {g} ranks, ring alpha-beta fitted to MPI_Iallgather: latency "
          f"{alpha * 1e6:.3f} us (<= {SMALL_MESSAGE_MAX} B), bandwidth {beta / 1e9:.2f} GB/s "
          f"(>= {fmt_bytes(m['large_min'])}); to MPI_Ireduce_scatter_block: latency "
          f"{m['reduce_alpha'] * 1e6:.3f} us, bandwidth {m['reduce_beta'] / 1e9:.2f} GB/s; "
          f"messages up to {fmt_bytes(m['pool'])}")
    print(f"  {'bytes':>10} {'all-gather':>12} {'model':>12} {'error':>8} "
          f"{'reduce-scatter':>15} {'error':>8}")
    worst, worst_large, worst_rs = (0.0, 0), (0.0, 0), (0.0, 0)
    for s, tg, tr in zip(m["sizes"], m["gather"], m["reduce"]):
        model = ring_time(s, g, alpha, beta)
        eg = model / tg - 1
        er = ring_time(s, g, m["reduce_alpha"], m["reduce_beta"]) / tr - 1
        worst = max(worst, (abs(eg), s))
        if s >= m["large_min"]:
            worst_large = max(worst_large, (abs(eg), s))
        worst_rs = max(worst_rs, (abs(er), s))
        print(f"  {fmt_bytes(s):>10} {tg * 1e6:10.2f}us {model * 1e6:10.2f}us {100 * eg:+7.0f}% "
              f"{tr * 1e6:13.2f}us {100 * er:+7.0f}%")
    print(f"  fit's worst relative error on the all-gathers: {100 * worst[0]:.0f}% (at "
          f"{fmt_bytes(worst[1])}); from {fmt_bytes(m['large_min'])} up: {100 * worst_large[0]:.0f}% (at "
          f"{fmt_bytes(worst_large[1])}); on the reduce-scatters: {100 * worst_rs[0]:.0f}% "
          f"(at {fmt_bytes(worst_rs[1])})")


def profile_json(m, machine):
    med = statistics.median
    def measured(times):
        return {"ranks": machine.ranks,
                "seconds_by_bytes": [[s, t] for s, t in zip(m["sizes"], times)]}

    link = {"latency": m["alpha"], "bandwidth": m["beta"], "measured": measured(m["gather"]),
            "reduce_scatter": {"latency": m["reduce_alpha"], "bandwidth": m["reduce_beta"],
                               "measured": measured(m["reduce"])}}
    return {
        "name": "cpu-measured",
        "description": f"measured by bench/measure_cpu_profile.py on {cpu_model()}, "
                       f"{datetime.date.today().isoformat()}",
        "matmul_flops": {"f32": med(m["gemm"]["f32"]), "bf16": med(m["gemm"]["bf16"])},
        "vector_flops": med(m["vector"]),
        "vector_divides": med(m["divide"]),
        "scalar_flops": med(m["scalar"]),
        "dependent_flops": med(m["dependent"]),
        "memory_bandwidth": med(m["stream"]),
        "memory_bandwidth_by_footprint": [[f, r] for f, r in zip(m["footprints"],
                                                                 m["by_footprint"])],
        "op_overhead": med(m["overhead"]["f32"]),
        "ranks_per_node": machine.ranks,
        "intra_node": dict(link),
        # One machine: no link to another node to measure.
        "inter_node": dict(link),
        "host_device_bandwidth": 0,
        # The CPU runtime's progress thread moves collectives along while the
        # step computes (runtime/lib/cpu/MpiCollectives.cpp).
        "async_collectives": True,
        "runtime_bytes": {"context": 0, "collectives": 0, "workspace": 0},
    }


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Measures this machine's CPU device profile (fsdpc --device-profile).")
    parser.add_argument("-o", "--output", default=DEFAULT_OUTPUT,
                        help="the profile to write (default: bench/out/cpu-profile.json)")
    parser.add_argument("--quick", action="store_true",
                        help="2 rounds, fewer repetitions (under a minute)")
    parser.add_argument("--rounds", type=int, default=0,
                        help="rounds of the whole set (default 9, 2 with --quick)")
    parser.add_argument("--ranks", type=int, default=physical_cores(),
                        help="ranks measured at once (default: the physical cores)")
    parser.add_argument("--gemm-bench", default=DEFAULT_GEMM_BENCH,
                        help="fsdp-bench-gemm (default: build/bin/fsdp-bench-gemm)")
    args = parser.parse_args(argv)
    if args.ranks < 2:
        parser.error("--ranks must be at least 2 (collectives need two ranks)")

    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="fsdp-cpu-profile-") as workdir:
            machine = Machine(args, workdir)
            busy = cpu_busy()
            print(f"{cpu_model()}, {physical_cores()} cores, {machine.ranks} ranks x 1 thread"
                  + (f", CPU busy before the run {100 * busy:.0f}%" if busy is not None else ""))
            m = measure(args, machine)
    except ProfileError as error:
        print(f"measure_cpu_profile: error: {error}", file=sys.stderr)
        return 1
    report(m, machine)
    profile = profile_json(m, machine)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")
    print(f"\nwrote {args.output} in {time.monotonic() - started:.0f} s")
    if not m["quiet"]:
        print(f"warning: other processes used more than {100 * BUSY_LIMIT:.0f}% of the CPU "
              "during every round: these numbers are noise, run again on an idle machine",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
