#!/usr/bin/env python3
"""Hugging Face checkpoints through a trainer and back: fsdp-import-hf, then
fsdp-export-hf of what the trainer wrote, must give the checkpoint's tensors bit for bit.

    hf_roundtrip_check.py --fsdpc FSDPC --import-hf CMD --export-hf CMD --work DIR
                          [--fixtures NAME,...] [--ranks N]

For each fixture of test/e2e/Inputs/hf: import it with its weights
for a grid of N ranks, compile, run the trainer for 0 steps from those weights with
`--export` and `--save`, and export both to Hugging Face directories (the checkpoint's
with a shard limit small enough for several shards and an index). Each directory must
hold the fixture's tensors with their names, shapes, dtypes and bytes (the export rounds
to the config's dtype: exact for the bf16 fixture, whose values the f32 master holds
exactly). Then 2 steps of training: the export of the trained parameters, imported again
and exported again, must be bit for bit what it was, and differ from the fixture.
"""
import argparse
import os

from trainer_checks import (Checks, fsdpc_command, import_and_compile, models, run,
                            run_trainer)

checkpoint_tensors = models.fsdp_hf().safetensors_io.checkpoint_tensors


def differences(a_dir, b_dir):
    """What differs between the tensors of two Hugging Face directories ([] if none)."""
    a, b = checkpoint_tensors(a_dir), checkpoint_tensors(b_dir)
    found = [f"'{n}' only in {a_dir}" for n in sorted(set(a) - set(b))]
    found += [f"'{n}' only in {b_dir}" for n in sorted(set(b) - set(a))]
    for name in sorted(set(a) & set(b)):
        x, y = a[name], b[name]
        if (x.dtype, x.shape) != (y.dtype, y.shape):
            found.append(f"'{name}' {x.dtype} {list(x.shape)} vs {y.dtype} {list(y.shape)}")
        elif x.read_raw() != y.read_raw():
            found.append(f"'{name}' holds other values")
    return found


def round_trip(args, checks, name):
    fixture = os.path.join(models.HF_FIXTURES, name)
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    path = lambda *parts: os.path.join(work, *parts)  # noqa: E731
    trainer, weights = import_and_compile(args.import_hf, fsdpc_command(args.fsdpc), fixture,
                                          2, 16, args.ranks, work)
    run_trainer(args.ranks, trainer, "--steps", "0", "--init-from", weights, "--export",
                path("export.safetensors"), "--save", path("checkpoints"))
    run([*args.export_hf, path("export.safetensors"), "--config-from", fixture, "-o",
         path("hf-export")])
    run([*args.export_hf, path("checkpoints"), "--config-from", fixture, "-o",
         path("hf-checkpoint"), "--max-shard-size", "100KB"])
    for what in ("hf-export", "hf-checkpoint"):
        found = differences(fixture, path(what))
        shards = len([n for n in os.listdir(path(what)) if n.endswith(".safetensors")])
        checks.check(f"{name} {what}", not found,
                     f"{shards} safetensors file(s), " + ("the fixture's tensors bit for bit"
                                                          if not found else found[0]))
    # Trained values through import and export again.
    run_trainer(args.ranks, trainer, "--steps", "2", "--init-from", weights, "--export",
                path("trained.safetensors"))
    run([*args.export_hf, path("trained.safetensors"), "--config-from", fixture, "-o",
         path("hf-trained")])
    run([*args.import_hf, path("hf-trained"), "--batch", "2", "--seq", "16", "-o",
         path("again.mlir"), "--weights", path("again.safetensors")])
    run([*args.export_hf, path("again.safetensors"), "--config-from", fixture, "-o",
         path("hf-again")])
    same, moved = differences(path("hf-trained"), path("hf-again")), differences(
        fixture, path("hf-trained"))
    checks.check(f"{name} trained", not same and bool(moved),
                 "trained, exported, imported and exported again: " +
                 ("bit for bit" if not same else same[0]) +
                 f"; {len(moved)} tensors moved by training")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fsdpc", required=True)
    ap.add_argument("--import-hf", required=True)
    ap.add_argument("--export-hf", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--fixtures",
                    default="llama,llama3-scaled,mistral,qwen2,gpt2,qwen3,olmo2,phi3,gemma3,gemma,gemma2")
    ap.add_argument("--ranks", type=int, default=2)
    args = ap.parse_args()
    args.import_hf, args.export_hf = fsdpc_command(args.import_hf), fsdpc_command(args.export_hf)
    checks = Checks()
    names = args.fixtures.split(",")
    for name in names:
        round_trip(args, checks, name)
    checks.finish(f"{len(names)} Hugging Face models through a trainer and back")


if __name__ == "__main__":
    main()
