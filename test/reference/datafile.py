"""FSDPDATA v1 data files (docs/Runtime.md section 4) and the step -> sample mapping.

Layout, little-endian: b"FSDPDATA", u32 version (1), u32 T, per tensor (u32 dtype code,
u32 rank r, r x i64 per-sample dims), u64 N, then N records each holding tensor 0's
bytes, tensor 1's bytes, ... of one sample (row-major, no padding).
"""
import struct

import numpy as np

import philox

MAGIC = b"FSDPDATA"
DTYPE_CODES = {"f32": 0, "i32": 1, "i64": 2, "bf16": 3}
CODE_DTYPES = {v: k for k, v in DTYPE_CODES.items()}
NP_DTYPES = {"f32": "<f4", "i32": "<i4", "i64": "<i8", "bf16": "<u2"}  # bf16 as raw bits


class DataError(Exception):
    pass


def to_storage(values, dtype):
    """Array in its on-disk NumPy dtype (bf16 as uint16 bit patterns, rounded RNE)."""
    if dtype == "bf16":
        return philox.bf16_bits(philox.round_bf16(values))
    return np.asarray(values).astype(NP_DTYPES[dtype])


def from_storage(raw, dtype):
    """On-disk array -> float64 (floats) or int64 (integers)."""
    if dtype == "bf16":
        return philox.bf16_from_bits(raw)
    if dtype == "f32":
        return raw.astype(np.float64)
    return raw.astype(np.int64)


def write(path, tensors):
    """tensors: list of (dtype, array of shape [N, per-sample dims...])."""
    n = tensors[0][1].shape[0]
    head = [MAGIC, struct.pack("<II", 1, len(tensors))]
    stored = []
    for dtype, arr in tensors:
        arr = np.asarray(arr)
        if arr.shape[0] != n:
            raise ValueError("all tensors need the same number of samples")
        dims = arr.shape[1:]
        head.append(struct.pack("<II", DTYPE_CODES[dtype], len(dims)))
        head.append(struct.pack("<%dq" % len(dims), *dims))
        stored.append(to_storage(arr, dtype).reshape(n, -1))
    head.append(struct.pack("<Q", n))
    # Interleave per sample: record n = tensor 0 sample n, tensor 1 sample n, ...
    rows = np.concatenate([s.view(np.uint8).reshape(n, -1) for s in stored], axis=1)
    with open(path, "wb") as f:
        f.write(b"".join(head))
        f.write(rows.tobytes())


def read(path):
    """Returns (specs, arrays): specs = [(dtype, per-sample shape)], arrays = [N, ...]
    float64 / int64 arrays. Raises DataError (naming the file) on a malformed file."""
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except OSError as e:
        raise DataError("%s: cannot read: %s" % (path, e.strerror))
    pos = 0

    def take(nbytes):
        nonlocal pos
        if pos + nbytes > len(buf):
            raise DataError("%s: file is short (header)" % path)
        pos += nbytes
        return buf[pos - nbytes:pos]

    if take(8) != MAGIC:
        raise DataError("%s: bad magic" % path)
    version, ntensors = struct.unpack("<II", take(8))
    if version != 1:
        raise DataError("%s: unsupported version %d" % (path, version))
    specs = []
    for _ in range(ntensors):
        code, rank = struct.unpack("<II", take(8))
        if code not in CODE_DTYPES:
            raise DataError("%s: unknown dtype code %d" % (path, code))
        dims = struct.unpack("<%dq" % rank, take(8 * rank))
        specs.append((CODE_DTYPES[code], tuple(dims)))
    (n,) = struct.unpack("<Q", take(8))
    if n < 1:
        raise DataError("%s: no samples" % path)
    sizes = [int(np.prod(d, dtype=np.int64)) * np.dtype(NP_DTYPES[t]).itemsize
             for t, d in specs]
    rec = sum(sizes)
    if len(buf) - pos < n * rec:
        raise DataError("%s: file is short (%d samples of %d bytes expected)" % (path, n, rec))
    body = np.frombuffer(buf, dtype=np.uint8, count=n * rec, offset=pos).reshape(n, rec)
    arrays, off = [], 0
    for (dtype, dims), size in zip(specs, sizes):
        raw = np.ascontiguousarray(body[:, off:off + size]).view(NP_DTYPES[dtype])
        arrays.append(from_storage(raw.reshape((n,) + dims), dtype))
        off += size
    return specs, arrays


def check(path, specs, arrays, inputs):
    """Checks a file against the model inputs [(shape, dtype, role, bound)]."""
    if len(specs) != len(inputs):
        raise DataError("%s: %d tensors, the model has %d inputs" % (path, len(specs), len(inputs)))
    for t, ((dtype, dims), (shape, idtype, _role, bound)) in enumerate(zip(specs, inputs)):
        if dtype != idtype or tuple(dims) != tuple(shape[1:]):
            raise DataError("%s: tensor %d is %s%s, the model wants %s%s per sample"
                            % (path, t, dtype, list(dims), idtype, list(shape[1:])))
        if bound is not None:
            a = arrays[t].reshape(arrays[t].shape[0], -1)
            bad = np.nonzero(((a < 0) | (a >= bound)).any(axis=1))[0]
            if bad.size:
                raise DataError("%s: sample %d: tensor %d has a value outside [0, %d)"
                                % (path, bad[0], t, bound))


def batch(arrays, step, batch_size):
    """The batch of step `step` (from 1): samples ((step-1)*batch + b) mod N."""
    n = arrays[0].shape[0]
    idx = ((step - 1) * batch_size + np.arange(batch_size)) % n
    return [a[idx] for a in arrays]


def batches(arrays, batch_size, steps):
    """Iterator over (step, inputs) for steps 1..steps."""
    for s in range(1, steps + 1):
        yield s, batch(arrays, s, batch_size)
