"""The example models, written by hand with ops.py.

MODELS[name] mirrors examples/<name>.mlir: parameter table (declaration order = manifest
order), inputs, optimizer, clip_grad_norm, and loss_and_grads(params, inputs).
A small tape records each op's vjp so that the backward pass is the exact reverse of the
forward; every vjp itself is hand-written in ops.py.

Mixed precision (`prec`, precision.py): the models' ops are those of the .mlir files, in
the same order, so the ops round where the compiled ops do; the tape rounds the rest of
docs/MixedPrecision.md section 2: parameters when read (gathered), float inputs once,
and each `add` that sums the gradients of a value used twice, in the order fsdp-autodiff
emits them (lib/Transforms/Autodiff.cpp: reverse op order, operands in order).
`reduced_loss_and_grads` runs each rank on its rows and reduces (section 3).
"""
import numpy as np

import ops
import precision
from precision import EXACT


class Var:
    """A float tensor on the tape; grad accumulates its gradient."""

    def __init__(self, data):
        self.data, self.grad = data, None


class Tape:
    def __init__(self, params, prec=EXACT):
        self.params, self.used, self.nodes, self.prec = params, {}, [], prec

    def read(self, x, point):
        """A parameter gathered or a float input read: rounded to bf16 once (in the dtype
        the ops compute in); unchanged in float32 mode."""
        if not self.prec.bf16:
            return x
        return self.prec.round(np.asarray(x, dtype=self.prec.dtype), point)

    def use(self, name):
        """fsdp.use: one Var per parameter, so repeated uses accumulate gradients."""
        if name not in self.used:
            self.used[name] = Var(self.read(self.params[name], "param"))
        return self.used[name]

    def __call__(self, op, *args, **attrs):
        out, vjp = op(*[a.data if isinstance(a, Var) else a for a in args], prec=self.prec,
                      **attrs)
        v = Var(out)
        self.nodes.append((v, args, vjp))
        return v

    def backward(self, loss):
        """Reverse pass from a rank-0 loss; returns {param name: gradient}."""
        loss.grad = self.prec.dtype(1.0)  # the f32 seed: never rounded
        for v, args, vjp in reversed(self.nodes):
            if v.grad is None:
                continue
            for a, g in zip(args, vjp(v.grad)):
                if isinstance(a, Var) and g is not None:
                    a.grad = g if a.grad is None else self.prec.round(a.grad + g, "add")
        return {n: (v.grad if v.grad is not None else np.zeros_like(v.data))
                for n, v in self.used.items()}


def _finish(tape, loss, params):
    grads = tape.backward(loss)
    # Parameters never read get a zero gradient (the trainer still updates them).
    return float(loss.data), {n: grads.get(n, np.zeros_like(params[n])) for n in params}


# ---------------------------------------------------------------- examples/mlp.mlir

FAN_IN_UNIFORM = {"kind": "fan_in_uniform", "scale": 1.0}
ZEROS, ONES = {"kind": "zeros"}, {"kind": "ones"}


def normal(std, mean=0.0):
    return {"kind": "normal", "mean": mean, "std": std}


# (name, shape, dtype, unit, init)
MLP_PARAMS = [
    ("fc1.w", (784, 256), "f32", "fc1", FAN_IN_UNIFORM),
    ("fc1.b", (256,), "f32", "fc1", ZEROS),
    ("fc2.w", (256, 256), "f32", "fc2", FAN_IN_UNIFORM),
    ("fc2.b", (256,), "f32", "fc2", ZEROS),
    ("fc3.w", (256, 10), "f32", "fc3", FAN_IN_UNIFORM),
    ("fc3.b", (10,), "f32", "fc3", ZEROS),
]


def mlp_loss_and_grads(params, inputs, slopes=None, prec=EXACT):
    """slopes: {layer: 0/1 array like its pre-activation} replacing the ReLU slopes of
    layers 1 and 2 (see relu_inputs)."""
    x, y = inputs  # [64, 784] f32 features, [64] i32 classes (bound 10)
    t = Tape(params, prec)
    h = t.read(x, "input")
    for i in (1, 2, 3):
        m = t(ops.matmul, h, t.use("fc%d.w" % i))
        h = t(ops.add, m, t.use("fc%d.b" % i))
        if i < 3:
            h = t(ops.relu, h, slope=(slopes or {}).get(i))
    return _finish(t, t(ops.cross_entropy, h, y), params)


def mlp_relu_inputs(params, inputs):
    """{layer: (z, magnitude)}: each ReLU's input z = h w + b and the sum of the magnitudes
    of its terms, |h| |w| + |b|, which bounds the rounding error of computing z."""
    h, out = inputs[0], {}
    for i in (1, 2):
        w, b = params["fc%d.w" % i], params["fc%d.b" % i]
        z = h @ w + b
        out[i] = (z, np.abs(h) @ np.abs(w) + np.abs(b))
        h = np.maximum(z, 0.0)
    return out


# ---------------------------------------------------------------- examples/gpt.mlir

V, T, D, H, DH, FF = 256, 32, 64, 4, 16, 256

GPT_PARAMS = [("wte", (V, D), "f32", "embed", normal(0.02)),
              ("wpe", (T, D), "f32", "embed", normal(0.01))]
for _b in range(2):
    _p, _u = "h%d." % _b, "block%d" % _b
    GPT_PARAMS += [
        (_p + "ln1.g", (D,), "f32", _u, ONES),
        (_p + "ln1.b", (D,), "f32", _u, ZEROS),
        (_p + "attn.wq", (D, D), "f32", _u, normal(0.02)),
        (_p + "attn.wk", (D, D), "f32", _u, normal(0.02)),
        (_p + "attn.wv", (D, D), "f32", _u, normal(0.02)),
        (_p + "attn.wo", (D, D), "f32", _u, normal(0.01)),
        (_p + "ln2.g", (D,), "f32", _u, ONES),
        (_p + "ln2.b", (D,), "f32", _u, ZEROS),
        (_p + "mlp.w1", (D, FF), "f32", _u, normal(0.02)),
        (_p + "mlp.b1", (FF,), "f32", _u, ZEROS),
        (_p + "mlp.w2", (FF, D), "f32", _u, normal(0.01)),
        (_p + "mlp.b2", (D,), "f32", _u, ZEROS),
    ]
GPT_PARAMS += [("lnf.g", (D,), "f32", "head", ONES),
               ("lnf.b", (D,), "f32", "head", ZEROS),
               ("lm_head", (D, 256), "f32", "head", normal(0.02))]


def gpt_loss_and_grads(params, inputs, prec=EXACT):
    tokens, targets = inputs  # [B, T] i32 each
    b = tokens.shape[0]
    t = Tape(params, prec)
    x = t(ops.add, t(ops.embedding, t.use("wte"), tokens), t.use("wpe"))
    for blk in range(2):
        p = "h%d." % blk
        # x = x + attn(ln1(x))
        a = t(ops.layer_norm, x, t.use(p + "ln1.g"), t.use(p + "ln1.b"))
        heads = []
        for w in ("wq", "wk", "wv"):
            proj = t(ops.matmul, a, t.use(p + "attn." + w))          # [B, T, D]
            proj = t(ops.reshape, proj, (b, T, H, DH))
            heads.append(t(ops.transpose, proj, (0, 2, 1, 3)))     # [B, H, T, DH]
        q, k, v = heads
        s = t(ops.batch_matmul, q, k, transpose_rhs=True)          # [B, H, T, T]
        s = t(ops.scale, s, 0.25)
        s = t(ops.causal_mask, s)
        pr = t(ops.softmax, s, 3)
        o = t(ops.batch_matmul, pr, v)                             # [B, H, T, DH]
        o = t(ops.transpose, o, (0, 2, 1, 3))
        o = t(ops.reshape, o, (b, T, D))
        x = t(ops.add, x, t(ops.matmul, o, t.use(p + "attn.wo")), point="add:residual")
        # x = x + mlp(ln2(x))
        c = t(ops.layer_norm, x, t.use(p + "ln2.g"), t.use(p + "ln2.b"))
        f = t(ops.add, t(ops.matmul, c, t.use(p + "mlp.w1")), t.use(p + "mlp.b1"))
        g = t(ops.gelu, f)
        d = t(ops.add, t(ops.matmul, g, t.use(p + "mlp.w2")), t.use(p + "mlp.b2"))
        x = t(ops.add, x, d, point="add:residual")
    xf = t(ops.layer_norm, x, t.use("lnf.g"), t.use("lnf.b"))
    logits = t(ops.matmul, xf, t.use("lm_head"))
    return _finish(t, t(ops.cross_entropy, logits, targets), params)


# ---------------------------------------------------------------- registry

# inputs: (global shape, dtype, role, bound)
MODELS = {
    "mlp": {
        "params": MLP_PARAMS,
        "inputs": [((64, 784), "f32", "features", None), ((64,), "i32", "classes", 10)],
        "optimizer": {"kind": "adamw", "lr": 1e-3, "beta1": 0.9, "beta2": 0.999,
                      "eps": 1e-8, "weight_decay": 0.0},
        "clip_grad_norm": 0.0,
        "loss_and_grads": mlp_loss_and_grads,
        "relu_inputs": mlp_relu_inputs,
    },
    "gpt": {
        "params": GPT_PARAMS,
        "inputs": [((8, T), "i32", "tokens", V), ((8, T), "i32", "classes", V)],
        "optimizer": {"kind": "adamw", "lr": 3e-4, "beta1": 0.9, "beta2": 0.999,
                      "eps": 1e-8, "weight_decay": 0.1},
        "clip_grad_norm": 1.0,
        "loss_and_grads": gpt_loss_and_grads,
    },
}


def batch_size(model):
    return MODELS[model]["inputs"][0][0][0]


def loss_and_grads(model, params, inputs):
    """(loss, {name: gradient}) of MODELS[model] on one batch."""
    return MODELS[model]["loss_and_grads"](params, inputs)


def reduced_loss_and_grads(model, params, inputs, prec, **kwargs):
    """(loss, {name: gradient}, {name: slack}) of one step computed as `prec` says. In
    float32 mode: loss_and_grads and zero slack (the full batch in float64 is the mean of
    the ranks' gradients). In bf16 mode each rank's gradient differs from that mean (its
    roundings see its own rows, and cross_entropy_grad its own 1 / rows), so each rank
    runs on its rows and precision.reduce averages them; slack bounds the reduction's
    rounding (precision.Precision.reduce). kwargs (ReLU slopes) are split like the rows.
    The loss is the mean of the ranks' losses (the runtime logs their average)."""
    f = MODELS[model]["loss_and_grads"]
    if not prec.bf16:
        loss, grads = f(params, inputs, **kwargs)
        return loss, grads, {n: np.zeros_like(g) for n, g in grads.items()}
    n = prec.ranks
    parts = precision.split_rows(inputs, n)
    slopes = kwargs.get("slopes")
    runs = [f(params, rows, prec=prec, **({"slopes": {k: v[r * (len(v) // n):(r + 1) * (len(v) // n)]
                                                       for k, v in slopes.items()}}
                                          if slopes else {}))
            for r, rows in enumerate(parts)]
    grads, slack = {}, {}
    for name in runs[0][1]:
        grads[name], slack[name] = prec.reduce([np.asarray(g, np.float64) for _l, gs in runs
                                                for g in [gs[name]]])
    return float(np.mean([loss for loss, _g in runs])), grads, slack

