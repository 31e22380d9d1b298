#!/usr/bin/env python3
"""Builds the GPU check kit's bundle: CUDA trainers of the check models, what they need
that a bare GPU node lacks, the float64 reference and the check script.

    make_bundle.py --fsdpc FSDPC --out DIR [--models NAME,...] [--gpu-arch sm_90]
                   [--max-mib 48] [--jobs 2] [--test-kernels-on-cpu]
    make_bundle.py --print-model NAME      (the model file a check model is compiled from)

Called by scripts/gpu-bundle.sh (which finds fsdpc); docs/CUDA.md section 5 says how the
bundle is used. What goes into DIR:

  bin/<model>        one-rank CUDA trainers (grid [1]: one GPU, started without mpirun),
                     linked with the runtime's shared library (fsdpc --link-runtime=shared)
  lib/               every shared library they need but the CUDA libraries and the C/C++
                     runtime (the runtime's one copy, libfsdprt_cuda.so; MPI's libraries: a
                     trainer started without a launcher never initialises MPI, but the
                     loader needs them), checked by kit/libraries.py
  models/<model>.mlir  the compiled model files, as compiled
  kernels/<model>.json the kernel table of the models whose kernels ncu measures (fsdpc
                     --kernels, on the h200 profile): what each kernel should take
  kit/               check.py (the check), libraries.py, elf.py
  reference/         test/reference: the NumPy float64 teacher (with fsdp_hf, the importer's
                     package, for the llama: models' parameters)
  bench/             the PyTorch version of the timing models (bench only)
  bundle.json        what check.py checks of each model
  check.sh           the one command to run on the GPU node

--test-kernels-on-cpu (tests only) builds the same trainers with their kernels run as CPU
loops on the CPU runtime (fsdpc --test-kernels-on-cpu): a bundle for this machine, whose
libraries stay where they are, that runs check.sh's correctness and speed parts without
a GPU (test/e2e/gpu-check-on-cpu.test).
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import libraries  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
import torch_llama  # noqa: E402  (pure Python: the Llama's FLOPs)

GENERATE_LLAMA = os.path.join(ROOT, "examples", "generate_llama.py")

def llama(layers, dim, heads, kv_heads, ffn, vocab, seq, batch, param_dtype, attention,
          key_block=None, plan="", fuse_attention=True):
    """A model of examples/generate_llama.py: its command line, and its reference name
    (test/reference/models.py's `llama:` syntax); `fuse_attention=False` compiles it with
    fsdpc --fuse-attention=false (the key-block loops on the GPU too)."""
    config = dict(layers=layers, dim=dim, heads=heads, kv_heads=kv_heads, ffn=ffn,
                  vocab=vocab, seq=seq, batch=batch)
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in config.items()]
    flags += ["--grid=1", f"--param-dtype={param_dtype}", f"--attention={attention}"]
    if key_block:
        flags.append(f"--key-block={key_block}")
    # The CUDA target runs a bf16 fsdp.attention as cuDNN's fused kernel, whose roundings
    # the reference's `fused` form has; its key blocks are the CPU's alone.
    fused = attention == "flash" and param_dtype == "bf16" and fuse_attention
    fields = dict(config, attention="fused" if fused else attention)
    if key_block and not fused:
        fields["key_block"] = key_block
    name = "llama:" + ",".join(f"{k}={v}" for k, v in fields.items())
    return {"generate": flags, "reference": name, "llama": config,
            "param_dtype": param_dtype, "plan": plan,
            "fsdpc_flags": [] if fuse_attention else ["--fuse-attention=false"]}


def example(path, reference, plan=""):
    """A model file of the repository, with `plan` fields added to its #fsdp.plan<...>."""
    return {"file": path, "reference": reference, "plan": plan}


# The check models (issue 31). checks: what check.py runs on each (docs/CUDA.md, 5).
#   teacher     --trace-state checked step by step by reference/teacher.py
#   graph       graph-replayed steps give the losses of --no-cuda-graph, bit for bit
#   arena       the planned arena equals the measured device high-water mark
#   checkpoint  a checkpoint saved on the GPU resumes there to the same losses
#   export      --export read back by --init-from gives the same parameters
#   watchdog    a step later than --collective-timeout is reported, and stops the trainer
#   sanitize    compute-sanitizer memcheck, racecheck and synccheck on two steps (racecheck: one)
#   speed       median step time, tokens/s, MFU; torch: beside PyTorch on the same model
#   kernels     the ten kernels that take most of the step (ncu)
CORRECTNESS = ["teacher", "graph", "arena", "checkpoint", "export"]
DETERMINISTIC = "deterministic = true"
MODELS = {
    "mlp": dict(example("examples/mlp.mlir", "mlp"), checks=CORRECTNESS + ["speed"]),
    "gpt": dict(example("examples/gpt.mlir", "gpt"),
                checks=CORRECTNESS + ["sanitize", "speed"]),
    # In bf16 the attention is cuDNN's fused kernel, with its roundings (gpt-fused), and
    # its deterministic backward pass, as the graph and checkpoint checks compare bits.
    "gpt-bf16": dict(example("examples/gpt.mlir", "gpt-fused",
                             "param_dtype = bf16, " + DETERMINISTIC),
                     checks=CORRECTNESS + ["speed"], param_dtype="bf16"),
    "odd-sizes": dict(example("test/e2e/Inputs/odd-sizes.mlir", "odd-sizes"),
                      checks=CORRECTNESS + ["sanitize", "speed"]),
    # Recompute and micro-batches change no value: the float32 reference is the whole
    # batch's step.
    "gpt-remat-micro": dict(example("examples/gpt.mlir", "gpt",
                                    "remat = unit, micro_batches = 2"),
                            checks=CORRECTNESS + ["speed"]),
    # The update on the host: never replayed as a graph (host code mid-step).
    "gpt-offload": dict(example("examples/gpt.mlir", "gpt", "offload = optimizer"),
                        checks=["teacher", "arena", "checkpoint", "export", "speed"]),
    # The small Llama of bench/README.md, in f32 with the explicit attention, and in bf16
    # with grouped-query attention and fsdp.attention: cuDNN's fused attention, with its
    # deterministic backward pass, as the graph and checkpoint checks compare bits.
    "llama-small-f32": dict(llama(4, 512, 8, 8, 1408, 4096, 256, 8, "f32", "explicit"),
                            checks=CORRECTNESS + ["speed"]),
    "llama-small-bf16": dict(llama(4, 512, 8, 2, 1408, 4096, 256, 8, "bf16", "flash", 64,
                                   DETERMINISTIC),
                             checks=CORRECTNESS + ["watchdog", "speed", "torch", "kernels"]),
    # The same kernels at a size racecheck gets through: one step of the small Llama
    # under it ran past 80 s on an H100 (2026-11-27).
    "llama-tiny-bf16": dict(llama(2, 128, 4, 2, 352, 512, 128, 4, "bf16", "flash", 32,
                                  DETERMINISTIC),
                            checks=CORRECTNESS + ["sanitize"]),
    # The same with the attention's key-block loops (fsdpc --fuse-attention=false),
    # teacher-forced against the reference's loops: the two forms side by side.
    "llama-tiny-bf16-loops": dict(llama(2, 128, 4, 2, 352, 512, 128, 4, "bf16", "flash", 32,
                                        fuse_attention=False),
                                  checks=["teacher", "arena"]),
    # About a billion parameters (TinyLlama-1.1B's shapes), bf16, sequence 2048: timing.
    # Its reference would take minutes a step in float64: checked by the graph and the
    # arena; the batch is one whose plan fits an 80 GB card (fsdpc --device-memory), and
    # the plan the fastest near the file's that fits (fsdpc --fit=fastest: no recompute).
    "llama-1b": dict(llama(22, 2048, 32, 4, 5632, 32000, 2048, 8, "bf16", "flash", 512,
                           DETERMINISTIC),
                     checks=["graph", "arena", "speed", "torch", "kernels"],
                     device_memory="80GB", fit="fastest"),
    # The file's own plan (remat = unit): what recompute costs on the same card.
    "llama-1b-remat": dict(llama(22, 2048, 32, 4, 5632, 32000, 2048, 8, "bf16", "flash", 512,
                                 DETERMINISTIC),
                           checks=["arena", "speed"], device_memory="80GB"),
    # The same with cuDNN's default backward pass (its bits depend on the GPU's
    # scheduling): the speed of a plan without `deterministic`.
    "llama-1b-fast": dict(llama(22, 2048, 32, 4, 5632, 32000, 2048, 8, "bf16", "flash", 512),
                          checks=["arena", "speed"], device_memory="80GB", fit="fastest"),
    # And with the key-block loops: the fused attention's gain on the same card.
    "llama-1b-loops": dict(llama(22, 2048, 32, 4, 5632, 32000, 2048, 8, "bf16", "flash", 512,
                                 fuse_attention=False),
                           checks=["arena", "speed"], device_memory="80GB"),
}


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"gpu-bundle: {' '.join(command)} failed ({result.returncode}):\n"
                 f"{result.stdout}{result.stderr}")
    return result.stdout


def with_plan_fields(text, fields):
    """The model text with `fields` (e.g. "remat = unit") first in its #fsdp.plan<...>."""
    if not fields:
        return text
    for name in re.findall(r"(\w+)\s*=", fields):
        if re.search(rf"#fsdp\.plan<[^>]*\b{name}\s*=", text, re.S):
            sys.exit(f"gpu-bundle: the plan already sets {name}")
    text, count = re.subn(r"#fsdp\.plan<", f"#fsdp.plan<{fields}, ", text, count=1)
    if count != 1:
        sys.exit("gpu-bundle: no #fsdp.plan<...> in the model")
    return text


def model_text(spec):
    if "generate" in spec:
        text = run([sys.executable, GENERATE_LLAMA, *spec["generate"]])
    else:
        with open(os.path.join(ROOT, spec["file"])) as f:
            text = f.read()
    return with_plan_fields(text, spec.get("plan", ""))


def compile_model(fsdpc, out, name, spec, arch, on_cpu):
    source = os.path.join(out, "models", f"{name}.mlir")
    with open(source, "w") as f:
        f.write(model_text(spec))
    trainer = os.path.join(out, "bin", name)
    memory = [f"--device-memory={spec['device_memory']}"] if "device_memory" in spec else []
    fit = [f"--fit={spec['fit']}"] if "fit" in spec else []
    target = ["--test-kernels-on-cpu"] if on_cpu else [f"--gpu-arch={arch}"]
    # The kernel table the kit's ncu measurements are read beside (docs/CUDA.md, 1).
    table = os.path.join(out, "kernels", f"{name}.json")
    kernels = [f"--kernels={table}", "--device-profile=h200"] if (
        "kernels" in spec["checks"] and not on_cpu) else []
    # Every trainer shares the bundle's one copy of the runtime (lib/).
    run([fsdpc, source, "--grid=1", "--target=cuda", "--link-runtime=shared", *target, *memory,
         *fit, *kernels, *spec.get("fsdpc_flags", []), "-o", trainer])
    manifest = json.loads(run([trainer, "--print-manifest"]))
    return name, {
        "trainer": os.path.relpath(trainer, out),
        "source": os.path.relpath(source, out),
        "reference": spec.get("reference"),
        "param_dtype": spec.get("param_dtype", "f32"),
        "checks": spec["checks"],
        "llama": spec.get("llama"),
        "batch": manifest["batch"],
        "tokens_per_step": tokens_per_step(manifest),
        "model_flops_per_step": model_flops(fsdpc, spec),
    }


def tokens_per_step(manifest):
    """Tokens of one step at grid 1: the elements of the token input (batch x sequence),
    else the batch's samples (the MLP's rows of features)."""
    for tensor in manifest["inputs"]:
        if tensor["role"] == "tokens":
            count = 1
            for d in tensor["shape"]:
                count *= d
            return count
    return manifest["batch"]


def model_flops(fsdpc, spec):
    """The model FLOPs of one training step (the MFU numerator, the same for our trainer
    and PyTorch's). A Llama: bench/torch_llama.py's convention (6 x matrix parameters x
    tokens + the causal half of the attention's products), what MFU figures elsewhere
    count. Another model: the products its step computes (`fsdpc --report=json`'s
    matmul_flops) without the kit's plan changes, so without recompute."""
    if "llama" in spec:
        return torch_llama.llama_step_flops(spec["llama"])
    report = json.loads(run([fsdpc, os.path.join(ROOT, spec["file"]), "--grid=1",
                             "--target=cuda", "--report=json"]))
    if report["per_rank_bytes"]["arena"].get("recompute"):
        sys.exit(f"gpu-bundle: {spec['file']} recomputes: its step's FLOPs are not the model's")
    return int(report["predicted"]["matmul_flops"])


def copy_tree_files(source, destination, pattern=r".*\.(py|md)$"):
    os.makedirs(destination, exist_ok=True)
    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        if os.path.isfile(path) and re.match(pattern, name):
            shutil.copy2(path, destination)


def tree_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fsdpc")
    parser.add_argument("--out")
    parser.add_argument("--print-model", metavar="NAME",
                        help="print the model file NAME is compiled from, and stop")
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated, of: " + ", ".join(MODELS))
    parser.add_argument("--gpu-arch", default="sm_90")
    parser.add_argument("--max-mib", type=float, default=48.0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--test-kernels-on-cpu", action="store_true",
                        help="tests only: kernels as CPU loops, libraries left in place")
    args = parser.parse_args()
    if args.print_model:
        if args.print_model not in MODELS:
            sys.exit(f"gpu-bundle: --print-model: unknown {args.print_model}; "
                     f"known: {', '.join(MODELS)}")
        sys.stdout.write(model_text(MODELS[args.print_model]))
        return
    if not args.fsdpc or not args.out:
        parser.error("--fsdpc and --out are required")
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown or not names:
        sys.exit(f"gpu-bundle: --models: unknown {unknown or 'empty list'}; "
                 f"known: {', '.join(MODELS)}")
    out = os.path.abspath(args.out)
    if os.path.exists(out) and os.listdir(out):
        sys.exit(f"gpu-bundle: {out} exists and is not empty")
    for folder in ("bin", "lib", "models", "kernels", "kit", "reference", "bench/gpu"):
        os.makedirs(os.path.join(out, folder), exist_ok=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        built = dict(pool.map(lambda n: compile_model(args.fsdpc, out, n, MODELS[n],
                                                      args.gpu_arch, args.test_kernels_on_cpu),
                              names))

    trainers = [os.path.join(out, built[n]["trainer"]) for n in names]
    # The runtime's fused attention alone, where the build has it (the CUDA backend).
    attention_check = os.path.join(os.path.dirname(args.fsdpc), "fsdp-attention-check")
    if not args.test_kernels_on_cpu and os.path.exists(attention_check):
        shutil.copy2(attention_check, os.path.join(out, "bin"))
        shutil.copy2(os.path.join(ROOT, "bench", "gpu", "attention_check.py"),
                     os.path.join(out, "bench", "gpu"))
        trainers.append(os.path.join(out, "bin", "fsdp-attention-check"))
    copied = ([] if args.test_kernels_on_cpu else
              libraries.copy_closure(trainers, os.path.join(out, "lib")))
    for name in ("check.py", "libraries.py", "elf.py"):
        shutil.copy2(os.path.join(HERE, name), os.path.join(out, "kit"))
    shutil.copy2(os.path.join(HERE, "check.sh"), out)
    shutil.copy2(os.path.join(HERE, "README.md"), out)
    copy_tree_files(os.path.join(ROOT, "test", "reference"), os.path.join(out, "reference"))
    # The reference's llama: models take their parameters from the importer's package,
    # which its scripts then import from their own folder.
    copy_tree_files(os.path.join(ROOT, "tools", "fsdp-import-hf", "fsdp_hf"),
                    os.path.join(out, "reference", "fsdp_hf"))
    shutil.copy2(os.path.join(ROOT, "bench", "torch_llama.py"), os.path.join(out, "bench"))
    shutil.copy2(os.path.join(ROOT, "bench", "gpu", "torch_llama_step.py"),
                 os.path.join(out, "bench", "gpu"))
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    with open(os.path.join(out, "bundle.json"), "w") as f:
        json.dump({"commit": commit, "gpu_arch": args.gpu_arch, "models": built,
                   "kernels_on_cpu": args.test_kernels_on_cpu, "libraries": copied}, f,
                  indent=1)

    problems = [] if args.test_kernels_on_cpu else libraries.missing_from_bundle(out)
    if problems:
        sys.exit("gpu-bundle: the bundle is not self-contained:\n" + "\n".join(problems))
    size = tree_bytes(out)
    print(f"gpu-bundle: {out}: {len(names)} trainers ({', '.join(names)}), "
          f"{len(copied)} libraries, {size / 2**20:.1f} MiB")
    if size > args.max_mib * 2**20:
        sys.exit(f"gpu-bundle: {size / 2**20:.1f} MiB is over the limit of {args.max_mib} MiB")


if __name__ == "__main__":
    main()
