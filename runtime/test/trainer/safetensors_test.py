#!/usr/bin/env python3
"""--export and --init-from against the Python safetensors package (an independent
implementation of the format), on the fake model of trainer_test.py:

    safetensors_test.py --trainer T1 --trainer-2 T2 --mpiexec MPIEXEC ... CASE
"""

import json
import os
import struct
import sys

import numpy as np
import safetensors
import safetensors.numpy

import trainer_test as t
from trainer_test import PARAMS, case, expect, expect_error, expect_success, run, mpirun


def shapes():
    return {name: shape for name, shape, _ in PARAMS}


def to_bf16_bits(values):
    """f32 values rounded to bfloat16, to nearest even (finite values)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def raw_tensors(path):
    """Header and tensor bytes of a safetensors file, read by hand (NumPy has no bf16)."""
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    body = data[8 + size:]
    return header, {name: body[e["data_offsets"][0]:e["data_offsets"][1]]
                    for name, e in header.items() if name != "__metadata__"}


@case
def export(trainer, tmp):
    path = os.path.join(tmp, "p.safetensors")
    trace = os.path.join(tmp, "trace.bin")
    expect_success(run(trainer, "--steps", 3, "--seed", 4, "--export", path, "--trace-state", trace))
    # The package reads it: every parameter, by name, with its shape, f32, in manifest order;
    # the values are the trace's last parameters.
    tensors = safetensors.numpy.load_file(path)
    expect(list(tensors) == [n for n, _, _ in PARAMS], f"tensors {list(tensors)}")
    expect(t.read_export(path) == t.read_trace(trace)[-1][0], "exported values differ from the trace")
    with safetensors.safe_open(path, "numpy") as f:
        expect(f.metadata() == {"producer": "fsdp-mlir", "step": "3"}, f"metadata {f.metadata()}")
    # The tensors start 8-byte aligned, as the format recommends.
    (size,) = struct.unpack("<Q", open(path, "rb").read(8))
    expect(size % 8 == 0, f"header of {size} bytes")


@case
def export_bf16(trainer, tmp):
    f32, bf16 = os.path.join(tmp, "f32.safetensors"), os.path.join(tmp, "bf16.safetensors")
    expect_success(run(trainer, "--steps", 2, "--export", f32))
    expect_success(run(trainer, "--steps", 2, "--export", bf16, "--export-dtype", "bf16"))
    with safetensors.safe_open(bf16, "numpy") as f:
        for name, shape in shapes().items():
            view = f.get_slice(name)
            expect(view.get_dtype() == "BF16" and view.get_shape() == shape,
                   f"{name}: {view.get_dtype()} {view.get_shape()}")
    full = safetensors.numpy.load_file(f32)
    _, raw = raw_tensors(bf16)
    for name in shapes():
        got = np.frombuffer(raw[name], dtype="<u2")
        want = to_bf16_bits(full[name].reshape(-1))
        expect(np.array_equal(got, want), f"{name}: bf16 values are not the f32 ones rounded")


@case
def init_from(trainer, tmp):
    # A file written by the package, in three dtypes: the trainer starts from its values,
    # converted exactly (f64 and f16 values chosen representable in f32).
    rng = np.random.default_rng(3)
    values = {name: rng.standard_normal(shape).astype(np.float16) for name, shape in shapes().items()}
    for dtype in [np.float16, np.float32, np.float64]:
        given = os.path.join(tmp, f"given-{np.dtype(dtype).name}.safetensors")
        safetensors.numpy.save_file({n: v.astype(dtype) for n, v in values.items()}, given)
        out = os.path.join(tmp, "out.safetensors")
        expect_success(run(trainer, "--steps", 0, "--init-from", given, "--export", out))
        got = safetensors.numpy.load_file(out)
        for name, value in values.items():
            expect(np.array_equal(got[name], value.astype(np.float32)),
                   f"{np.dtype(dtype).name}: {name} was not loaded as given")
    # Training from loaded values is not training from the seed.
    log_seed, log_init = os.path.join(tmp, "seed.jsonl"), os.path.join(tmp, "init.jsonl")
    expect_success(run(trainer, "--steps", 1, "--log-json", log_seed))
    expect_success(run(trainer, "--steps", 1, "--init-from", given, "--log-json", log_init))
    expect(t.read_log(log_seed)[0]["loss"] != t.read_log(log_init)[0]["loss"], "--init-from had no effect")


@case
def init_from_mismatch(trainer, tmp):
    def file(name, tensors):
        path = os.path.join(tmp, name)
        safetensors.numpy.save_file(tensors, path)
        return path

    w, b = np.zeros((8, 4), np.float32), np.zeros((4,), np.float32)
    # Every problem in one message: a missing tensor, a wrong shape, an extra one.
    expect_error(run(trainer, "--init-from", file("bad.safetensors", {"linear.w": w.T.copy(), "head.w": w})),
                 r"--init-from '.*bad\.safetensors': does not hold the model's parameters: "
                 r"'linear\.w' is \[4, 8\] in the file, \[8, 4\] in the model; missing 'linear\.b' \[4\]; "
                 r"unexpected 'head\.w' \[8, 4\] \(not a parameter of the model\)$")
    expect_error(run(trainer, "--init-from", file("int.safetensors", {"linear.w": w.astype(np.int32), "linear.b": b})),
                 r"'linear\.w' is I32 in the file \(expected F64, F32, F16 or BF16\)")
    garbage = os.path.join(tmp, "garbage.safetensors")
    with open(garbage, "wb") as f:
        f.write(struct.pack("<Q", 1 << 40) + b"{}")
    expect_error(run(trainer, "--init-from", garbage),
                 r"--init-from '.*garbage\.safetensors': not a safetensors file: its header size 1099511627776 "
                 r"does not fit in the file's 10 bytes")
    # A tensor whose bytes run past the end of the file.
    good = file("good.safetensors", {"linear.w": w, "linear.b": b})
    truncated = os.path.join(tmp, "truncated.safetensors")
    with open(good, "rb") as f, open(truncated, "wb") as g:
        g.write(f.read()[:-4])
    expect_error(run(trainer, "--init-from", truncated),
                 r"tensor 'linear\.[wb]': its data_offsets \[\d+, \d+\] are outside the file's \d+ bytes of data")
    expect_error(run(trainer, "--init-from", os.path.join(tmp, "missing.safetensors")),
                 r"--init-from '.*missing\.safetensors': cannot open: No such file or directory")


@case
def init_from_fuzz(trainer, tmp):
    """Damaged files (bytes of the header or the size changed, the file cut short) are
    refused with one error line or, where the damage left a valid file, loaded: never a
    crash or a hang."""
    good = os.path.join(tmp, "good.safetensors")
    expect_success(run(trainer, "--steps", 0, "--export", good))
    data = bytearray(open(good, "rb").read())
    (size,) = struct.unpack("<Q", data[:8])
    rng = np.random.default_rng(5)
    damaged = os.path.join(tmp, "damaged.safetensors")
    outcomes = {0: 0, 1: 0}
    for trial in range(150):
        copy = bytearray(data)
        if trial % 5 == 4:
            copy = copy[:int(rng.integers(0, len(copy)))]
        else:
            for _ in range(int(rng.integers(1, 4))):
                copy[int(rng.integers(0, 8 + size))] = int(rng.integers(0, 256))
        with open(damaged, "wb") as f:
            f.write(copy)
        result = run(trainer, "--steps", 0, "--init-from", damaged)
        expect(result.returncode in (0, 1), f"trial {trial}: exit {result.returncode}\n{result.stderr}")
        if result.returncode == 1:
            expect_error(result, r"--init-from '.*damaged\.safetensors': ")
        outcomes[result.returncode] += 1
    print(f"{outcomes[1]} damaged files refused, {outcomes[0]} still valid")


@case
def mpi_export(trainer, tmp):
    for steps in [0, 10]:
        one, two = os.path.join(tmp, f"one-{steps}.safetensors"), os.path.join(tmp, f"two-{steps}.safetensors")
        expect_success(run(t.OPTIONS.trainer, "--steps", steps, "--seed", 9, "--export", one))
        expect_success(mpirun(2, t.OPTIONS.trainer_2, "--steps", steps, "--seed", 9, "--export", two))
        a, b = t.read_export(one), t.read_export(two)
        if steps == 0:
            # Initial values do not depend on the number of ranks at all.
            expect(a == b and a == t.reference_params(9), "initial parameters differ on two ranks")
        for i, (x, y) in enumerate(zip(a, b)):
            expect(t.close_parameter(x, y), f"after {steps} steps, element {i}: {x} on one rank, {y} on two")


@case
def mpi_init_from(trainer, tmp):
    saved = os.path.join(tmp, "saved.safetensors")
    expect_success(run(t.OPTIONS.trainer, "--steps", 4, "--seed", 2, "--export", saved))
    # Each rank reads its shard of the file; gathered again they are the file.
    reloaded = os.path.join(tmp, "reloaded.safetensors")
    expect_success(mpirun(2, t.OPTIONS.trainer_2, "--steps", 0, "--init-from", saved, "--export", reloaded))
    a, b = safetensors.numpy.load_file(saved), safetensors.numpy.load_file(reloaded)
    expect(all(np.array_equal(a[name], b[name]) for name in shapes()), "two ranks lost or moved loaded values")
    # Continuing on two ranks is continuing on one.
    one, two = os.path.join(tmp, "one.jsonl"), os.path.join(tmp, "two.jsonl")
    expect_success(run(t.OPTIONS.trainer, "--steps", 3, "--init-from", saved, "--log-json", one))
    expect_success(mpirun(2, t.OPTIONS.trainer_2, "--steps", 3, "--init-from", saved, "--log-json", two))
    for x, y in zip([e["loss"] for e in t.read_log(one)], [e["loss"] for e in t.read_log(two)]):
        expect(t.close(x, y), f"losses differ: {x} vs {y}")


if __name__ == "__main__":
    sys.exit(t.main())
