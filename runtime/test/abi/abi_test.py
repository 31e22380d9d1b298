#!/usr/bin/env python3
"""Checks that a runtime archive defines the C ABI of fsdprt.h.

    abi_test.py --nm NM --header fsdprt.h --archive libfsdprt.a [--cuda]

Every fsdprt_* function fsdprt.h declares must be defined (a text symbol) in
the archive; with --cuda, so must the mgpu* entry points it declares for the
CUDA archive. A missing one then fails this test rather than the link of the
first trainer that calls it.
"""

import argparse
import re
import subprocess
import sys


def declared(header, prefix):
    """The functions of `header` whose names start with `prefix`."""
    with open(header) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    return sorted(set(re.findall(rf"\b({prefix}\w+)\s*\(", text)))


def defined(nm, archive):
    result = subprocess.run([nm, "--defined-only", archive], capture_output=True, text=True,
                            check=True)
    return {fields[2] for fields in (line.split() for line in result.stdout.splitlines())
            if len(fields) == 3 and fields[1] == "T"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nm", required=True)
    parser.add_argument("--header", required=True)
    parser.add_argument("--archive", required=True)
    parser.add_argument("--cuda", action="store_true")
    options = parser.parse_args()
    wanted = declared(options.header, "fsdprt_")
    if options.cuda:
        wanted += declared(options.header, "mgpu")
    if len(wanted) < 10:
        print(f"FAIL: only {len(wanted)} functions found in {options.header}", file=sys.stderr)
        return 1
    missing = [name for name in wanted if name not in defined(options.nm, options.archive)]
    if missing:
        print(f"FAIL: {options.archive} does not define {', '.join(missing)}", file=sys.stderr)
        return 1
    print(f"PASS: {options.archive} defines all {len(wanted)}: {', '.join(wanted)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
