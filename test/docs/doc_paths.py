"""The documents against the tree.

1. Every file or folder of the repository that the Markdown documents name in backticks
   exists: `lib/Transforms/Remat.cpp`, `runtime/lib/{cpu,cuda}/HostCopies.cpp` (braces
   expanded), `lib/abi/Device.h` in runtime/README.md (relative to the document's folder,
   or to the repository's root). A name with a wildcard, a placeholder (`<build>`) or a
   build output is not a source path and is left alone.
2. docs/Design.md's "Folders" table names every folder that holds sources (code, ODS,
   scripts, CMake, tests), and nothing else: a folder added or moved without the map fails.

    doc_paths.py ROOT    prints each missing path or folder; exit 1 if any
"""

import glob
import itertools
import os
import re
import sys

TOP = ("lib", "dialect", "runtime", "test", "tools", "scripts", "docs", "examples", "bench",
       "include", "cmake", ".ci")
TICKED = re.compile(r"`([^`\s]+)`")


def expand(path):
    """`a/{b,c}/d{.h,.cpp}` -> every combination."""
    parts = re.split(r"(\{[^{}]*\})", path)
    choices = [p[1:-1].split(",") if p.startswith("{") else [p] for p in parts]
    return ["".join(c) for c in itertools.product(*choices)]


def candidates(text):
    for token in TICKED.findall(text):
        token = token.rstrip(".,:;)")
        if any(c in token for c in "*<>$%") or "://" in token or token.startswith("-"):
            continue
        head = token.split("/")[0]
        if "/" not in token or head not in TOP:
            continue
        yield token


SOURCES = (".cpp", ".h", ".c", ".td", ".py", ".mlir", ".test", ".sh", ".cmake", ".txt")
SKIPPED = ("build", ".", "__pycache__")


def source_folders(root):
    """Every folder under `root` holding a source file, relative, without build outputs."""
    found = set()
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith(SKIPPED)]
        if folder != root and any(f.endswith(SOURCES) for f in files):
            found.add(os.path.relpath(folder, root))
    return found


def folders_table(root):
    """The folders docs/Design.md's "Folders" table names (braces expanded; `X and its
    `a/`, `b/`` as X/a, X/b)."""
    named = set()
    with open(os.path.join(root, "docs", "Design.md")) as f:
        text = f.read()
    start = text.index("### Folders")
    end = text.index("\n#", start + 1)
    for line in text[start:end].splitlines():
        if not line.startswith("| `"):
            continue
        cell = line.split("|")[1]
        tokens = TICKED.findall(cell)
        base = tokens[0].rstrip("/")
        for token in tokens:
            path = token.rstrip("/") if "/" in token.rstrip("/") or token == tokens[0] \
                else f"{base}/{token.rstrip('/')}"
            named.update(expand(path))
    return named


def check_folders(root):
    tree, named = source_folders(root), folders_table(root)
    for folder in sorted(tree - named):
        print(f"docs/Design.md, Folders: {folder}/ is not named")
    for folder in sorted(named - tree):
        print(f"docs/Design.md, Folders: {folder}/ holds no sources")
    print(f"doc-folders: {len(tree)} source folders, {len(tree ^ named)} mismatched")
    return len(tree ^ named)


def main():
    root = os.path.abspath(sys.argv[1])
    documents = [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "*.md")) +
        glob.glob(os.path.join(root, "*", "README.md")) +
        glob.glob(os.path.join(root, "*", "*", "README.md")) +
        glob.glob(os.path.join(root, "scripts", "gpu-kit", "README.md")))
    missing = 0
    checked = 0
    for document in documents:
        if "/build" in document[len(root):]:
            continue
        here = os.path.dirname(document)
        with open(document) as f:
            for number, line in enumerate(f, 1):
                for token in candidates(line):
                    for path in expand(token):
                        checked += 1
                        if not any(os.path.exists(os.path.join(base, path))
                                   for base in (here, root)):
                            missing += 1
                            print(f"{os.path.relpath(document, root)}:{number}: no {path}")
    print(f"doc-paths: {checked} paths named, {missing} missing")
    return 1 if missing + check_folders(root) else 0


if __name__ == "__main__":
    sys.exit(main())
