#!/usr/bin/env python3
"""examples/gpt.mlir trained for real, under mpirun: a tokenized text, a learning-rate
schedule, checkpoints resumed at the same and at another number of ranks, a crash during a
save, and its weights through safetensors, read and written by the Python package.

    train_for_real_check.py --fsdpc FSDPC --work DIR

Checks, each printed as a line ending in PASS:
  - tokens: scripts/tokenize_text.py turns the project's docs (English text) into byte
    tokens, and 300 steps on them bring the mean loss of the last 50 below the text's byte
    unigram entropy (what a model that ignores the context can reach);
  - resume at 2 ranks: 5 steps, a checkpoint, 7 more equal the 12 steps of one run, bit
    for bit (losses, learning rates, exported parameters);
  - resume at 1 rank: the 2-rank checkpoint loads on 1 rank to the same parameters, byte
    for byte, and its next step's loss is the uninterrupted run's up to the order of float
    sums (the same state; relative 1e-5, far above float32's reassociation of these sums);
  - other strategy and model: under no_shard it loads to the same parameters; the MLP's
    trainer refuses it, naming the parameters on either side;
  - kill -9: SIGKILL at random moments of a run saving every step leaves a checkpoint whose
    resumed run ends exactly as the run never killed;
  - safetensors: the export has every parameter by name and shape; a bf16 export loaded
    with --init-from gives the bf16 values widened exactly; a file the package writes with
    a missing and a misshapen tensor is refused with both named.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

# trainer_checks first: the reference pins NumPy's BLAS to one thread before NumPy
# loads, so that its float32 calibrations (bf16 bounds) are the same computation
# whatever the machine's core count, as in teacher.py run on its own.
from trainer_checks import (ROOT, Checks, fsdpc_command, mpi_environment, mpirun_command,
                            read_records, run, tokenize_docs)
import numpy as np  # noqa: E402
import safetensors.numpy  # noqa: E402

SCHEDULE = ["--lr", "3e-3", "--warmup-steps", "20", "--lr-decay", "cosine", "--decay-steps", "300"]
checks = Checks()
check = checks.check


def log_of(path):
    return [(r["step"], r["loss"], r["lr"]) for r in read_records(path) if "step" in r]


def local(*command):
    return run(list(map(str, command)), timeout=600)


def mpi(ranks, *command):
    return run(mpirun_command(ranks, *map(str, command)), env=mpi_environment(), timeout=600)


def session_processes(sid):
    """The live processes of session `sid` (zombies excluded: they are gone already)."""
    pids = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as f:
                # pid (comm) state ppid pgrp session ...
                state, _ppid, _pgrp, session = f.read().rsplit(")", 1)[1].split()[:4]
        except (OSError, ValueError):
            continue
        if name.isdigit() and int(session) == sid and state != "Z":
            pids.append(int(name))
    return pids


def kill_session(sid):
    """SIGKILL every process of mpirun's session: mpirun puts each rank in a process group
    of its own, so killing its group would leave the ranks training (and saving) on."""
    while pids := session_processes(sid):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


class TrainingFiles:
    """The paths the checks share: the work directory's files, the tokens, the GPT trainers
    at 1 and 2 ranks, and the arguments of a run on the tokens."""

    def __init__(self, fsdpc, work):
        self.fsdpc, self.work = fsdpc, work
        self.train = self.path("train.bin")
        self.gpt1, self.gpt2 = self.path("gpt1"), self.path("gpt2")
        self.common = ["--data", self.train, "--seed", 3, *SCHEDULE]

    def path(self, name):
        return os.path.join(self.work, name)


def byte_unigram_entropy(train):
    tokens = np.fromfile(train, dtype="<u2")
    p = np.bincount(tokens, minlength=256) / len(tokens)
    return float(-(p[p > 0] * np.log(p[p > 0])).sum())


def compile_gpt_trainers(files):
    for grid in (1, 2):
        run([*fsdpc_command(files.fsdpc), os.path.join(ROOT, "examples", "gpt.mlir"),
             f"--grid={grid}", "-o", files.path(f"gpt{grid}")])


def check_tokens(files, summary, entropy):
    path, gpt2, common = files.path, files.gpt2, files.common
    mpi(2, gpt2, "--steps", 300, *common, "--log-json", path("long.jsonl"), "--log-every", 1000,
        "--export", path("long.safetensors"))
    losses = [loss for _, loss, _ in log_of(path("long.jsonl"))]
    tail = float(np.mean(losses[-50:]))
    check("tokens", tail < entropy,
          f"{summary['train_tokens']} byte tokens, loss {losses[0]:.3f} -> {tail:.3f} (mean of the last 50) "
          f"< unigram entropy {entropy:.3f}")


def check_resume_at_2_ranks(files):
    """Returns the log of the 12 steps run straight: [(step, loss, lr)]."""
    path, train, gpt2, common = files.path, files.train, files.gpt2, files.common
    # One run of 12 steps against 5 + a checkpoint + 7, on 2 ranks.
    mpi(2, gpt2, "--steps", 12, *common, "--log-json", path("straight.jsonl"), "--export",
        path("straight.safetensors"))
    mpi(2, gpt2, "--steps", 5, *common, "--save", path("ckpt"))
    mpi(2, gpt2, "--steps", 12, "--resume", path("ckpt"), "--data", train, "--log-json",
        path("resumed.jsonl"), "--export", path("resumed.safetensors"))
    straight, resumed = log_of(path("straight.jsonl")), log_of(path("resumed.jsonl"))
    same = open(path("straight.safetensors"), "rb").read() == open(path("resumed.safetensors"), "rb").read()
    check("resume at 2 ranks", resumed == straight[5:] and same,
          f"steps 6-12 {'equal' if resumed == straight[5:] else 'differ'}, parameters "
          f"{'equal' if same else 'differ'}")
    return straight


def check_resume_at_1_rank(files, straight):
    """Returns the parameters the 2-rank checkpoint resumes to on 2 ranks, by name."""
    path, train, gpt1, gpt2 = files.path, files.train, files.gpt1, files.gpt2
    # The 2-rank checkpoint on 1 rank.
    local(gpt1, "--steps", 5, "--resume", path("ckpt"), "--data", train, "--export", path("one.safetensors"))
    mpi(2, gpt2, "--steps", 5, "--resume", path("ckpt"), "--data", train, "--export", path("two.safetensors"))
    one = safetensors.numpy.load_file(path("one.safetensors"))
    two = safetensors.numpy.load_file(path("two.safetensors"))
    exact = one.keys() == two.keys() and all(np.array_equal(one[k], two[k]) for k in one)
    local(gpt1, "--steps", 6, "--resume", path("ckpt"), "--data", train, "--log-json", path("one.jsonl"))
    (step, loss, lr), = log_of(path("one.jsonl"))
    want = straight[5]
    close = step == want[0] and lr == want[2] and abs(loss - want[1]) <= 1e-5 * abs(want[1])
    check("resume at 1 rank", exact and close,
          f"parameters {'equal' if exact else 'differ'}, step {step} loss {loss} vs {want[1]}")
    return two


def check_other_strategy_and_model(files, two):
    path, train, fsdpc = files.path, files.train, files.fsdpc
    # Another strategy resumes it too (no_shard: every rank holds every unit whole), and
    # another model is refused, every difference named.
    with open(os.path.join(ROOT, "examples", "gpt.mlir")) as f:
        text = f.read()
    with open(path("gpt-no-shard.mlir"), "w") as f:
        f.write(text.replace("strategy = full_shard", "strategy = no_shard", 1))
    run([*fsdpc_command(fsdpc), path("gpt-no-shard.mlir"), "-o", path("gpt-no-shard")])
    mpi(2, path("gpt-no-shard"), "--steps", 5, "--resume", path("ckpt"), "--data", train, "--export",
        path("no-shard.safetensors"))
    replicated = safetensors.numpy.load_file(path("no-shard.safetensors"))
    same_values = all(np.array_equal(replicated[k], two[k]) for k in two)
    run([*fsdpc_command(fsdpc), os.path.join(ROOT, "examples", "mlp.mlir"), "--grid=1", "-o", path("mlp")])
    other = subprocess.run([path("mlp"), "--resume", path("ckpt")], capture_output=True, text=True)
    refused = other.returncode == 1 and "the checkpoint is of another model" in other.stderr and \
        "parameter 'fc1.w' [784, 256] is not in the checkpoint" in other.stderr and \
        "the checkpoint's parameter 'wte' [256, 64] is not in the model" in other.stderr
    check("other strategy and model", same_values and refused,
          f"no_shard loads the full_shard checkpoint {'exactly' if same_values else 'WRONG'}; the MLP "
          f"{'is refused, the differences named' if refused else 'is not refused: ' + other.stderr.strip()}")


def check_kill_9(files):
    path, train, gpt2, common = files.path, files.train, files.gpt2, files.common
    # SIGKILL at random moments of the 300-step run, saving after every step: the newest
    # committed checkpoint resumes to the parameters of the run that was never killed.
    rng = random.Random(7)
    resumed_from, ok = [], True
    for trial in range(3):
        directory = path(f"kill-{trial}")
        shutil.rmtree(directory, ignore_errors=True)
        command = [gpt2, "--steps", 300, *common, "--save", directory, "--save-every", 1, "--keep", 2]
        process = subprocess.Popen(mpirun_command(2, *map(str, command)), env=mpi_environment(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        # After the first commit (however slow the start), at a random moment.
        deadline = time.time() + 120
        while time.time() < deadline and process.poll() is None and not (
                os.path.isdir(directory) and any(n.startswith("step-") for n in os.listdir(directory))):
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.5))
        kill_session(process.pid)
        process.wait()
        steps = sorted(int(n[5:]) for n in os.listdir(directory) if n.startswith("step-")) \
            if os.path.isdir(directory) else []
        resumed_from.append(steps[-1] if steps else 0)
        if steps:
            mpi(2, gpt2, "--steps", 300, "--resume", directory, "--data", train, "--export",
                path(f"kill-{trial}.safetensors"))
            ok &= open(path(f"kill-{trial}.safetensors"), "rb").read() == \
                open(path("long.safetensors"), "rb").read()
    # Killed before the end, after the first save: the resumed run has work to do.
    mid_run = all(0 < step < 300 for step in resumed_from)
    check("kill -9", ok and mid_run, f"killed after steps {resumed_from}, each resumed to the same parameters")


def bf16_export_widens_exactly(files, exported, params):
    """A bf16 export loaded with --init-from gives the f32 export's values rounded to bf16."""
    path, gpt1, gpt2, common = files.path, files.gpt1, files.gpt2, files.common
    mpi(2, gpt2, "--steps", 12, *common, "--export", path("bf16.safetensors"), "--export-dtype", "bf16")
    local(gpt1, "--steps", 0, "--init-from", path("bf16.safetensors"), "--export", path("widened.safetensors"))
    widened = safetensors.numpy.load_file(path("widened.safetensors"))
    rounded = {}
    for name, value in exported.items():
        bits = value.view(np.uint32).astype(np.uint64)
        rounded[name] = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    return all(np.array_equal(widened[k], rounded[k]) for k in params)


def broken_file_refused(files, exported):
    """A file the package writes with a missing and a misshapen tensor: whether the trainer
    refuses it with both named, and the trainer's result."""
    path, gpt1 = files.path, files.gpt1
    broken = dict(exported)
    del broken["wpe"]
    broken["wte"] = broken["wte"][:100]
    safetensors.numpy.save_file(broken, path("broken.safetensors"))
    refused = subprocess.run([gpt1, "--steps", "0", "--init-from", path("broken.safetensors")],
                             capture_output=True, text=True)
    named_errors = refused.returncode == 1 and "'wte' is [100, 64] in the file, [256, 64] in the model" in \
        refused.stderr and "missing 'wpe' [32, 64]" in refused.stderr
    return named_errors, refused


def frozen_embedding_kept(files):
    path, fsdpc = files.path, files.fsdpc
    # Frozen parameters load the same way: a tiny Llama with its embedding frozen (as when
    # fine-tuning) takes the embedding from a file and keeps it while it trains.
    llama = path("llama.mlir")
    with open(llama, "w") as f:
        f.write(run([sys.executable, os.path.join(ROOT, "examples", "generate_llama.py"), "--layers", "1",
                     "--dim", "32", "--heads", "2", "--kv-heads", "2", "--ffn", "64", "--vocab", "64",
                     "--seq", "8", "--batch", "2", "--grid", "1", "--param-dtype", "f32",
                     "--freeze", "model.embed_tokens.weight"]).stdout)
    run([*fsdpc_command(fsdpc), llama, "-o", path("llama")])
    local(path("llama"), "--steps", 0, "--export", path("llama0.safetensors"))
    start = safetensors.numpy.load_file(path("llama0.safetensors"))
    start["model.embed_tokens.weight"] = np.random.default_rng(5).standard_normal((64, 32)).astype(np.float32)
    safetensors.numpy.save_file(start, path("llama-embedding.safetensors"))
    local(path("llama"), "--steps", 3, "--init-from", path("llama-embedding.safetensors"), "--export",
          path("llama3.safetensors"))
    trained = safetensors.numpy.load_file(path("llama3.safetensors"))
    return np.array_equal(trained["model.embed_tokens.weight"], start["model.embed_tokens.weight"]) and \
        not np.array_equal(trained["lm_head.weight"], start["lm_head.weight"])


def check_safetensors(files):
    # safetensors both ways.
    manifest = json.loads(run([files.gpt1, "--print-manifest"]).stdout)
    params = {p["name"]: p["shape"] for p in manifest["params"]}
    exported = safetensors.numpy.load_file(files.path("straight.safetensors"))
    named = {k: list(v.shape) for k, v in exported.items()} == params
    bf16 = bf16_export_widens_exactly(files, exported, params)
    named_errors, refused = broken_file_refused(files, exported)
    frozen = frozen_embedding_kept(files)
    check("safetensors", named and bf16 and named_errors and frozen,
          f"{len(params)} tensors by name, bf16 round trip {'exact' if bf16 else 'wrong'}, "
          f"mismatches {'named' if named_errors else 'not named: ' + refused.stderr.strip()}, "
          f"frozen embedding {'loaded and kept' if frozen else 'NOT loaded or not kept'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fsdpc", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    files = TrainingFiles(a.fsdpc, a.work)

    # Tokens: the project's documentation, bytes as tokens (the model's vocabulary is 256).
    summary = tokenize_docs(a.work)
    entropy = byte_unigram_entropy(files.train)
    compile_gpt_trainers(files)
    check_tokens(files, summary, entropy)
    straight = check_resume_at_2_ranks(files)
    two = check_resume_at_1_rank(files, straight)
    check_other_strategy_and_model(files, two)
    check_kill_9(files)
    check_safetensors(files)
    checks.finish("gpt trained for real")


if __name__ == "__main__":
    main()
