#!/usr/bin/env python3
"""End-to-end tests of trainers linked from FakeModel.c and the runtime.

    trainer_test.py --trainer T1 --trainer-2 T2 --mpiexec MPIEXEC [--np-flag -n]
                    [--mpiexec-flags=F1;F2] CASE

T1 is the fake model on one rank, T2 the same model compiled for grid [2]
(run under MPIEXEC). Each CASE is one ctest test. The model facts below must
match FakeModel.c.
"""

import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

import safetensors.numpy

import spec_reference as spec

BATCH, FEATURES, CLASSES = 16, 8, 4
PARAMS = [
    ("linear.w", [8, 4], {"kind": "fan_in_uniform", "scale": 1.0}),
    ("linear.b", [4], {"kind": "normal", "mean": 0.0, "std": 0.1}),
]
PARAM_BYTES = 4 * (8 * 4 + 4)
ARENA_BYTES = 1792  # one rank
ARENA_BYTES_2 = 1344  # each of two ranks
PROGRESS = re.compile(r"^step (\d+) \| loss (\d+\.\d{6}) \| lr (\d\.\d{3}e[-+]\d\d) \| (\d+\.\d) samples/s \| "
                      r"mem (\d+\.\d) MiB$")
ARENA = re.compile(r"^arena: planned peak (\d+) bytes, measured high-water mark (\d+) bytes on every rank$")
MPI_TIMEOUT = 120
# Losses and parameters of two ranks match one rank's up to the order of float sums.
RELATIVE = 1e-6

CASES = {}
OPTIONS = None


def case(function):
    CASES[function.__name__] = function
    return function


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


def run(trainer, *args):
    return subprocess.run([trainer, *map(str, args)], capture_output=True, text=True, timeout=120)


def mpi_environment():
    env = dict(os.environ)
    # Open MPI refuses to start as root unless told (CI runs as root).
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def mpi_command(ranks, *command):
    return [OPTIONS.mpiexec, OPTIONS.np_flag, str(ranks), *OPTIONS.mpiexec_flags, *map(str, command)]


def mpirun(ranks, *command):
    """Runs `command` (a trainer and its flags) on `ranks` ranks."""
    return subprocess.run(mpi_command(ranks, *command), capture_output=True, text=True,
                          timeout=MPI_TIMEOUT, env=mpi_environment())


def expect_success(result):
    expect(result.returncode == 0,
           f"exit status {result.returncode}, stderr:\n{result.stderr}")


def expect_error(result, pattern):
    """Exit status 1 and exactly one line `trainer: error: ...` matching `pattern`."""
    expect(result.returncode == 1, f"expected exit status 1, got {result.returncode}:\n{result.stderr}")
    lines = result.stderr.splitlines()
    expect(len(lines) == 1, f"expected one line on stderr, got:\n{result.stderr}")
    expect(lines[0].startswith("trainer: error: "), f"not an error line: {lines[0]!r}")
    expect(re.search(pattern, lines[0]), f"{lines[0]!r} does not match {pattern!r}")


def read_log(path):
    """The per-step entries of a --log-json file (without the final arena line)."""
    with open(path) as f:
        entries = [json.loads(line) for line in f]
    expect(entries and "planned_peak_bytes" in entries[-1], f"no arena line at the end of {path}")
    return entries[:-1]


def close(a, b):
    return abs(a - b) <= RELATIVE * max(abs(a), abs(b))


def close_parameter(a, b):
    """Within 1e-6, relative for values beyond 1: a parameter near 0 keeps the
    absolute rounding error of the (differently ordered) gradient sums."""
    return abs(a - b) <= RELATIVE * max(1.0, abs(a), abs(b))


def read_floats(path):
    with open(path, "rb") as f:
        data = f.read()
    return list(struct.unpack(f"<{len(data) // 4}f", data))


def read_export(path):
    """The parameters of an --export file, read by the safetensors package, flat in manifest
    order (what the trace's records hold)."""
    tensors = safetensors.numpy.load_file(path)
    expect(list(tensors) == [name for name, _, _ in PARAMS] or set(tensors) == {n for n, _, _ in PARAMS},
           f"{path} holds {sorted(tensors)}")
    values = []
    for name, shape, _ in PARAMS:
        expect(list(tensors[name].shape) == shape and tensors[name].dtype == "float32",
               f"{name}: {tensors[name].dtype} {list(tensors[name].shape)}")
        values += [float(v) for v in tensors[name].reshape(-1)]
    return values


def write_data_file(path, samples, feature_dims=(FEATURES,), classes_of=None):
    """An FSDPDATA file: features [8] f32, classes [] i32 (format of docs/Runtime.md)."""
    classes_of = classes_of or (lambda n, x: max(range(CLASSES), key=lambda c: x[c] - x[c + 4]))
    with open(path, "wb") as f:
        f.write(b"FSDPDATA" + struct.pack("<II", 1, 2))
        f.write(struct.pack("<II", 0, len(feature_dims)) + struct.pack(f"<{len(feature_dims)}q", *feature_dims))
        f.write(struct.pack("<II", 1, 0))
        f.write(struct.pack("<Q", samples))
        count = math.prod(feature_dims)
        for n in range(samples):
            x = [math.sin(0.7 * n + 1.3 * j) * 2 for j in range(count)]
            f.write(struct.pack(f"<{count}f", *x) + struct.pack("<i", classes_of(n, x)))


@case
def help(trainer, tmp):
    result = run(trainer, "--help")
    expect_success(result)
    expect(result.stdout.startswith("usage: trainer"), result.stdout)
    for flag in ["--steps", "--seed", "--data", "--lr", "--warmup-steps", "--lr-decay",
                 "--decay-steps", "--min-lr", "--log-every", "--log-json", "--init-from", "--export",
                 "--export-dtype", "--save", "--save-every", "--keep", "--resume", "--trace-state",
                 "--trace", "--no-cuda-graph", "--print-manifest", "--version", "--help"]:
        expect(flag in result.stdout, f"--help does not mention {flag}")
    expect(result.stderr == "", result.stderr)


@case
def version(trainer, tmp):
    # The trainer says which OpenBLAS kernels it runs and why (chosen from CPUID unless
    # OPENBLAS_CORETYPE forces them), and which f32 and bf16 GEMMs it uses: oneDNN where
    # it has kernels of ours for the CPU, else OpenBLAS (bf16 widened to f32);
    # test/e2e/trainer-version.test checks the rule itself.
    result = run(trainer, "--version")
    expect_success(result)
    expect(re.fullmatch(r"backend: cpu\nblas: OpenBLAS .*, core \w+ \(.+\), \d+ threads\n"
                        r"f32 gemm: (oneDNN .*\(brg:.*\); .*|.*; no brgemm f32 matmul .*)\n"
                        r"bf16 gemm: (oneDNN .*: bf16 instructions|widened to f32 .*)\n",
                        result.stdout),
           result.stdout)
    env = dict(os.environ, OPENBLAS_CORETYPE="Prescott")
    forced = subprocess.run([trainer, "--version"], capture_output=True, text=True, env=env)
    expect(", core Prescott (OPENBLAS_CORETYPE=Prescott" in forced.stdout, forced.stdout)


@case
def unknown_flag(trainer, tmp):
    result = run(trainer, "--steps", "2", "--bogus")
    expect_error(result, r"^trainer: error: unknown flag '--bogus'")
    expect(result.stdout == "", "the trainer ran anyway")


@case
def bad_value(trainer, tmp):
    expect_error(run(trainer, "--steps", "-3"), r"--steps: '-3' is not a non-negative integer")
    expect_error(run(trainer, "--lr", "abc"), r"--lr: 'abc' is not a positive finite number")
    expect_error(run(trainer, "--log-every"), r"--log-every needs a value")


@case
def missing_data(trainer, tmp):
    path = os.path.join(tmp, "no-such-file.bin")
    expect_error(run(trainer, "--data", path),
                 rf"^trainer: error: data file '{re.escape(path)}': cannot open: No such file")


@case
def loss_falls(trainer, tmp):
    log = os.path.join(tmp, "log.jsonl")
    expect_success(run(trainer, "--steps", 50, "--log-json", log))
    losses = [entry["loss"] for entry in read_log(log)]
    expect(len(losses) == 50, f"{len(losses)} log lines")
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    expect(first > 1.0, f"initial loss {first} is not near ln 4")
    expect(last < 0.6 * first, f"loss did not fall: first steps {first:.4f}, last steps {last:.4f}")


@case
def progress_lines(trainer, tmp):
    result = run(trainer, "--steps", 20, "--log-every", 5)
    expect_success(result)
    lines = result.stdout.splitlines()
    expect(len(lines) == 5, f"expected 4 progress lines and the arena line, got:\n{result.stdout}")
    expect(ARENA.match(lines[4]), f"bad arena line {lines[4]!r}")
    for line, step in zip(lines, [5, 10, 15, 20]):
        match = PROGRESS.match(line)
        expect(match, f"bad progress line {line!r}")
        expect(int(match.group(1)) == step, f"{line!r} is not step {step}")
        expect(float(match.group(3)) == 0.1, f"{line!r}: not the plan's lr 0.1")
        expect(float(match.group(4)) > 0 and float(match.group(5)) > 0, line)


@case
def log_json(trainer, tmp):
    log = os.path.join(tmp, "log.jsonl")
    result = run(trainer, "--steps", 7, "--log-every", 3, "--log-json", log)
    expect_success(result)
    with open(log) as f:
        lines = f.read().splitlines()
    expect(len(lines) == 8, f"expected 7 step lines and the arena line, got {len(lines)}")
    expect(json.loads(lines[7]) == {"planned_peak_bytes": ARENA_BYTES, "high_water_bytes": [ARENA_BYTES]},
           lines[7])
    entries = []
    for i, line in enumerate(lines[:7], start=1):
        entry = json.loads(line)
        expect(isinstance(entry, dict), line)
        expect(set(entry) == {"step", "loss", "lr", "samples_per_sec", "bytes_in_use"}, line)
        # The shortest decimal that reads back as the same float.
        expect(spec.to_f32(entry["lr"]) == spec.to_f32(0.1), line)
        expect(entry["step"] == i, line)
        expect(isinstance(entry["loss"], float) and math.isfinite(entry["loss"]), line)
        expect(entry["samples_per_sec"] > 0, line)
        expect(isinstance(entry["bytes_in_use"], int) and entry["bytes_in_use"] > 0, line)
        entries.append(entry)
    # The progress lines print the same losses.
    for line in result.stdout.splitlines()[:-1]:
        step, loss = int(PROGRESS.match(line).group(1)), PROGRESS.match(line).group(2)
        expect(f"{entries[step - 1]['loss']:.6f}" == loss, f"{line!r} vs {entries[step - 1]}")


def read_trace(path):
    """The records of a --trace-state file of the fake model: (params, grads, momentum)."""
    values = read_floats(path)
    count = PARAM_BYTES // 4
    expect(len(values) % (3 * count) == 0, f"trace of {len(values)} floats")
    return [(values[i:i + count], values[i + count:i + 2 * count], values[i + 2 * count:i + 3 * count])
            for i in range(0, len(values), 3 * count)]


@case
def trace_state(trainer, tmp):
    trace, dump = os.path.join(tmp, "trace.bin"), os.path.join(tmp, "params.safetensors")
    expect_success(run(trainer, "--steps", 3, "--seed", 4, "--trace-state", trace,
                       "--export", dump))
    records = read_trace(trace)
    expect(len(records) == 4, f"{len(records)} records, expected one before the first step and one per step")
    params, grads, momentum = records[0]
    expect(params == reference_params(4), "record 0 is not the initial parameters")
    expect(not any(grads) and not any(momentum), "record 0 has gradients or momentum")
    expect(records[-1][0] == read_export(dump), "the last record is not what --export writes")
    # Each record is the SGD step (lr 0.1, momentum 0.9) from the one before: the parts are
    # where they belong. f32 arithmetic: one rounding per operation.
    for k in range(1, len(records)):
        before, (p, g, m) = records[k - 1], records[k]
        expect(any(g), f"record {k} has no gradient")
        for i in range(len(p)):
            buf = spec.to_f32(0.9 * before[2][i] + g[i])
            expect(abs(m[i] - buf) <= 1e-6 * max(1.0, abs(buf)), f"record {k}, momentum {i}: {m[i]} vs {buf}")
            want = before[0][i] - 0.1 * m[i]
            expect(abs(p[i] - want) <= 1e-6 * max(1.0, abs(want)), f"record {k}, parameter {i}: {p[i]} vs {want}")
    expect_error(run(trainer, "--steps", 1, "--trace-state", os.path.join(tmp, "no", "such", "dir")),
                 r"--trace-state .*no/such/dir.*: cannot open")


def reference_params(seed):
    values = []
    for name, shape, init in PARAMS:
        values += [spec.to_f32(spec.init_value(seed, name, shape, init, i)) for i in range(math.prod(shape))]
    return values


@case
def init_matches_spec(trainer, tmp):
    for seed in [0, 12345, 2**40 + 3]:
        dump = os.path.join(tmp, f"init-{seed}.safetensors")
        expect_success(run(trainer, "--steps", 0, "--seed", seed, "--export", dump))
        got, want = read_export(dump), reference_params(seed)
        expect(got == want, f"seed {seed}: initial parameters differ from the contract:\n{got}\n{want}")


@case
def first_loss_matches_spec(trainer, tmp):
    """Initial parameters + synthetic features + teacher classes, all from the contract."""
    seed = 7
    log = os.path.join(tmp, "log.jsonl")
    expect_success(run(trainer, "--steps", 1, "--seed", seed, "--log-json", log))
    params = reference_params(seed)
    w, b = params[:32], params[32:]
    total = 0.0
    for n in range(BATCH):
        x = [spec.to_f32(spec.synthetic_normal(seed, 0, n, j)) for j in range(FEATURES)]
        teacher = [sum(x[j] * spec.teacher_weight(seed, j, c, CLASSES) for j in range(FEATURES))
                   for c in range(CLASSES)]
        y = max(range(CLASSES), key=lambda c: (teacher[c], -c))
        logits = [sum(x[j] * w[j * CLASSES + c] for j in range(FEATURES)) + b[c] for c in range(CLASSES)]
        top = max(logits)
        total += math.log(sum(math.exp(v - top) for v in logits)) + top - logits[y]
    want = total / BATCH
    got = read_log(log)[0]["loss"]
    expect(abs(got - want) < 1e-5, f"step 1 loss {got}, contract says {want}")


@case
def determinism(trainer, tmp):
    def dump(seed, name):
        path = os.path.join(tmp, name)
        expect_success(run(trainer, "--steps", 5, "--seed", seed, "--export", path))
        with open(path, "rb") as f:
            return f.read()
    first = dump(5, "a.bin")
    expect(dump(5, "b.bin") == first, "same seed, different parameters")
    expect(dump(6, "c.bin") != first, "different seeds, same parameters")


@case
def lr_override(trainer, tmp):
    def dump(name, *args):
        path = os.path.join(tmp, name)
        expect_success(run(trainer, "--steps", 5, "--export", path, *args))
        with open(path, "rb") as f:
            return f.read()
    default = dump("default.bin")
    expect(dump("same.bin", "--lr", "0.1") == default, "--lr 0.1 (the manifest's lr) changed the run")
    expect(dump("other.bin", "--lr", "0.05") != default, "--lr 0.05 had no effect")


def scheduled_lr(step, peak=spec.to_f32(0.1), warmup=3, decay_steps=12, floor=0.01):
    """docs/Runtime.md, section 5: linear warmup, then cosine decay to the floor, in double
    from the float peak (the plan's lr as the step takes it) and the floor as given."""
    if step <= warmup:
        return peak * step / warmup
    progress = min(1.0, (step - warmup) / (decay_steps - warmup))
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * progress))


@case
def lr_schedule(trainer, tmp):
    """Each step's rate is logged and is the one the step used: the trace's momentum update
    p' = p - lr * m holds with the scheduled rate of that step."""
    log, trace = os.path.join(tmp, "log.jsonl"), os.path.join(tmp, "trace.bin")
    result = run(trainer, "--steps", 14, "--log-every", 1, "--log-json", log, "--trace-state", trace,
                 "--warmup-steps", 3, "--lr-decay", "cosine", "--decay-steps", 12, "--min-lr", 0.01)
    expect_success(result)
    entries = read_log(log)
    for entry in entries:
        want = spec.to_f32(scheduled_lr(entry["step"]))
        expect(spec.to_f32(entry["lr"]) == want, f"step {entry['step']}: lr {entry['lr']}, schedule says {want}")
    for line in result.stdout.splitlines()[:-1]:
        match = PROGRESS.match(line)
        expect(match and match.group(3) == f"{entries[int(match.group(1)) - 1]['lr']:.3e}", line)
    records = read_trace(trace)
    for k in range(1, len(records)):
        lr = spec.to_f32(entries[k - 1]["lr"])
        before, (p, _, m) = records[k - 1][0], records[k]
        for i in range(len(p)):
            want = before[i] - lr * m[i]
            expect(abs(p[i] - want) <= 1e-6 * max(1.0, abs(want)), f"step {k}, parameter {i}: {p[i]} vs {want}")
    # Linear decay reaches the floor and keeps it; the peak can come from --lr.
    expect_success(run(trainer, "--steps", 6, "--log-json", log, "--lr", 0.2, "--lr-decay", "linear",
                       "--decay-steps", 4, "--min-lr", 0.05))
    rates = [spec.to_f32(entry["lr"]) for entry in read_log(log)]
    peak = spec.to_f32(0.2)
    want = [spec.to_f32(peak - (peak - 0.05) * min(s / 4, 1.0)) for s in range(1, 7)]
    expect(rates == want, f"linear decay {rates}, expected {want}")


@case
def print_manifest(trainer, tmp):
    # It exits before anything else is looked at, even a missing data file.
    result = run(trainer, "--data", os.path.join(tmp, "missing.bin"), "--print-manifest")
    expect_success(result)
    manifest = json.loads(result.stdout)
    expect(manifest["version"] == 2 and manifest["arena_bytes"] == ARENA_BYTES, result.stdout)
    expect([p["name"] for p in manifest["params"]] == ["linear.w", "linear.b"], result.stdout)
    expect(result.stdout.endswith("}\n"), "the manifest is not printed as embedded")


@case
def data_file(trainer, tmp):
    path = os.path.join(tmp, "train.bin")
    write_data_file(path, samples=40)
    log = os.path.join(tmp, "log.jsonl")
    expect_success(run(trainer, "--data", path, "--steps", 60, "--log-json", log))
    losses = [entry["loss"] for entry in read_log(log)]
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    expect(last < 0.6 * first, f"loss did not fall on the data file: {first:.4f} -> {last:.4f}")


@case
def data_file_out_of_range(trainer, tmp):
    path = os.path.join(tmp, "bad-class.bin")
    write_data_file(path, samples=10, classes_of=lambda n, x: 4 if n == 7 else 0)
    expect_error(run(trainer, "--data", path),
                 rf"^trainer: error: data file '{re.escape(path)}': sample 7, tensor 1 \(classes\), "
                 r"element 0: value 4 is outside \[0, 4\)$")


@case
def data_file_bad_header(trainer, tmp):
    path = os.path.join(tmp, "bad-shape.bin")
    write_data_file(path, samples=3, feature_dims=(9,), classes_of=lambda n, x: 0)
    expect_error(run(trainer, "--data", path),
                 rf"^trainer: error: data file '{re.escape(path)}': tensor 0 has per-sample shape \[9\], "
                 r"but model input 0 needs \[8\]$")


@case
def nan_loss(trainer, tmp):
    result = run(trainer, "--steps", 100, "--lr", "1e38", "--log-every", 1)
    expect_error(result, r"^trainer: error: step (\d+): the loss is (NaN|infinite) \(training diverged\)$")
    step = int(re.search(r"step (\d+):", result.stderr).group(1))
    expect(len(result.stdout.splitlines()) == step - 1, "progress lines do not stop at the failing step")


@case
def high_water(trainer, tmp):
    """The fake step writes every byte of its scratch: measured == planned."""
    result = run(trainer, "--steps", 2)
    expect_success(result)
    last = result.stdout.splitlines()[-1]
    expect(last == f"arena: planned peak {ARENA_BYTES} bytes, measured high-water mark {ARENA_BYTES} "
           "bytes on every rank", last)
    # Without a step nothing of the transient part is touched.
    result = run(trainer, "--steps", 0)
    expect_success(result)
    expect(result.stdout.splitlines()[-1] ==
           f"arena: planned peak {ARENA_BYTES} bytes, measured high-water mark 1152 bytes on every rank",
           result.stdout)


def read_unit_marks(path):
    """The `arena_high_water` of a --trace file, which must still be a trace."""
    with open(path) as f:
        trace = json.load(f)
    expect(any(e["ph"] == "X" for e in trace["traceEvents"]), f"no events in {path}")
    expect(list(trace)[-1] == "arena_high_water", f"the marks are not the last member: {list(trace)}")
    return trace["arena_high_water"]


@case
def step_trace_high_water(trainer, tmp):
    """The fake step's one all-gather fills the gathered unit (its padding is
    zeros): its wait leaves the top at the unit's end; the step ends at the
    planned peak."""
    path = os.path.join(tmp, "trace.json")
    expect_success(run(trainer, "--steps", 2, "--trace", path))
    marks = read_unit_marks(path)
    expect(marks == {"step": 1, "persistent_bytes": 1152, "arena_bytes": ARENA_BYTES,
                     "after_gather_waits": [1152 + 4 * 48], "end_of_step": ARENA_BYTES}, marks)
    # The one step of a one-step run is the step measured and the step kept.
    expect_success(run(trainer, "--steps", 1, "--trace", path))
    expect(read_unit_marks(path)["after_gather_waits"] == [1152 + 4 * 48], path)
    # Without a step there is nothing to measure.
    expect_success(run(trainer, "--steps", 0, "--trace", path))
    with open(path) as f:
        expect("arena_high_water" not in json.load(f), "marks of a step that did not run")


def compare_losses(tmp, steps, *args):
    one, two = os.path.join(tmp, "one.jsonl"), os.path.join(tmp, "two.jsonl")
    expect_success(run(OPTIONS.trainer, "--steps", steps, "--log-json", one, *args))
    expect_success(mpirun(2, OPTIONS.trainer_2, "--steps", steps, "--log-json", two, *args))
    a = [entry["loss"] for entry in read_log(one)]
    b = [entry["loss"] for entry in read_log(two)]
    expect(len(a) == len(b) == steps, f"{len(a)} and {len(b)} log lines")
    for step, (x, y) in enumerate(zip(a, b), start=1):
        expect(close(x, y), f"step {step}: loss {x} on one rank, {y} on two")
    return a


@case
def mpi_losses_match(trainer, tmp):
    losses = compare_losses(tmp, 30, "--seed", 3)
    expect(losses[-1] < 0.8 * losses[0], f"loss did not fall: {losses[0]} -> {losses[-1]}")


@case
def mpi_losses_match_data_file(trainer, tmp):
    # 40 samples: the global batch of 16 wraps around inside a rank's rows.
    path = os.path.join(tmp, "train.bin")
    write_data_file(path, samples=40)
    compare_losses(tmp, 12, "--data", path)


@case
def mpi_trace_state(trainer, tmp):
    one, two = os.path.join(tmp, "one.bin"), os.path.join(tmp, "two.bin")
    expect_success(run(OPTIONS.trainer, "--steps", 4, "--seed", 9, "--trace-state", one))
    expect_success(mpirun(2, OPTIONS.trainer_2, "--steps", 4, "--seed", 9, "--trace-state", two))
    # Gathered from two shards, the trace is the one-rank trace up to the order of sums.
    a, b = read_trace(one), read_trace(two)
    expect(len(a) == len(b) == 5, f"{len(a)} and {len(b)} records")
    expect(a[0] == b[0], "the records before the first step differ")
    for k, (x, y) in enumerate(zip(a, b)):
        for part, xs, ys in zip(("parameter", "gradient", "momentum"), x, y):
            for i, (u, v) in enumerate(zip(xs, ys)):
                expect(close_parameter(u, v), f"record {k}, {part} {i}: {u} on one rank, {v} on two")


@case
def mpi_rank0_output(trainer, tmp):
    result = mpirun(2, OPTIONS.trainer_2, "--steps", 10, "--log-every", 5)
    expect_success(result)
    lines = result.stdout.splitlines()
    expect(len(lines) == 3, f"expected rank 0's 2 progress lines and the arena line, got:\n{result.stdout}")
    for line, step in zip(lines, [5, 10]):
        match = PROGRESS.match(line)
        expect(match and int(match.group(1)) == step, f"bad progress line {line!r}")


@case
def mpi_high_water(trainer, tmp):
    log = os.path.join(tmp, "log.jsonl")
    result = mpirun(2, OPTIONS.trainer_2, "--steps", 3, "--log-json", log)
    expect_success(result)
    last = result.stdout.splitlines()[-1]
    expect(last == f"arena: planned peak {ARENA_BYTES_2} bytes, measured high-water mark {ARENA_BYTES_2} "
           "bytes on every rank", last)
    with open(log) as f:
        final = json.loads(f.read().splitlines()[-1])
    expect(final == {"planned_peak_bytes": ARENA_BYTES_2, "high_water_bytes": [ARENA_BYTES_2] * 2}, final)


@case
def mpi_step_trace_high_water(trainer, tmp):
    """Rank 0's marks on two ranks: each gathers 2 x 32 f32."""
    path = os.path.join(tmp, "trace.json")
    expect_success(mpirun(2, OPTIONS.trainer_2, "--steps", 3, "--trace", path))
    marks = read_unit_marks(path)
    expect(marks == {"step": 1, "persistent_bytes": 704, "arena_bytes": ARENA_BYTES_2,
                     "after_gather_waits": [704 + 4 * 64], "end_of_step": ARENA_BYTES_2}, marks)


@case
def mpi_wrong_np(trainer, tmp):
    # Without mpirun: one rank, and the exact one-line error of a 1-rank run.
    expect_error(run(OPTIONS.trainer_2, "--steps", 1),
                 r"^trainer: error: the model was compiled for grid \[2\] \(2 ranks\), but it was started "
                 r"as 1 rank \(without mpirun or with mpirun -np 1\): run it with mpirun -np 2, or "
                 r"recompile with fsdpc --grid=1$")
    result = mpirun(4, OPTIONS.trainer_2, "--steps", 1)
    expect(result.returncode != 0, "4 ranks for grid [2] ran")
    expected = ("trainer: error: the model was compiled for grid [2] (2 ranks), but mpirun started "
                "4 ranks: run it with mpirun -np 2, or recompile with fsdpc --grid=4")
    errors = [line for line in result.stderr.splitlines() if line.startswith("trainer: error:")]
    expect(errors == [expected], f"expected rank 0's one error line, got:\n{result.stderr}")
    expect("step 1 |" not in result.stdout, "the trainer ran anyway")


def mpi_script(script):
    """Runs `sh -c script TRAINER_2` on 2 ranks, which must fail: the result and the
    seconds it took."""
    started = time.monotonic()
    result = subprocess.run(mpi_command(2, "sh", "-c", script, OPTIONS.trainer_2), capture_output=True,
                            text=True, timeout=MPI_TIMEOUT, env=mpi_environment())
    expect(result.returncode != 0, f"exit status 0:\n{result.stderr}")
    return result, time.monotonic() - started


@case
def mpi_bad_data_one_rank(trainer, tmp):
    """A rank that fails alone stops the other, which waits for it in a collective."""
    result, elapsed = mpi_script(
        'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "$0" --data /nonexistent --steps 50; '
        'else exec "$0" --steps 50; fi')
    expect("trainer: error: rank 1: data file '/nonexistent': cannot open: No such file or directory"
           in result.stderr.splitlines(), f"no error line of rank 1:\n{result.stderr}")
    expect(elapsed < 60, f"took {elapsed:.0f} s to stop")


@case
def mpi_collective_error(trainer, tmp):
    """An error every rank sees (a diverged loss) is reported once, by rank 0, without a rank."""
    result = mpirun(2, OPTIONS.trainer_2, "--steps", 100, "--lr", "1e38", "--log-every", 1)
    expect(result.returncode != 0, "a diverged run exited 0")
    errors = [line for line in result.stderr.splitlines() if line.startswith("trainer: error:")]
    expect(len(errors) == 1 and re.match(r"^trainer: error: step (\d+): the loss is (NaN|infinite) "
                                         r"\(training diverged\)$", errors[0]),
           f"expected one error line, got:\n{result.stderr}")


@case
def mpi_stopped_peer(trainer, tmp):
    """A rank that stops answering (SIGSTOP: alive, so mpirun sees nothing) leaves the
    other waiting in a collective: it gives up after --collective-timeout, names
    what it waited for and its step, and stops every rank."""
    # $$ is the shell that execs the trainer: the subshell stops the trainer.
    saves = os.path.join(tmp, "saves")
    result, elapsed = mpi_script(
        'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then (sleep 3; kill -STOP $$) & fi; '
        f'exec "$0" --steps 100000000 --log-every 1000 --collective-timeout 1 --save {saves} '
        '--save-every 7 --keep 2')
    errors = [line for line in result.stderr.splitlines() if line.startswith("trainer: error:")]
    # mpirun continues the stopped rank to end it: it may report its own wait first.
    timeout = (r"^trainer: error: rank ([01]): step \d+: (the (all-gather|reduce-scatter) of unit "
               r"'linear' \(\d+ bytes per rank in the shard group\)|the sum of the ranks' losses|the "
               r"other ranks, at a checkpoint's barrier) has not completed after "
               r"\d+\.\d s \(--collective-timeout=1\): a rank of its group stopped answering, or a "
               r"device stopped; stopping every rank$")
    expect(errors and all(re.match(timeout, line) for line in errors) and
           any(re.match(timeout, line).group(1) == "0" for line in errors),
           f"expected rank 0's timeout line, got:\n{result.stderr}")
    expect(elapsed < 30, f"took {elapsed:.0f} s to stop")
    # A save the stop cut short never looks committed: each step-<k> is whole.
    committed = [d for d in os.listdir(saves) if d.startswith("step-")]
    expect(committed, "no checkpoint was committed before the stop")
    for name in committed:
        expect(os.path.exists(os.path.join(saves, name, "metadata.json")), f"{name} has no metadata")


def main():
    global OPTIONS
    parser = argparse.ArgumentParser()
    parser.add_argument("--trainer", required=True)
    parser.add_argument("--trainer-2", required=True)
    # The model on 2 tensor ranks, grid [1] and grid [2] (tensor_test.py).
    parser.add_argument("--trainer-t2")
    parser.add_argument("--trainer-2-t2")
    # The model on 2 tensor ranks with linear.w's columns as two parts (split_parts).
    parser.add_argument("--trainer-t2-parts")
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--np-flag", default="-n")
    parser.add_argument("--mpiexec-flags", default="")
    parser.add_argument("case", choices=sorted(CASES))
    OPTIONS = parser.parse_args()
    OPTIONS.mpiexec_flags = [f for f in re.split(r"[;\s]+", OPTIONS.mpiexec_flags) if f]
    with tempfile.TemporaryDirectory(prefix="fsdprt-") as tmp:
        try:
            CASES[OPTIONS.case](OPTIONS.trainer, tmp)
        except Failure as failure:
            print(f"FAIL {OPTIONS.case}: {failure}", file=sys.stderr)
            return 1
    print(f"PASS {OPTIONS.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
