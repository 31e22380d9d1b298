# -*- Python -*-
import glob
import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FSDP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fsdp_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs",
                   "reference"]

config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
if config.sanitizers:
    config.available_features.add("sanitizers")
    # Fail on the first report; the robustness test greps for any that slip through.
    # allow_user_poisoning=0: LLVM's inline allocators poison memory when compiled into
    # our instrumented code, but the prebuilt (uninstrumented) MLIR libraries that share
    # those allocations never unpoison it; ASan must ignore that manual poisoning.
    config.environment["ASAN_OPTIONS"] = (
        "halt_on_error=1:detect_leaks=1:allow_user_poisoning=0")
    config.environment["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%fsdp_src_root", config.fsdp_src_root))
config.substitutions.append(("%fsdp_obj_root", config.fsdp_obj_root))
config.substitutions.append(("%examples", os.path.join(config.fsdp_src_root, "examples")))
config.substitutions.append(("%python", config.python_executable))

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.use_default_substitutions()

# Numerical tests must hold on any x86-64, whatever code fsdpc generates for it and
# whichever kernels OpenBLAS picks at run time. CI runs them again as on another machine:
#   --param fsdpc_cpu=generic         every fsdpc in a RUN line builds for that CPU
#   --param fsdpc_cpu_features=-avx512bf16,-amx-bf16
#                                     ... with those features added or removed
#   --param openblas_coretype=Haswell the trainers' OpenBLAS uses that kernel set
#   --param dnnl_max_cpu_isa=AVX2     oneDNN uses no ISA above it (so none of its
#                                     f32 or bf16 kernels: products go to OpenBLAS)
# (lit passes only the environment it is given, so the variables are set here.)
fsdpc_cpu = lit_config.params.get("fsdpc_cpu")
fsdpc_cpu_features = lit_config.params.get("fsdpc_cpu_features")
fsdpc_args = ([f"--cpu={fsdpc_cpu}"] if fsdpc_cpu else []) + \
    ([f"--cpu-features={fsdpc_cpu_features}"] if fsdpc_cpu_features else [])
openblas_coretype = lit_config.params.get("openblas_coretype")
if openblas_coretype:
    config.environment["OPENBLAS_CORETYPE"] = openblas_coretype
    config.available_features.add("openblas-coretype")
    config.substitutions.append(("%openblas_coretype", openblas_coretype))
dnnl_max_cpu_isa = lit_config.params.get("dnnl_max_cpu_isa")
if dnnl_max_cpu_isa:
    config.environment["DNNL_MAX_CPU_ISA"] = dnnl_max_cpu_isa
    config.available_features.add("dnnl-max-cpu-isa")

# Debian's bible-kjv (setup.sh installs it): the text of scripts/train-text.sh.
if shutil.which("bible"):
    config.available_features.add("bible-kjv")

tool_dirs = [config.fsdp_tools_dir, config.llvm_tools_dir]
tools = ["fsdp-opt", ToolSubst("fsdpc", extra_args=fsdpc_args or None),
         "fsdp-import-hf", "fsdp-export-hf", "llvm-nm", "llvm-objdump"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The CUDA target. No test runs a GPU: "cuda-toolkit" compiles device code
# (ptxas, fatbinary), "cuda-runtime" links trainers against the runtime's CUDA
# backend, "cuobjdump" (NVIDIA's, from PyPI: scripts/setup.sh) reads fat binaries.
def _executable(path):
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None

if all(_executable(os.path.join(config.cuda_toolkit, "bin", tool))
       for tool in ("ptxas", "fatbinary")):
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%cuda_toolkit", config.cuda_toolkit))
    if config.cuda_runtime:
        config.available_features.add("cuda-runtime")
cuobjdump = _executable(shutil.which("cuobjdump") or "") or _executable(
    os.path.join(config.cuda_toolkit, "bin", "cuobjdump"))
if not cuobjdump:
    # The nvidia-cuda-cuobjdump wheel, in the site-packages of the tests' python.
    import subprocess
    purelib = subprocess.run(
        [config.python_executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True).stdout.strip()
    for candidate in sorted(glob.glob(os.path.join(purelib, "nvidia", "cu*", "bin", "cuobjdump"))):
        cuobjdump = cuobjdump or _executable(candidate)
if cuobjdump:
    config.available_features.add("cuobjdump")
    config.substitutions.append(("%cuobjdump", cuobjdump))
