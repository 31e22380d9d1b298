#!/usr/bin/env python3
"""A checkpoint saved on one mesh (replica x shard x tensor ranks) resumes on another:
examples/gpt.mlir under mpirun, on a data file.

    mesh_resume_check.py --fsdpc FSDPC --work DIR [--meshes A>B[,A>B...]]

A mesh is S or S+tpT: S data-parallel ranks (full_shard, grid [S]), each with T tensor
ranks (fsdpc --tensor-parallel=T; the runtime writes each tensor rank's blocks of the
split parameters). For each pair A>B, one line ending in PASS:
  - a run of 7 steps on A, and a run of 5 steps on A that saves a checkpoint;
  - the checkpoint resumed on B without a step exports the parameters the saving run
    exported, byte for byte (--export writes whole tensors whatever the mesh);
  - resumed on A, steps 6 and 7 are the 7-step run's, bit for bit;
  - resumed on B, the losses of steps 6 and 7 are the 7-step run's within 1e-5 relative:
    the same state, another order of float sums (float32 reassociation of these sums is
    near 1e-7; a state off by one AdamW step moves the loss by 1e-3);
  - fsdp-export-hf's reader of checkpoints (fsdp_hf/trained.py) finds the exported
    tensors in it, each parameter's blocks put together.
"""

import argparse
import os
import re
import sys

from trainer_checks import (ROOT, Checks, fsdpc_command, make_data, mpi_environment,
                            mpirun_command, read_records, run)
import numpy as np  # noqa: E402
import safetensors.numpy  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools", "fsdp-import-hf"))
from fsdp_hf.trained import open_trained  # noqa: E402

DEFAULT = "2+tp2>4,4>2+tp2,1+tp4>2+tp2"
checks = Checks()


def parse_mesh(text):
    """'2+tp2' -> (2, 2); '4' -> (4, 1)."""
    match = re.fullmatch(r"(\d+)(?:\+tp(\d+))?", text)
    if not match:
        sys.exit(f"mesh_resume_check.py: bad mesh '{text}': expected S or S+tpT")
    return int(match.group(1)), int(match.group(2) or 1)


class Meshes:
    """The GPT trainer of each mesh, compiled once, and runs on them."""

    def __init__(self, fsdpc, work, data):
        self.fsdpc, self.work, self.data = fsdpc, work, data
        self.trainers = {}

    def path(self, name):
        return os.path.join(self.work, name)

    def trainer(self, mesh):
        if mesh not in self.trainers:
            shards, tensor = mesh
            out = self.path(f"gpt-{shards}-tp{tensor}")
            run([*fsdpc_command(self.fsdpc), os.path.join(ROOT, "examples", "gpt.mlir"),
                 f"--grid={shards}", f"--tensor-parallel={tensor}", "-o", out])
            self.trainers[mesh] = out
        return self.trainers[mesh]

    def train(self, mesh, *flags):
        ranks = mesh[0] * mesh[1]
        run(mpirun_command(ranks, self.trainer(mesh), "--data", self.data,
                           *map(str, flags)), env=mpi_environment(), timeout=600)


def losses(path):
    return [(r["step"], r["loss"]) for r in read_records(path) if "step" in r]


def check_pair(meshes, name, saved, resumed):
    path = lambda what: meshes.path(f"{name}-{what}")  # noqa: E731
    meshes.train(saved, "--steps", 7, "--log-json", path("straight.jsonl"))
    meshes.train(saved, "--steps", 5, "--save", path("ckpt"), "--export",
                 path("saved.safetensors"))
    meshes.train(resumed, "--steps", 5, "--resume", path("ckpt"), "--export",
                 path("loaded.safetensors"))
    with open(path("saved.safetensors"), "rb") as a, open(path("loaded.safetensors"), "rb") as b:
        same_state = a.read() == b.read()
    saved_tensors, checkpoint = safetensors.numpy.load_file(path("saved.safetensors")), \
        open_trained(path("ckpt"))
    readable = all(np.array_equal(checkpoint.read(name), tensor)
                   for name, tensor in saved_tensors.items())
    meshes.train(saved, "--steps", 7, "--resume", path("ckpt"), "--log-json",
                 path("again.jsonl"))
    meshes.train(resumed, "--steps", 7, "--resume", path("ckpt"), "--log-json",
                 path("moved.jsonl"))
    straight = losses(path("straight.jsonl"))[5:]
    again, moved = losses(path("again.jsonl")), losses(path("moved.jsonl"))
    bitwise = again == straight
    close = [s for s, _ in moved] == [s for s, _ in straight] and all(
        abs(m - s) <= 1e-5 * abs(s) for (_, m), (_, s) in zip(moved, straight))
    worst = max((abs(m - s) / abs(s) for (_, m), (_, s) in zip(moved, straight)),
                default=float("nan"))
    checks.check(f"resume {name}", same_state and bitwise and close and readable,
                 f"state {'equal' if same_state else 'DIFFERS'}, steps 6-7 on the saving mesh "
                 f"{'bit for bit' if bitwise else 'DIFFER'}, on the other {worst:.1e} relative, "
                 f"fsdp-export-hf {'reads it' if readable else 'READS OTHER VALUES'}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--meshes", default=DEFAULT)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    data = os.path.join(args.work, "data.bin")
    make_data("gpt", 11, data)
    meshes = Meshes(args.fsdpc, args.work, data)
    for pair in args.meshes.split(","):
        saved, resumed = pair.split(">")
        check_pair(meshes, pair.replace(">", "-to-"), parse_mesh(saved), parse_mesh(resumed))
    checks.finish(f"gpt checkpoints resumed across meshes ({args.meshes})")


if __name__ == "__main__":
    main()
