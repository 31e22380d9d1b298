#!/usr/bin/env python3
"""A Hugging Face fixture with its config.json edited, for the importer's error tests.

    edit_hf_config.py SRC DST [--strip-prefix P] [--add-buffer NAME=D,D,...]
                      FIELD=JSON ... [-FIELD ...]

Copies the folder SRC to DST (files linked, config.json rewritten) with each FIELD set to
the JSON value given, and each -FIELD removed. With --strip-prefix or --add-buffer, its
model.safetensors is rewritten instead: each tensor name without the prefix P (as the
Hub's GPT-2 checkpoints name them), and a float32 tensor of zeros NAME of shape D,D,...
added (a buffer some checkpoints store, such as GPT-2's causal mask).
"""
import argparse
import json
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "reference"))
import models  # noqa: E402


def rewrite_weights(src, dst, prefix, buffers):
    io = models.fsdp_hf().safetensors_io
    refs = io.checkpoint_tensors(src)
    renamed = {(n[len(prefix):] if prefix and n.startswith(prefix) else n): r
               for n, r in refs.items()}
    layout = [(n, r.dtype, r.shape) for n, r in renamed.items()]
    layout += [(n, "F32", shape) for n, shape in buffers]
    writer = io.Writer(os.path.join(dst, "model.safetensors"), layout, {"format": "pt"})
    for name, ref in renamed.items():
        writer.write(name, ref.read_raw())
    for name, shape in buffers:
        writer.write(name, bytes(4 * math.prod(shape)))
    writer.close()


def main():
    # No -h: "-head_dim" removes a field.
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--strip-prefix", default="")
    ap.add_argument("--add-buffer", action="append", default=[])
    args, edits = ap.parse_known_args()
    src, dst = args.src, args.dst
    buffers = [(spec.split("=")[0], tuple(int(d) for d in spec.split("=")[1].split(",")))
               for spec in args.add_buffer]
    rewritten = {"config.json"}
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    if args.strip_prefix or buffers:
        rewrite_weights(src, dst, args.strip_prefix, buffers)
        rewritten.add("model.safetensors")
    for name in os.listdir(src):
        if name not in rewritten:
            os.symlink(os.path.abspath(os.path.join(src, name)), os.path.join(dst, name))
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    for edit in edits:
        if edit.startswith("-"):
            config.pop(edit[1:])
            continue
        field, _, value = edit.partition("=")
        config[field] = json.loads(value)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    main()
