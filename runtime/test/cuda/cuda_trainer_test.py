#!/usr/bin/env python3
"""End-to-end tests of the fake model linked with the CUDA archives, without a GPU.

    cuda_trainer_test.py --trainer T1 --trainer-2 T2 --mpiexec MPIEXEC [--np-flag -n]
                         [--mpiexec-flags=F1;F2] CASE

T1 is FakeModel.c linked with libfsdprt_cuda_main and libfsdprt_cuda, T2 the
same for grid [2]. Here they can only start: --help, --print-manifest and flag
errors work without a GPU, and a run stops at once with one clear error. On a
machine with a GPU the no-device cases are skipped (exit status 77); the fake
model's step reads the arena from the host, so it cannot run on a GPU anyway.
"""

import os
import re
import subprocess
import sys
import time

# The fake trainer's end-to-end tests, whose helpers these share, live with the trainer's.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trainer"))
import trainer_test  # noqa: E402
from trainer_test import expect, expect_error, mpi_command, run  # noqa: E402

NO_DEVICE = (r"^trainer: error: no usable CUDA device: cudaGetDeviceCount: .+ \(this trainer "
             r"was compiled with fsdpc --target=cuda; compile with --target=cpu to train on "
             r"CPUs\)$")
SKIPPED = 77
# Every rank stops at rank 0's MPI_Abort, well before the 10 s the others
# give rank 0 to report an error they all meet.
PROMPT_SECONDS = 8

CASES = {}


def cuda_case(function):
    CASES[function.__name__] = function
    return function


for name in ["help", "print_manifest", "unknown_flag", "bad_value"]:
    CASES[name] = trainer_test.CASES[name]


class Skip(Exception):
    pass


def require_no_gpu():
    if os.path.exists("/dev/nvidiactl"):
        raise Skip("this machine has a GPU")


@cuda_case
def version(trainer, tmp):
    # The libraries' versions need no device.
    result = run(trainer, "--version")
    expect(result.returncode == 0, result.stderr)
    expect(re.fullmatch(r"backend: cuda\ncuda runtime: \d+\.\d+\.0\ncublas: \d+\.\d+\.\d+\n"
                        r"nccl: \d+\.\d+\.\d+\n", result.stdout), result.stdout)


@cuda_case
def no_device(trainer, tmp):
    require_no_gpu()
    started = time.monotonic()
    result = run(trainer, "--steps", 2)
    elapsed = time.monotonic() - started
    expect_error(result, NO_DEVICE)
    expect(result.stdout == "", f"the trainer printed:\n{result.stdout}")
    expect(elapsed < PROMPT_SECONDS, f"took {elapsed:.1f} s to stop")


@cuda_case
def mpi_no_device(trainer, tmp):
    require_no_gpu()
    started = time.monotonic()
    result = subprocess.run(
        mpi_command(2, trainer_test.OPTIONS.trainer_2, "--steps", 2), capture_output=True,
        text=True, timeout=trainer_test.MPI_TIMEOUT, env=trainer_test.mpi_environment())
    elapsed = time.monotonic() - started
    expect(result.returncode != 0, f"exit status 0:\n{result.stderr}")
    errors = [line for line in result.stderr.splitlines() if line.startswith("trainer: error:")]
    expect(len(errors) == 1 and re.match(NO_DEVICE, errors[0]),
           f"expected rank 0's one error line, got:\n{result.stderr}")
    expect(result.stdout == "", f"the trainer printed:\n{result.stdout}")
    expect(elapsed < PROMPT_SECONDS, f"took {elapsed:.1f} s to stop")


# What a rank that waited too long says (CollectiveTimeout.h).
TIMEOUT = (r"^trainer: error: rank [01]: step (\d+): the (all-gather|reduce-scatter) of unit "
           r"'linear' \(\d+ bytes per rank in the shard group\) has not completed after (\d+(\.\d+)?) s "
           r"\(--collective-timeout=0\.5(, doubled in a run's first step)?\): a rank of its group "
           r"stopped answering, or a device stopped; stopping every rank$")
ASYNC_ERROR = (r"^trainer: error: rank [01]: step (\d+): NCCL reported an asynchronous error on the "
               r"shard group's (all-gather|reduce-scatter) communicator: remote process exited or "
               r"there was a network error, while waiting for the \2 of unit 'linear' \(\d+ bytes "
               r"per rank in the shard group\)$")


def faulty_run(variable, collective, *flags):
    """grid [2] on the NCCL stand-ins, whose `collective`-th collective on every rank
    never completes (FakeNccl.cpp's injected faults): the trainer's error lines, the
    time it took and its exit status."""
    env = trainer_test.mpi_environment()
    env[variable] = str(collective)
    started = time.monotonic()
    result = subprocess.run(
        mpi_command(2, "-x", variable, trainer_test.OPTIONS.trainer_2, "--steps", 1000, *flags),
        capture_output=True, text=True, timeout=trainer_test.MPI_TIMEOUT, env=env)
    errors = [line for line in result.stderr.splitlines() if line.startswith("trainer: error:")]
    expect(result.returncode != 0, f"exit status 0:\n{result.stderr}")
    expect("step 1000 |" not in result.stdout, "the run finished")
    return errors, time.monotonic() - started


@cuda_case
def mpi_stalled_collective(trainer, tmp):
    # The 9th collective is step 5's all-gather (two a step): each rank names it
    # once its 0.5 s are up (within the watchdog's polls), and the first to report
    # stops the other.
    for stall, step, kind, doubled in [(9, "5", "all-gather", False),
                                       (2, "1", "reduce-scatter", True)]:
        errors, elapsed = faulty_run("FSDPRT_FAKE_NCCL_STALL_AT", stall, "--collective-timeout", 0.5)
        expect(errors and all(re.match(TIMEOUT, line) for line in errors),
               f"expected the ranks' timeout lines, got:\n{errors}")
        for line in errors:
            match = re.match(TIMEOUT, line)
            expect(match.group(1, 2) == (step, kind), line)
            # The first step's limit is twice the timeout; later work waited for
            # the stalled collective makes the report.
            expect(0.5 <= float(match.group(3)) <= 0.8 and not match.group(5) or doubled
                   and match.group(5), line)
        expect(elapsed < 20, f"took {elapsed:.1f} s to stop")


@cuda_case
def mpi_nccl_async_error(trainer, tmp):
    # NCCL's error is reported at the watchdog's next look, well before the default
    # 10-minute timeout: the 4th collective is step 2's reduce-scatter.
    errors, elapsed = faulty_run("FSDPRT_FAKE_NCCL_ERROR_AT", 4)
    expect(errors and all(re.match(ASYNC_ERROR, line) for line in errors),
           f"expected the ranks' NCCL error lines, got:\n{errors}")
    for line in errors:
        expect(re.match(ASYNC_ERROR, line).group(1, 2) == ("2", "reduce-scatter"), line)
    expect(elapsed < 20, f"took {elapsed:.1f} s to stop")


@cuda_case
def mpi_killed_peer(trainer, tmp):
    # A rank that dies (SIGKILL, as by the OOM killer) ends the run: mpirun sees it
    # and stops the other, which would wait in its next collective for ever.
    started = time.monotonic()
    result = subprocess.run(
        mpi_command(2, "sh", "-c",
                    'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec timeout -s KILL 2 "$0" '
                    '--steps 100000000; else exec "$0" --steps 100000000; fi',
                    trainer_test.OPTIONS.trainer_2),
        capture_output=True, text=True, timeout=trainer_test.MPI_TIMEOUT,
        env=trainer_test.mpi_environment())
    elapsed = time.monotonic() - started
    expect(result.returncode != 0, f"exit status 0:\n{result.stderr}")
    expect(re.search(r"(mpirun|mpiexec) noticed that process rank 1 .* exited on signal 9", result.stderr),
           f"mpirun did not say rank 1 died:\n{result.stderr}")
    expect(elapsed < 30, f"took {elapsed:.1f} s to stop")


@cuda_case
def mpi_debug_sync(trainer, tmp):
    # Waiting for each kernel and call changes no value: the same losses on two ranks.
    logs = []
    for flags in [(), ("--debug-sync",)]:
        log = os.path.join(tmp, f"log{len(logs)}.json")
        result = trainer_test.mpirun(2, trainer_test.OPTIONS.trainer_2, "--steps", 5, "--log-json",
                                     log, *flags)
        expect(result.returncode == 0, result.stderr)
        logs.append([entry["loss"] for entry in trainer_test.read_log(log)])
    expect(len(logs[0]) == 5 and logs[0] == logs[1], f"losses differ: {logs}")


def main():
    trainer_test.CASES.clear()
    trainer_test.CASES.update(CASES)
    try:
        return trainer_test.main()
    except Skip as skip:
        print(f"SKIP: {skip}")
        return SKIPPED


if __name__ == "__main__":
    sys.exit(main())
