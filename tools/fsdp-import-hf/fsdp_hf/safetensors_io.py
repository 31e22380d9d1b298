"""safetensors files read and written one tensor at a time.

A checkpoint is one `model.safetensors` or shards listed by `model.safetensors.index.json`.
Each tensor's bytes are read from its file when asked for and written as they come, so
converting a checkpoint holds one tensor in memory, whatever the checkpoint's size. (The
`safetensors` package's NumPy API cannot hold bf16, which NumPy lacks: its tensors are
read here as bytes and widened with integer arithmetic.)
"""
import json
import os
import struct

import numpy as np

from . import HfError

# safetensors dtype -> (bytes per element, NumPy storage dtype)
DTYPES = {"F32": (4, "<f4"), "BF16": (2, "<u2"), "F16": (2, "<f2"), "F64": (8, "<f8")}


def byte_size(dtype, shape):
    return DTYPES[dtype][0] * int(np.prod(shape, dtype=np.int64))


def widen_bf16(bits):
    """bf16 bit patterns (uint16) as float32, exactly."""
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def to_bytes(values, dtype):
    """float32 values as the bytes of F32 or BF16 (rounded to nearest even)."""
    if dtype == "F32":
        return np.asarray(values, dtype="<f4").tobytes()
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()


class TensorRef:
    """Where one tensor's bytes are: file, offset, dtype and shape."""

    def __init__(self, name, path, offset, dtype, shape):
        self.name, self.path, self.offset = name, path, offset
        self.dtype, self.shape = dtype, tuple(shape)

    def read_raw(self):
        size = byte_size(self.dtype, self.shape)
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            raw = f.read(size)
        if len(raw) != size:
            raise HfError(f"{self.path}: tensor '{self.name}' is cut short")
        return raw

    def read_f32(self):
        """The tensor as float32 (bf16 widened exactly, f16 exactly, f64 rounded)."""
        storage = np.frombuffer(self.read_raw(), dtype=DTYPES[self.dtype][1])
        values = widen_bf16(storage) if self.dtype == "BF16" else storage.astype(np.float32)
        return values.reshape(self.shape)


def read_header(path):
    """{name: TensorRef} of one safetensors file (its __metadata__ left out)."""
    try:
        with open(path, "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
    except (OSError, struct.error, ValueError) as e:
        raise HfError(f"{path}: not a safetensors file ({e})") from None
    start = 8 + length
    refs = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] not in DTYPES:
            raise HfError(f"{path}: tensor '{name}' is {entry['dtype']}; "
                               f"supported: {', '.join(DTYPES)}")
        refs[name] = TensorRef(name, path, start + entry["data_offsets"][0], entry["dtype"],
                               entry["shape"])
    return refs


def checkpoint_tensors(model_dir):
    """{name: TensorRef} of a Hugging Face model directory: model.safetensors, or the
    shards that model.safetensors.index.json maps each tensor to."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f).get("weight_map")
        if not isinstance(weight_map, dict):
            raise HfError(f"{index}: no weight_map")
        refs = {}
        for shard in sorted(set(weight_map.values())):
            for name, ref in read_header(os.path.join(model_dir, shard)).items():
                if weight_map.get(name) == shard:
                    refs[name] = ref
        missing = sorted(set(weight_map) - set(refs))
        if missing:
            raise HfError(f"{index}: maps {missing[0]} to a shard that does not hold it")
        return refs
    if os.path.exists(single):
        return read_header(single)
    raise HfError(f"{model_dir}: neither model.safetensors nor "
                       "model.safetensors.index.json (only safetensors checkpoints are read)")


class Writer:
    """A safetensors file written tensor by tensor, in the order given by `layout`
    ([(name, dtype, shape)]), whose header is written first."""

    def __init__(self, path, layout, metadata=None):
        header, offset, self.expected = {}, 0, []
        for name, dtype, shape in layout:
            size = byte_size(dtype, shape)
            header[name] = {"dtype": dtype, "shape": list(shape),
                            "data_offsets": [offset, offset + size]}
            self.expected.append((name, size))
            offset += size
        if metadata:
            header["__metadata__"] = metadata
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        self.file = open(path, "wb")
        self.file.write(struct.pack("<Q", len(text)) + text)

    def write(self, name, raw):
        want, size = self.expected.pop(0)
        if name != want or len(raw) != size:
            raise AssertionError(f"writer: {name} ({len(raw)} B) where {want} ({size} B) is due")
        self.file.write(raw)

    def close(self):
        if self.expected:
            raise AssertionError(f"writer: {self.expected[0][0]} never written")
        self.file.close()
