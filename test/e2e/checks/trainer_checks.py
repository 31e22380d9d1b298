"""What the end-to-end checks share: compiling and running trainers, data files, and the
teacher-forced comparison of a trainer's --trace-state with the float64 reference
(test/reference/teacher.py)."""

import json
import os
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
REFERENCE = os.path.join(ROOT, "test", "reference")
sys.path.insert(0, REFERENCE)

# teacher first: it pins NumPy's BLAS to one thread before NumPy loads (its float32
# calibrations must not depend on the core count).
import teacher  # noqa: E402
import datafile  # noqa: E402
import models  # noqa: E402


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\n{result.stdout}\n{result.stderr}")
    return result


def fsdpc_command(fsdpc):
    """--fsdpc's value as a command: lit's fsdpc substitution may carry flags
    (--param fsdpc_cpu=NAME adds --cpu=NAME)."""
    return shlex.split(fsdpc)


class Checks:
    """Named checks, each printed as `name: detail PASS` (or FAIL) for FileCheck; finish()
    exits with the failures' names, or prints `PASS: <summary>`."""

    def __init__(self):
        self.failures = []

    def check(self, name, ok, detail=""):
        print(f"{name}: {detail} {'PASS' if ok else 'FAIL'}")
        if not ok:
            self.failures.append(name)

    def finish(self, summary):
        if self.failures:
            sys.exit("FAIL: " + ", ".join(self.failures))
        print(f"PASS: {summary}")


def read_records(path):
    """Every JSON object of a --log-json file: steps, evaluations, the arena."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def tokenize_docs(work):
    """The project's documentation (English text) as byte tokens: writes work/train.bin
    and the held-out work/val.bin with scripts/tokenize_text.py; returns its summary."""
    docs = os.path.join(ROOT, "docs")
    texts = sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    return json.loads(run([sys.executable, os.path.join(ROOT, "scripts", "tokenize_text.py"),
                           *texts, "--out-dir", work]).stdout)


def make_data(model, seed, path):
    run([sys.executable, os.path.join(REFERENCE, "make_data.py"), "--model", model,
         "--samples", "256", "--seed", str(seed), "--out", path])


def mpirun_command(ranks, *command):
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if not mpirun:
        sys.exit("mpirun not found on PATH")
    return [mpirun, "--oversubscribe", "-np", str(ranks), *command]


def import_and_compile(import_hf, fsdpc, model_dir, batch, seq, ranks, work):
    """(trainer, weights): fsdp-import-hf's model of `model_dir` for `ranks` ranks and its
    weights, written in `work`, the model compiled. import_hf and fsdpc: commands (lists)."""
    model, weights = os.path.join(work, "model.mlir"), os.path.join(work, "init.safetensors")
    trainer = os.path.join(work, "trainer")
    run([*import_hf, model_dir, "--batch", str(batch), "--seq", str(seq), "--grid", str(ranks),
         "-o", model, "--weights", weights])
    run([*fsdpc, model, "-o", trainer])
    return trainer, weights


def run_trainer(ranks, *command, timeout=300):
    """A trainer's command on `ranks` ranks (under mpirun above 1); exits the check with
    its output if it fails."""
    command = mpirun_command(ranks, *command) if ranks > 1 else list(command)
    result = subprocess.run(command, capture_output=True, text=True, env=mpi_environment(),
                            timeout=timeout)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\n{result.stdout}\n{result.stderr}")
    return result


def mpi_environment():
    env = dict(os.environ)
    # Open MPI refuses to start as root unless told (CI runs as root).
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def read_log(path):
    """(losses of the step records, the arena record or None) of a --log-json file."""
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    losses = [r["loss"] for r in records if "step" in r]
    arena = records[-1] if records and "planned_peak_bytes" in records[-1] else None
    return losses, arena


def teacher_forced(model, data, trace, losses, optimizer=None, lr=None, prec=None):
    """teacher.check of a trainer's trace: (per-step rows, failures). prec: the trainer's
    precision.Precision (mixed precision: dtypes, grid, strategy); float32 by default."""
    m = models.get(model)
    optimizer = optimizer or m["optimizer"]
    specs, arrays = datafile.read(data)
    datafile.check(data, specs, arrays, m["inputs"])
    lr = float(teacher.np.float32(lr if lr is not None else optimizer["lr"]))
    return teacher.check(model, arrays, teacher.Trace(trace, model, optimizer), losses, lr,
                         optimizer, m["clip_grad_norm"], prec or teacher.EXACT)
