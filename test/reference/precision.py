"""How a compiled step computes: float32, or bf16 mixed precision (docs/MixedPrecision.md).

A Precision says where the step rounds (section 2) and how the ranks' gradients are
reduced (section 3). The ops (ops.py) and the models (models.py) call
`prec.round(value, point)` at every rounding point of the spec, naming it by the kind of
compiled op that produces the value ("matmul", "reduce_sum", "layer_norm_grad", ...,
optionally "kind:label" for one instance, e.g. "add:residual"); in float32 mode (the
default, `EXACT`) rounding is the identity and every op computes as it always did. A
subclass can move a rounding point (selftest.py simulates trainers that do).
"""
import numpy as np

import philox

U_BF16 = 2.0 ** -8   # bf16 unit roundoff: 8 significant bits, round to nearest even
U_F32 = 2.0 ** -24   # float32 unit roundoff


def round_bf16(x):
    """Nearest-even bf16 value of x, in x's float dtype (float64 or float32 arrays, both
    hold every bf16 value exactly); NaN and +-inf are kept, overflow gives +-inf."""
    x = np.asarray(x)
    return philox.round_bf16(x).astype(x.dtype if x.dtype == np.float32 else np.float64)


class Precision:
    """param_dtype 'f32' | 'bf16', reduce_dtype 'f32' | 'bf16', and the grid of ranks:
    (N,) for full_shard / shard_grad_op / no_shard on N ranks, (R, S) for hybrid_shard
    (S ranks per shard group, R replicas). `dtype` is the float type the ops compute in:
    float64 for the reference (selftest.py's simulated trainers use float32)."""

    def __init__(self, param_dtype="f32", reduce_dtype="f32", grid=(1,), dtype=np.float64):
        if param_dtype not in ("f32", "bf16") or reduce_dtype not in ("f32", "bf16"):
            raise ValueError("dtypes are f32 or bf16")
        self.param_dtype, self.reduce_dtype = param_dtype, reduce_dtype
        self.grid, self.dtype = tuple(int(n) for n in grid), dtype
        self.bf16 = param_dtype == "bf16"

    @property
    def ranks(self):
        return int(np.prod(self.grid))

    def round(self, x, point):
        """A rounding point of MixedPrecision.md section 2: the result of one op."""
        return round_bf16(x) if self.bf16 else x

    def inner(self, x, point):
        """A value inside one op that the spec keeps in f32 (never rounded): identity.
        Named so that a simulated trainer can round it where it should not."""
        return x

    def reduce(self, per_rank):
        """The gradient reduction of section 3 over the ranks' gradients (rank order =
        batch-row order): returns (mean, slack), the exact float64 average and an
        elementwise bound on how far the trainer's reduction may be from it. Stages: the
        shard group (the last grid dimension; consecutive ranks), then the replicas of
        hybrid_shard. A stage over S values in the reduce dtype (unit roundoff u) rounds at
        most its S - 1 partial sums, each by at most u times the sum of the magnitudes, and
        the division by S once: |error| <= ((S - 1) u sum|g| + S u |mean|) / S."""
        u = U_BF16 if self.reduce_dtype == "bf16" else U_F32
        values, slacks = list(per_rank), [np.zeros_like(g) for g in per_rank]
        for size in reversed(self.grid):
            if size == 1:
                continue
            groups = [slice(i, i + size) for i in range(0, len(values), size)]
            nvalues, nslacks = [], []
            for grp in groups:
                vs, ss = values[grp], slacks[grp]
                mean = sum(vs) / size
                magnitude = sum(np.abs(v) + s for v, s in zip(vs, ss))
                nvalues.append(mean)
                nslacks.append(sum(ss) / size + ((size - 1) * u * magnitude
                                                 + size * u * (np.abs(mean) + sum(ss) / size)) / size)
            # The replica stage reduces the group results of the same shard: the groups
            # are consecutive, so stage two takes every group in order.
            values, slacks = nvalues, nslacks
        return values[0], slacks[0]


EXACT = Precision()


def split_rows(inputs, ranks):
    """Each rank's contiguous block of batch / ranks rows (docs/Sharding.md)."""
    rows = inputs[0].shape[0] // ranks
    return [[a[r * rows:(r + 1) * rows] for a in inputs] for r in range(ranks)]
