# -*- Python -*-
import os

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

tool_dirs = [config.fsdp_tools_dir, config.llvm_tools_dir]
tools = ["fsdp-opt", "fsdpc", "llvm-nm"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
