#!/usr/bin/env python3
"""The GPU check kit on a machine without a GPU (docs/CUDA.md, section 5).

    gpu_bundle_check.py --fsdpc FSDPC --work DIR [--models mlp,gpt]
    gpu_bundle_check.py --fsdpc FSDPC --work DIR --kernels-on-cpu [--models ...]

1. scripts/gpu-bundle.sh builds a bundle of the given models with this fsdpc; it is
   under 48 MiB;
2. every binary in it finds each library it needs, but CUDA's and the C/C++ runtime's,
   in the bundle (kit/libraries.py, from the dynamic sections); a bundle missing one of
   them fails that check;
3. in a mount namespace where this machine's copies of the bundled libraries are
   unreadable (each bound to /dev/null), each trainer runs to its no-GPU error with the
   bundle's lib/, and cannot start without it (so the masking bites);
4. check.sh runs to its "no GPU" report: exit status 2, report.md and report.json
   written, the summary as its last line. (Not in the namespace: Python itself needs
   some of the masked libraries, zlib's for one.)

With --kernels-on-cpu, the check's own logic without a GPU: a bundle of trainers whose
kernels run as CPU loops on the CPU runtime (gpu-bundle.sh --test-kernels-on-cpu), on which
check.sh --parts correctness,speed passes every check of every model; then, with one
trainer rebuilt from a plan whose learning rate is not the reference's, the teacher check
of that model fails, the check goes on to the others, and exits with status 1.

Prints one line per check and exits with 1 on the first failure.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LIMIT = 48 * 2**20
NO_DEVICE = "trainer: error: no usable CUDA device"


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)


def bundle_size(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files)


def build(fsdpc, bundle, models, *flags):
    env = dict(os.environ, FSDPC=shlex.split(fsdpc)[0])
    result = run([os.path.join(ROOT, "scripts", "gpu-bundle.sh"), bundle, "--models", models,
                  "--jobs", "2", *flags], env=env)
    if result.returncode != 0:
        fail(f"gpu-bundle.sh exited with {result.returncode}:\n{result.stdout}{result.stderr}")
    size = bundle_size(bundle)
    print(f"bundle: {models}: {size / 2**20:.1f} MiB, under 48 MiB: "
          f"{'PASS' if size < LIMIT else 'FAIL'}")
    if size >= LIMIT:
        fail("bundle over 48 MiB")


def libraries_check(bundle, work):
    kit = os.path.join(bundle, "kit", "libraries.py")
    result = run([sys.executable, kit, bundle])
    if result.returncode != 0:
        fail(f"libraries.py: {result.stdout}{result.stderr}")
    print(f"libraries: {result.stdout.strip()}: PASS")
    # A bundle without one of its libraries must fail the same check.
    broken = os.path.join(work, "broken")
    shutil.copytree(bundle, broken)
    with open(os.path.join(bundle, "bundle.json")) as f:
        victim = json.load(f)["libraries"][0]
    os.remove(os.path.join(broken, "lib", victim))
    result = run([sys.executable, kit, broken])
    named = result.returncode == 1 and f"needs {victim}" in result.stdout
    print(f"libraries: without lib/{victim}: exit {result.returncode}, named: "
          f"{'PASS' if named else 'FAIL'}")
    if not named:
        fail(f"libraries.py passed a bundle without {victim}:\n{result.stdout}")
    shutil.rmtree(broken)


def masking_mounts(bundle):
    """Shell commands that, run by `unshare -m`, make this machine's copy of every bundled
    library unreadable (a bind mount of /dev/null)."""
    with open(os.path.join(bundle, "bundle.json")) as f:
        sonames = json.load(f)["libraries"]
    # Every binary's: the runtime's shared library is the trainers', not the attention
    # check's (which links its own copy).
    paths = set()
    for name in os.listdir(os.path.join(bundle, "bin")):
        out = run(["ldd", os.path.join(bundle, "bin", name)]).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] in sonames and parts[1] == "=>":
                paths.add(os.path.realpath(parts[2]))
    if len(paths) != len(sonames):
        fail(f"found {len(paths)} system copies of the {len(sonames)} bundled libraries")
    mounts = "".join(f"mount --bind /dev/null {shlex.quote(p)} && " for p in sorted(paths))
    return f"mount --make-rprivate / && {mounts}"


def trainers_load_from_bundle(bundle):
    """In the masked namespace, each trainer starts with the bundle's lib/ (to the no-GPU
    error), and not without it (so the masking bites)."""
    mounts, lib = masking_mounts(bundle), os.path.join(bundle, "lib")

    def in_namespace(command):
        return run(["unshare", "-m", "sh", "-c", mounts + command])

    for name in sorted(os.listdir(os.path.join(bundle, "bin"))):
        trainer = shlex.quote(os.path.join(bundle, "bin", name))
        bare = in_namespace(f"env LD_LIBRARY_PATH= {trainer} --version")
        masked = bare.returncode == 127 and "error while loading shared libraries" in bare.stderr
        # The runtime's attention alone (fsdp-attention-check) opens the device first too.
        arguments = "1,1,1,8,8 /nonexistent" if name == "fsdp-attention-check" else "--steps 1"
        loaded = in_namespace(f"env LD_LIBRARY_PATH={shlex.quote(lib)} {trainer} {arguments}")
        starts = loaded.returncode == 1 and NO_DEVICE in loaded.stderr
        print(f"namespace: {name}: without the bundle's lib/ it cannot start: "
              f"{'PASS' if masked else 'FAIL'}; with it, it runs to the no-GPU error: "
              f"{'PASS' if starts else 'FAIL'}")
        if not (masked and starts):
            fail(f"{bare.returncode}: {bare.stderr}\n{loaded.returncode}: {loaded.stderr}")


def no_gpu_report(bundle, work):
    out = os.path.join(work, "report")
    result, report = check_sh(bundle, out)
    lines = result.stdout.strip().splitlines()
    written = all(os.path.exists(os.path.join(out, n)) for n in ("report.md", "report.json"))
    summary = lines[-1] if lines else ""
    ok = result.returncode == 2 and written and "(no usable GPU)" in summary
    print(f"check.sh without a GPU: exit {result.returncode}, reports written: {written}, "
          f"last line '{summary}': {'PASS' if ok else 'FAIL'}")
    if not ok:
        fail(f"{result.stdout}{result.stderr}")
    for part in report["parts"]:
        print(f"report: {part['section']} {part['name']} {part['status']}: {part['detail']}")


def check_sh(bundle, out, *flags):
    """check.sh's exit status and report.json; the tests' Python has NumPy, whatever
    python3 is first on lit's PATH."""
    result = run([os.path.join(bundle, "check.sh"), out, *flags],
                 env=dict(os.environ, PYTHON=sys.executable))
    with open(os.path.join(out, "report.json")) as f:
        return result, json.load(f)


def checks_on_cpu(fsdpc, bundle, work, models):
    """check.sh's correctness and speed parts on trainers whose kernels run on the CPU."""
    build(fsdpc, bundle, models, "--test-kernels-on-cpu")
    result, report = check_sh(bundle, os.path.join(work, "good"), "--parts",
                              "correctness,speed")
    for part in report["parts"]:
        print(f"good: {part['section']} {part['model']} {part['name']}: {part['status']}")
    if result.returncode != 0:
        fail(f"check.sh exited with {result.returncode}:\n{result.stdout}{result.stderr}")
    print(f"good: {result.stdout.strip().splitlines()[-1]}")

    # A trainer whose plan is not the model the reference checks: lr 10 times higher.
    with open(os.path.join(bundle, "bundle.json")) as f:
        gpt = json.load(f)["models"]["gpt"]
    source = os.path.join(bundle, gpt["source"])
    with open(source) as f:
        text = f.read().replace("lr = 3.0e-4", "lr = 3.0e-3", 1)
    if "lr = 3.0e-3" not in text:
        fail("examples/gpt.mlir no longer has lr = 3.0e-4")
    wrong = os.path.join(work, "gpt-wrong-lr.mlir")
    with open(wrong, "w") as f:
        f.write(text)
    compiled = run([*shlex.split(fsdpc), wrong, "--grid=1", "--target=cuda",
                    "--test-kernels-on-cpu", "-o", os.path.join(bundle, gpt["trainer"])])
    if compiled.returncode != 0:
        fail(compiled.stderr)
    result, report = check_sh(bundle, os.path.join(work, "bad"), "--parts", "correctness")
    for part in report["parts"]:
        if part["status"] != "PASS":
            print(f"bad: {part['section']} {part['model']} {part['name']}: {part['status']}")
    print(f"bad: exit {result.returncode}: {result.stdout.strip().splitlines()[-1]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--models", default="mlp,gpt")
    parser.add_argument("--kernels-on-cpu", action="store_true")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    bundle = os.path.join(args.work, "bundle")
    if args.kernels_on_cpu:
        checks_on_cpu(args.fsdpc, bundle, args.work, args.models)
        return
    build(args.fsdpc, bundle, args.models)
    libraries_check(bundle, args.work)
    trainers_load_from_bundle(bundle)
    no_gpu_report(bundle, args.work)
    print("PASS: gpu bundle")


if __name__ == "__main__":
    main()
