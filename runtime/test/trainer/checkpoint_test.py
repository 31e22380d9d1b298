#!/usr/bin/env python3
"""--save and --resume on the fake model of trainer_test.py: resuming is bit-identical to
not stopping, at the same number of ranks; resharded to another number of ranks it is the
same run up to the order of float sums; a crash at any moment of a save leaves a
checkpoint to resume from; a checkpoint of another model is refused.

    checkpoint_test.py --trainer T1 --trainer-2 T2 --mpiexec MPIEXEC ... CASE
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import trainer_test as t
from trainer_test import BATCH, case, expect, expect_error, expect_success, run, mpirun

# A schedule, so that resuming must also continue it.
SCHEDULE = ["--warmup-steps", "3", "--lr-decay", "cosine", "--decay-steps", "12", "--min-lr", "0.01"]


def losses(log):
    return [(e["step"], e["loss"], e["lr"]) for e in t.read_log(log)]


def committed(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith("step-"))


def straight_run(tmp, steps, name="straight", ranks=1):
    """The run that never stops: its log and exported parameters."""
    log, params = os.path.join(tmp, f"{name}.jsonl"), os.path.join(tmp, f"{name}.safetensors")
    args = ["--steps", steps, "--seed", 5, "--log-json", log, "--export", params, *SCHEDULE]
    expect_success(run(t.OPTIONS.trainer, *args) if ranks == 1 else mpirun(2, t.OPTIONS.trainer_2, *args))
    return losses(log), open(params, "rb").read()


def resumed_run(tmp, steps, directory, name, ranks=1, env=None):
    log, params = os.path.join(tmp, f"{name}.jsonl"), os.path.join(tmp, f"{name}.safetensors")
    args = ["--steps", steps, "--resume", directory, "--log-json", log, "--export", params]
    expect_success(run(t.OPTIONS.trainer, *args) if ranks == 1 else mpirun(2, t.OPTIONS.trainer_2, *args))
    return losses(log), open(params, "rb").read()


@case
def resume_bit_identical(trainer, tmp):
    want_losses, want_params = straight_run(tmp, 10)
    directory = os.path.join(tmp, "ckpt")
    expect_success(run(trainer, "--steps", 4, "--seed", 5, "--save", directory, *SCHEDULE))
    expect(committed(directory) == ["step-00000004"], f"{committed(directory)}")
    got_losses, got_params = resumed_run(tmp, 10, directory, "resumed")
    # Steps 5..10, their losses and learning rates, and the final parameters, bit for bit.
    expect(got_losses == want_losses[4:], f"resumed {got_losses}\nstraight {want_losses[4:]}")
    expect(got_params == want_params, "the resumed run ends with other parameters")
    # The checkpoint's directory itself resumes too.
    again, _ = resumed_run(tmp, 6, os.path.join(directory, "step-00000004"), "again")
    expect(again == want_losses[4:6], f"{again}")


@case
def save_every_and_keep(trainer, tmp):
    directory = os.path.join(tmp, "ckpt")
    expect_success(run(trainer, "--steps", 7, "--seed", 5, "--save", directory, "--save-every", 2,
                       "--keep", 2, *SCHEDULE))
    # Steps 2, 4, 6 and the last, 7; the two newest stay.
    expect(committed(directory) == ["step-00000006", "step-00000007"], f"{os.listdir(directory)}")
    expect(not [n for n in os.listdir(directory) if n.startswith(".")], f"left {os.listdir(directory)}")
    with open(os.path.join(directory, "step-00000007", "metadata.json")) as f:
        meta = json.load(f)
    expect(meta["format"] == "fsdp-mlir checkpoint" and meta["version"] == 2, f"{meta}")
    expect(meta["plan"]["tensor_ranks"] == 1 and "split_dim" not in meta["params"][0], f"{meta}")
    expect(meta["step"] == 7 and meta["samples_seen"] == 7 * BATCH and meta["seed"] == 5, f"{meta}")
    # The peak is the plan's lr as the step takes it, a float.
    expect(meta["lr_schedule"] == {"lr": t.spec.to_f32(0.1), "warmup_steps": 3, "decay": "cosine",
                                   "decay_steps": 12, "min_lr": 0.01}, f"{meta['lr_schedule']}")
    expect(meta["optimizer"] == {"kind": "sgd", "slots": ["momentum"]}, f"{meta['optimizer']}")
    expect([(p["name"], p["shape"]) for p in meta["params"]] == [(n, s) for n, s, _ in t.PARAMS], f"{meta}")
    expect(meta["files"] == ["shard-00000-of-00001.bin"], f"{meta['files']}")
    # One shard: the parameter and momentum shards of the unit (48 f32 each).
    size = os.path.getsize(os.path.join(directory, "step-00000007", meta["files"][0]))
    expect(size == meta["file_bytes"] == 2 * 48 * 4, f"shard file of {size} bytes")
    # A new run saving the same step in the old directory replaces it once committed.
    expect_success(run(trainer, "--steps", 7, "--seed", 6, "--save", directory, "--keep", 2))
    with open(os.path.join(directory, "step-00000007", "metadata.json")) as f:
        expect(json.load(f)["seed"] == 6, "step 7 was not replaced")
    expect(sorted(os.listdir(directory)) == ["step-00000006", "step-00000007"], f"{os.listdir(directory)}")


@case
def crash_in_save(trainer, tmp):
    """A crash at each phase of a save: before the metadata, before the commit, after it."""
    want_losses, want_params = straight_run(tmp, 6)
    for phase, left in [("shards", ["step-00000002"]), ("metadata", ["step-00000002"]),
                        ("commit", ["step-00000002", "step-00000004"])]:
        directory = os.path.join(tmp, phase)
        expect_success(run(trainer, "--steps", 2, "--seed", 5, "--save", directory, *SCHEDULE))
        env = dict(os.environ, FSDPRT_CRASH_IN_SAVE=phase)
        command = [trainer, "--steps", 6, "--resume", directory, "--save", directory, "--save-every", 2,
                   "--keep", 1]
        crashed = subprocess.run(list(map(str, command)), env=env, capture_output=True, timeout=60)
        expect(crashed.returncode == -signal.SIGKILL, f"{phase}: exit {crashed.returncode}")
        # Committed, not yet pruned, after the commit.
        expect(committed(directory) == left, f"{phase}: {os.listdir(directory)}")
        # The newest committed checkpoint resumes; the partial directory is ignored, then
        # removed by the next save.
        got_losses, got_params = resumed_run(tmp, 6, directory, phase)
        expect_success(run(trainer, "--steps", 7, "--resume", directory, "--save", directory))
        expect(not [n for n in os.listdir(directory) if n.endswith(".partial")],
               f"{phase}: the next save left {os.listdir(directory)}")
        start = int(left[-1][5:])
        expect(got_losses == want_losses[start:], f"{phase}: {got_losses}")
        expect(got_params == want_params, f"{phase}: other parameters")


@case
def kill_anytime(trainer, tmp):
    """SIGKILL at random moments of a run that saves after every step: whatever it leaves
    resumes, and the resumed run is the run that was never killed."""
    steps = 400
    want_losses, want_params = straight_run(tmp, steps)
    rng = random.Random(11)
    hits = 0
    for trial in range(8):
        directory = os.path.join(tmp, f"kill-{trial}")
        command = [trainer, "--steps", steps, "--seed", 5, "--save", directory, "--save-every", 1,
                   "--keep", 2, *SCHEDULE]
        process = subprocess.Popen(list(map(str, command)), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        # After the first commit, however slow the start, at a random moment.
        deadline = time.time() + 60
        while time.time() < deadline and process.poll() is None and not (
                os.path.isdir(directory) and committed(directory)):
            time.sleep(0.001)
        time.sleep(rng.uniform(0.0, 0.2))
        process.send_signal(signal.SIGKILL)
        process.wait()
        expect(process.returncode == -signal.SIGKILL, f"trial {trial}: the run ended before the kill")
        hits += any(name.endswith(".partial") for name in os.listdir(directory))
        start = int(committed(directory)[-1][5:])
        got_losses, got_params = resumed_run(tmp, steps, directory, f"kill-{trial}")
        expect(got_losses == want_losses[start:], f"trial {trial}, resumed after step {start}")
        expect(got_params == want_params, f"trial {trial}: other parameters")
    print(f"{hits} of 8 kills landed inside a save")


@case
def resume_refuses(trainer, tmp):
    directory = os.path.join(tmp, "ckpt")
    expect_success(run(trainer, "--steps", 3, "--seed", 5, "--save", directory))
    step = os.path.join(directory, "step-00000003")
    expect_error(run(trainer, "--resume", directory, "--seed", 6),
                 r"--seed 6 differs from the checkpoint's seed 5: a resumed run keeps its data order")
    expect_error(run(trainer, "--resume", directory, "--steps", 2),
                 r"--steps 2 is before the checkpoint's step 3")
    # Another model: other names, shapes and optimizer, every difference named.
    other = os.path.join(tmp, "other")
    shutil.copytree(step, other)
    meta_path = os.path.join(other, "metadata.json")
    with open(meta_path) as f:
        meta = json.load(f)
    meta["params"][0]["shape"] = [4, 8]
    meta["params"][1]["name"] = "head.b"
    meta["optimizer"] = {"kind": "adamw", "slots": ["exp_avg", "exp_avg_sq"]}
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    expect_error(run(trainer, "--resume", other),
                 r"--resume '.*other': the checkpoint is of another model: the optimizer is adamw "
                 r"\(state: exp_avg exp_avg_sq\) in the checkpoint, sgd \(state: momentum\) in the model; "
                 r"parameter 'linear\.w' is \[4, 8\] in the checkpoint, \[8, 4\] in the model; "
                 r"parameter 'linear\.b' \[4\] is not in the checkpoint; "
                 r"the checkpoint's parameter 'head\.b' \[4\] is not in the model$")
    # Damaged checkpoints.
    truncated = os.path.join(tmp, "truncated")
    shutil.copytree(step, truncated)
    with open(os.path.join(truncated, "shard-00000-of-00001.bin"), "r+b") as f:
        f.truncate(100)
    expect_error(run(trainer, "--resume", truncated),
                 r"shard-00000-of-00001\.bin': has 100 bytes, but the metadata says 384")
    with open(os.path.join(truncated, "metadata.json")) as f:
        meta = json.load(f)
    meta["params"][1]["unit_offset"] = 46
    with open(os.path.join(truncated, "metadata.json"), "w") as f:
        json.dump(meta, f)
    expect_error(run(trainer, "--resume", truncated),
                 r"metadata\.json': parameter 'linear\.b' does not fit its unit's 1 shards of 48 elements")
    with open(os.path.join(truncated, "metadata.json"), "w") as f:
        f.write('{"format": "fsdp-mlir checkpoint", "version": 1')
    expect_error(run(trainer, "--resume", truncated), r"metadata\.json': malformed metadata: ")
    empty = os.path.join(tmp, "empty")
    os.makedirs(os.path.join(empty, ".step-00000009.partial"))
    expect_error(run(trainer, "--resume", empty),
                 r"--resume '.*empty': holds no committed checkpoint \(a step-<k> directory\)")


@case
def resume_fuzz(trainer, tmp):
    """Damaged metadata (random bytes changed) is refused with one error line or, where the
    damage left it valid, resumed: never a crash or a hang."""
    directory = os.path.join(tmp, "ckpt")
    expect_success(run(trainer, "--steps", 3, "--seed", 5, "--save", directory))
    step = os.path.join(directory, "step-00000003")
    meta = bytearray(open(os.path.join(step, "metadata.json"), "rb").read())
    rng = random.Random(9)
    damaged = os.path.join(tmp, "damaged")
    shutil.copytree(step, damaged)
    outcomes = {0: 0, 1: 0}
    for trial in range(150):
        copy = bytearray(meta)
        for _ in range(rng.randint(1, 3)):
            copy[rng.randrange(len(copy))] = rng.choice(b'0123456789-"[]{},:ex \xff')
        with open(os.path.join(damaged, "metadata.json"), "wb") as f:
            f.write(copy)
        # The error may quote the damaged bytes.
        result = subprocess.run([trainer, "--steps", "4", "--resume", damaged], capture_output=True,
                                text=True, errors="replace", timeout=60)
        expect(result.returncode in (0, 1), f"trial {trial}: exit {result.returncode}\n{result.stderr}")
        if result.returncode == 1:
            expect_error(result, r"(--resume|--steps|--seed|--min-lr|--decay-steps)")
        outcomes[result.returncode] += 1
    print(f"{outcomes[1]} damaged checkpoints refused, {outcomes[0]} still valid")


@case
def mpi_resume_same_ranks(trainer, tmp):
    want_losses, want_params = straight_run(tmp, 8, ranks=2)
    directory = os.path.join(tmp, "ckpt")
    expect_success(mpirun(2, t.OPTIONS.trainer_2, "--steps", 3, "--seed", 5, "--save", directory, *SCHEDULE))
    step = os.path.join(directory, "step-00000003")
    expect(sorted(os.listdir(step)) == ["metadata.json", "shard-00000-of-00002.bin", "shard-00001-of-00002.bin"],
           f"{os.listdir(step)}")
    got_losses, got_params = resumed_run(tmp, 8, directory, "resumed", ranks=2)
    expect(got_losses == want_losses[3:], f"resumed {got_losses}\nstraight {want_losses[3:]}")
    expect(got_params == want_params, "the resumed run ends with other parameters")


@case
def mpi_resume_other_ranks(trainer, tmp):
    """Saved on one rank, resumed on two, and back: each rank re-slices the old shards.
    The runs differ from the unbroken one-rank run only by the order of float sums."""
    want_losses, _ = straight_run(tmp, 9)
    one = os.path.join(tmp, "one")
    expect_success(run(trainer, "--steps", 3, "--seed", 5, "--save", one, *SCHEDULE))
    two = os.path.join(tmp, "two")
    expect_success(mpirun(2, t.OPTIONS.trainer_2, "--steps", 6, "--resume", one, "--save", two))
    got_losses, got_params = resumed_run(tmp, 9, two, "back")
    straight = os.path.join(tmp, "straight.safetensors")
    for (step, x, lr), (want_step, y, want_lr) in zip(got_losses, want_losses[6:]):
        expect(step == want_step and lr == want_lr and t.close(x, y), f"step {step}: {x} vs {y}")
    a, b = t.read_export(os.path.join(tmp, "back.safetensors")), t.read_export(straight)
    for i, (x, y) in enumerate(zip(a, b)):
        expect(t.close_parameter(x, y), f"element {i}: {x} vs {y}")
    # On two ranks, the checkpoint of one rank gives each rank its elements exactly:
    # steps 0 of a resumed run export what was saved.
    back_one, back_two = os.path.join(tmp, "e1.safetensors"), os.path.join(tmp, "e2.safetensors")
    expect_success(run(trainer, "--steps", 3, "--resume", one, "--export", back_one))
    expect_success(mpirun(2, t.OPTIONS.trainer_2, "--steps", 3, "--resume", one, "--export", back_two))
    expect(open(back_one, "rb").read() == open(back_two, "rb").read(), "resharding moved values")


if __name__ == "__main__":
    sys.exit(t.main())
