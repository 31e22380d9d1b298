#!/usr/bin/env python3
"""No manifest key is spelled outside its schema.

Every field of the trainer's manifest is named once, in
runtime/include/fsdprt/ManifestSchema.def; the compiler's writer and the runtime's
reader take its keys from the constants of ManifestSchema.h. This check reads the keys
from that table and finds every string literal equal to one of them in the sources of
lib/, tools/ and runtime/ (tests excluded: they write manifests, good and bad, as data).
Other documents share some words with the manifest (a device profile's "name", a
checkpoint's "units"); the files that read or write them are listed below with their
document and the keys it may spell. A literal outside that list fails.

  manifest_keys.py SOURCE_ROOT
"""
import re
import subprocess
import sys
from pathlib import Path

SCHEMA = "runtime/include/fsdprt/ManifestSchema.def"
ROOTS = ("lib/", "tools/", "runtime/include/", "runtime/lib/", "runtime/tools/")
SUFFIXES = {".c", ".cpp", ".cu", ".h", ".inc", ".py"}
FIELD = re.compile(r'FSDPRT_MANIFEST_FIELD\(\s*\w+,\s*\w+,\s*"([^"]+)"')
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"' + r"|'((?:[^'\\\n]|\\.)*)'")

# File -> (the document it reads or writes, the manifest keys that document shares).
OTHER_DOCUMENTS = {
    "lib/Analysis/DeviceProfile.cpp": (
        "device profile files (docs/CostModel.md)",
        {"name", "host", "f32", "bf16", "matmul_flops", "attention_flops", "collectives"}),
    "lib/Driver/Budget.cpp": ("the device profile's fields, named in messages",
                              {"matmul_flops", "attention_flops"}),
    "lib/Driver/Options.cpp": ("fsdpc's flags", {"grid", "version", "name"}),
    "lib/IR/FSDPAttrs.cpp": ("the optimizer attributes' parameters",
                             {"beta1", "beta2", "momentum"}),
    "lib/Codegen/CUDA/WriteKernelTable.cpp": ("the kernel table", {"grid", "bytes", "name", "kind"}),
    "lib/Planning/ChromeTrace.cpp": ("the Chrome trace", {"bytes", "unit", "name", "arena_bytes"}),
    "lib/Planning/MeasuredHighWater.cpp": ("the trainer's measured high-water marks",
                                           {"persistent_bytes", "arena_bytes"}),
    "runtime/lib/trace/HighWater.h": ("the trainer's measured high-water marks",
                                      {"persistent_bytes", "arena_bytes"}),
    "lib/Planning/Report.cpp": (
        "fsdp-report's JSON",
        {"activation_bytes", "gradient_bytes", "host_arena_bytes", "grid", "offset", "unit",
         "strategy", "units", "buffers", "trainable", "gradient_shard_bytes", "params",
         "dtype_bytes", "persistent_bytes", "gathered_bytes", "recompute", "shard_ranks",
         "replicas", "name", "arena_bytes", "tensor_ranks"}),
    "runtime/lib/io/Checkpoint.cpp": (
        "checkpoints' metadata (docs/Runtime.md, section 6)",
        {"grid", "numel", "shape", "lr", "unit", "strategy", "units", "trainable", "params",
         "version", "dtype", "unit_offset", "shard_ranks", "optimizer", "name", "batch",
         "shard_numel", "kind", "tensor_ranks", "split_dim", "split_parts"}),
    "runtime/lib/io/SafeTensors.cpp": ("safetensors headers", {"shape", "dtype"}),
    "tools/fsdp-import-hf/fsdp_hf/trained.py": (
        "checkpoints' metadata",
        {"shape", "unit", "units", "params", "version", "dtype", "unit_offset", "name",
         "shard_numel", "tensor_ranks", "split_dim", "split_parts"}),
    "tools/fsdp-import-hf/fsdp_hf/safetensors_io.py": ("safetensors headers", {"shape", "dtype"}),
    "tools/fsdp-import-hf/fsdp_hf/config.py": ("Hugging Face configs", {"dtype"}),
    "tools/fsdp-import-hf/fsdp_hf/export_hf.py": ("Hugging Face checkpoints", {"dtype"}),
    "tools/fsdp-import-hf/fsdp_hf/import_hf.py": ("the model file's units", {"unit"}),
    "lib/Codegen/Common/AssignBuffers.cpp": ("an element type's name (untyped bytes)", {"bytes"}),
    "runtime/lib/abi/AttentionArguments.cpp": ("an argument's name in messages", {"batch"}),
    "runtime/lib/abi/GemmArguments.cpp": ("an argument's name in messages", {"batch"}),
    "runtime/lib/cpu/MpiCollectives.cpp": ("an argument's name in messages", {"bytes"}),
    "runtime/lib/cuda/CudnnAttention.cpp": ("cuDNN's tensor and node names",
                                           {"value", "attention"}),
    "runtime/lib/abi/Manifest.cpp": ("values of manifest fields: a state slot, a unit's kind",
                                     {"momentum", "trainable"}),
}

# Words that are values, not keys, wherever they appear (dtype and role names).
VALUES = {"f32", "bf16"}


def sources(root: Path):
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard"],
                            check=True, capture_output=True, text=True).stdout.split()
    return [p for p in listed
            if p.startswith(ROOTS) and Path(p).suffix in SUFFIXES and p != SCHEMA]


def literals(text: str):
    for number, line in enumerate(text.splitlines(), 1):
        # Comments name fields for people: only code counts.
        code = line.split("//")[0] if not line.lstrip().startswith("#") else ""
        for match in LITERAL.finditer(code):
            yield number, match.group(1) if match.group(1) is not None else match.group(2)


def main() -> int:
    root = Path(sys.argv[1])
    keys = set(FIELD.findall((root / SCHEMA).read_text()))
    spelled = 0
    for path in sources(root):
        allowed = OTHER_DOCUMENTS.get(path, ("", set()))[1] | VALUES
        for number, literal in literals((root / path).read_text(errors="replace")):
            if literal in keys and literal not in allowed:
                print(f"manifest-keys: {path}:{number}: \"{literal}\" is a manifest key: "
                      f"take it from fsdprt/ManifestSchema.h")
                spelled += 1
    print(f"manifest-keys: {len(keys)} keys, {spelled} spelled outside the schema")
    return 1 if spelled else 0


if __name__ == "__main__":
    sys.exit(main())
