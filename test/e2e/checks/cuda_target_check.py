#!/usr/bin/env python3
"""Checks what can be checked of a CUDA trainer on a machine without a GPU.

    cuda_target_check.py --fsdpc FSDPC --cuobjdump CUOBJDUMP --model FILE --work DIR
                         [--gpu-arch sm_80,sm_90] [--mpirun-ranks 2]

1. fsdpc --target=cuda builds an executable that needs libcudart, libcublas and
   libnccl (its dynamic section, read with llvm-readelf or readelf);
2. the fat binary embedded in it holds one cubin per requested architecture, and each
   cubin defines every kernel the compiled step launches (the `gpu.launch_func` ops of
   fsdpc --emit=mlir), as NVIDIA's cuobjdump reads them;
3. the trainer run here exits with status 1 and the clear no-device message, on one
   rank and under mpirun, promptly.

Prints one line per check; exits with 1 on the first failure.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys

NO_DEVICE = "trainer: error: no usable CUDA device"
RUN_TIMEOUT = 60


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def checked(command):
    result = run(command)
    if result.returncode != 0:
        fail(f"{' '.join(command)} exited with {result.returncode}:\n{result.stderr}")
    return result.stdout


def needed_libraries(executable):
    readelf = shutil.which("llvm-readelf") or shutil.which("readelf")
    if not readelf:
        fail("no readelf on PATH")
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                      checked([readelf, "--dynamic", executable]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--cuobjdump", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--gpu-arch", default="")
    parser.add_argument("--mpirun-ranks", type=int, default=2)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    name = os.path.splitext(os.path.basename(args.model))[0]
    arch_flags = [f"--gpu-arch={args.gpu_arch}"] if args.gpu_arch else []
    archs = args.gpu_arch.split(",") if args.gpu_arch else ["sm_80", "sm_90"]
    trainer = os.path.join(args.work, f"{name}-cuda")

    # 1. The executable and what it links.
    checked([*shlex.split(args.fsdpc), args.model, "--target=cuda", *arch_flags, "-o", trainer])
    needed = needed_libraries(trainer)
    linked = []
    for library in ("libcudart.so", "libcublas.so", "libnccl.so"):
        matches = [entry for entry in needed if entry.startswith(library)]
        if not matches:
            fail(f"{trainer} does not link {library} (NEEDED: {', '.join(needed)})")
        linked += matches
    print(f"{name}: links {', '.join(linked)}")

    # 2. One fat binary per step (training, and the evaluation step fsdpc links beside it),
    # each with one cubin per architecture holding every kernel that step launches.
    lowered = os.path.join(args.work, f"{name}-cuda.mlir")
    checked([*shlex.split(args.fsdpc), args.model, "--target=cuda", *arch_flags, "--emit=mlir",
             "-o", lowered])
    launched = {}
    with open(lowered) as f:
        for binary, kernel in re.findall(
                r"gpu\.launch_func\s+(?:<[^>]*>\s*)?@(fsdp_kernels|fsdp_eval_fsdp_kernels)::@(\w+)",
                f.read()):
            launched.setdefault(binary, set()).add(kernel)
    if sorted(launched) != ["fsdp_eval_fsdp_kernels", "fsdp_kernels"]:
        fail(f"kernels launched from {sorted(launched)}, expected the training and the "
             f"evaluation step's binaries")
    listing = checked([args.cuobjdump, "--list-elf", trainer])
    found_archs = re.findall(r"\.(sm_\w+)\.cubin", listing)
    if sorted(found_archs) != sorted(archs * len(launched)):
        fail(f"fat binary architectures {found_archs}, expected {archs} in each of "
             f"{len(launched)}:\n{listing}")
    symbols = checked([args.cuobjdump, "--dump-elf-symbols", trainer])
    sections = re.split(r"Fatbin elf code:", symbols)[1:]
    found = []
    for section in sections:
        arch = re.search(r"arch = (sm_\w+)", section).group(1)
        kernels = set(re.findall(r"FUNC\s+GLOBAL\s+\w+\s+ENTRY\s+(\w+)", section))
        binary = next((b for b, k in launched.items() if k == kernels), None)
        if binary is None:
            fail(f"{arch}: a cubin's kernels {sorted(kernels)} are no step's launched kernels")
        found.append((binary, arch))
        print(f"{name}: {binary} {arch} cubin holds all {len(kernels)} launched kernels")
    if sorted(found) != sorted((b, a) for b in launched for a in archs):
        fail(f"cubins {sorted(found)}: expected one per step and architecture")

    # 3. No GPU here: a clear message and status 1, at once.
    for ranks in (1, args.mpirun_ranks):
        command = [trainer, "--steps", "1"]
        if ranks > 1:
            mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
            command = [mpirun, "--oversubscribe", "-np", str(ranks)] + command
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        try:
            result = run(command, env=env, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            fail(f"{ranks} rank(s): no exit within {RUN_TIMEOUT} s")
        if result.returncode == 0 or NO_DEVICE not in result.stderr:
            fail(f"{ranks} rank(s): exit {result.returncode}, stderr:\n{result.stderr}")
        if result.stderr.count(NO_DEVICE) != 1:
            fail(f"{ranks} rank(s): the message should be printed once:\n{result.stderr}")
        print(f"{name}: {ranks} rank(s) without a GPU: exit {result.returncode}, "
              f"'{NO_DEVICE}' once")
    print(f"PASS: {name}")


if __name__ == "__main__":
    main()
