#!/usr/bin/env python3
"""Trains an example sharded over N ranks (mpirun) with each strategy, tracing its state
after every step (--trace-state), and checks every step of every case from the trainer's
own state against the independent NumPy float64 reference (teacher forcing,
test/reference/teacher.py), on one data file.

    sharded_check.py --fsdpc FSDPC --model MODEL --work DIR [--steps 20]
                     [--cases CASE[,CASE...]] [--data-seed S] [--jobs J]
                     [--param-dtype f32|bf16] [--reduce-dtype f32|bf16]
                     [--micro-batches K] [--accumulate reduce_scatter|no_sync]
                     [--offload]

MODEL is a name of test/reference/models.py (models.get): mlp or gpt (the file
examples/<model>.mlir), odd-sizes (test/e2e/Inputs/odd-sizes.mlir), or a Llama named by
examples/generate_llama.py's flags, e.g.
llama:layers=2,dim=64,heads=4,kv_heads=2,ffn=96,vocab=97,seq=16,batch=4,attention=flash,key_block=8
(the file is written by that script with those flags, f32 dtypes and grid 1; the plan's
dtypes and grid then come from the options below).

A case is STRATEGY:N (full_shard, shard_grad_op or no_shard on a grid [N]) or
hybrid_shard:RxS (grid [R, S] on R*S ranks), either followed by +tpT for T tensor-parallel
ranks beside each of those (fsdpc --tensor-parallel=T: Megatron's layout, N*T ranks),
or +tpTsp for those with sequence parallelism (fsdpc --sequence-parallel);
by default every strategy with N = 1, 2 and 4, and hybrid_shard:2x2. The strategy is
set by editing the plan of a copy of the model's file, the grid with fsdpc --grid. For
each case:

  - every step's loss, gradients (gathered from the shards), optimizer state and
    parameters pass teacher.check: float32-level bounds against float64 from the same
    state, so the number of ranks (another order of the sums) changes nothing; with
    --param-dtype bf16 (mixed precision, the dtypes written into the plan) the reference
    rounds where docs/MixedPrecision.md says, each rank on its rows, and reduces in
    --reduce-dtype as the strategy's collectives do; with --micro-batches K (written
    into the plan with --accumulate) each rank's rows run as K micro-batches: in
    float32 the reference is still the whole batch's step, in bf16 it rounds each
    micro-batch's step and sums them as the plan's accumulation does; with tensor ranks
    in bf16 it computes the products that read cut parameters as the ranks do (each
    rank's partial product rounded, the ranks' parts added in bf16 in rank order, as
    the runtime adds them: ops.split_matmul); with --offload
    (`offload = optimizer` written into the plan) the trainer is the CUDA target's step
    run on the CPU (fsdpc --target=cuda --test-kernels-on-cpu: kernels as loops, the
    CPU runtime's collectives, copies between the arena and the host arena as
    memcpy), whose updates run on the host arena's f32 masters and state;
  - --export (gathered by the other path; f32 tensors by manifest name, converted back to
    each parameter's dtype) equals the trace's last parameters, byte for byte;
  - the arena record (last line of --log-json) has a high-water mark for every rank,
    each equal to the planned peak.

Prints one line per case (worst errors, PASS or FAIL), then a summary; exits with 1 and
the list of failures if any check fails.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import time

# trainer_checks first: the reference pins NumPy's BLAS to one thread before NumPy
# loads, so that its float32 calibrations (bf16 bounds) are the same computation
# whatever the machine's core count, as in teacher.py run on its own.
from trainer_checks import (ROOT, fsdpc_command, make_data, mpi_environment, mpirun_command,
                            read_log, run, teacher_forced)
import numpy as np  # noqa: E402
import models  # noqa: E402
import precision  # noqa: E402
from params_file import (exported_bytes, manifest_params,  # noqa: E402  (test/reference)
                         manifest_splits, trace_record_start)

STRATEGIES = ["full_shard", "shard_grad_op", "no_shard"]
DEFAULT_CASES = [f"{s}:{n}" for s in STRATEGIES for n in (1, 2, 4)] + ["hybrid_shard:2x2"]
MPI_TIMEOUT = 300


def parse_case(text):
    """'full_shard:2' -> ('full_shard', [2], 1, False); 'hybrid_shard:2x2' ->
    ('hybrid_shard', [2, 2], 1, False); 'full_shard:2+tp2' -> ('full_shard', [2], 2, False);
    'full_shard:2+tp2sp' -> ('full_shard', [2], 2, True) (sequence parallelism)."""
    match = re.fullmatch(r"(\w+):(\d+(?:x\d+)?)(?:\+tp(\d+)(sp)?)?", text)
    if not match:
        sys.exit(f"sharded_check.py: bad case '{text}': expected STRATEGY:N or STRATEGY:RxS, "
                 "optionally followed by +tpT or +tpTsp")
    return (match.group(1), [int(d) for d in match.group(2).split("x")],
            int(match.group(3) or 1), bool(match.group(4)))


def case_label(strategy, grid, tensor, sequence=False):
    """'full_shard N=2', 'hybrid_shard N=4 (2x2)', 'full_shard N=4 (2+tp2)', 'full_shard
    N=4 (2+tp2sp)'."""
    ranks = int(np.prod(grid)) * tensor
    mesh = "x".join(map(str, grid)) + (f"+tp{tensor}" if tensor > 1 else "")
    mesh += "sp" if sequence else ""
    return f"{strategy} N={ranks}" + (f" ({mesh})" if len(grid) > 1 or tensor > 1 else "")


def with_strategy(text, strategy, grid, dtypes=""):
    """The model text with `strategy = X` (and `dtypes`, e.g. "param_dtype = bf16, ") in its
    #fsdp.plan<...>, and a 2-D grid (the plan of hybrid_shard must have one; fsdpc --grid
    then sets the same)."""
    if re.search(r"(param|reduce)_dtype", text):
        sys.exit("sharded_check.py: the example's plan already names its dtypes")
    text = text.replace("#fsdp.plan<", "#fsdp.plan<" + dtypes, 1)
    if len(grid) == 2:
        text = re.sub(r"grid\s*=\s*\[[^\]]*\]", f"grid = [{grid[0]}, {grid[1]}]", text, count=1)
    text, count = re.subn(r"strategy\s*=\s*\w+", f"strategy = {strategy}", text, count=1)
    if count == 0:
        text, count = re.subn(r"#fsdp\.plan<", f"#fsdp.plan<strategy = {strategy}, ", text,
                              count=1)
    if count == 0:
        sys.exit("sharded_check.py: the model has no #fsdp.plan<...>")
    return text


def import_hf(model, work):
    """(the .mlir text, the weights file) fsdp-import-hf writes for an hf: name (f32, grid
    1), the trainer starting from the checkpoint's weights."""
    m = models.get(model)
    batch, seq = m["batch_seq"]
    mlir, weights = os.path.join(work, "hf.mlir"), os.path.join(work, "hf-init.safetensors")
    models.fsdp_hf().import_hf.main([m["directory"], "--batch", str(batch), "--seq",
                                     str(seq), "--freeze", ",".join(m["freeze"]), "-o",
                                     mlir, "--weights", weights])
    with open(mlir) as f:
        return f.read(), weights


def model_text(model):
    """The .mlir text of a model name: the example's file, odd-sizes' input file, or what
    examples/generate_llama.py writes for a llama name (f32, grid 1: the plan's dtypes and
    grid are this script's options)."""
    if model.startswith("llama:"):
        return run([sys.executable, os.path.join(ROOT, "examples", "generate_llama.py"),
                    *models.generate_llama_flags(model), "--grid", "1",
                    "--param-dtype", "f32", "--reduce-dtype", "f32"]).stdout
    # gpt-fused is gpt.mlir's reference as the CUDA target runs it in bf16.
    example = "gpt" if model == "gpt-fused" else model
    path = (os.path.join(ROOT, "test", "e2e", "Inputs", "odd-sizes.mlir")
            if model == "odd-sizes" else os.path.join(ROOT, "examples", f"{example}.mlir"))
    with open(path) as f:
        return f.read()


def with_tensor_layout(text, annotation):
    """`text` with the declaration of parameter NAME annotated `tensor LAYOUT`, from an
    annotation 'NAME=LAYOUT' (whole or cut: fsdp.param's override of the tensor layout)."""
    name, _, layout = annotation.partition("=")
    # The whole name: `@wq` is not the start of `@wq2`.
    declaration = re.compile(r"(fsdp\.param (?:frozen )?@" + re.escape(name) +
                             r"(?= )(?: unit \"[^\"]*\")?)")
    annotated, count = declaration.subn(r"\1 tensor " + layout, text)
    if count != 1 or layout not in ("whole", "cut"):
        sys.exit(f"sharded_check.py: --tensor-layout {annotation}: expected NAME=whole or "
                 f"NAME=cut naming one parameter ({count} declarations match)")
    return annotated


def file_tag(model):
    """A model name as part of a file name (a llama name has ':', ',' and '=')."""
    return re.sub(r"[^\w.-]+", "-", model)


def check_case(args, label, strategy, grid, tensor, trainer, data, init_from=None):
    """Runs one case and checks it: (summary text, failures)."""
    tag = re.sub(r"[^\w]+", "-", label)
    ranks = int(np.prod(grid)) * tensor
    log, dump, trace = (os.path.join(args.work, f"{kind}-{tag}")
                        for kind in ("log.json", "params.safetensors", "trace.bin"))
    for stale in (log, dump, trace):
        if os.path.exists(stale):
            os.remove(stale)
    command = mpirun_command(ranks, trainer, "--steps", str(args.steps), "--data", data,
                             "--log-json", log, "--export", dump, "--trace-state", trace,
                             *(["--init-from", init_from] if init_from else []))
    result = subprocess.run(command, capture_output=True, text=True, timeout=MPI_TIMEOUT,
                            env=mpi_environment())
    if result.returncode != 0:
        return (f"FAIL (exit status {result.returncode})",
                [f"{' '.join(command)} exited with {result.returncode}\n"
                 f"{result.stdout}\n{result.stderr}"])

    losses, arena = read_log(log)
    splits, _ = manifest_splits(trainer)
    prec = precision.Precision(args.param_dtype, args.reduce_dtype, grid, strategy,
                               micro_batches=args.micro_batches, accumulate=args.accumulate,
                               tensor_ranks=tensor, splits=splits)
    rows, failures = teacher_forced(args.model, data, trace, losses, prec=prec)
    if len(rows) != args.steps:
        failures.append(f"{len(rows)} steps checked, {args.steps} trained")
    # --export gathers the shards as the trace does: in the parameters' own dtypes (f32 to
    # bf16 is exact for values that were bf16) it is the last record's start.
    params = manifest_params(trainer)
    try:
        exported = exported_bytes(dump, params)
        if trace_record_start(trace, args.steps + 1, args.steps, len(exported)) != exported:
            failures.append("--export differs from the parameters of the trace's last record")
    except ValueError as e:
        failures.append(f"--export: {e}")
    os.remove(trace)  # tens of megabytes per case

    if arena is None:
        failures.append("no arena record at the end of --log-json")
        arena_text = "missing"
    else:
        peak, marks = arena["planned_peak_bytes"], arena["high_water_bytes"]
        if len(marks) != ranks or any(m != peak for m in marks):
            failures.append(f"arena: planned peak {peak} bytes, high-water marks {marks} "
                            "(one per rank, each equal to the peak)")
        arena_text = f"{peak} B" + (" = high-water x" + str(len(marks))
                                    if all(m == peak for m in marks) else f" vs {marks}")
    worst = lambda i: max((r[i] for r in rows), default=float("nan"))  # noqa: E731
    ulps = max((max(r[3].values()) for r in rows), default=float("nan"))
    flipped = sum(r[4] for r in rows)
    verdict = "FAIL" if failures else "PASS"
    return (f"{worst(1):>13.1e} {worst(2):>11.1e} {ulps:>10.1f} {flipped:>6}  {arena_text}  "
            f"{verdict}", failures)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--model", type=models.argument, required=True,
                        help="; ".join(models.names()))
    parser.add_argument("--work", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES))
    parser.add_argument("--data-seed", type=int, default=11, help="make_data.py --seed")
    parser.add_argument("--jobs", type=int, default=2, help="parallel compiles")
    parser.add_argument("--param-dtype", choices=["f32", "bf16"], default="f32",
                        help="the plan's param_dtype (bf16: mixed precision)")
    parser.add_argument("--reduce-dtype", choices=["f32", "bf16"], default="f32",
                        help="the plan's reduce_dtype")
    parser.add_argument("--micro-batches", type=int, default=1,
                        help="the plan's micro_batches")
    parser.add_argument("--accumulate", choices=["reduce_scatter", "no_sync"],
                        default="reduce_scatter", help="the plan's accumulate")
    parser.add_argument("--offload", action="store_true",
                        help="offload = optimizer, on the CUDA target's step run on the CPU")
    parser.add_argument("--cuda-on-cpu", action="store_true",
                        help="the CUDA target's step run on the CPU (a llama or hf name's "
                        "attention=fused: the runtime's fused attention)")
    parser.add_argument("--tensor-layout", action="append", default=[],
                        help="NAME=whole or NAME=cut: the parameter's `tensor` annotation")
    parser.add_argument("--fsdpc-arg", action="append", default=[],
                        help="one more fsdpc flag for every trainer (e.g. --fuse-attention)")
    args = parser.parse_args()
    cases = [parse_case(c) for c in args.cases.split(",")]
    os.makedirs(args.work, exist_ok=True)
    path = lambda name: os.path.join(args.work, name)  # noqa: E731
    started = time.time()

    # One model per case; cases with the same text and grid share a trainer.
    if args.model.startswith("hf:"):
        text, init_from = import_hf(args.model, args.work)
    else:
        text, init_from = model_text(args.model), None
    for annotation in args.tensor_layout:
        text = with_tensor_layout(text, annotation)
    jobs, trainers = {}, {}
    for strategy, grid, tensor, sequence in cases:
        dtypes = "".join(f"{field} = {value}, " for field, value in (
            ("param_dtype", args.param_dtype), ("reduce_dtype", args.reduce_dtype))
            if value != "f32")
        if args.micro_batches > 1:
            dtypes += (f"micro_batches = {args.micro_batches}, "
                       f"accumulate = {args.accumulate}, ")
        if args.offload:
            dtypes += "offload = optimizer, "
        copy = with_strategy(text, strategy, grid, dtypes)
        mesh = (copy, tuple(grid), tensor, sequence)
        tag = f"{strategy}-{'x'.join(map(str, grid))}-tp{tensor}{'sp' if sequence else ''}"
        if mesh not in jobs:
            source = path(f"{file_tag(args.model)}-{tag}.mlir")
            with open(source, "w") as f:
                f.write(copy)
            jobs[mesh] = (source, path("trainer-" + tag))
        trainers[(strategy, tuple(grid), tensor, sequence)] = jobs[mesh][1]

    def compile_one(item):
        (_, grid, tensor, sequence), (source, trainer) = item
        on_cpu = args.offload or args.cuda_on_cpu
        target = ["--target=cuda", "--test-kernels-on-cpu"] if on_cpu else []
        run([*fsdpc_command(args.fsdpc), source, "--grid=" + ",".join(map(str, grid)),
             f"--tensor-parallel={tensor}", *(["--sequence-parallel"] if sequence else []),
             *target, *args.fsdpc_arg, "-o", trainer])

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(compile_one, jobs.items()))

    data = path("data.bin")
    make_data(args.model, args.data_seed, data)
    print(f"{'case':<26} {'loss rel.err':>13} {'grad rel.L2':>11} {'worst ulps':>10} "
          f"{'slopes':>6}  arena")
    failures = []
    for strategy, grid, tensor, sequence in cases:
        label = case_label(strategy, grid, tensor, sequence)
        summary, case_failures = check_case(args, label, strategy, grid, tensor,
                                            trainers[(strategy, tuple(grid), tensor, sequence)],
                                            data, init_from)
        print(f"{label:<26} {summary}", flush=True)
        failures += [f"{label}: {f}" for f in case_failures]

    elapsed = time.time() - started
    if failures:
        sys.exit(f"FAILED ({len(failures)} checks, {elapsed:.0f} s):\n" + "\n".join(failures))
    mode = "" if args.param_dtype == "f32" and args.reduce_dtype == "f32" else (
        f" (param_dtype {args.param_dtype}, reduce_dtype {args.reduce_dtype})")
    if args.micro_batches > 1:
        mode += f" ({args.micro_batches} micro-batches, accumulate {args.accumulate})"
    if args.offload:
        mode += " (offload = optimizer, the CUDA step on the CPU)"
    print(f"PASS: {args.model}{mode}, {len(cases)} sharded runs, each of {args.steps} steps "
          f"matches the float64 reference from the trainer's state ({elapsed:.0f} s)")


if __name__ == "__main__":
    main()
