"""A trainer's parameters as float32 tensors, one at a time: from its `--export` file
(safetensors) or from a checkpoint directory (`--save`, docs/Runtime.md section 8), whose
shard files hold each unit's flat parameter split into equal shards."""
import json
import os

import numpy as np

from . import HfError
from .safetensors_io import read_header, widen_bf16

UNIT_DTYPES = {"f32": "<f4", "bf16": "<u2"}


def _latest_step(directory):
    steps = sorted(n for n in os.listdir(directory) if n.startswith("step-"))
    if not steps:
        raise HfError(f"{directory}: no metadata.json and no step-<k> checkpoint in it")
    return os.path.join(directory, steps[-1])


class Checkpoint:
    """The parameters of a checkpoint directory (DIR/step-<k>, or DIR: its newest). Its
    shard files come tensor index by tensor index (version 2; version 1 has one): a
    parameter with a split_dim has one block per tensor index, which hold the whole
    parameter's equal parts along that dimension (with split_parts, each part's: block t
    is the t-th block of every part, in order); any other is tensor index 0's."""

    def __init__(self, directory):
        if not os.path.exists(os.path.join(directory, "metadata.json")):
            directory = _latest_step(directory)
        self.directory = directory
        with open(os.path.join(directory, "metadata.json")) as f:
            meta = json.load(f)
        if meta.get("format") != "fsdp-mlir checkpoint" or meta.get("version") not in (1, 2):
            raise HfError(f"{directory}/metadata.json: not an fsdp-mlir checkpoint "
                          "of version 1 or 2")
        self.files = [os.path.join(directory, n) for n in meta["files"]]
        self.units = meta["units"]
        self.params = {p["name"]: p for p in meta["params"]}
        self.tensor_ranks = meta.get("plan", {}).get("tensor_ranks", 1)
        self.shard_files = len(self.files) // self.tensor_ranks

    def shapes(self):
        return {name: tuple(p["shape"]) for name, p in self.params.items()}

    def read(self, name):
        """The parameter `name` as float32: its elements gathered from the shards (and
        its blocks from the tensor indices' files)."""
        param = self.params[name]
        if "split_dim" not in param:
            return self._block(param, param["shape"], 0)
        dim, shape = param["split_dim"], list(param["shape"])
        shape[dim] //= self.tensor_ranks
        blocks = [self._block(param, shape, t) for t in range(self.tensor_ranks)]
        parts = param.get("split_parts", [shape[dim] * self.tensor_ranks])
        sizes = [part // self.tensor_ranks for part in parts]
        starts = np.cumsum([0] + sizes)
        # Part by part, each part's blocks in tensor-index order.
        return np.concatenate([np.take(block, np.arange(starts[i], starts[i + 1]), axis=dim)
                               for i in range(len(sizes)) for block in blocks], axis=dim)

    def _block(self, param, shape, tensor):
        """Tensor index `tensor`'s block of `param`, of `shape`, from its shard files."""
        unit = self.units[param["unit"]]
        storage = UNIT_DTYPES.get(unit["dtype"])
        if storage is None:
            raise HfError(f"{self.directory}: unit '{unit['name']}' is {unit['dtype']}")
        size = np.dtype(storage).itemsize
        count = int(np.prod(shape, dtype=np.int64))
        files = self.files[tensor * self.shard_files:(tensor + 1) * self.shard_files]
        begin, chunks = param["unit_offset"], []
        while count:
            shard, within = divmod(begin, unit["shard_numel"])
            take = min(count, unit["shard_numel"] - within)
            with open(files[shard], "rb") as f:
                f.seek(unit["regions"]["param"] + within * size)
                chunks.append(np.frombuffer(f.read(take * size), dtype=storage))
            begin, count = begin + take, count - take
        flat = np.concatenate(chunks)
        flat = widen_bf16(flat) if unit["dtype"] == "bf16" else flat.astype(np.float32)
        return flat.reshape(shape)


class Exported:
    """The parameters of a trainer's --export file."""

    def __init__(self, path):
        self.refs = read_header(path)

    def shapes(self):
        return {name: ref.shape for name, ref in self.refs.items()}

    def read(self, name):
        return self.refs[name].read_f32()


def open_trained(path):
    if os.path.isdir(path):
        return Checkpoint(path)
    if not os.path.exists(path):
        raise HfError(f"{path}: no such file or directory")
    return Exported(path)
