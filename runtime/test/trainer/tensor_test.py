#!/usr/bin/env python3
"""The tensor-parallel axis on the fake model of trainer_test.py: fake-trainer-t2 (grid [1]
x 2 tensor ranks) and fake-trainer-2-t2 (grid [2] x 2 tensor ranks), linear.w split along
its columns (split_dim 1), linear.b replicated. Their whole tensors (--export,
--trace-state, checkpoints, --init-from) are those of the unsplit model: the fake step's
arithmetic is the same at either tensor_ranks (its column blocks come from the same
products, its gradient's reduce-scatter over the tensor ranks averages equal values), so
at the same data-parallel grid the runs are bit-identical. fake-trainer-t2-parts (grid [1]
x 2 tensor ranks) splits linear.w's columns as two parts of 2 (split_parts [2, 2]: tensor
index t holds columns t and 2 + t), bit-identical to the unsplit runs too.

    tensor_test.py --trainer T1 --trainer-2 T2 --trainer-t2 T3 --trainer-2-t2 T4
                   --trainer-t2-parts T5 --mpiexec MPIEXEC ... CASE
"""

import json
import os
import re
import shutil
import sys

import safetensors.numpy

import trainer_test as t
from trainer_test import case, expect, expect_error, expect_success, run, mpirun


def mesh(name):
    """The ranks and trainer of a mesh: one (grid [1]), two (grid [2]), one-t2 (grid [1] x 2
    tensor ranks), two-t2 (grid [2] x 2 tensor ranks), one-t2-parts (one-t2 with
    split_parts)."""
    o = t.OPTIONS
    return {"one": (1, o.trainer), "two": (2, o.trainer_2), "one-t2": (2, o.trainer_t2),
            "two-t2": (4, o.trainer_2_t2), "one-t2-parts": (2, o.trainer_t2_parts)}[name]


# The data-parallel ranks of each mesh: the rows a step's ranks divide.
DATA_RANKS = {"one": 1, "two": 2, "one-t2": 1, "two-t2": 2, "one-t2-parts": 1}


def train(name, *args):
    ranks, trainer = mesh(name)
    result = run(trainer, *args) if ranks == 1 else mpirun(ranks, trainer, *args)
    expect_success(result)
    return result


def log_losses(path):
    return [(e["step"], e["loss"], e["lr"]) for e in t.read_log(path)]


def read(path):
    return open(path, "rb").read()


@case
def tensor_manifest(trainer, tmp):
    result = run(t.OPTIONS.trainer_2_t2, "--print-manifest")
    expect_success(result)
    manifest = json.loads(result.stdout)
    expect(manifest["tensor_ranks"] == 2 and manifest["grid"] == [2], result.stdout)
    w, b = manifest["params"]
    expect(w["shape"] == [8, 2] and w["split_dim"] == 1 and "split_dim" not in b, result.stdout)


@case
def tensor_wrong_np(trainer, tmp):
    # The world is the grid times the tensor ranks.
    expect_error(run(t.OPTIONS.trainer_t2, "--steps", 1),
                 r"^trainer: error: the model was compiled for grid \[1\] x 2 tensor ranks \(2 "
                 r"ranks\), but it was started as 1 rank \(without mpirun or with mpirun -np 1\): "
                 r"run it with mpirun -np 2$")
    result = mpirun(2, t.OPTIONS.trainer_2_t2, "--steps", 1)
    expect(result.returncode != 0, "2 ranks for grid [2] x 2 tensor ranks ran")
    expected = ("trainer: error: the model was compiled for grid [2] x 2 tensor ranks (4 ranks), "
                "but mpirun started 2 ranks: run it with mpirun -np 4, or recompile with "
                "fsdpc --grid=1")
    errors = [line for line in result.stderr.splitlines() if line.startswith("trainer: error:")]
    expect(errors == [expected], f"expected rank 0's one error line, got:\n{result.stderr}")


@case
def tensor_init_and_export(trainer, tmp):
    """Initial values of a block are the whole parameter's (Philox index and fan-in of the
    whole); the export assembles the blocks: the files of every mesh are the 1-rank run's,
    byte for byte, at step 0 and after training at the same data-parallel grid."""
    for steps in (0, 6):
        files = {}
        for name in ("one", "two", "one-t2", "two-t2"):
            files[name] = os.path.join(tmp, f"{name}-{steps}.safetensors")
            train(name, "--steps", steps, "--seed", 7, "--export", files[name])
        expect(read(files["one"]) == read(files["one-t2"]), f"step {steps}: one-t2 exports other bytes")
        expect(read(files["two"]) == read(files["two-t2"]), f"step {steps}: two-t2 exports other bytes")
        if steps == 0:
            expect(read(files["one"]) == read(files["two-t2"]), "two-t2 starts from other values")
            expect(t.read_export(files["one-t2"]) == t.reference_params(7),
                   "the initial values are not the contract's (spec_reference.py)")


@case
def tensor_trace_state(trainer, tmp):
    """Parameters, gradients and momentum after every step, whole, as the unsplit model's;
    the losses too (the tensor ranks of a data index read the same rows)."""
    for unsplit, split in (("one", "one-t2"), ("two", "two-t2")):
        traces, logs = {}, {}
        for name in (unsplit, split):
            traces[name] = os.path.join(tmp, f"{name}.bin")
            logs[name] = os.path.join(tmp, f"{name}.jsonl")
            train(name, "--steps", 4, "--seed", 9, "--trace-state", traces[name], "--log-json",
                  logs[name])
        expect(os.path.getsize(traces[split]) == 5 * 3 * t.PARAM_BYTES,
               f"{split}: {os.path.getsize(traces[split])} bytes of trace")
        expect(read(traces[split]) == read(traces[unsplit]), f"{split}'s trace is not {unsplit}'s")
        expect(log_losses(logs[split]) == log_losses(logs[unsplit]),
               f"{split}'s losses are not {unsplit}'s")


@case
def tensor_init_from(trainer, tmp):
    """--init-from reads each rank's part of its block from the whole tensors."""
    trained = os.path.join(tmp, "trained.safetensors")
    train("one", "--steps", 5, "--seed", 3, "--export", trained)
    for name in ("one-t2", "two-t2"):
        back = os.path.join(tmp, f"{name}.safetensors")
        train(name, "--steps", 0, "--init-from", trained, "--export", back)
        # (The header's step differs.)
        expect(t.read_export(back) == t.read_export(trained), f"{name} did not load the file's values")
    # A file of the block's shape is not the model's.
    blocks = os.path.join(tmp, "blocks.safetensors")
    tensors = safetensors.numpy.load_file(trained)
    tensors["linear.w"] = tensors["linear.w"][:, :2].copy()
    safetensors.numpy.save_file(tensors, blocks)
    result = mpirun(2, t.OPTIONS.trainer_t2, "--steps", 0, "--init-from", blocks)
    expect(result.returncode != 0, "a block's shape was loaded")
    expect("'linear.w' is [8, 2] in the file, [8, 4] in the model" in result.stderr, result.stderr)


def checkpoint_files(step):
    return sorted(name for name in os.listdir(step) if name != "metadata.json")


@case
def tensor_resume_other_mesh(trainer, tmp):
    """A checkpoint saved on one mesh resumes on another, tensor_ranks included: each rank
    reads its block's part of its shard. At the same data-parallel grid the next losses
    and the last parameters are the unbroken run's, bit for bit."""
    schedule = ["--warmup-steps", "2", "--lr-decay", "cosine", "--decay-steps", "9"]
    straight = {}
    for name in ("one", "two"):
        log, params = os.path.join(tmp, f"straight-{name}.jsonl"), os.path.join(tmp, f"straight-{name}.st")
        train(name, "--steps", 9, "--seed", 5, "--log-json", log, "--export", params, *schedule)
        straight[name] = (log_losses(log), read(params))
    for saving, resuming, unbroken in [("two-t2", "two", "two"), ("two", "two-t2", "two"),
                                       ("one-t2", "one", "one"), ("one", "one-t2", "one"),
                                       ("two-t2", "one-t2", "one")]:
        directory = os.path.join(tmp, f"{saving}-to-{resuming}")
        train(saving, "--steps", 4, "--seed", 5, "--save", directory, *schedule)
        step = os.path.join(directory, "step-00000004")
        meta = json.load(open(os.path.join(step, "metadata.json")))
        tensors = 2 if saving.endswith("t2") else 1
        expect(meta["version"] == 2 and meta["plan"]["tensor_ranks"] == tensors, f"{meta['plan']}")
        expect([p["shape"] for p in meta["params"]] == [[8, 4], [4]], f"{meta['params']}")
        expect([p.get("split_dim") for p in meta["params"]] == [1 if tensors == 2 else None, None],
               f"{meta['params']}")
        expect(checkpoint_files(step) == sorted(meta["files"]) and len(meta["files"]) == mesh(saving)[0],
               f"{checkpoint_files(step)} vs {meta['files']}")
        # What the resumed run starts from is what was saved, on every mesh.
        exports = []
        for name in (saving, resuming):
            exports.append(os.path.join(directory, f"{name}.st"))
            train(name, "--steps", 4, "--resume", directory, "--export", exports[-1])
        expect(read(exports[0]) == read(exports[1]), f"{saving} -> {resuming}: other values")
        log, params = os.path.join(directory, "resumed.jsonl"), os.path.join(directory, "resumed.st")
        train(resuming, "--steps", 9, "--resume", directory, "--log-json", log, "--export", params)
        want_losses, want_params = straight[unbroken]
        got = log_losses(log)
        if DATA_RANKS[resuming] == DATA_RANKS[saving]:
            expect(got == want_losses[4:], f"{saving} -> {resuming}: {got}\nvs {want_losses[4:]}")
            expect(read(params) == want_params, f"{saving} -> {resuming}: other parameters")
        else:
            # Another data-parallel grid: the same run up to the order of float sums.
            for (s, x, lr), (ws, y, wlr) in zip(got, want_losses[4:]):
                expect(s == ws and lr == wlr and t.close(x, y), f"step {s}: {x} vs {y}")


@case
def tensor_resume_refuses(trainer, tmp):
    """A checkpoint whose blocks cannot be located is refused, naming the file and field;
    one of version 1 (no tensor ranks) still resumes."""
    directory = os.path.join(tmp, "ckpt")
    train("one-t2", "--steps", 3, "--seed", 5, "--save", directory)
    step = os.path.join(directory, "step-00000003")

    def damaged(name, change):
        copy = os.path.join(tmp, name)
        shutil.copytree(step, copy)
        path = os.path.join(copy, "metadata.json")
        meta = json.load(open(path))
        change(meta)
        json.dump(meta, open(path, "w"))
        return copy

    def refused(copy, pattern):
        expect_error(run(t.OPTIONS.trainer, "--resume", copy), pattern)

    refused(damaged("dim", lambda m: m["params"][0].update(split_dim=2)),
            r"metadata\.json': parameter 'linear\.w': split_dim 2 is not a dimension of its shape "
            r"\[8, 4\]")
    refused(damaged("uneven", lambda m: m["params"][0].update(split_dim=1, shape=[8, 5])),
            r"metadata\.json': parameter 'linear\.w': split_dim 1 of shape \[8, 5\] does not cut "
            r"into plan\.tensor_ranks 2 equal blocks")
    refused(damaged("ranks", lambda m: m["plan"].update(tensor_ranks=0)),
            r"metadata\.json': plan\.tensor_ranks must be positive, got 0")
    refused(damaged("files", lambda m: m.update(files=m["files"][:1])),
            r"metadata\.json': files: 1 shard files do not divide among plan\.tensor_ranks 2")
    # Version 1 had no tensor ranks: its files are one tensor rank's.
    one = os.path.join(tmp, "one")
    train("one", "--steps", 3, "--seed", 5, "--save", one)
    old = os.path.join(one, "step-00000003")
    path = os.path.join(old, "metadata.json")
    meta = json.load(open(path))
    meta["version"] = 1
    del meta["plan"]["tensor_ranks"]
    json.dump(meta, open(path, "w"))
    a, b = os.path.join(tmp, "a.st"), os.path.join(tmp, "b.st")
    train("one", "--steps", 3, "--resume", old, "--export", a)
    train("one-t2", "--steps", 3, "--resume", old, "--export", b)
    expect(read(a) == read(b), "a version 1 checkpoint resumes with other values")


@case
def tensor_split_parts(trainer, tmp):
    """With split_parts each block holds a column of each part: initial values, exports,
    traces, losses and --init-from are still the unsplit model's, bit for bit."""
    result = run(t.OPTIONS.trainer_t2_parts, "--print-manifest")
    expect_success(result)
    w = json.loads(result.stdout)["params"][0]
    expect(w["shape"] == [8, 2] and w["split_dim"] == 1 and w["split_parts"] == [2, 2],
           result.stdout)
    for steps in (0, 6):
        files = {}
        for name in ("one", "one-t2-parts"):
            files[name] = os.path.join(tmp, f"{name}-{steps}.safetensors")
            train(name, "--steps", steps, "--seed", 7, "--export", files[name])
        expect(read(files["one"]) == read(files["one-t2-parts"]),
               f"step {steps}: one-t2-parts exports other bytes")
    traces, logs = {}, {}
    for name in ("one", "one-t2-parts"):
        traces[name] = os.path.join(tmp, f"{name}.bin")
        logs[name] = os.path.join(tmp, f"{name}.jsonl")
        train(name, "--steps", 4, "--seed", 9, "--trace-state", traces[name], "--log-json",
              logs[name])
    expect(read(traces["one-t2-parts"]) == read(traces["one"]), "the trace is not one's")
    expect(log_losses(logs["one-t2-parts"]) == log_losses(logs["one"]), "the losses are not one's")
    trained, back = os.path.join(tmp, "trained.safetensors"), os.path.join(tmp, "back.safetensors")
    train("one", "--steps", 5, "--seed", 3, "--export", trained)
    train("one-t2-parts", "--steps", 0, "--init-from", trained, "--export", back)
    expect(t.read_export(back) == t.read_export(trained), "--init-from did not load the file's values")


def expect_refused(ranks, trainer, args, pattern):
    """Exit status 1 and one `trainer: error:` line (of rank 0) matching `pattern`."""
    result = mpirun(ranks, trainer, *args)
    expect(result.returncode != 0, f"{args} was not refused")
    errors = [line for line in result.stderr.splitlines() if line.startswith("trainer: error:")]
    expect(len(errors) == 1 and re.search(pattern, errors[0]),
           f"expected one error line matching {pattern!r}, got:\n{result.stderr}")


@case
def tensor_split_parts_resume(trainer, tmp):
    """Checkpoints keep split_parts beside split_dim: a checkpoint of the parts' mesh resumes
    unsplit and back with the unbroken run's next losses and last parameters, bit for bit; one
    whose parts are not the model's, or are nonsense, is refused."""
    schedule = ["--warmup-steps", "2", "--lr-decay", "cosine", "--decay-steps", "9"]
    log, params = os.path.join(tmp, "straight.jsonl"), os.path.join(tmp, "straight.st")
    train("one", "--steps", 9, "--seed", 5, "--log-json", log, "--export", params, *schedule)
    want_losses, want_params = log_losses(log), read(params)
    for saving, resuming in [("one-t2-parts", "one"), ("one", "one-t2-parts"),
                             ("one-t2-parts", "one-t2-parts")]:
        directory = os.path.join(tmp, f"{saving}-to-{resuming}")
        train(saving, "--steps", 4, "--seed", 5, "--save", directory, *schedule)
        meta = json.load(open(os.path.join(directory, "step-00000004", "metadata.json")))
        w = meta["params"][0]
        want = {"split_dim": 1, "split_parts": [2, 2]} if saving == "one-t2-parts" else {}
        expect({k: w[k] for k in ("split_dim", "split_parts") if k in w} == want, f"{w}")
        log, params = os.path.join(directory, "resumed.jsonl"), os.path.join(directory, "resumed.st")
        train(resuming, "--steps", 9, "--resume", directory, "--log-json", log, "--export", params)
        expect(log_losses(log) == want_losses[4:], f"{saving} -> {resuming}: {log_losses(log)}")
        expect(read(params) == want_params, f"{saving} -> {resuming}: other parameters")

    # The same parameter split into other parts is another fused product.
    plain, parts = os.path.join(tmp, "plain"), os.path.join(tmp, "parts")
    train("one-t2", "--steps", 3, "--seed", 5, "--save", plain)
    train("one-t2-parts", "--steps", 3, "--seed", 5, "--save", parts)
    expect_refused(2, t.OPTIONS.trainer_t2_parts, ["--resume", plain],
                   r"the checkpoint is of another model: parameter 'linear\.w' has no split_parts "
                   r"in the checkpoint, split_parts \[2, 2\] in the model$")
    expect_refused(2, t.OPTIONS.trainer_t2, ["--resume", parts],
                   r"the checkpoint is of another model: parameter 'linear\.w' has split_parts "
                   r"\[2, 2\] in the checkpoint, no split_parts in the model$")

    step = os.path.join(parts, "step-00000003")

    def damaged(name, change):
        copy = os.path.join(tmp, name)
        shutil.copytree(step, copy)
        path = os.path.join(copy, "metadata.json")
        meta = json.load(open(path))
        change(meta["params"][0])
        json.dump(meta, open(path, "w"))
        return copy

    prefix = r"metadata\.json': parameter 'linear\.w': split_parts "
    for name, change, pattern in [
            ("uneven", lambda w: w.update(split_parts=[3, 1]),
             r"\[3, 1\]: expected positive multiples of plan\.tensor_ranks 2, got 3$"),
            ("one-part", lambda w: w.update(split_parts=[4]),
             r"\[4\]: expected at least 2 parts, got 1$"),
            ("sum", lambda w: w.update(split_parts=[2, 4]),
             r"\[2, 4\]: expected parts summing to 4 \(split_dim 1 of shape \[8, 4\]\), got 6$"),
            ("no-dim", lambda w: w.pop("split_dim"),
             r"\[2, 2\]: expected only with split_dim, got no split_dim$")]:
        expect_error(run(t.OPTIONS.trainer, "--resume", damaged(name, change)), prefix + pattern)


if __name__ == "__main__":
    sys.exit(t.main())
