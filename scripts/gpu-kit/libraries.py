"""The shared libraries of the bundle's trainers: which travel in the bundle, which the GPU
node must have, and where the node has them.

A trainer needs three kinds of libraries:
  - the C and C++ runtime (glibc, libstdc++, libgcc_s): every Linux node has them;
  - CUDA's (libcudart, libcublas, libcublasLt, libnvrtc, libnccl, libcudnn; the driver's
    libcuda is loaded by libcudart): the GPU node has them, in the toolkit or in the nvidia packages beside
    PyTorch, and they must match its driver, so they never travel;
  - everything else (MPI's libraries and what they need): copied into the bundle's lib/.

    python3 libraries.py BUNDLE          exits 1, listing each library a binary of the
                                         bundle needs and would not find in it
"""

import glob
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elf  # noqa: E402

C_RUNTIME = re.compile(r"^(linux-vdso|ld-linux[-\w]*|libc|libm|libpthread|libdl|librt|"
                       r"libresolv|libstdc\+\+|libgcc_s)\.so(\.\d+)*$")
CUDA = re.compile(r"^lib(cuda|cudart|cublas|cublasLt|nccl|cudnn\w*|nvrtc|nvJitLink)\.so(\.\d+)*$")


def stays_outside(soname):
    """Whether the GPU node provides this library (C/C++ runtime, CUDA)."""
    return bool(C_RUNTIME.match(soname) or CUDA.match(soname))


def resolved_closure(executable):
    """{soname: path} of every library the loader maps for `executable` here (ldd)."""
    out = subprocess.run(["ldd", executable], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        match = re.match(r"\s*(\S+) => (\S+)", line)
        if match and match.group(2) != "not":
            found[match.group(1)] = match.group(2)
        elif "not found" in line:
            raise RuntimeError(f"{executable}: {line.strip()}")
    return found


def copy_closure(executables, libdir):
    """Copies every library the executables need, but those the node provides, into
    libdir under its soname; returns the sonames, sorted."""
    copied = set()
    for executable in executables:
        for soname, path in resolved_closure(executable).items():
            if stays_outside(soname) or soname in copied:
                continue
            shutil.copyfile(os.path.realpath(path), os.path.join(libdir, soname))
            copied.add(soname)
    return sorted(copied)


def bundle_binaries(bundle):
    for folder in ("bin", "lib"):
        directory = os.path.join(bundle, folder)
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if os.path.isfile(path) and elf.is_elf(path):
                yield path


def missing_from_bundle(bundle):
    """Each library a binary of the bundle needs, that the node does not provide and the
    bundle's lib/ lacks: ["bin/gpt needs libmpi.so.40", ...]."""
    inside = set(os.listdir(os.path.join(bundle, "lib")))
    problems = []
    for path in bundle_binaries(bundle):
        for soname in elf.needed(path):
            if soname not in inside and not stays_outside(soname):
                problems.append(f"{os.path.relpath(path, bundle)} needs {soname}, "
                                "which is neither in lib/ nor a CUDA or C/C++ runtime library")
    return problems


def outside_needs(bundle):
    """The sonames of libraries the node must provide, but the C/C++ runtime."""
    return sorted({soname for path in bundle_binaries(bundle) for soname in elf.needed(path)
                   if CUDA.match(soname)})


def glibc_needed(bundle):
    """The newest glibc symbol version a binary of the bundle asks for ("2.34"): the
    GLIBC_x.y names of the version-needed entries, which sit in each file's string table."""
    versions = set()
    for path in bundle_binaries(bundle):
        with open(path, "rb") as f:
            versions.update(re.findall(rb"GLIBC_(2\.\d+)\0", f.read()))
    return max((v.decode() for v in versions), key=lambda v: tuple(map(int, v.split("."))),
               default=None)


def search_directories(python_paths=()):
    """Where a GPU node keeps CUDA's libraries, in the order they are tried, each with
    where it comes from: LD_LIBRARY_PATH, the CUDA toolkit, the nvidia packages of the
    Python installation (PyTorch's cu13 wheels put them in site-packages/nvidia/*/lib)."""
    places = []
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d:
            places.append((d, "LD_LIBRARY_PATH"))
    toolkit = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    for d in ("lib64", "lib", "targets/x86_64-linux/lib"):
        places.append((os.path.join(toolkit, d), f"the CUDA toolkit ({toolkit})"))
    for site in python_paths:
        for d in sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib"))):
            places.append((d, "the nvidia Python packages"))
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/local/nvidia/lib64", "/usr/lib64"):
        places.append((d, "the system"))
    return places


def find_outside(sonames, python_paths=()):
    """{soname: (path, source)} of each library found, first place first."""
    found = {}
    for directory, source in search_directories(python_paths):
        for soname in sonames:
            path = os.path.join(directory, soname)
            if soname not in found and os.path.exists(path):
                found[soname] = (os.path.realpath(path), source)
    return found


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    problems = missing_from_bundle(sys.argv[1])
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print(f"every binary of {sys.argv[1]} finds its libraries in the bundle, "
          f"but {', '.join(outside_needs(sys.argv[1]))} and the C/C++ runtime")


if __name__ == "__main__":
    main()
