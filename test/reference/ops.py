"""float64 forward and hand-written backward of every fsdp op (docs/Reference/FSDPDialect.md).

Each op is `op(*operands, **attrs) -> (result, vjp)`; `vjp(dresult)` returns one gradient
per positional operand (None for integer operands such as targets or indices).
`check_vjp` compares a vjp with central finite differences.

Mixed precision (precision.py, docs/MixedPrecision.md section 2): every op takes `prec`
(default EXACT: float64, nothing rounded) and rounds its result with
`prec.round(value, point)`; `point` names the rounding point, by default the op's kind.
Each vjp is the op graph lib/IR/FSDPGradients.cpp builds for the gradient, and rounds
where each of those ops does: e.g. add's gradient is a reduce_sum (one rounding) where
the operand was broadcast and the incoming gradient itself otherwise; tanh's is
mul, mul, sub (three). Where that graph computes another float64 expression than the
plain formula, the formula is kept for `not prec.bf16`, so float64 results do not change.
"""
import math

import numpy as np

from precision import EXACT


def _swap(x):
    """Swap the last two dimensions."""
    return np.swapaxes(x, -1, -2)


def unbroadcast(g, shape):
    """Sum a broadcast gradient back to an operand's shape (NumPy broadcasting rules)."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def _unbroadcast(g, shape, prec):
    """unbroadcast as compiled: one reduce_sum (rounded) when there is anything to sum."""
    return g if g.shape == tuple(shape) else prec.round(unbroadcast(g, shape), "reduce_sum")


# ---------------------------------------------------------------- products

def matmul(a, b, transpose_lhs=False, transpose_rhs=False, prec=EXACT, point="matmul"):
    """[..., M, K] x [K, N] -> [..., M, N] after the optional transposes."""
    A = _swap(a) if transpose_lhs else a
    B = b.T if transpose_rhs else b
    lead = A.shape[:-1]                      # [..., M]
    A2 = A.reshape(-1, A.shape[-1])          # rows of every leading index: plain 2-D
    out = prec.matmul(A2, B).reshape(lead + (B.shape[1],))  # products (NumPy's batched path is slow)

    def vjp(d):
        # Two matmuls (the transposes and reshapes around them are exact).
        d2 = d.reshape(-1, d.shape[-1])
        dA = prec.round(prec.matmul(d2, B.T).reshape(A.shape), "matmul:grad")
        dB = prec.round(prec.matmul(A2.T, d2), "matmul:grad")  # sums over all of [..., M]
        return (_swap(dA) if transpose_lhs else dA), (dB.T if transpose_rhs else dB)
    return prec.round(out, point), vjp


class RankParts(list):
    """A gradient the tensor ranks hold in parts, one each, to be summed over them
    (prec.tensor_sum) where it is read: that of a value entering a tensor-parallel
    region (fsdp.tensor_copy), each rank's from its block of the region. `beside`: the
    gradient of the value's reads outside the regions (every rank's whole, the same on
    each), added to the parts' sum (models.Tape.whole)."""
    beside = None


def split_matmul(a, b, split, ranks, transpose_rhs=False, prec=EXACT, point="matmul"):
    """matmul of an activation and a weight cut over `ranks` tensor ranks along its
    dimension `split` (fsdp-split-tensors), computed as the ranks compute it: a
    row-parallel product (the weight cut along the contraction) sums the ranks' partial
    products, each rounded, with prec.tensor_sum; a column-parallel one computes each
    rank's block of the result as the whole product would, and its gradient of `a` is
    the ranks' parts (RankParts), each rounded, summed where the gradient is read.
    `split` may be (dimension, parts): a fused product's weight whose dimension is parts
    of those sizes, each cut into `ranks` blocks (rank t's block: each part's t-th)."""
    split, parts = split if isinstance(split, tuple) else (split, None)
    B = b.T if transpose_rhs else b
    cut = split if not transpose_rhs else 1 - split   # the cut dimension of B [K, N]
    parts = parts or (B.shape[cut],)
    starts = np.cumsum((0,) + tuple(parts))
    blocks = [np.concatenate([np.arange(start + t * part // ranks, start + (t + 1) * part // ranks)
                              for start, part in zip(starts, parts)]) for t in range(ranks)]
    lead = a.shape[:-1]
    A2 = a.reshape(-1, a.shape[-1])
    whole, whole_vjp = matmul(a, b, transpose_rhs=transpose_rhs, prec=prec, point=point)
    if cut == 0:
        out = prec.tensor_sum([prec.round(prec.matmul(A2[:, s], B[s]), point) for s in blocks])
        return out.reshape(lead + (B.shape[1],)), whole_vjp

    def vjp(d):
        d2 = d.reshape(-1, d.shape[-1])
        _, dB = whole_vjp(d)
        parts = RankParts(prec.round(prec.matmul(d2[:, s], B[:, s].T).reshape(a.shape),
                                     "matmul:grad") for s in blocks)
        return parts, dB
    return whole, vjp


def batch_matmul(a, b, transpose_lhs=False, transpose_rhs=False, prec=EXACT,
                 point="batch_matmul"):
    """[B..., M, K] x [B..., K, N] -> [B..., M, N] after the optional transposes."""
    A = _swap(a) if transpose_lhs else a
    B = _swap(b) if transpose_rhs else b
    out = prec.matmul(A, B)

    def vjp(d):
        dA = prec.round(prec.matmul(d, _swap(B)), "batch_matmul:grad")
        dB = prec.round(prec.matmul(_swap(A), d), "batch_matmul:grad")
        return (_swap(dA) if transpose_lhs else dA), (_swap(dB) if transpose_rhs else dB)
    return prec.round(out, point), vjp


# ---------------------------------------------------------------- broadcasting binary ops

def add(a, b, prec=EXACT, point="add"):
    return prec.round(a + b, point), lambda d: (_unbroadcast(d, a.shape, prec),
                                                _unbroadcast(d, b.shape, prec))


def sub(a, b, prec=EXACT, point="sub"):
    # -d is scale(-1): exact.
    return prec.round(a - b, point), lambda d: (_unbroadcast(d, a.shape, prec),
                                                _unbroadcast(-d, b.shape, prec))


def mul(a, b, prec=EXACT, point="mul"):
    # Two muls, each then summed back to its operand's shape.
    return prec.round(a * b, point), lambda d: (
        _unbroadcast(prec.round(d * b, "mul"), a.shape, prec),
        _unbroadcast(prec.round(d * a, "mul"), b.shape, prec))


def div(a, b, prec=EXACT, point="div"):
    y = prec.round(a / b, point)

    def vjp(d):
        if not prec.bf16:
            return unbroadcast(d / b, a.shape), unbroadcast(-d * a / (b * b), b.shape)
        # da = div(dy, b); db = scale(mul(da, y), -1) (exact negation).
        da = prec.round(d / b, "div")
        db = -prec.round(da * y, "mul")
        return _unbroadcast(da, a.shape, prec), _unbroadcast(db, b.shape, prec)
    return y, vjp


# ---------------------------------------------------------------- elementwise

def scale(x, factor, prec=EXACT, point="scale"):
    return prec.round(x * factor, point), lambda d: (prec.round(d * factor, "scale"),)


def relu(x, slope=None, prec=EXACT, point="relu"):
    """Gradient 0 at x == 0, as in PyTorch. `slope` (0/1 like x) replaces x > 0 in the
    gradient: where x is within rounding error of 0 a float32 computation may take either."""
    slope = (x > 0).astype(x.dtype) if slope is None else slope.astype(x.dtype)
    return prec.round(np.maximum(x, 0.0), point), lambda d: (
        prec.round(d * slope, "relu_grad"),)


GELU_C = math.sqrt(2.0 / math.pi)


def gelu(x, prec=EXACT, point="gelu"):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    t = prec.math("tanh", GELU_C * (x + 0.044715 * x ** 3))
    out = 0.5 * x * (1.0 + t)

    def vjp(d):  # one gelu_grad op
        dt = (1.0 - t * t) * GELU_C * (1.0 + 3 * 0.044715 * x * x)
        return (prec.round(d * (0.5 * (1.0 + t) + 0.5 * x * dt), "gelu_grad"),)
    return prec.round(out, point), vjp


def silu(x, prec=EXACT, point="silu"):
    s = 1.0 / (1.0 + prec.math("exp", -x))
    return prec.round(x * s, point), lambda d: (
        prec.round(d * s * (1.0 + x * (1.0 - s)), "silu_grad"),)


def tanh(x, prec=EXACT, point="tanh"):
    y = prec.round(prec.math("tanh", x), point)

    def vjp(d):
        if not prec.bf16:
            return (d * (1.0 - y * y),)
        # dx = sub(dy, mul(mul(dy, y), y)).
        return (prec.round(d - prec.round(prec.round(d * y, "mul") * y, "mul"), "sub"),)
    return y, vjp


def exp(x, prec=EXACT, point="exp"):
    y = prec.round(prec.math("exp", x), point)
    return y, lambda d: (prec.round(d * y, "mul"),)


def softmax(x, dim, prec=EXACT, point="softmax"):
    """exp(x - max) / sum(exp(x - max)) along dim; -inf entries get weight 0. Mixed
    precision: f32 throughout, only the result rounded; softmax_grad reads that result."""
    e = prec.math("exp", x - x.max(axis=dim, keepdims=True))
    y = prec.round(e / prec.inner(prec.sum(e, dim, True), "softmax.sum"), point)
    return y, lambda d: (prec.round(y * (d - prec.sum(d * y, dim, True)),
                                    "softmax_grad"),)


# ---------------------------------------------------------------- normalisation

def layer_norm(x, gamma, beta, eps=1e-5, prec=EXACT, point="layer_norm"):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last dim (biased variance).
    Mixed precision: statistics and affine in f32, the result rounded; layer_norm_grad
    recomputes them from x and rounds dx, dgamma and dbeta each once."""
    mu = prec.mean(x, -1, True)
    xc = x - mu
    rstd = 1.0 / np.sqrt(prec.mean(xc * xc, -1, True) + eps)
    xhat = xc * rstd
    lead = tuple(range(x.ndim - 1))

    def vjp(d):
        dxhat = d * gamma
        dx = rstd * (dxhat - prec.mean(dxhat, -1, True)
                     - xhat * prec.mean(dxhat * xhat, -1, True))
        return (prec.round(dx, "layer_norm_grad"),
                prec.round(prec.sum(d * xhat, lead), "layer_norm_grad"),
                prec.round(prec.sum(d, lead), "layer_norm_grad"))
    return prec.round(xhat * gamma + beta, point), vjp


def rms_norm(x, gamma, eps=1e-5, prec=EXACT, point="rms_norm"):
    """x / sqrt(mean(x^2) + eps) * gamma over the last dim."""
    r = 1.0 / np.sqrt(prec.mean(x * x, -1, True) + eps)
    lead = tuple(range(x.ndim - 1))

    def vjp(d):
        dxn = d * gamma
        dx = r * dxn - x * r ** 3 * prec.mean(dxn * x, -1, True)
        return (prec.round(dx, "rms_norm_grad"),
                prec.round(prec.sum(d * x * r, lead), "rms_norm_grad"))
    return prec.round(x * r * gamma, point), vjp


# ---------------------------------------------------------------- attention helpers, lookups

def causal_mask(x, prec=EXACT, point="causal_mask"):
    """-inf where the key position (last dim) is after the query position (dim -2).
    A select: rounding it (as the spec lists it) changes nothing."""
    t = x.shape[-1]
    keep = np.tril(np.ones((t, t), dtype=bool))
    return prec.round(np.where(keep, x, -np.inf), point), lambda d: (np.where(keep, d, 0.0),)


def yarn_ramp(rotary_dim, theta, yarn):
    """YaRN's place of each frequency on its ramp, clamp((i - low) / (high - low), 0, 1),
    with low and high the features that turn beta_fast and beta_slow times over the
    original context (Hugging Face's find_correction_range, truncated to integers unless
    `truncate` is false)."""
    factor, fast, slow, context, attention_factor, truncate = yarn

    def feature(rotations):
        return rotary_dim * math.log(context / (rotations * 2 * math.pi)) / (2 * math.log(theta))
    low, high = feature(fast), feature(slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, rotary_dim - 1)
    if low == high:
        high += 0.001
    return np.clip((np.arange(rotary_dim // 2) - low) / (high - low), 0.0, 1.0)


def rope_frequencies(rotary_dim, theta, scaling=None, yarn=None, linear=None):
    """fsdp.rope's frequencies theta^(-2i / r), i < r / 2, divided by `linear` (Hugging
    Face's linear scaling: positions interpolated), with Llama 3's scaling when
    `scaling` = (factor, low_freq_factor, high_freq_factor, original_max_positions)
    (Hugging Face's _compute_llama3_parameters), or YaRN's when `yarn` = (factor,
    beta_fast, beta_slow, original_max_positions, attention_factor, truncate): f (g /
    factor + 1 - g) with g yarn_ramp's; rounded to float32 as the spec says."""
    f = theta ** (-2.0 * np.arange(rotary_dim // 2) / rotary_dim)
    if linear is not None:
        f = f / linear
    if yarn is not None:
        g = yarn_ramp(rotary_dim, theta, yarn)
        f = f * (g / yarn[0] + 1.0 - g)
    if scaling is not None:
        factor, low, high, context = scaling
        wavelength = 2.0 * np.pi / f
        smooth = (context / wavelength - low) / (high - low)
        mid = (1.0 - smooth) * f / factor + smooth * f
        f = np.where(wavelength < context / high, f,
                     np.where(wavelength > context / low, f / factor, mid))
    return f.astype(np.float32)


def rope(x, positions, theta, rotary_dim=None, scaling=None, inverse=False, prec=EXACT,
         point="rope", yarn=None, linear=None):
    """Rotary embedding of the last dimension (rotate-half pairs i, i + r/2) by the angle
    p f_i at position p (the index along `positions`): the angle is the float32 product
    of p and f_i (as the spec and Hugging Face compute it), its cosine and sine exact,
    times YaRN's attention factor with `yarn`. `inverse` rotates by -angle (times the
    same factor), which is also the vjp."""
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    f = rope_frequencies(r, theta, scaling, yarn, linear)
    m = 1.0 if yarn is None else yarn[4]
    p = np.arange(x.shape[positions], dtype=np.float32)
    # [T, r/2], float32 products; their cosine and sine in the dtype the ops compute in
    # (float32 in a calibration, within the trainer's error there).
    angle = (p[:, None] * f[None, :]).astype(prec.dtype)
    shape = [1] * x.ndim
    shape[positions], shape[-1] = x.shape[positions], r // 2
    cos = prec.math("cos", angle).reshape(shape) * m
    sin = prec.math("sin", angle).reshape(shape) * m

    def turn(v, sign):
        a, b, rest = v[..., :r // 2], v[..., r // 2:r], v[..., r:]
        return np.concatenate([a * cos - sign * b * sin, b * cos + sign * a * sin, rest],
                              axis=-1)
    sign = -1.0 if inverse else 1.0
    return prec.round(turn(x, sign), point), lambda d: (prec.round(turn(d, -sign), point),)


def attention(q, k, v, causal=False, scale=None, key_block=None, prec=EXACT,
              point="attention", fused=False, window=None, softcap=None, kv_ranks=1):
    """fsdp.attention's output: softmax(scale q k^T [+ causal mask]) v per head, with
    q [B, Hq, T, D] and k, v [B, Hkv, S, D], query head h reading key head h // (Hq / Hkv);
    `causal` (T = S) keeps key j for query i when j <= i, and with a `window` W only
    when i - W < j as well (Hugging Face's sliding-window mask), all keys in one block;
    `softcap` C turns each scaled score s into C tanh(s / C) before the mask (Gemma 2's).
    Mixed precision: f32 throughout, only the output rounded (its f32 log-sum-exp is not
    an output here).

    `key_block` computes it as the compiled lowering does (AttentionPatterns.cpp): keys
    one block at a time, an online softmax (running row maximum m and sum l, the output
    so far rescaled by exp(m_old - m_new)), lse = m + log l. In float64 that is the
    one-pass value up to roundoff; in float32 (the calibrations, teacher.py) it sums in
    the trainer's order.

    The vjp is attention_grad's: the probabilities recomputed from the log-sum-exp,
    dS = P (dP - rowsum(dO * O)) with O the rounded output the gradient op reads, and the
    three gradients rounded once each (the query gradient summed over the key blocks).

    `fused`: as cuDNN's fused attention computes it (the CUDA target's bf16 fsdp.attention,
    runtime/lib/cuda/CudnnAttention.cpp), FlashAttention's way: the probabilities P are
    rounded to the operands' type for the products P V and P^T dO (the row sums take
    them unrounded), and dS for dS K and dS^T Q; in f32 plans nothing changes.

    `kv_ranks` R > 1: R tensor ranks read each key-value head, each G / R of its query
    heads (fewer key-value heads than ranks): its gradients are the ranks' parts, each
    rounded, then prec.tensor_sum (fsdp.tensor_unchunk's all-reduce)."""
    b, hq, t, d = q.shape
    hkv, s = k.shape[1], k.shape[2]
    g = hq // hkv
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    block = s if key_block is None or window is not None else key_block
    if causal:
        assert s == t, "causal attention needs as many keys as queries"
    assert window is None or causal, "a window needs causal attention"
    # Query heads of one key head as rows: [B, Hkv, G * T, D] (the heads are contiguous).
    Q = q.reshape(b, hkv, g * t, d)
    row_pos = np.tile(np.arange(t), g)[:, None]
    # Each tensor rank's query rows of a key head (all of them on one rank).
    assert g % kv_ranks == 0, "the ranks sharing a key head divide its query heads"
    rows = g * t // kv_ranks
    rank_rows = [np.s_[j * rows:(j + 1) * rows] for j in range(kv_ranks)]

    def scores(first):
        """Keys [first, first + block): scaled (and capped), -inf where causality hides
        the key."""
        kb = k[:, :, first:first + block]
        S = prec.matmul(Q, _swap(kb)) * scale
        if softcap is not None:
            S = prec.math("tanh", S / softcap) * softcap
        if causal:
            key_pos = first + np.arange(kb.shape[2])[None, :]
            seen = key_pos <= row_pos
            if window is not None:
                seen &= key_pos > row_pos - window
            S = np.where(seen, S, -np.inf)
        return S

    def operand(x, name):
        """A value the fused kernel rounds before it enters a product."""
        return prec.round(x, name) if fused else x

    m = l = acc = None
    for first in range(0, s, block):
        S = scores(first)
        new_max = S.max(axis=-1, keepdims=True) if m is None else np.maximum(
            m, S.max(axis=-1, keepdims=True))
        P = prec.math("exp", S - new_max)
        pv = prec.matmul(operand(P, "attention.p"), v[:, :, first:first + block])
        if m is None:
            l, acc = prec.sum(P, -1, True), pv
        else:
            rescale = prec.math("exp", m - new_max)
            l = l * rescale + prec.sum(P, -1, True)
            acc = acc * rescale + pv
        m = new_max
    lse = prec.inner(m + prec.math("log", l), "attention.lse")
    o = prec.round(acc / l, point)                            # [B, Hkv, G * T, D]

    def vjp(dout):
        dO = dout.reshape(b, hkv, g * t, d)
        center = prec.sum(dO * o, -1, True)
        dq, dk, dv = 0.0, [], []
        for first in range(0, s, block):
            S = scores(first)
            P = prec.math("exp", S - lse)
            dS = P * (prec.matmul(dO, _swap(v[:, :, first:first + block])) - center) * scale
            if softcap is not None:
                # d(C tanh(s / C)) / ds = 1 - tanh^2, 0 where the mask hid the score.
                dS = dS * np.maximum(1.0 - (S / softcap) ** 2, 0.0)
            dS, P = operand(dS, "attention.ds"), operand(P, "attention.p")
            dq = dq + prec.matmul(dS, k[:, :, first:first + block])
            dk.append([prec.matmul(_swap(dS[:, :, r]), Q[:, :, r]) for r in rank_rows])
            dv.append([prec.matmul(_swap(P[:, :, r]), dO[:, :, r]) for r in rank_rows])

        summed = lambda blocks: prec.tensor_sum([prec.round(np.concatenate(  # noqa: E731
            [parts[j] for parts in blocks], axis=2), "attention_grad") for j in range(kv_ranks)])
        return (prec.round(dq, "attention_grad").reshape(q.shape), summed(dk), summed(dv))
    return o.reshape(q.shape), vjp


def embedding(table, indices, prec=EXACT, point="embedding"):
    """table [V, D], integer indices [...] -> [..., D]; gradient is a scatter-add. Mixed
    precision: the rows are copied (exact); embedding_grad accumulates in f32 and rounds
    once."""
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= table.shape[0]):
        raise IndexError("embedding index outside [0, %d)" % table.shape[0])

    def vjp(d):
        dt = np.zeros_like(table)
        np.add.at(dt, idx.ravel(), d.reshape(-1, table.shape[1]))
        return prec.round(dt, "embedding_grad"), None
    return table[idx], vjp


# ---------------------------------------------------------------- shapes and reductions

def reshape(x, shape, prec=EXACT):
    return x.reshape(shape), lambda d: (d.reshape(x.shape),)


def broadcast(x, shape, prec=EXACT):
    """NumPy's broadcast_to: new leading dimensions and dimensions of size 1 repeated
    (exact). Its gradient sums them back: one reduce_sum, rounded."""
    return np.broadcast_to(x, shape).copy(), lambda d: (_unbroadcast(d, x.shape, prec),)


def transpose(x, permutation, prec=EXACT):
    """Result dim i is input dim permutation[i]."""
    inv = np.argsort(permutation)
    return x.transpose(permutation), lambda d: (d.transpose(inv),)


def slice(x, dim, offset, size, prec=EXACT):
    """fsdp.slice: entries [offset, offset + size) of dimension dim; the gradient is
    placed there in zeros of x's shape (fsdp.slice_grad)."""
    at = (np.s_[:],) * dim + (np.s_[offset:offset + size],)

    def vjp(d):
        g = np.zeros_like(x, dtype=d.dtype)
        g[at] = d
        return (g,)
    return x[at].copy(), vjp


def reduce_sum(x, dims, prec=EXACT, point="reduce_sum"):
    dims = tuple(dims)
    return prec.round(x.sum(axis=dims), point), lambda d: (
        np.broadcast_to(np.expand_dims(d, dims), x.shape).copy(),)


def reduce_mean(x, dims, prec=EXACT, point="reduce_mean"):
    dims = tuple(dims)
    n = int(np.prod([x.shape[i] for i in dims]))

    def vjp(d):
        if not prec.bf16:
            return (np.broadcast_to(np.expand_dims(d, dims) / n, x.shape).copy(),)
        # reshape + broadcast (exact), then scale(1/n).
        spread = np.broadcast_to(np.expand_dims(d, dims), x.shape)
        return (prec.round(spread * (1.0 / n), "scale"),)
    return prec.round(x.mean(axis=dims), point), vjp


# ---------------------------------------------------------------- losses (rank-0 results)

def cross_entropy(logits, targets, prec=EXACT):
    """mean over positions of logsumexp(logits) - logits[target]; targets ints in [0, C).
    Mixed precision: the loss is f32 (never rounded); cross_entropy_grad computes in f32
    from the logits and the f32 loss gradient and rounds its result."""
    c = logits.shape[-1]
    z = logits.reshape(-1, c)
    t = np.asarray(targets, dtype=np.int64).reshape(-1)
    if t.size != z.shape[0]:
        raise ValueError("targets must have the leading shape of logits")
    if t.min() < 0 or t.max() >= c:
        raise IndexError("cross_entropy target outside [0, %d)" % c)
    m = z.max(axis=1, keepdims=True)
    e = prec.math("exp", z - m)
    s = prec.sum(e, 1, True)
    rows = np.arange(z.shape[0])
    loss = np.mean(prec.math("log", s[:, 0]) + m[:, 0] - z[rows, t])

    def vjp(d):
        g = e / s
        g[rows, t] -= 1.0
        return prec.round((g * (d / z.shape[0])).reshape(logits.shape),
                          "cross_entropy_grad"), None
    return np.float64(loss), vjp


def mse(pred, target, prec=EXACT):
    """mean over all elements of (pred - target)^2 (mixed precision: f32, not rounded)."""
    diff = pred - target

    def vjp(d):
        if not prec.bf16:
            g = 2.0 * d * diff / diff.size
            return g, -g
        # sub, scale(2/n), mul by the f32 loss gradient; the target's is scale(-1).
        scaled = prec.round(prec.round(diff, "sub") * (2.0 / diff.size), "scale")
        g = prec.round(scaled * d, "mul")
        return g, -g
    return np.float64(np.mean(diff * diff)), vjp


# ---------------------------------------------------------------- finite differences

def check_vjp(op, args, diff, kwargs=None, h=1e-6, seed=0, max_elems=64):
    """Compare op's vjp with central differences of <dout, op(args)>, for the positional
    arguments whose indices are in `diff`. At most max_elems randomly chosen elements per
    argument are perturbed. Entries of the result that are not finite (causal_mask's
    -inf) are excluded from the objective. Returns the worst relative error."""
    kwargs = kwargs or {}
    rng = np.random.default_rng(seed)
    out, vjp = op(*args, **kwargs)
    out = np.asarray(out)
    finite = np.isfinite(out)
    dout = np.where(finite, rng.standard_normal(out.shape), 0.0)
    grads = vjp(dout if out.ndim else np.float64(dout))

    def objective(a):
        o = np.asarray(op(*a, **kwargs)[0])
        return float(np.sum(np.where(finite, o, 0.0) * dout))

    worst = 0.0
    for i in diff:
        g = np.asarray(grads[i])
        if g.shape != np.shape(args[i]):
            raise AssertionError("gradient %d has shape %s, operand %s"
                                 % (i, g.shape, np.shape(args[i])))
        flat = np.arange(np.size(args[i]))
        pick = flat if flat.size <= max_elems else rng.choice(flat, max_elems, replace=False)
        for j in pick:
            a = [np.array(x, dtype=np.float64, copy=True) if k == i else x
                 for k, x in enumerate(args)]
            x0 = a[i].flat[j]
            a[i].flat[j] = x0 + h
            fp = objective(a)
            a[i].flat[j] = x0 - h
            fm = objective(a)
            num = (fp - fm) / (2 * h)
            ana = g.flat[j]
            err = abs(num - ana) / max(1.0, abs(num), abs(ana))
            worst = max(worst, err)
    return worst
