"""Checks the compiler's libraries against its levels, from the libraries each one
links directly (cmake/LinkLibraries.cmake: one name per line), followed through the
project's own libraries; an upstream library is a leaf.

A library on the CPU's path links no GPU dialect, and no library links one of a
level above its own. Prints one line per violation, then a summary.
"""
import re
import sys
from pathlib import Path

# Upstream's GPU and NVVM libraries: dialects, conversions, targets.
GPU = re.compile(r"^MLIR(GPU|NVGPU|NVVM|ROCDL|AMDGPU|SCFToGPU)")

# What a CPU trainer's compilation needs: none of it may link GPU code.
CPU_PATH = ["FSDPIR", "FSDPUtils", "FSDPAnalysis", "FSDPTransforms", "FSDPToLinalg",
            "FSDPToRuntime", "FSDPCodegenCommon", "FSDPPipelines", "FSDPCPUPipeline",
            "FSDPPlanning"]

# The levels, lowest first: a library may link its own level's and lower ones.
LEVELS = [
    ["FSDPIR", "FSDPUtils"],
    ["FSDPAnalysis"],
    ["FSDPTransforms"],
    ["FSDPToLinalg", "FSDPToRuntime"],
    ["FSDPCodegenCommon"],
    ["FSDPCodegenCUDA"],
    ["FSDPPipelines"],
    ["FSDPCPUPipeline"],
    ["FSDPCUDAPipeline", "FSDPTestPasses"],
    ["FSDPPlanning"],
    ["FSDPDriver"],
]
LEVEL = {lib: i for i, libs in enumerate(LEVELS) for lib in libs}

# The walk is real: the CUDA target does link the GPU and NVVM dialects.
MUST_LINK = {"FSDPCUDAPipeline": ["FSDPCodegenCUDA", "MLIRGPUDialect", "MLIRNVVMDialect"]}


def links(root, lib):
    """Everything `lib` links: the project's libraries, followed, and upstream's."""
    seen, todo = set(), [lib]
    while todo:
        for dep in (root / f"{todo.pop()}.txt").read_text().split():
            if dep not in seen:
                seen.add(dep)
                if dep in LEVEL:
                    todo.append(dep)
    return seen


def main(root):
    root = Path(root)
    violations = []
    for lib in CPU_PATH:
        violations += [f"{lib} links GPU code: {dep}" for dep in sorted(links(root, lib))
                       if GPU.match(dep) or (dep in LEVEL and dep not in CPU_PATH)]
    for lib, level in LEVEL.items():
        violations += [f"{lib} links a higher level: {dep}" for dep in sorted(links(root, lib))
                       if LEVEL.get(dep, -1) > level]
    for lib, deps in MUST_LINK.items():
        linked = links(root, lib)
        violations += [f"{lib} does not link {dep}" for dep in deps if dep not in linked]
    for line in violations:
        print(f"link-levels: {line}")
    print(f"link-levels: {len(LEVEL)} libraries, {len(violations)} violations")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
