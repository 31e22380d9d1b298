"""How a compiled step computes: float32, or bf16 mixed precision (docs/MixedPrecision.md).

A Precision says where the step rounds (section 2) and how the ranks' gradients are
reduced (section 3). The ops (ops.py) and the models (models.py) call
`prec.round(value, point)` at every rounding point of the spec, naming it by the kind of
compiled op that produces the value ("matmul", "reduce_sum", "layer_norm_grad", ...;
"kind:label" for some instances, e.g. "add:residual"); in float32 mode (the default,
EXACT) rounding is the identity and every op computes as it always did. selftest.py
subclasses it to simulate trainers, including ones with a rounding point moved.
"""
import numpy as np

import philox

U_BF16 = 2.0 ** -8   # bf16 unit roundoff: 8 significant bits, round to nearest even
U_F32 = 2.0 ** -24   # float32 unit roundoff
STRATEGIES = ("full_shard", "shard_grad_op", "no_shard", "hybrid_shard")


def round_bf16(x):
    """Nearest-even bf16 value of x, in x's float dtype (float64 or float32: both hold
    every bf16 value exactly); NaN and +-inf are kept, overflow gives +-inf."""
    x = np.asarray(x)
    return philox.round_bf16(x).astype(x.dtype if x.dtype == np.float32 else np.float64)


def bf16_ulp(x):
    """The spacing of bf16 values at |x| (normal range; 2^-133 below it)."""
    _, e = np.frexp(np.asarray(x, dtype=np.float64))
    return np.ldexp(1.0, np.maximum(e - 1, -126) - 7)


class Precision:
    """param_dtype, reduce_dtype: 'f32' | 'bf16'; grid: (N,) or (R, S); strategy: which
    collectives reduce the gradient (docs/Sharding.md): hybrid_shard reduce-scatters over
    the S ranks of a shard group, then all-reduces over the R replicas; every other
    strategy reduces over all ranks at once. `dtype`: what the ops compute in (float64:
    the reference; float32: calibration() and the selftest's simulated trainers).
    micro_batches, accumulate: the plan's (accumulate_micro_batches). tensor_ranks, splits:
    the plan's tensor_parallel and {parameter: split dimension} of the parameters the
    tensor ranks cut (the trainer's manifest): the products that read them compute as the
    tensor ranks do (ops.split_matmul)."""

    def __init__(self, param_dtype="f32", reduce_dtype="f32", grid=(1,),
                 strategy="full_shard", dtype=np.float64, micro_batches=1,
                 accumulate="reduce_scatter", tensor_ranks=1, splits=None):
        if param_dtype not in ("f32", "bf16") or reduce_dtype not in ("f32", "bf16"):
            raise ValueError("dtypes are f32 or bf16")
        if strategy not in STRATEGIES:
            raise ValueError("unknown strategy %r" % strategy)
        if strategy == "hybrid_shard" and len(grid) != 2:
            raise ValueError("hybrid_shard needs a grid [R, S]")
        self.param_dtype, self.reduce_dtype = param_dtype, reduce_dtype
        self.grid, self.strategy, self.dtype = tuple(int(n) for n in grid), strategy, dtype
        self.bf16 = param_dtype == "bf16"
        self.ranks = int(np.prod(self.grid))
        if micro_batches < 1 or accumulate not in ("reduce_scatter", "no_sync"):
            raise ValueError("micro_batches >= 1, accumulate reduce_scatter or no_sync")
        self.micro_batches, self.accumulate = int(micro_batches), accumulate
        self.tensor_ranks, self.splits = int(tensor_ranks), dict(splits or {})
        # Reduction stages, each over groups of consecutive values.
        self.stages = ((self.grid[1], self.grid[0]) if strategy == "hybrid_shard"
                       else (self.ranks,))

    def calibration(self, order=0):
        """The same step in float32 arithmetic (teacher.py: how far float32 moves bf16
        roundings). Order k sums the products in one of three orders, by k mod 3: NumPy's
        (BLAS), the reduced dimension reversed, its second half first; orders 3 to 5 also
        add every other sum as a loop does (sum) and move every exp, log, tanh, cos and
        sin within the trainer's approximation error (math); order 6 adds as 3 does, with
        moves of its own, and rounds one value the other way (round)."""
        twin = Precision(self.param_dtype, self.reduce_dtype, self.grid, self.strategy,
                         np.float32, self.micro_batches, self.accumulate, self.tensor_ranks,
                         self.splits)
        twin.order = order
        if order >= 3:
            twin.dither = np.random.default_rng(order)
        twin.flips_left = int(order == 6)
        return twin

    order = 0
    dither = None
    # Where every float32 order rounds each value as the reference does (sums float32
    # holds exactly: at width 64 most sums of bf16 products), calibrations that only
    # reorder land on the reference's bits, yet the trainer's first value on the other
    # side of a boundary starts a cascade: the imported Llama on one rank, step 3, had
    # calibrations at 5e-7 to 8e-5 relative and the trainer (oneDNN's bf16 kernels, Zen 4)
    # at 1.25e-3. So one calibration rounds one value the other way, as another float32
    # order can: in the first op of the step that has one, its value nearest a bf16
    # boundary, within FLIP_ULPS float32 ulps (not a tie: every exact order breaks it
    # alike). With that one flip it lands at 3.1e-3 (as 4 and 5 did, given the same flip).
    flips_left = 0
    FLIP_ULPS = 16
    # The compiled CPU step's exp, log and tanh are upstream MLIR's polynomial
    # approximations (fsdp-approximate-math), not correctly rounded: measured over 2^20
    # arguments each, at most 1.0, 0.8 and 4.5 float32 ulps off (mean 0.27, 0.25, 0.75).
    # cos and sin (fsdp.rope) are libm's cosf and sinf on the CPU (glibc's measured here
    # within 0.56 ulps over 98,304 arguments in [0, 4096)) and CUDA's on a GPU (at most
    # 2 ulps, CUDA's programming guide).
    MATH_ULPS = {"exp": 1.0, "log": 1.0, "tanh": 4.5, "cos": 2.0, "sin": 2.0}

    def matmul(self, a, b):
        """The products of matmul and batch_matmul, [..., M, K] x [..., K, N]."""
        if self.order % 3 == 1:
            return a[..., ::-1] @ b[..., ::-1, :]
        if self.order % 3 == 2:
            h = a.shape[-1] // 2
            return a[..., h:] @ b[..., h:, :] + a[..., :h] @ b[..., :h, :]
        return a @ b

    def sum(self, x, axis, keepdims=False):
        """A sum that is not a product's: the statistics of norms, softmax, attention and
        cross-entropy, and the sums of gradients over the batch. The trainer's loops add
        in their own order (one after the other, or in vector lanes, never NumPy's
        pairwise order): calibrations 3 and 6 add one after the other, 4 from the last,
        5 in 8 interleaved lanes."""
        if self.order < 3:
            return np.sum(x, axis=axis, keepdims=keepdims)
        x = np.asarray(x)
        axes = tuple(a % x.ndim for a in ((axis,) if np.isscalar(axis) else axis))
        rest = [a for a in range(x.ndim) if a not in axes]
        rows = np.transpose(x, rest + list(axes)).reshape([x.shape[a] for a in rest] + [-1])
        if self.order == 4:
            rows = rows[..., ::-1]
        if self.order == 5 and rows.shape[-1] > 8:
            pad = -rows.shape[-1] % 8
            lanes = np.concatenate([rows, np.zeros(rows.shape[:-1] + (pad,), rows.dtype)], -1)
            rows = np.cumsum(lanes.reshape(rows.shape[:-1] + (-1, 8)), axis=-2)[..., -1, :]
        total = np.cumsum(rows, axis=-1)[..., -1]
        if keepdims:
            total = np.expand_dims(total, axes)
        return total

    def mean(self, x, axis, keepdims=False):
        n = int(np.prod([np.shape(x)[a] for a in ((axis,) if np.isscalar(axis) else axis)]))
        return self.sum(x, axis, keepdims) / np.asarray(n, dtype=np.asarray(x).dtype)

    def math(self, name, x):
        """np.exp, np.log, np.tanh, np.cos or np.sin of x; from calibration 3 on, each
        float32 result moved by a random amount within MATH_ULPS[name] ulps."""
        y = getattr(np, name)(x)
        if self.dither is None or np.asarray(y).dtype != np.float32:
            return y
        y = np.asarray(y)
        move = self.MATH_ULPS[name] * self.dither.uniform(-1.0, 1.0, y.shape)
        return (y + move * np.spacing(np.abs(y))).astype(np.float32)

    def round(self, x, point):
        """A rounding point of MixedPrecision.md section 2: the result of one op."""
        if not self.bf16:
            return x
        rounded = round_bf16(x)
        return self.flip_nearest(x, rounded) if self.flips_left else rounded

    def flip_nearest(self, x, rounded):
        """`rounded` with the value of float32 x nearest a bf16 rounding boundary, if
        within FLIP_ULPS float32 ulps (2^-16 bf16 ulps each) and not a tie, rounded to the
        other neighbour."""
        q = np.asarray(x, dtype=np.float64).ravel()
        ulp = bf16_ulp(q)
        q = q / ulp
        n = np.round(q)
        gap = np.abs(np.abs(q - n) - 0.5)
        gap[~np.isfinite(q) | (q == n) | (gap == 0)] = np.inf
        if not gap.size or gap.min() > self.FLIP_ULPS * 2.0 ** -16:
            return rounded
        i = int(np.argmin(gap))
        flipped = np.array(rounded).ravel()
        flipped[i] = (n[i] + np.sign(q[i] - n[i])) * ulp[i]
        self.flips_left -= 1
        return flipped.reshape(np.shape(rounded))

    def inner(self, x, point):
        """A value inside one op that the spec keeps in f32 (never rounded): identity;
        named so that a simulated trainer can round it where it should not."""
        return x

    def tensor_sum(self, parts):
        """fsdp.tensor_sum of the tensor ranks' parts (an all-reduce in the values'
        dtype): in bf16 each addition of two rounded, in rank order, as the CPU runtime
        adds a tensor group's bf16 parts (with 2 ranks, the one rounded addition of any
        order)."""
        total = parts[0]
        for part in parts[1:]:
            total = self.round(total + part, "tensor_sum")
        return total

    def reduce_pair(self, a, b):
        """A bf16 reduction of two values: one addition, rounded (the order of two
        operands does not matter), then the division by 2, exact."""
        return self.round(a + b, "reduce") / 2

    def accumulate_micro_batches(self, grads):
        """The mean gradient of a step of micro-batches (docs/Sharding.md, "Micro-batches")
        from grads[r][m], rank r's gradient of its micro-batch m (float64 arrays):
        (value, slack) as reduce gives.

        reduce_scatter (and any plan on one rank, where nothing is reduced): each
        micro-batch's gradient is reduced, widened to f32 (exactly), and the trainer sums
        them one after the other in f32: k - 1 rounded partial sums (u_f32 times the
        magnitudes, at most (k - 1) sum|v|), then the mean (one rounding). no_sync: each
        rank sums its flat gradients in reduce_dtype first (bf16 from bf16 gradients: the
        trainer's rounded additions, in its order, exactly; otherwise the exact sum and a
        slack of one rounding per gradient and partial sum), then the sum is reduced."""
        k = len(grads[0])
        if k == 1:
            return self.reduce([g[0] for g in grads])
        if self.accumulate == "reduce_scatter" or self.ranks == 1:
            reduced = [self.reduce([g[m] for g in grads]) for m in range(k)]
            total = sum(v for v, _s in reduced)
            slack = sum(s for _v, s in reduced)
            slack = slack + U_F32 * (k - 1) * sum(np.abs(v) + s for v, s in reduced)
        else:
            sums, slacks = [], []
            for per_micro in grads:
                if self.bf16 and self.reduce_dtype == "bf16":
                    acc = per_micro[0]
                    for g in per_micro[1:]:
                        acc = self.round(acc + g, "accumulate")
                    sums.append(acc)
                    slacks.append(np.zeros_like(acc))
                    continue
                u = U_BF16 if self.reduce_dtype == "bf16" else U_F32
                magnitude = sum(np.abs(g) for g in per_micro)
                # f32 gradients rounded to a bf16 flat gradient, then each partial sum.
                first = magnitude if self.reduce_dtype == "bf16" and not self.bf16 else 0.0
                sums.append(sum(per_micro))
                slacks.append(u * (first + (k - 1) * magnitude))
            total, slack = self.reduce(sums, slacks)
        mean = total / k
        return mean, slack / k + U_F32 * np.abs(mean)

    def reduce(self, per_rank, slacks=None):
        """The gradient reduction of section 3 over the ranks' gradients (float64 arrays,
        rank order = row order): (value, slack), the reference's reduced gradient and a
        bound on how far the trainer's may be from it, elementwise.

        A stage over S values averages them. In f32 (unit roundoff u = 2^-24) or in bf16
        with S > 2 (the MPI library's order of additions is unknown), the value is the
        exact mean and the slack bounds the trainer's S - 1 rounded partial sums (each off
        by at most u times the sum of the magnitudes) and its rounded division:
        ((S - 1) u sum|g| + S u |mean|) / S, plus the inputs' slack averaged. In bf16 with
        S = 2 (of exact inputs) the one rounded addition is the same in any order: reduce_pair,
        no slack. `slacks`: how far the trainer's per-rank values may be from per_rank
        already (by default: 0, or the rounding of f32 gradients to a bf16 reduction)."""
        values = list(per_rank)
        # f32 parameters, bf16 reduction: each rank's f32 gradient is rounded to bf16 for
        # the collective (the reference has float64 values: up to u |g| away).
        if slacks is None:
            slacks = [U_BF16 * np.abs(g) if self.reduce_dtype == "bf16" and not self.bf16
                      else np.zeros_like(g) for g in per_rank]
        for size in self.stages:
            if size == 1:
                continue
            out_values, out_slacks = [], []
            for i in range(0, len(values), size):
                vs, ss = values[i:i + size], slacks[i:i + size]
                slack = sum(ss) / size
                if (self.reduce_dtype == "bf16" and size == 2 and self.bf16
                        and not any(s.any() for s in ss)):
                    value = self.reduce_pair(*vs)
                else:
                    u = U_BF16 if self.reduce_dtype == "bf16" else U_F32
                    value = sum(vs) / size
                    magnitude = sum(np.abs(v) + s for v, s in zip(vs, ss))
                    slack = slack + u * ((size - 1) * magnitude / size + np.abs(value) + slack)
                out_values.append(value)
                out_slacks.append(slack)
            values, slacks = out_values, out_slacks
        return values[0], slacks[0]


EXACT = Precision()


def split_rows(inputs, ranks):
    """Each rank's contiguous block of batch / ranks rows (docs/Sharding.md)."""
    if inputs[0].shape[0] % ranks:
        raise ValueError("a batch of %d rows on %d ranks" % (inputs[0].shape[0], ranks))
    rows = inputs[0].shape[0] // ranks
    return [[a[r * rows:(r + 1) * rows] for a in inputs] for r in range(ranks)]
