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

    def loss_input(self):
        """The value the loss op (the last op) read: the logits."""
        return self.nodes[-1][1][0].data

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


def _loss_and_grads(forward):
    """loss_and_grads(params, inputs, prec=EXACT, **kw) of a model's forward(tape, inputs)."""
    def loss_and_grads(params, inputs, prec=EXACT, **kwargs):
        t = Tape(params, prec)
        return _finish(t, forward(t, inputs, **kwargs), params)
    return loss_and_grads


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


def mlp_forward(t, inputs, slopes=None):
    """The loss on tape t. slopes: {layer: 0/1 array like its pre-activation} replacing
    the ReLU slopes of layers 1 and 2 (see relu_inputs)."""
    x, y = inputs  # [64, 784] f32 features, [64] i32 classes (bound 10)
    h = t.read(x, "input")
    for i in (1, 2, 3):
        m = t(ops.matmul, h, t.use("fc%d.w" % i))
        h = t(ops.add, m, t.use("fc%d.b" % i), point="add" if i < 3 else "add:logits")
        if i < 3:
            h = t(ops.relu, h, slope=(slopes or {}).get(i))
    return t(ops.cross_entropy, h, y)


mlp_loss_and_grads = _loss_and_grads(mlp_forward)


def mlp_relu_inputs(params, inputs, prec=EXACT):
    """{layer: (z, magnitude)}: each ReLU's input z = h w + b (rounded as `prec` says) and
    the sum of the magnitudes of its terms, |h| |w| + |b|, which bounds the rounding
    error of computing z."""
    t = Tape(params, prec)
    h, out = t.read(inputs[0], "input"), {}
    for i in (1, 2):
        w, b = t.use("fc%d.w" % i).data, t.use("fc%d.b" % i).data
        z = prec.round(prec.round(h @ w, "matmul") + b, "add")
        out[i] = (z, np.abs(h) @ np.abs(w) + np.abs(b))
        h = prec.round(np.maximum(z, 0.0), "relu")
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


def gpt_forward(t, inputs):
    """The loss on tape t."""
    tokens, targets = inputs  # [B, T] i32 each
    b = tokens.shape[0]
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
        o = t(ops.attention, q, k, v, causal=True, key_block=16)   # [B, H, T, DH]
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
    return t(ops.cross_entropy, logits, targets)


gpt_loss_and_grads = _loss_and_grads(gpt_forward)


# ---------------------------------------------------------------- registry

# inputs: (global shape, dtype, role, bound)
MODELS = {
    "mlp": {
        "params": MLP_PARAMS,
        "inputs": [((64, 784), "f32", "features", None), ((64,), "i32", "classes", 10)],
        "optimizer": {"kind": "adamw", "lr": 1e-3, "beta1": 0.9, "beta2": 0.999,
                      "eps": 1e-8, "weight_decay": 0.0},
        "clip_grad_norm": 0.0,
        "forward": mlp_forward,
        "loss_and_grads": mlp_loss_and_grads,
        "relu_inputs": mlp_relu_inputs,
    },
    "gpt": {
        "params": GPT_PARAMS,
        "inputs": [((8, T), "i32", "tokens", V), ((8, T), "i32", "classes", V)],
        "optimizer": {"kind": "adamw", "lr": 3e-4, "beta1": 0.9, "beta2": 0.999,
                      "eps": 1e-8, "weight_decay": 0.1},
        "clip_grad_norm": 1.0,
        "forward": gpt_forward,
        "loss_and_grads": gpt_loss_and_grads,
    },
}


def batch_size(model):
    return MODELS[model]["inputs"][0][0][0]


def loss_and_grads(model, params, inputs):
    """(loss, {name: gradient}) of MODELS[model] on one batch."""
    return MODELS[model]["loss_and_grads"](params, inputs)


class Step:
    """One step as the reference computes it: loss, {name: gradient}, {name: slack} (how
    far the trainer's gradient reduction may be from `grads`, elementwise) and loss_slack
    (how far its loss may be, beyond float32 arithmetic)."""

    def __init__(self, loss, grads, slack, loss_slack):
        self.loss, self.grads, self.slack, self.loss_slack = loss, grads, slack, loss_slack


def step(model, params, inputs, prec=EXACT, slopes=None):
    """The Step of MODELS[model] on one global batch, computed as `prec` says.

    float32 mode: loss_and_grads on the whole batch and no slack (its gradient is the mean
    of the ranks' gradients, so the number of ranks only changes float32 sums); with a
    bf16 reduction over several ranks, each rank on its rows as below, reduced with slack.

    bf16 mode: each rank's gradient differs from that mean (its roundings see its own
    rows, cross_entropy_grad its own 1 / rows), so each rank runs on its block of rows
    (precision.split_rows) and prec.reduce averages their gradients (section 3). The loss
    is the mean of the ranks' losses (the runtime logs their average); it is computed in
    f32 from bf16 logits, and the trainer's logits may each be one bf16 ulp (2u |z|) off
    the reference's where float32 moved a rounding: cross-entropy changes by at most
    2 max|dz| per row, so loss_slack = 4 u mean(max |z| per row).
    slopes: ReLU slopes of the whole batch (MLP), split like the rows."""
    forward = MODELS[model]["forward"]
    if not prec.bf16 and (prec.reduce_dtype == "f32" or prec.ranks == 1):
        kwargs = {"slopes": slopes} if slopes else {}
        loss, grads = MODELS[model]["loss_and_grads"](params, inputs, **kwargs)
        return Step(loss, grads, {n: np.zeros_like(g) for n, g in grads.items()}, 0.0)
    ranks, k = prec.ranks, prec.micro_batches
    runs, loss_slack = [], 0.0
    for r, rows in enumerate(precision.split_rows(inputs, ranks)):
        rank_slopes = ({n: precision.split_rows([v], ranks)[r][0] for n, v in slopes.items()}
                       if slopes else None)
        micro = []
        for m, micro_rows in enumerate(precision.split_rows(rows, k)):
            kwargs = {"slopes": {n: precision.split_rows([v], k)[m][0]
                                 for n, v in rank_slopes.items()}} if slopes else {}
            t = Tape(params, prec)
            loss, grads = _finish(t, forward(t, micro_rows, **kwargs), params)
            if prec.bf16:
                z = np.abs(t.loss_input().astype(np.float64))
                loss_slack += 4 * precision.U_BF16 * np.mean(
                    z.reshape(-1, z.shape[-1]).max(axis=1))
            micro.append((loss, grads))
        runs.append(micro)
    grads, slack = {}, {}
    for name in runs[0][0][1]:
        grads[name], slack[name] = prec.accumulate_micro_batches(
            [[np.asarray(g[name], np.float64) for _l, g in micro] for micro in runs])
    losses = [loss for micro in runs for loss, _g in micro]
    return Step(float(np.mean(losses)), grads, slack, loss_slack / len(losses))
