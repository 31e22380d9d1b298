#!/usr/bin/env python3
"""No function of the project's C++ or Python is longer than the bound (100 lines).

Lizard (the code-complexity analyser, https://github.com/terryyin/lizard) finds every
function of the tracked sources and its length, from its signature to its closing
brace; a lambda or a nested function counts inside the function that holds it. Prints
the longest few, then each one over the bound with its place.

  function_length.py SOURCE_ROOT [--max 100] [--show 5]
"""
import argparse
import subprocess
import sys
from pathlib import Path

import lizard

SUFFIXES = (".cpp", ".h", ".cu", ".py")


def tracked_sources(root: Path) -> list[str]:
    files = subprocess.check_output(["git", "ls-files"], cwd=root, text=True).split()
    return [f for f in files if f.endswith(SUFFIXES)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--max", type=int, default=100)
    parser.add_argument("--show", type=int, default=5)
    args = parser.parse_args()
    functions = []
    for path in tracked_sources(args.root):
        analysis = lizard.analyze_file(str(args.root / path))
        functions += [(f.length, path, f.start_line, f.name) for f in analysis.function_list]
    functions.sort(key=lambda f: -f[0])
    print(f"function-length: {len(functions)} functions, the longest:")
    for length, path, line, name in functions[:args.show]:
        print(f"  {length:4d} lines  {path}:{line}  {name}")
    over = [f for f in functions if f[0] > args.max]
    for length, path, line, name in over:
        print(f"function-length: {path}:{line}: {name} has {length} lines, over {args.max}")
    print(f"function-length: {len(over)} over {args.max} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
