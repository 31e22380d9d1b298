#!/usr/bin/env python3
"""The GPU check: proves the bundle's CUDA trainers on this node, in one command.

    check.sh OUTDIR [--models NAME,...] [--parts PART,...] [--deadline SECONDS] [--work DIR]

Writes OUTDIR/report.md, OUTDIR/report.json (both rewritten after every part, so a killed
check leaves what it had) and OUTDIR/check.log (every command and the end of its output).
Parts, in order (bundle.json says which model gets which; docs/CUDA.md section 5):

  environment   nvidia-smi, where CUDA's libraries were found, `trainer --version`
  correctness   per model: --trace-state checked step by step by reference/teacher.py
                (float64, the CPU's bounds); --export equal to the trace's last
                parameters and read back by --init-from; graph-replayed steps equal to
                --no-cuda-graph's, bit for bit; planned arena = measured high-water mark;
                a checkpoint resumed to the same losses
  sanitize      compute-sanitizer memcheck, racecheck, synccheck on two eager steps
                (racecheck and synccheck judge our kernels; cuDNN's are noted apart)
  speed         median step time, tokens/s and MFU (model FLOPs against the card's dense
                bf16 peak); PyTorch on the identical model (bench/gpu/torch_llama_step.py)
  kernels       the ten kernels that take most of a step (ncu)

A failing part is recorded and the check goes on; a part that would start after the
deadline is recorded as skipped. The last line printed is a one-line summary. Exit
status: 0 every part passed, 1 a part failed, 2 no usable GPU (the report says why).
"""

import argparse
import concurrent.futures
import csv
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

KIT = os.path.dirname(os.path.abspath(__file__))
BUNDLE = os.path.dirname(KIT)
REFERENCE = os.path.join(BUNDLE, "reference")
sys.path.insert(0, KIT)
import libraries  # noqa: E402

NO_DEVICE = "no usable CUDA device"
LOG_TAIL = 4000  # characters of each command's output kept in check.log

# Dense (no sparsity) bf16 tensor-core peaks, FLOP/s, by the name nvidia-smi prints.
# NVIDIA's datasheets: H100 SXM5 and H200 989.4 TFLOP/s, H100 NVL 835, H100 PCIe 756,
# A100 312, L40S 362.
BF16_PEAKS = [(r"H200|GH200", 989.4e12), (r"H100.*(SXM|HBM3)", 989.4e12),
              (r"H100.*NVL", 835e12), (r"H100.*PCIe", 756e12), (r"A100", 312e12),
              (r"L40S", 362e12)]


def bf16_peak(gpu_name):
    for pattern, peak in BF16_PEAKS:
        if re.search(pattern, gpu_name or ""):
            return peak
    return None


class Report:
    """The parts checked so far, written as report.json and report.md after each."""

    def __init__(self, outdir):
        self.outdir = outdir
        self.data = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "environment": {},
                     "parts": [], "speed": [], "kernels": [], "summary": ""}

    def part(self, section, model, name, status, detail="", **figures):
        self.data["parts"].append({"section": section, "model": model, "name": name,
                                   "status": status, "detail": detail, **figures})
        print(f"[{status}] {section} {model} {name}: {detail}", flush=True)
        self.write()

    def counts(self):
        statuses = [p["status"] for p in self.data["parts"]]
        return {s: statuses.count(s) for s in ("PASS", "FAIL", "SKIP", "NOTE")}

    def write(self):
        with open(os.path.join(self.outdir, "report.json"), "w") as f:
            json.dump(self.data, f, indent=1)
        with open(os.path.join(self.outdir, "report.md"), "w") as f:
            f.write(markdown(self.data))


def markdown(data):
    env = data["environment"]
    lines = [f"# GPU check of bundle {env.get('bundle_commit', '?')}", "",
             f"Started {data['started']}. {data['summary']}", "", "## Environment", ""]
    for key in ("gpu", "driver", "gpu_memory", "bf16_peak_tflops", "glibc", "python", "torch",
                "trainer_version"):
        if key in env:
            lines.append(f"- {key}: {env[key]}")
    for soname, where in sorted(env.get("cuda_libraries", {}).items()):
        lines.append(f"- {soname}: {where}")
    if env.get("nvidia_smi"):
        lines += ["", "```", env["nvidia_smi"].rstrip(), "```"]
    lines += table("Checks", ["section", "model", "check", "status", "detail"],
                   [[p["section"], p["model"], p["name"], p["status"],
                     p["detail"].replace("|", "\\|").replace("\n", " ")[:300]]
                    for p in data["parts"]])
    lines += table("Speed (median step after warm-up)",
                   ["model", "runs", "step ms", "tokens/s", "MFU", "memory GiB"],
                   [[s["model"], s["runner"], f"{s['step_ms']:.2f}", f"{s['tokens_per_s']:,.0f}",
                     f"{100 * s['mfu']:.1f}%" if s.get("mfu") is not None else "-",
                     f"{s['memory_bytes'] / 2**30:.2f}" if s.get("memory_bytes") else "-"]
                    for s in data["speed"]])
    lines += table("Kernels that take most of the step (predicted: the bundle's kernel table)",
                   ["model", "kernel", "launches", "time ms", "share", "predicted ms",
                    "GB/s (the table's bytes)"],
                   [[k["model"], f"`{k['name'][:80]}`", k["launches"], f"{k['ms']:.3f}",
                     f"{100 * k['share']:.1f}%",
                     f"{k['predicted_ms']:.3f}" if k.get("predicted_ms") is not None else "-",
                     f"{k['achieved_gbps']:,.0f}" if k.get("achieved_gbps") is not None else "-"]
                    for k in data["kernels"]])
    return "\n".join(lines) + "\n"


def table(title, header, rows):
    """A markdown section with one table, or nothing without rows."""
    if not rows:
        return []
    return (["", f"## {title}", "", "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)] +
            ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows])


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()

    def timeout(self, wanted):
        """The time a command may take: `wanted`, or what is left if less."""
        return max(1.0, min(wanted, self.left()))


class Node:
    """Runs the bundle's programs with the libraries this node provides; the reference's
    checks (CPU only) in the background, beside the GPU's work."""

    def __init__(self, outdir, work, deadline):
        self.log = open(os.path.join(outdir, "check.log"), "w")
        self.lock = threading.Lock()
        self.work, self.deadline = work, deadline
        self.env = dict(os.environ)
        self.background = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.pending_teachers = []

    def run(self, command, timeout, env=None, cwd=None):
        """(exit status or None on timeout, stdout + stderr, seconds)."""
        started = time.monotonic()
        try:
            result = subprocess.run(command, capture_output=True, text=True, cwd=cwd,
                                    timeout=self.deadline.timeout(timeout),
                                    env=dict(self.env, **(env or {})), errors="replace")
            status, output = result.returncode, result.stdout + result.stderr
        except subprocess.TimeoutExpired as e:
            status = None
            output = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                             for x in (e.stdout, e.stderr)) + "\n(timed out)"
        seconds = time.monotonic() - started
        with self.lock:
            self.log.write(f"$ {' '.join(command)}\n{output[-LOG_TAIL:]}\n"
                           f"(exit {status}, {seconds:.1f} s)\n\n")
            self.log.flush()
        return status, output, seconds

    def run_in_background(self, command, timeout, env=None):
        """A future of run(...)'s result, one command at a time."""
        return self.background.submit(self.run, command, timeout, env)


def find_tool(name):
    """A CUDA toolkit program: on PATH or in the toolkit's bin."""
    toolkit = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    for path in (shutil.which(name), os.path.join(toolkit, "bin", name)):
        if path and os.access(path, os.X_OK):
            return path
    return None


def python_site_paths():
    """The site-packages of this Python (PyTorch's nvidia packages live there)."""
    import site
    paths = list(getattr(site, "getsitepackages", lambda: [])())
    paths.append(site.getusersitepackages())
    return [p for p in paths + sys.path if p and os.path.isdir(p)]


def version(text):
    return tuple(int(x) for x in re.findall(r"\d+", text))


def describe_gpu(env, node):
    """nvidia-smi's view: the card's name (and so its bf16 peak), driver and memory."""
    smi = find_tool("nvidia-smi")
    if not smi:
        env["nvidia_smi"] = "nvidia-smi: not found"
        return
    _, env["nvidia_smi"], _ = node.run([smi], 30)
    status, out, _ = node.run([smi, "--query-gpu=name,driver_version,memory.total",
                               "--format=csv,noheader"], 30)
    if status == 0 and out.strip():
        name, driver, memory = (x.strip() for x in out.splitlines()[0].split(",")[:3])
        peak = bf16_peak(name)
        env.update(gpu=name, driver=driver, gpu_memory=memory,
                   bf16_peak_tflops=peak / 1e12 if peak else None)


def locate_libraries(env, node):
    """Finds the CUDA libraries the trainers need, puts them and the bundle's lib/ on the
    trainers' LD_LIBRARY_PATH; returns the sonames not found."""
    needs = libraries.outside_needs(BUNDLE)
    found = libraries.find_outside(needs, python_site_paths())
    env["cuda_libraries"] = {s: (f"{found[s][0]} ({found[s][1]})" if s in found
                                 else "NOT FOUND") for s in needs}
    directories = [os.path.join(BUNDLE, "lib")]
    directories += sorted({os.path.dirname(path) for path, _ in found.values()})
    node.env["LD_LIBRARY_PATH"] = ":".join(
        directories + [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d])
    # The reference's helpers start trainers too (params_file.manifest_params runs
    # --print-manifest): they need the bundle's runtime library as well.
    os.environ["LD_LIBRARY_PATH"] = node.env["LD_LIBRARY_PATH"]
    return [s for s in needs if s not in found]


def describe_environment(report, node, bundle):
    """The node as the check found it; False when the trainers' libraries are missing."""
    env = report.data["environment"]
    env.update(bundle_commit=bundle.get("commit"), python=sys.version.split()[0],
               glibc=os.confstr("CS_GNU_LIBC_VERSION"))
    describe_gpu(env, node)
    status, out, _ = node.run([sys.executable, "-c",
                               "import torch; print(torch.__version__, torch.version.cuda)"], 60)
    env["torch"] = out.strip().splitlines()[-1] if status == 0 else "not importable"
    missing = locate_libraries(env, node)
    wanted, have = libraries.glibc_needed(BUNDLE), os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    if wanted and version(have) < version(wanted):
        missing.append(f"glibc {wanted} (this node has {have}: build the bundle on an older "
                       "distribution)")
    report.part("environment", "-", "libraries", "FAIL" if missing else "PASS",
                f"not found: {', '.join(missing)}" if missing else
                f"the CUDA libraries found; the rest in the bundle's lib/; glibc {have} >= "
                f"{wanted}, which the bundle needs")
    first = next(iter(bundle["models"].values()))
    status, out, _ = node.run([os.path.join(BUNDLE, first["trainer"]), "--version"], 60)
    env["trainer_version"] = out.strip().replace("\n", "; ")
    return not missing


def has_device(report, node, bundle):
    """Whether a trainer finds a GPU: one step of the lightest model."""
    name, model = min(bundle["models"].items(), key=lambda m: m[1]["model_flops_per_step"])
    status, out, _ = node.run([os.path.join(BUNDLE, model["trainer"]), "--steps", "1"], 120)
    if status != 0 and NO_DEVICE in out:
        line = next(l for l in out.splitlines() if NO_DEVICE in l)
        report.part("environment", name, "device", "SKIP", f"no GPU: {line.strip()}")
        return False
    report.part("environment", name, "device", "PASS" if status == 0 else "FAIL",
                "one step ran" if status == 0 else f"exit {status}: {out[-500:]}")
    # Said, not skipped silently: what one rank cannot show.
    report.part("environment", "-", "ranks", "SKIP",
                "one rank per trainer: NCCL's collectives across GPUs, their overlap with "
                "compute, the streams' events under real concurrency and a killed or stopped "
                "peer's end (--collective-timeout) need two or more GPUs and a launcher "
                "(docs/CUDA.md, section 6)")
    return True


def read_records(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def losses(path):
    return [r["loss"] for r in read_records(path) if "step" in r]


class ModelCheck:
    """The correctness checks of one model, each a few trainer runs in its work folder."""

    def __init__(self, report, node, name, model):
        self.report, self.node, self.name, self.model = report, node, name, model
        self.trainer = os.path.join(BUNDLE, model["trainer"])
        self.dir = os.path.join(node.work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.data = []

    def path(self, name):
        return os.path.join(self.dir, name)

    def train(self, *flags, timeout=180, env=None):
        status, out, seconds = self.node.run([self.trainer, *self.data, *flags], timeout,
                                             env=env)
        return status, out

    def record(self, check, ok, detail, **figures):
        self.report.part("correctness", self.name, check, "PASS" if ok else "FAIL", detail,
                         **figures)

    def failed_run(self, check, status, out):
        self.record(check, False, f"trainer exit {status}: {out.strip()[-600:]}")

    def make_data(self):
        if not self.model.get("reference"):
            return True
        data = self.path("data.bin")
        if os.path.exists(data):
            self.data = ["--data", data]
            return True
        status, out, _ = self.node.run(
            [sys.executable, os.path.join(REFERENCE, "make_data.py"), "--model",
             self.model["reference"], "--samples", str(4 * self.model["batch"]), "--seed",
             "11", "--out", data], 300)
        if status != 0:
            self.record("data", False, f"make_data.py: {out.strip()[-600:]}")
            return False
        self.data = ["--data", data]
        return True

    def teacher_and_export(self, checks):
        """--trace-state and --export of 3 steps (2 for a Llama: its bf16 reference takes
        a minute or two a step); the teacher, the export, --init-from."""
        steps = 2 if self.model["tokens_per_step"] >= 1024 else 3
        trace, export = self.path("trace.bin"), self.path("e.safetensors")
        log = self.path("teacher.json")
        status, out = self.train("--steps", str(steps), "--trace-state", trace, "--export",
                                 export, "--log-json", log)
        if status != 0:
            for check in ("teacher", "export"):
                if check in checks:
                    self.failed_run(check, status, out)
            return
        if "teacher" in checks:
            self.teacher(trace, log)
        if "export" in checks:
            self.export(trace, export, steps)

    def teacher(self, trace, log):
        """reference/teacher.py on the trace, in the background: a float64 Llama takes
        minutes of CPU, which the GPU's other checks need not wait for. Its BLAS gets half
        the node's cores (f32); the trainers, one each, the rest. Recorded by
        finish_teachers."""
        # One thread for bf16: its bounds come from float32 calibrations, computed as the
        # tests compute them (a BLAS thread count is a summation order).
        threads = "1" if self.model["param_dtype"] == "bf16" else str(
            max(1, (os.cpu_count() or 2) // 2))
        future = self.node.run_in_background(
            [sys.executable, os.path.join(REFERENCE, "teacher.py"), "--model",
             self.model["reference"], "--data", self.data[1], "--trace", trace, "--log", log,
             "--param-dtype", self.model["param_dtype"]], 900,
            env={"OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads})
        self.node.pending_teachers.append((self.name, future))

    def export(self, trace, export, steps):
        sys.path.insert(0, REFERENCE)
        from params_file import exported_bytes, manifest_params, trace_record_start
        params = manifest_params(self.trainer)
        try:
            wanted = exported_bytes(export, params)
        except ValueError as e:
            self.record("export", False, f"--export: {e}")
            return
        if trace_record_start(trace, steps + 1, steps, len(wanted)) != wanted:
            self.record("export", False, "--export differs from the trace's last parameters")
            return
        # Read back: the parameters a run started --init-from holds before its first step.
        again = self.path("init-trace.bin")
        status, out = self.train("--steps", "1", "--init-from", export, "--trace-state", again)
        if status != 0:
            self.failed_run("export", status, out)
            return
        same = trace_record_start(again, 2, 0, len(wanted)) == wanted
        self.record("export", same, "--export equals the trace's last parameters; --init-from "
                    "starts from them bit for bit" if same else
                    "--init-from did not start from the exported parameters")

    def graph_arena_checkpoint(self, checks):
        steps, every = (4, 2) if heavy(self.model) else (6, 3)
        graph, eager = self.path("graph.json"), self.path("eager.json")
        save = self.path("checkpoints")
        flags = ["--save", save, "--save-every", str(every)] if "checkpoint" in checks else []
        status, out = self.train("--steps", str(steps), "--log-json", graph, *flags)
        if status != 0:
            for check in ("graph", "arena", "checkpoint"):
                if check in checks:
                    self.failed_run(check, status, out)
            return
        replayed = losses(graph)
        if "arena" in checks:
            self.arena(graph)
        if "graph" in checks:
            status, out = self.train("--steps", str(steps), "--no-cuda-graph", "--log-json",
                                     eager)
            if status != 0:
                self.failed_run("graph", status, out)
            else:
                called = losses(eager)
                same = called == replayed and len(called) == steps
                self.record("graph", same, f"{steps} steps: the replayed losses " +
                            ("equal --no-cuda-graph's" if same else
                             f"{replayed} differ from --no-cuda-graph's {called}"))
        if "checkpoint" in checks:
            resumed = self.path("resumed.json")
            status, out = self.train("--steps", str(steps), "--resume",
                                     os.path.join(save, f"step-{every:08d}"), "--log-json",
                                     resumed)
            if status != 0:
                self.failed_run("checkpoint", status, out)
            else:
                again = losses(resumed)
                same = again == replayed[every:]
                self.record("checkpoint", same, f"resumed at step {every}: steps "
                            f"{every + 1}..{steps} " + ("equal the uninterrupted run's" if same
                                                        else f"{again} vs {replayed[every:]}"))

    def watchdog(self):
        """--collective-timeout of a millisecond, far under a step of this model: the
        device watchdog (runtime/lib/cuda/DeviceWatchdog.cpp) must find a step late, name
        it and stop the trainer with exit status 1, on the device's own events."""
        status, out = self.train("--steps", "1000", "--collective-timeout", "0.001",
                                 timeout=120)
        said = [l for l in out.splitlines() if l.startswith("trainer: error:")]
        ok = status == 1 and len(said) == 1 and re.match(
            r"trainer: error: step \d+: the step's work on the device .*has not completed "
            r"after \d+\.\d+ s \(--collective-timeout=0\.001", said[0]) is not None
        self.record("watchdog", ok, said[0] if ok else f"exit {status}: {out.strip()[-600:]}")

    def arena(self, log):
        records = read_records(log)
        arena = records[-1] if records and "planned_peak_bytes" in records[-1] else None
        if arena is None:
            self.record("arena", False, "no arena record at the end of --log-json")
            return
        peak, marks = arena["planned_peak_bytes"], arena["high_water_bytes"]
        self.record("arena", marks == [peak], f"planned {peak:,} B, measured {marks}",
                    planned_bytes=peak)


def heavy(model):
    """A model whose step takes seconds (the 1B Llama's 1.1e14 FLOPs), not milliseconds:
    fewer steps for each check of it."""
    return model["model_flops_per_step"] > 1e13


def finish_teachers(report, node):
    """Records the background teachers' verdicts (each within the deadline)."""
    for name, future in node.pending_teachers:
        try:
            status, out, seconds = future.result()
        except Exception as e:  # noqa: BLE001 - recorded, the check goes on
            report.part("correctness", name, "teacher", "FAIL", f"{type(e).__name__}: {e}")
            continue
        summary = out.strip().splitlines()[-1] if out.strip() else ""
        report.part("correctness", name, "teacher", "PASS" if status == 0 else "FAIL",
                    f"{summary} ({seconds:.0f} s)" if status == 0 else out.strip()[-900:])
    node.pending_teachers = []


def correctness(report, node, name, model):
    check = ModelCheck(report, node, name, model)
    checks = model["checks"]
    if not check.make_data():
        return
    if "teacher" in checks or "export" in checks:
        check.teacher_and_export(checks)
    if any(c in checks for c in ("graph", "arena", "checkpoint")):
        check.graph_arena_checkpoint(checks)
    if "watchdog" in checks:
        check.watchdog()


# cuDNN's fused attention kernels synchronise their warp groups with named barriers and
# mbarriers; under racecheck and synccheck its sm90 backward kernel reported hazards and
# barrier errors (cuDNN 9.19, H200, 2026-11-28) and synccheck stopped it (error 719), so
# every kernel after it went unchecked. Those two tools judge our kernels (and cuBLAS's)
# with cuDNN's excluded; what they say of cuDNN's own kernels is recorded as a NOTE.
# memcheck watches every kernel: a wrong pointer or size we pass cuDNN shows there.
LIBRARY_KERNELS = "kns=cudnn"


def sanitize(report, node, name, model):
    tool = find_tool("compute-sanitizer")
    check = ModelCheck(report, node, name, model)
    runs_cudnn = "attention=fused" in model.get("reference", "")
    for kind in ("memcheck", "racecheck", "synccheck"):
        if tool is None:
            report.part("sanitize", name, kind, "FAIL", "compute-sanitizer not found")
            continue
        if not check.data and not check.make_data():
            return
        if kind == "memcheck":
            sanitize_run(report, node, check, tool, kind, [], kind)
            continue
        sanitize_run(report, node, check, tool, kind,
                     ["--kernel-name-exclude", LIBRARY_KERNELS],
                     kind + (" (ours; cuDNN's excluded)" if runs_cudnn else ""))
        if runs_cudnn:
            sanitize_run(report, node, check, tool, kind, ["--kernel-name", LIBRARY_KERNELS],
                         kind + " (cuDNN's kernels alone)", failed="NOTE")


def sanitize_run(report, node, check, tool, kind, filters, label, failed="FAIL"):
    if node.deadline.left() < 30:
        report.part("sanitize", check.name, label, "SKIP", "out of time")
        return
    # racecheck watches every shared-memory access: one step of the small Llama's
    # attention under it ran past 80 s on an H100 (2026-11-27), so it gets one step,
    # of the tiny Llama (make_bundle.py).
    steps = "1" if kind == "racecheck" else "2"
    status, out, seconds = node.run(
        [tool, "--tool", kind, "--error-exitcode", "97", "--print-limit", "20", *filters,
         check.trainer, *check.data, "--steps", steps, "--no-cuda-graph"], 300,
        env={"CUDA_LAUNCH_BLOCKING": "1"})
    summary = [l for l in out.splitlines() if "SUMMARY" in l]
    ok = status == 0
    # The trainer's own words (not the sanitizer's) say why it stopped.
    said = [l for l in out.splitlines() if l.strip() and not l.startswith("=========")]
    why = ("timed out" if status is None else f"exit {status}") + \
        (": " + " / ".join(said)[-900:] if said else "")
    kernels = sorted(set(re.findall(r"at (\w+)\+0x", out)))
    where = f"; in {', '.join(kernels)[:300]}" if kernels and not ok else ""
    report.part("sanitize", check.name, label, "PASS" if ok else failed,
                (summary[-1].strip() if summary else f"exit {status}") +
                f" ({seconds:.0f} s)" + ("" if ok else f"; {why}") + where)


def speed(report, node, name, model, peak):
    warmup, timed = (2, 5) if heavy(model) else (5, 30)
    check = ModelCheck(report, node, name, model)
    log = check.path("speed.json")
    if not check.data and not check.make_data():
        return
    status, out = check.train("--steps", str(warmup + timed), "--log-json", log,
                              "--log-every", "1000", timeout=300)
    if status != 0:
        report.part("speed", name, "ours", "FAIL", f"trainer exit {status}: {out[-600:]}")
        return
    steps = [r for r in read_records(log) if "step" in r][warmup:]
    seconds = statistics.median(model["batch"] / r["samples_per_sec"] for r in steps)
    # The trainer's own MFU (its step FLOPs from the compiler, its peak from the card's
    # name), beside the kit's: where they differ, the first line says why.
    own = [r["mfu"] for r in steps if "mfu" in r]
    said = next((line for line in out.splitlines() if line.startswith("throughput: ")), "")
    against = said.partition("; MFU against ")[2]
    trainer = (f"; the trainer's own MFU {100 * statistics.median(own):.1f}% against {against}"
               if own else f"; the trainer's own MFU: none ({against or 'no throughput line'})")
    add_speed(report, name, "ours", seconds, model, peak, note=trainer,
              trainer_mfu=statistics.median(own) if own else None)


def add_speed(report, name, runner, seconds, model, peak, memory=None, note="",
              trainer_mfu=None):
    flops = model["model_flops_per_step"]
    row = {"model": name, "runner": runner, "step_ms": 1e3 * seconds,
           "tokens_per_s": model["tokens_per_step"] / seconds,
           "mfu": flops / seconds / peak if peak and flops else None,
           "memory_bytes": memory, "trainer_mfu": trainer_mfu}
    report.data["speed"].append(row)
    mfu = f", MFU {100 * row['mfu']:.1f}%" if row["mfu"] is not None else ""
    report.part("speed", name, runner, "PASS",
                f"{row['step_ms']:.2f} ms/step, {row['tokens_per_s']:,.0f} tokens/s{mfu}{note}")


def torch_speed(report, node, name, model, peak):
    """PyTorch on the identical Llama: bf16 autocast with SDPA, eager and torch.compile,
    each mode in a process of its own with a time limit (bench/gpu/torch_llama_step.py)."""
    check = ModelCheck(report, node, name, model)
    out_json = check.path("torch.json")
    script = os.path.join(BUNDLE, "bench", "gpu", "torch_llama_step.py")
    big = heavy(model)
    per_mode = max(30, min(240, node.deadline.left() / 2 - 10))
    flags = ["--peak-tflops", str(peak / 1e12)] if peak else []
    status, out, _ = node.run(
        [sys.executable, script, "--config", json.dumps(model["llama"]), "--modes",
         "eager,compile", "--warmup", "3", "--steps", "5" if big else "20",
         "--timeout-per-mode", f"{per_mode:.0f}", "--json", out_json, *flags],
        2 * per_mode + 30)
    if status != 0 or not os.path.exists(out_json):
        report.part("speed", name, "pytorch", "FAIL", f"exit {status}: {out.strip()[-600:]}")
        return
    with open(out_json) as f:
        results = json.load(f)
    report.data["environment"].setdefault("torch_bench", results.get("torch"))
    for mode, result in results.get("modes", {}).items():
        runner = f"pytorch {mode}"
        if not result.get("ok"):
            report.part("speed", name, runner, "FAIL",
                        f"{result.get('phase')}: {str(result.get('error'))[:600]}")
        else:
            add_speed(report, name, runner, result["median_step_ms"] / 1e3, model, peak,
                      result.get("max_memory_allocated_bytes"))


# One metric that a single pass collects, and no cache flush between kernels: with the
# DRAM byte counters beside it (a replay per kernel, the memory it writes saved and
# restored) one step of the 1B Llama ran past 240 s on an H100; with this, 57 s
# (2026-11-27).
NCU_METRIC = "gpu__time_duration.sum"


def kernels(report, node, name, model):
    """ncu over one eager step: each kernel's time, by kernel name."""
    ncu = find_tool("ncu")
    if ncu is None:
        report.part("kernels", name, "ncu", "FAIL", "ncu not found")
        return
    check = ModelCheck(report, node, name, model)
    if not check.data and not check.make_data():
        return
    # ncu's own output in a file of its own, apart from the trainer's.
    table = check.path("ncu.csv")
    status, out, seconds = node.run(
        [ncu, "--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none",
         "--cache-control", "none", "--log-file", table, "--metrics", NCU_METRIC,
         check.trainer, *check.data,
         "--steps", "1", "--no-cuda-graph"], 240)
    rows = {}
    if os.path.exists(table):
        with open(table, errors="replace") as f:
            rows = parse_ncu(f.read())
    if status != 0 or not rows:
        report.part("kernels", name, "ncu", "FAIL", f"exit {status}: {out.strip()[-600:]}")
        return
    total = sum(r["ns"] for r in rows.values())
    for entry in kernels_beside_table(rows, kernel_table(name)):
        report.data["kernels"].append(dict(entry, model=name))
    report.part("kernels", name, "ncu", "PASS",
                f"{sum(r['launches'] for r in rows.values())} launches, {len(rows)} kernels, "
                f"{total / 1e6:.1f} ms of kernels in the step ({seconds:.0f} s)")


def kernel_table(name):
    """{kernel name: row} of the bundle's kernel table for `name` (fsdpc --kernels), or {}."""
    path = os.path.join(BUNDLE, "kernels", f"{name}.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        rows = json.load(f)["kernels"]
    merged = {}
    for row in rows:  # a kernel launched at several shapes: its launches together
        entry = merged.setdefault(row["name"], {"launches": 0, "seconds": 0.0, "bytes": 0.0})
        entry["launches"] += row["launches"]
        entry["seconds"] += row["launches"] * row["predicted_seconds"]
        entry["bytes"] += row["launches"] * (row["bytes_read"] + row["bytes_written"])
    return merged


def kernels_beside_table(rows, table, count=10):
    """The `count` kernels of ncu's `rows` that take most of the step, each with its share,
    and where the kernel table has it, its predicted time for the launches measured and the
    DRAM rate its bytes (the table's) took at the measured time."""
    total = sum(r["ns"] for r in rows.values()) or 1.0
    out = []
    for kernel, r in sorted(rows.items(), key=lambda item: -item[1]["ns"])[:count]:
        entry = {"name": kernel, "launches": r["launches"], "ms": r["ns"] / 1e6,
                 "share": r["ns"] / total, "predicted_ms": None, "achieved_gbps": None}
        predicted = table.get(kernel)
        if predicted and predicted["launches"] > 0:
            per_launch = r["launches"] / predicted["launches"]
            entry["predicted_ms"] = predicted["seconds"] * per_launch * 1e3
            entry["achieved_gbps"] = predicted["bytes"] * per_launch / r["ns"]
        out.append(entry)
    return out


def parse_ncu(output):
    """{kernel name: {launches, ns}} from `ncu --csv --page raw` output."""
    start = output.find('"ID"')
    if start < 0:
        return {}
    rows = {}
    for row in csv.DictReader(io.StringIO(output[start:])):
        try:
            ns = float(row[NCU_METRIC].replace(",", ""))
        except (KeyError, ValueError, AttributeError):
            continue  # the units row
        entry = rows.setdefault(row.get("Kernel Name", "?"), {"launches": 0, "ns": 0.0})
        entry["launches"] += 1
        entry["ns"] += ns
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--models", default="", help="comma-separated; default: all")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated, of " + ", ".join(PARTS) + " (default: all; "
                        "the environment is always checked)")
    parser.add_argument("--deadline", type=float, default=450.0,
                        help="seconds after which no part starts (default 450)")
    parser.add_argument("--work", default="", help="scratch folder (default: a new one "
                        "under $TMPDIR)")
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(BUNDLE, "bundle.json")) as f:
        bundle = json.load(f)
    if args.models:
        wanted = args.models.split(",")
        unknown = [m for m in wanted if m not in bundle["models"]]
        if unknown:
            sys.exit(f"check: --models: not in this bundle: {', '.join(unknown)}")
        bundle["models"] = {m: bundle["models"][m] for m in wanted}
    parts = args.parts.split(",")
    if not parts or any(p not in PARTS for p in parts):
        sys.exit(f"check: --parts: expected some of {', '.join(PARTS)}")
    deadline = Deadline(args.deadline)
    report = Report(args.outdir)
    node = Node(args.outdir, args.work or tempfile.mkdtemp(prefix="fsdp-gpu-check-"), deadline)

    status = run_parts(report, node, bundle, deadline, parts)
    counts = report.counts()
    env = report.data["environment"]
    where = env.get("gpu") or "a machine without nvidia-smi"
    report.data["summary"] = (
        f"gpu-check on {where}: {counts['PASS']} passed, {counts['FAIL']} failed, "
        f"{counts['SKIP']} skipped" +
        (f", {counts['NOTE']} noted (not ours)" if counts["NOTE"] else "") +
        (" (no usable GPU)" if status == 2 else ""))
    report.write()
    print(f"report: {os.path.join(args.outdir, 'report.md')}")
    print(report.data["summary"])
    return status


PARTS = ("correctness", "attention", "sanitize", "speed", "kernels")


def attention(report, node):
    """The runtime's fused attention (cuDNN) against float64 at small shapes, then timed at
    the Llamas' (bench/gpu/attention_check.py driving bin/fsdp-attention-check): in the
    [B, S, H, D] layout the trainers' calls use, then checked in [B, H, S, D] too."""
    driver = os.path.join(BUNDLE, "bin", "fsdp-attention-check")
    if not os.path.exists(driver):
        report.part("attention", "-", "fused attention", "SKIP", "not in this bundle")
        return
    script = os.path.join(BUNDLE, "bench", "gpu", "attention_check.py")
    for layout, parts in (("bshd", "correct,speed"), ("bhsd", "correct")):
        attention_run(report, node, script, driver, layout, parts)


def attention_run(report, node, script, driver, layout, parts):
    status, out, seconds = node.run([sys.executable, "-u", script, "--driver", driver,
                                     "--layout", layout, "--parts", parts,
                                     "--work", os.path.join(node.work, "attention")], 300)
    results = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for r in results:
        if isinstance(r.get("shape"), str):  # a speed case, named by its model
            ok = "error" not in r and r.get("out_finite", False)
            figures = {k: r[k] for k in ("forward_ms", "backward_ms", "forward_tflops",
                                         "backward_tflops", "forward_workspace",
                                         "backward_workspace", "backward_repeatable",
                                         "forward_engine", "backward_engine") if k in r}
            report.part("attention", r["shape"], f"{layout} speed" + (" deterministic" if
                        r["deterministic"] else ""), "PASS" if ok else "FAIL",
                        r.get("error") or " ".join(f"{k}={v}" for k, v in figures.items()),
                        **figures)
        else:
            report.part("attention", "x".join(map(str, r["shape"])),
                        f"{layout} " + ("causal " if r["causal"] else "") +
                        ("deterministic" if r["deterministic"] else "fused"),
                        "PASS" if r["ok"] else "FAIL", r.get("error") or " ".join(
                            f"{k}={v:.2e}" for k, v in r.get("errors", {}).items()),
                        **r.get("errors", {}))
    if status != 0 and not any(not r.get("ok", True) for r in results):
        report.part("attention", "-", f"fused attention ({layout})", "FAIL",
                    f"exit {status}: {out[-600:]}")


def run_parts(report, node, bundle, deadline, parts):
    if not describe_environment(report, node, bundle):
        return 1
    if not has_device(report, node, bundle):
        return 2
    peak = (report.data["environment"].get("bf16_peak_tflops") or 0) * 1e12 or None

    def torch_part(r, n, name, m):
        torch_speed(r, n, name, m, peak)

    plan = [("correctness", correctness, lambda m: True),
            ("sanitize", sanitize, lambda m: "sanitize" in m["checks"]),
            ("speed", lambda r, n, name, m: speed(r, n, name, m, peak),
             lambda m: "speed" in m["checks"]),
            ("speed", torch_part, lambda m: "torch" in m["checks"]),
            ("kernels", kernels, lambda m: "kernels" in m["checks"])]
    if "attention" in parts and deadline.left() > 60:
        try:
            attention(report, node)
        except Exception as e:  # noqa: BLE001 - recorded, the check goes on
            report.part("attention", "-", "-", "FAIL", f"{type(e).__name__}: {e}")
    for section, part, applies in plan:
        if section not in parts:
            continue
        if section in ("speed", "kernels"):
            # No reference computing beside the timed runs.
            finish_teachers(report, node)
        # Speed and kernels of the largest model first: its figures matter most.
        models = sorted(bundle["models"].items(),
                        key=lambda item: -item[1]["model_flops_per_step"]
                        if section in ("speed", "kernels") else 0)
        for name, model in models:
            if not applies(model):
                continue
            if deadline.left() < 20:
                report.part(section, name, "-", "SKIP", "out of time (--deadline)")
                continue
            try:
                part(report, node, name, model)
            except Exception as e:  # noqa: BLE001 - recorded, the check goes on
                report.part(section, name, "-", "FAIL", f"{type(e).__name__}: {e}")
    finish_teachers(report, node)
    return 1 if report.counts()["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
