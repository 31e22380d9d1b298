"""fsdp-export-hf: a trainer's parameters -> a Hugging Face model directory.

    fsdp-export-hf SOURCE --config-from MODEL_DIR -o OUT_DIR [--dtype f32|bf16]
                   [--max-shard-size 5GB]

SOURCE is what a trainer of a model that fsdp-import-hf wrote produced: its `--export`
file, or a checkpoint directory (`--save DIR`: DIR/step-<k>, or DIR for its newest).
MODEL_DIR is the Hugging Face directory the model was imported from: its config.json
(and every other file but weights: tokenizer, generation config) is copied, and states
which tensors the export must hold. The weights are written with Hugging Face's names
and layouts (the imported model's own), in the config's dtype unless --dtype says
otherwise (bf16 rounded to nearest even), one tensor in memory at a time; above
--max-shard-size, in shards with model.safetensors.index.json, as save_pretrained does.
`transformers`' from_pretrained loads the result.
"""
import argparse
import json
import os
import re
import shutil
import sys

from . import HfError, run_tool, config, family
from .safetensors_io import Writer, byte_size, to_bytes
from .trained import open_trained

WEIGHT_FILES = re.compile(r"(\.safetensors|\.safetensors\.index\.json|\.bin|\.bin\.index\.json|"
                          r"\.pt|\.pth|\.ckpt|\.h5|\.msgpack|\.gguf)$")
CONFIG_DTYPES = {"float32": "F32", "bfloat16": "BF16"}
HF_DTYPE_NAMES = {"F32": "float32", "BF16": "bfloat16"}


def parse_size(text):
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?B)?", text.strip().upper())
    if not match:
        raise HfError(f"--max-shard-size {text}: expected a size such as 5GB or 500MB")
    scale = {"B": 1, "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9}[match.group(2) or "B"]
    return int(float(match.group(1)) * scale)


def shards(layout, limit):
    """[[(name, dtype, shape)]]: consecutive tensors, each list under `limit` bytes (a
    tensor larger than it alone in its shard)."""
    groups, size = [[]], 0
    for entry in layout:
        nbytes = byte_size(entry[1], entry[2])
        if groups[-1] and size + nbytes > limit:
            groups.append([])
            size = 0
        groups[-1].append(entry)
        size += nbytes
    return groups


def expected_tensors(model_dir):
    """[(name, shape)] the imported model of `model_dir` has (its config, any sequence)."""
    fields = config.load(model_dir)
    # The export holds the parameters, whatever dropout training used.
    spec = config.model_spec(fields, seq=1, no_dropout=True)
    table = family.module(spec).parameters(spec)
    return [(name, tuple(shape)) for name, shape, *_ in table], fields.data


def run(args):
    limit = parse_size(args.max_shard_size)
    trained = open_trained(args.source)
    wanted, hf_config = expected_tensors(args.config_from)
    have = trained.shapes()
    problems = [f"'{n}' {list(s)} missing" for n, s in wanted if n not in have]
    problems += [f"'{n}' is {list(have[n])} in the source, {list(s)} in the model"
                 for n, s in wanted if n in have and have[n] != s]
    problems += [f"'{n}' is not a parameter of the model" for n in have
                 if n not in dict(wanted)]
    if problems:
        raise HfError(f"{args.source}: does not hold the parameters of "
                      f"{args.config_from}'s model: " + "; ".join(problems))
    stored = hf_config.get("dtype", hf_config.get("torch_dtype", "float32"))
    dtype = {"f32": "F32", "bf16": "BF16"}[args.dtype] if args.dtype else \
        CONFIG_DTYPES.get(stored, "F32")
    out = args.output
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise HfError(f"-o {out}: exists and is not an empty directory")
    # Written aside and renamed when whole: an error leaves no directory that looks like
    # a model.
    partial = out.rstrip("/") + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    try:
        write_directory(partial, args.config_from, trained, wanted, hf_config, dtype, limit)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if os.path.isdir(out):
        os.rmdir(out)
    os.replace(partial, out)


def write_directory(out, config_from, trained, wanted, hf_config, dtype, limit):
    """The Hugging Face directory `out`: the non-weight files of `config_from`, its
    config.json with the weights' dtype, and the weights, in shards under `limit` bytes."""
    for name in os.listdir(config_from):
        source = os.path.join(config_from, name)
        if os.path.isfile(source) and not WEIGHT_FILES.search(name) and name != "config.json":
            shutil.copy2(source, os.path.join(out, name))
    for key in ("dtype", "torch_dtype"):
        if key in hf_config:
            hf_config[key] = HF_DTYPE_NAMES[dtype]
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(hf_config, f, indent=2, sort_keys=True)
        f.write("\n")
    layout = [(name, dtype, shape) for name, shape in wanted]
    groups = shards(layout, limit)
    names = (["model.safetensors"] if len(groups) == 1 else
             [f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors" for i in range(len(groups))])
    weight_map, total = {}, 0
    for file_name, group in zip(names, groups):
        writer = Writer(os.path.join(out, file_name), group, {"format": "pt"})
        try:
            for name, _dtype, _shape in group:
                raw = to_bytes(trained.read(name), dtype)
                writer.write(name, raw)
                weight_map[name] = file_name
                total += len(raw)
        finally:
            writer.file.close()
        writer.close()
    if len(groups) > 1:
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f,
                      indent=2)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="fsdp-export-hf", description=__doc__.split("\n\n")[0])
    ap.add_argument("source", help="a trainer's --export file or a checkpoint directory")
    ap.add_argument("--config-from", required=True,
                    help="the Hugging Face directory the model was imported from")
    ap.add_argument("-o", "--output", required=True, help="the directory to write")
    ap.add_argument("--dtype", choices=["f32", "bf16"],
                    help="the weights' dtype (default: config.json's)")
    ap.add_argument("--max-shard-size", default="5GB")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    run_tool("fsdp-export-hf", run, args)
