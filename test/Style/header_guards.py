#!/usr/bin/env python3
"""Every C/C++ header's include guard names its path from its include root.

A header is included by its path under one of the include roots below (`dialect/`,
`lib/`, the runtime's `include/` and `lib/`, the tests' roots); its guard is that path
with a prefix for the root, upper-cased, every other character than a letter or a digit
an underscore: `lib/Analysis/KernelCost.h` is `FSDP_ANALYSIS_KERNELCOST_H`. The guard is
the first `#ifndef`, the `#define` right after it and the comment of the last `#endif`.
With --fix, rewrites the guards that differ (a header moved with `git mv` keeps its old
guard otherwise).

  header_guards.py SOURCE_ROOT [--fix]
"""
import re
import subprocess
import sys
from pathlib import Path

# Include root -> guard prefix; the longest root that holds a header is its root.
INCLUDE_ROOTS = {
    "dialect/": "",
    "lib/": "FSDP_",
    "test/lib/": "FSDP_TEST_",
    "tools/": "FSDP_TOOLS_",
    "bench/": "FSDP_BENCH_",
    "runtime/include/": "",
    "runtime/lib/": "FSDPRT_",
    "runtime/test/": "FSDPRT_TEST_",
}

GUARD = re.compile(r"#ifndef (\w+)\n#define (\w+)\n")
END = re.compile(r"#endif(?: *(?://|/\*) *(\w+)(?: *\*/)?)?\s*$")  # C++ or C comment


def expected_guard(path: str) -> str:
    root = max((r for r in INCLUDE_ROOTS if path.startswith(r)), key=len, default=None)
    if root is None:
        raise SystemExit(f"header-guards: {path}: under no include root")
    return INCLUDE_ROOTS[root] + re.sub(r"[^A-Za-z0-9]", "_", path[len(root):]).upper()


def check(source_root: Path, path: str, fix: bool) -> str:
    text = (source_root / path).read_text()
    want = expected_guard(path)
    start, end = GUARD.search(text), END.search(text)
    if not start or start.group(1) != start.group(2) or not end:
        return f"{path}: no #ifndef/#define/#endif guard"
    have = start.group(1)
    if have == want and end.group(1) == want:
        return ""
    if fix:
        text = text[:start.start()] + f"#ifndef {want}\n#define {want}\n" + text[start.end():]
        end = END.search(text)
        text = text[:end.start()] + f"#endif // {want}\n"
        (source_root / path).write_text(text)
        return ""
    return f"{path}: guard {have} (ends {end.group(1)}), expected {want}"


def main() -> int:
    source_root = Path(sys.argv[1])
    fix = "--fix" in sys.argv[2:]
    headers = subprocess.check_output(["git", "ls-files", "*.h"], cwd=source_root,
                                      text=True).split()
    problems = [p for p in (check(source_root, h, fix) for h in headers) if p]
    seen = {}
    for header in headers:
        other = seen.setdefault(expected_guard(header), header)
        if other != header:
            problems.append(f"{header}: guard {expected_guard(header)} is {other}'s too")
    for problem in problems:
        print(f"header-guards: {problem}")
    print(f"header-guards: {len(headers)} headers, {len(problems)} mismatched")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
