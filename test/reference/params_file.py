"""Parameter files of the trainer (--export, --init-from: safetensors) as the tests use
them: one flat array of every parameter in manifest order.

A safetensors file names its tensors, and neither the trainer nor the `safetensors`
package keeps them in manifest order, so the tests' flat arrays are cut and joined by
the parameter table: `params` is a list whose items start with (name, shape), in
manifest order (manifest_params(trainer), models.get(m)["params"], a test's own
table). Reading is strict as --init-from is: the file must hold exactly these
parameters, each with its shape, so that the file of another model or a parameter
exported with another shape fails rather than comparing the wrong values.

    params = manifest_params(trainer)            # [(name, shape, dtype)] in manifest order
    write_params("p0.safetensors", params, flat)  # or {name: array}; f32 by default
    flat = read_params("p1.safetensors", params)  # float64 (dtype=np.float32 to keep f32)
"""

import json
import os
import subprocess

import numpy as np
from safetensors.numpy import load_file, save_file


def manifest_params(trainer):
    """[(name, shape, dtype)] of the trainer's parameters, in manifest order
    (`trainer --print-manifest`; dtype as the manifest spells it: "f32", "bf16"). The
    shape is the whole parameter's, as exports and traces hold it: a parameter split
    over the tensor ranks (split_dim) has one block's shape in the manifest."""
    result = subprocess.run([trainer, "--print-manifest"], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError("%s --print-manifest failed (%d):\n%s%s"
                           % (trainer, result.returncode, result.stdout, result.stderr))
    manifest = json.loads(result.stdout)
    tensor_ranks = manifest.get("tensor_ranks", 1)

    def whole(param):
        shape = list(param["shape"])
        if "split_dim" in param:
            shape[param["split_dim"]] *= tensor_ranks
        return tuple(shape)
    return [(p["name"], whole(p), p["dtype"]) for p in manifest["params"]]


def manifest_splits(trainer):
    """{name: split_dim, or (split_dim, split_parts) for a fused product's weight} of the
    trainer's parameters that its tensor ranks cut (`trainer --print-manifest`), and its
    tensor ranks."""
    result = subprocess.run([trainer, "--print-manifest"], capture_output=True, text=True,
                            check=True)
    manifest = json.loads(result.stdout)
    splits = {p["name"]: (p["split_dim"], tuple(p["split_parts"])) if "split_parts" in p
              else p["split_dim"] for p in manifest["params"] if "split_dim" in p}
    return splits, manifest.get("tensor_ranks", 1)


def _table(params):
    return [(item[0], tuple(int(d) for d in item[1])) for item in params]


def write_params(path, params, values, dtype=np.float32):
    """Writes the parameters `params` to the safetensors file `path`, each in `dtype`
    (float32, as the trainer stores an f32 parameter; --init-from also takes float64).
    values: one flat array of all of them in manifest order, or {name: array}."""
    table = _table(params)
    if isinstance(values, dict):
        if set(values) != {name for name, _ in table}:
            raise ValueError("values for %s, parameters %s"
                             % (sorted(values), [name for name, _ in table]))
        tensors = {name: np.asarray(values[name]).reshape(shape) for name, shape in table}
    else:
        flat = np.asarray(values).ravel()
        total = sum(int(np.prod(shape)) for _, shape in table)
        if flat.size != total:
            raise ValueError("%d values for parameters of %d elements" % (flat.size, total))
        tensors, offset = {}, 0
        for name, shape in table:
            count = int(np.prod(shape))
            tensors[name] = flat[offset:offset + count].reshape(shape)
            offset += count
    # np.array, not np.ascontiguousarray: that makes a scalar parameter's shape [1].
    save_file({name: np.array(a, dtype=dtype, order="C") for name, a in tensors.items()}, path)


def read_params(path, params, dtype=np.float64):
    """The parameters `params` from the safetensors file `path`, as one flat array of
    `dtype` in manifest order. Raises ValueError unless the file holds exactly these
    parameters (by name) with their shapes, as floating-point tensors."""
    table = _table(params)
    tensors = load_file(path)
    problems = []
    for name, shape in table:
        if name not in tensors:
            problems.append("missing %r %s" % (name, list(shape)))
        elif tensors[name].shape != shape:
            problems.append("%r is %s in the file, %s in the model"
                            % (name, list(tensors[name].shape), list(shape)))
        elif tensors[name].dtype.kind != "f":
            problems.append("%r is %s, not floating point" % (name, tensors[name].dtype))
    names = {name for name, _ in table}
    problems += ["unexpected %r %s" % (name, list(a.shape))
                 for name, a in sorted(tensors.items()) if name not in names]
    if problems:
        raise ValueError("%s: not the model's parameters: %s" % (path, "; ".join(problems)))
    return np.concatenate([tensors[name].astype(dtype).ravel() for name, _ in table]
                          or [np.zeros(0, dtype)])


def exported_bytes(path, params):
    """The parameters of the safetensors file `path` as a --trace-state record stores them:
    manifest order, each in its own dtype (f32 to bf16 is exact for values that were bf16).
    Raises ValueError as read_params does."""
    import datafile
    values, out, start = read_params(path, params, dtype=np.float32), [], 0
    for _name, shape, dtype in params:
        count = int(np.prod(shape))
        out.append(datafile.to_storage(values[start:start + count], dtype).tobytes())
        start += count
    return b"".join(out)


def trace_record_start(path, records, k, size):
    """The first `size` bytes of record k of a --trace-state file of `records` records
    (before the first step, then after each): the parameters come first."""
    with open(path, "rb") as f:
        f.seek(os.path.getsize(path) // records * k)
        return f.read(size)
