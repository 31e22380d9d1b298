#!/usr/bin/env python3
"""End-to-end tests of a trainer linked from FakeModel.c and the runtime.

    trainer_test.py TRAINER CASE

Each CASE is one ctest test. The model facts below must match FakeModel.c.
"""

import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

import spec_reference as spec

BATCH, FEATURES, CLASSES = 16, 8, 4
PARAMS = [
    ("linear.w", [8, 4], {"kind": "fan_in_uniform", "scale": 1.0}),
    ("linear.b", [4], {"kind": "normal", "mean": 0.0, "std": 0.1}),
]
PARAM_BYTES = 4 * (8 * 4 + 4)
PROGRESS = re.compile(r"^step (\d+) \| loss (\d+\.\d{6}) \| (\d+\.\d) samples/s \| mem (\d+\.\d) MiB$")

CASES = {}


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
    with open(path) as f:
        return [json.loads(line) for line in f]


def read_floats(path):
    with open(path, "rb") as f:
        data = f.read()
    return list(struct.unpack(f"<{len(data) // 4}f", data))


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
    for flag in ["--steps", "--seed", "--data", "--lr", "--log-every", "--log-json",
                 "--dump-params", "--print-manifest", "--help"]:
        expect(flag in result.stdout, f"--help does not mention {flag}")
    expect(result.stderr == "", result.stderr)


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
    expect(len(lines) == 4, f"expected 4 progress lines, got:\n{result.stdout}")
    for line, step in zip(lines, [5, 10, 15, 20]):
        match = PROGRESS.match(line)
        expect(match, f"bad progress line {line!r}")
        expect(int(match.group(1)) == step, f"{line!r} is not step {step}")
        expect(float(match.group(3)) > 0 and float(match.group(4)) > 0, line)


@case
def log_json(trainer, tmp):
    log = os.path.join(tmp, "log.jsonl")
    result = run(trainer, "--steps", 7, "--log-every", 3, "--log-json", log)
    expect_success(result)
    with open(log) as f:
        lines = f.read().splitlines()
    expect(len(lines) == 7, f"expected 7 lines, got {len(lines)}")
    entries = []
    for i, line in enumerate(lines, start=1):
        entry = json.loads(line)
        expect(isinstance(entry, dict), line)
        expect(set(entry) == {"step", "loss", "samples_per_sec", "bytes_in_use"}, line)
        expect(entry["step"] == i, line)
        expect(isinstance(entry["loss"], float) and math.isfinite(entry["loss"]), line)
        expect(entry["samples_per_sec"] > 0, line)
        expect(isinstance(entry["bytes_in_use"], int) and entry["bytes_in_use"] > 0, line)
        entries.append(entry)
    # The progress lines print the same losses.
    for line in result.stdout.splitlines():
        step, loss = int(PROGRESS.match(line).group(1)), PROGRESS.match(line).group(2)
        expect(f"{entries[step - 1]['loss']:.6f}" == loss, f"{line!r} vs {entries[step - 1]}")


@case
def dump_params(trainer, tmp):
    dump = os.path.join(tmp, "params.bin")
    expect_success(run(trainer, "--steps", 3, "--dump-params", dump))
    size = os.path.getsize(dump)
    expect(size == PARAM_BYTES, f"dump has {size} bytes, expected {PARAM_BYTES}")


@case
def load_params(trainer, tmp):
    saved = os.path.join(tmp, "saved.bin")
    expect_success(run(trainer, "--steps", 2, "--seed", 7, "--dump-params", saved))
    # Resuming from the saved values is not restarting from the seed.
    reloaded = os.path.join(tmp, "reloaded.bin")
    expect_success(run(trainer, "--steps", 0, "--load-params", saved, "--dump-params", reloaded))
    expect(read_floats(reloaded) == read_floats(saved), "loaded parameters differ from the file")
    short = os.path.join(tmp, "short.bin")
    with open(short, "wb") as f:
        f.write(b"\0" * (PARAM_BYTES - 4))
    expect_error(run(trainer, "--load-params", short), r"--load-params: .*short\.bin.* is shorter")
    long = os.path.join(tmp, "long.bin")
    with open(long, "wb") as f:
        f.write(b"\0" * (PARAM_BYTES + 4))
    expect_error(run(trainer, "--load-params", long), r"--load-params: .*long\.bin.* is longer")
    expect_error(run(trainer, "--load-params", os.path.join(tmp, "missing.bin")),
                 r"--load-params: cannot open .*missing\.bin")


def reference_params(seed):
    values = []
    for name, shape, init in PARAMS:
        values += [spec.to_f32(spec.init_value(seed, name, shape, init, i)) for i in range(math.prod(shape))]
    return values


@case
def init_matches_spec(trainer, tmp):
    for seed in [0, 12345, 2**40 + 3]:
        dump = os.path.join(tmp, f"init-{seed}.bin")
        expect_success(run(trainer, "--steps", 0, "--seed", seed, "--dump-params", dump))
        got, want = read_floats(dump), reference_params(seed)
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
        expect_success(run(trainer, "--steps", 5, "--seed", seed, "--dump-params", path))
        with open(path, "rb") as f:
            return f.read()
    first = dump(5, "a.bin")
    expect(dump(5, "b.bin") == first, "same seed, different parameters")
    expect(dump(6, "c.bin") != first, "different seeds, same parameters")


@case
def lr_override(trainer, tmp):
    def dump(name, *args):
        path = os.path.join(tmp, name)
        expect_success(run(trainer, "--steps", 5, "--dump-params", path, *args))
        with open(path, "rb") as f:
            return f.read()
    default = dump("default.bin")
    expect(dump("same.bin", "--lr", "0.1") == default, "--lr 0.1 (the manifest's lr) changed the run")
    expect(dump("other.bin", "--lr", "0.05") != default, "--lr 0.05 had no effect")


@case
def print_manifest(trainer, tmp):
    # It exits before anything else is looked at, even a missing data file.
    result = run(trainer, "--data", os.path.join(tmp, "missing.bin"), "--print-manifest")
    expect_success(result)
    manifest = json.loads(result.stdout)
    expect(manifest["version"] == 1 and manifest["arena_bytes"] == 1408, result.stdout)
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


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        print(f"usage: {sys.argv[0]} TRAINER {{{','.join(CASES)}}}", file=sys.stderr)
        return 2
    trainer, name = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="fsdprt-") as tmp:
        try:
            CASES[name](trainer, tmp)
        except Failure as failure:
            print(f"FAIL {name}: {failure}", file=sys.stderr)
            return 1
    print(f"PASS {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
