"""float64 forward and hand-written backward of every fsdp op (docs/Reference/FSDPDialect.md).

Each op is `op(*operands, **attrs) -> (result, vjp)`; `vjp(dresult)` returns one gradient
per positional operand (None for integer operands such as targets or indices).
`check_vjp` compares a vjp with central finite differences.
"""
import math

import numpy as np


def _swap(x):
    """Swap the last two dimensions."""
    return np.swapaxes(x, -1, -2)


def unbroadcast(g, shape):
    """Sum a broadcast gradient back to an operand's shape (NumPy broadcasting rules)."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


# ---------------------------------------------------------------- products

def matmul(a, b, transpose_lhs=False, transpose_rhs=False):
    """[..., M, K] x [K, N] -> [..., M, N] after the optional transposes."""
    A = _swap(a) if transpose_lhs else a
    B = b.T if transpose_rhs else b
    lead = A.shape[:-1]                      # [..., M]
    A2 = A.reshape(-1, A.shape[-1])          # rows of every leading index: plain 2-D
    out = (A2 @ B).reshape(lead + (B.shape[1],))  # products (NumPy's batched path is slow)

    def vjp(d):
        d2 = d.reshape(-1, d.shape[-1])
        dA = (d2 @ B.T).reshape(A.shape)
        dB = A2.T @ d2                       # sums over all of [..., M]
        return (_swap(dA) if transpose_lhs else dA), (dB.T if transpose_rhs else dB)
    return out, vjp


def batch_matmul(a, b, transpose_lhs=False, transpose_rhs=False):
    """[B..., M, K] x [B..., K, N] -> [B..., M, N] after the optional transposes."""
    A = _swap(a) if transpose_lhs else a
    B = _swap(b) if transpose_rhs else b
    out = A @ B

    def vjp(d):
        dA, dB = d @ _swap(B), _swap(A) @ d
        return (_swap(dA) if transpose_lhs else dA), (_swap(dB) if transpose_rhs else dB)
    return out, vjp


# ---------------------------------------------------------------- broadcasting binary ops

def add(a, b):
    return a + b, lambda d: (unbroadcast(d, a.shape), unbroadcast(d, b.shape))


def sub(a, b):
    return a - b, lambda d: (unbroadcast(d, a.shape), unbroadcast(-d, b.shape))


def mul(a, b):
    return a * b, lambda d: (unbroadcast(d * b, a.shape), unbroadcast(d * a, b.shape))


def div(a, b):
    return a / b, lambda d: (unbroadcast(d / b, a.shape),
                             unbroadcast(-d * a / (b * b), b.shape))


# ---------------------------------------------------------------- elementwise

def scale(x, factor):
    return x * factor, lambda d: (d * factor,)


def relu(x, slope=None):
    """Gradient 0 at x == 0, as in PyTorch. `slope` (0/1 like x) replaces x > 0 in the
    gradient: where x is within rounding error of 0 a float32 computation may take either."""
    slope = (x > 0).astype(x.dtype) if slope is None else slope
    return np.maximum(x, 0.0), lambda d: (d * slope,)


GELU_C = math.sqrt(2.0 / math.pi)


def gelu(x):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    t = np.tanh(GELU_C * (x + 0.044715 * x ** 3))
    out = 0.5 * x * (1.0 + t)

    def vjp(d):
        dt = (1.0 - t * t) * GELU_C * (1.0 + 3 * 0.044715 * x * x)
        return (d * (0.5 * (1.0 + t) + 0.5 * x * dt),)
    return out, vjp


def silu(x):
    s = 1.0 / (1.0 + np.exp(-x))
    return x * s, lambda d: (d * s * (1.0 + x * (1.0 - s)),)


def tanh(x):
    y = np.tanh(x)
    return y, lambda d: (d * (1.0 - y * y),)


def exp(x):
    y = np.exp(x)
    return y, lambda d: (d * y,)


def softmax(x, dim):
    """exp(x - max) / sum(exp(x - max)) along dim; -inf entries get weight 0."""
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    y = e / e.sum(axis=dim, keepdims=True)
    return y, lambda d: (y * (d - (d * y).sum(axis=dim, keepdims=True)),)


# ---------------------------------------------------------------- normalisation

def layer_norm(x, gamma, beta, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last dim (biased variance)."""
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
    xhat = xc * rstd
    lead = tuple(range(x.ndim - 1))

    def vjp(d):
        dxhat = d * gamma
        dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                     - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
        return dx, (d * xhat).sum(axis=lead), d.sum(axis=lead)
    return xhat * gamma + beta, vjp


def rms_norm(x, gamma, eps=1e-5):
    """x / sqrt(mean(x^2) + eps) * gamma over the last dim."""
    r = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    lead = tuple(range(x.ndim - 1))

    def vjp(d):
        dxn = d * gamma
        dx = r * dxn - x * r ** 3 * (dxn * x).mean(axis=-1, keepdims=True)
        return dx, (d * x * r).sum(axis=lead)
    return x * r * gamma, vjp


# ---------------------------------------------------------------- attention helpers, lookups

def causal_mask(x):
    """-inf where the key position (last dim) is after the query position (dim -2)."""
    t = x.shape[-1]
    keep = np.tril(np.ones((t, t), dtype=bool))
    return np.where(keep, x, -np.inf), lambda d: (np.where(keep, d, 0.0),)


def embedding(table, indices):
    """table [V, D], integer indices [...] -> [..., D]; gradient is a scatter-add."""
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= table.shape[0]):
        raise IndexError("embedding index outside [0, %d)" % table.shape[0])

    def vjp(d):
        dt = np.zeros_like(table)
        np.add.at(dt, idx.ravel(), d.reshape(-1, table.shape[1]))
        return dt, None
    return table[idx], vjp


# ---------------------------------------------------------------- shapes and reductions

def reshape(x, shape):
    return x.reshape(shape), lambda d: (d.reshape(x.shape),)


def transpose(x, permutation):
    """Result dim i is input dim permutation[i]."""
    inv = np.argsort(permutation)
    return x.transpose(permutation), lambda d: (d.transpose(inv),)


def reduce_sum(x, dims):
    dims = tuple(dims)
    return x.sum(axis=dims), lambda d: (np.broadcast_to(np.expand_dims(d, dims), x.shape).copy(),)


def reduce_mean(x, dims):
    dims = tuple(dims)
    n = int(np.prod([x.shape[i] for i in dims]))
    return x.mean(axis=dims), lambda d: (
        np.broadcast_to(np.expand_dims(d, dims) / n, x.shape).copy(),)


# ---------------------------------------------------------------- losses (rank-0 results)

def cross_entropy(logits, targets):
    """mean over positions of logsumexp(logits) - logits[target]; targets ints in [0, C)."""
    c = logits.shape[-1]
    z = logits.reshape(-1, c)
    t = np.asarray(targets, dtype=np.int64).reshape(-1)
    if t.size != z.shape[0]:
        raise ValueError("targets must have the leading shape of logits")
    if t.min() < 0 or t.max() >= c:
        raise IndexError("cross_entropy target outside [0, %d)" % c)
    m = z.max(axis=1, keepdims=True)
    e = np.exp(z - m)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(z.shape[0])
    loss = np.mean(np.log(s[:, 0]) + m[:, 0] - z[rows, t])

    def vjp(d):
        g = e / s
        g[rows, t] -= 1.0
        return (g * (d / z.shape[0])).reshape(logits.shape), None
    return np.float64(loss), vjp


def mse(pred, target):
    """mean over all elements of (pred - target)^2."""
    diff = pred - target

    def vjp(d):
        g = 2.0 * d * diff / diff.size
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
