"""The first session README.md and docs/UserGuide.md show, against what the tools print:
every `$ ` command of their console blocks is run (fsdpc and the trainer of
examples/gpt.mlir, under mpirun where the block says so), and each line shown after it
must be a line it printed: exactly, or for a progress line, in the progress line's form
(its rates are one machine's), and for a product line (`f32 gemm: ...`) by its kind (its
kernels are the machine's). A changed message, flag or format fails here until the
documents show it.

    first_session.py ROOT BUILD WORK
"""

import os
import re
import shlex
import shutil
import subprocess
import sys

PROGRESS = re.compile(r"^step \d+ \| loss \d+\.\d{6} \| lr \d\.\d{3}e[-+]\d\d \| \d+ tokens/s \| "
                      r"\d+\.\d\d [GT]FLOP/s \| MFU \d+\.\d% \| mem \d+\.\d MiB$")


def sessions(path):
    """(command, shown lines) of each `$ ` line of the document's console blocks."""
    with open(path) as f:
        text = f.read()
    found = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                found.append((line[2:].split("  #")[0].strip(), []))
            elif found:
                found[-1][1].append(line)
    return found


def run(command, root, work):
    """What `command` prints (stdout and stderr), run in WORK (where build/ and examples/
    are the repository's)."""
    words = shlex.split(command)
    if words[0] == "mpirun":
        mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
        words = [mpirun, "--oversubscribe", *words[1:]]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    result = subprocess.run(words, cwd=work, capture_output=True, text=True, env=env,
                            timeout=300)
    return (result.stdout + result.stderr).splitlines()


def main():
    root, build, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    # The documents' paths, as a user in the repository's root types them.
    os.symlink(build, os.path.join(work, "build"))
    os.symlink(os.path.join(root, "examples"), os.path.join(work, "examples"))
    failures = 0
    for document in ["README.md", "docs/UserGuide.md"]:
        commands = sessions(os.path.join(root, document))
        for command, shown in commands:
            printed = run(command, root, work)
            for line in shown:
                kind = re.match(r"(f32|bf16) gemm: ", line)
                if line.startswith("step "):
                    ok = PROGRESS.match(line) and any(PROGRESS.match(p) for p in printed)
                elif kind:
                    ok = any(p.startswith(kind.group(0)) for p in printed)
                else:
                    ok = line in printed
                if not ok:
                    failures += 1
                    print(f"{document}: `{command}` does not print {line!r}; it printed:\n  " +
                          "\n  ".join(printed[:12]))
        print(f"{document}: {len(commands)} commands, "
              f"{sum(len(s) for _, s in commands)} lines shown")
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
