"""The example models, written by hand with ops.py.

get(name) is the model `name` (every caller looks models up through it):

    mlp, gpt     examples/mlp.mlir, examples/gpt.mlir
    gpt-fused    examples/gpt.mlir as the CUDA target runs it in bf16: its attention
                 cuDNN's fused kernel, which rounds P and dS to bf16 for its products
    odd-sizes    test/e2e/Inputs/odd-sizes.mlir (every compute op kind at sizes that are
                 not multiples of a GPU block)
    llama:layers=L,dim=C,heads=H,kv_heads=KV,ffn=F,vocab=V,seq=T,batch=B,attention=A
          [,key_block=K][,rope_theta=R][,freeze=NAME+NAME...]
                 the model examples/generate_llama.py writes with those flags (A explicit
                 or flash; key_block, flash only, is its --key-block; freeze its --freeze);
                 A fused is flash's model as the CUDA target runs a bf16 one: cuDNN's
                 fused attention, which rounds P and dS to bf16 for its products;
                 the first nine fields are required, so that the name states the model;
                 generate_llama_flags(name) gives the script's flags.
    hf:DIR[,batch=B][,seq=T][,freeze=GLOB+...][,attention=fused]
                 the model fsdp-import-hf writes for a Hugging Face directory (a path or
                 a fixture of test/e2e/Inputs/hf), Hugging Face's names and layouts;
                 attention=fused: as the CUDA target runs a bf16 one (see llama's).

Each model mirrors its .mlir file op by op: parameter table (declaration order = manifest
order), `frozen` (parameters the trainer never updates: in the trace's parameters, not in
its gradients and optimizer state), inputs, optimizer, clip_grad_norm,
loss_and_grads(params, inputs) (the gradients of the trainable parameters), and `bounds`
(its longest chain of float32 roundings per stage and its depth, teacher.py).
A small tape records each op's vjp so that the backward pass is the exact reverse of the
forward; every vjp itself is hand-written in ops.py.

Mixed precision (`prec`, precision.py): the models' ops are those of the .mlir files, in
the same order, so the ops round where the compiled ops do; the tape rounds the rest of
docs/MixedPrecision.md section 2: parameters when read (gathered), float inputs once,
and each `add` that sums the gradients of a value used twice, in the order fsdp-autodiff
emits them (lib/Transforms/Autodiff.cpp: reverse op order, operands in order).
`reduced_loss_and_grads` runs each rank on its rows and reduces (section 3).
"""
import os
import re
import sys

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
        """A parameter gathered or a float input read, in the dtype the ops compute in:
        rounded to bf16 once in bf16 mode."""
        x = np.asarray(x, dtype=self.prec.dtype)
        return self.prec.round(x, point) if self.prec.bf16 else x

    def use(self, name):
        """fsdp.use: one Var per parameter, so repeated uses accumulate gradients."""
        if name not in self.used:
            self.used[name] = Var(self.read(self.params[name], "param"))
        return self.used[name]

    def __call__(self, op, *args, **attrs):
        weight = self.param_name(args[1]) if op is ops.matmul and len(args) > 1 else None
        if weight in self.prec.splits and self.prec.tensor_ranks > 1:
            op = ops.split_matmul
            attrs = dict(attrs, split=self.prec.splits[weight], ranks=self.prec.tensor_ranks)
        if op is ops.attention and self.prec.tensor_ranks > args[1].data.shape[1]:
            # Fewer key-value heads than tensor ranks: several ranks read each.
            attrs = dict(attrs, kv_ranks=self.prec.tensor_ranks // args[1].data.shape[1])
        out, vjp = op(*[a.data if isinstance(a, Var) else a for a in args], prec=self.prec,
                      **attrs)
        v = Var(out)
        self.nodes.append((v, args, vjp))
        return v

    def param_name(self, arg):
        """The parameter `arg` is the read of, if it is one."""
        return next((n for n, v in self.used.items() if v is arg), None)

    def loss_input(self):
        """The value the loss op (the last op) read: the logits."""
        return self.nodes[-1][1][0].data

    def backward(self, loss):
        """Reverse pass from a rank-0 loss; returns {param name: gradient}."""
        loss.grad = self.prec.dtype(1.0)  # the f32 seed: never rounded
        for v, args, vjp in reversed(self.nodes):
            if v.grad is None:
                continue
            for a, g in zip(args, vjp(self.whole(v.grad))):
                if isinstance(a, Var) and g is not None:
                    a.grad = g if a.grad is None else self.accumulate(a.grad, g)
        return {n: (self.whole(v.grad) if v.grad is not None else np.zeros_like(v.data))
                for n, v in self.used.items()}

    def accumulate(self, grad, g):
        """grad + g, rounded; the tensor ranks' parts each on its own rank, the gradient
        of reads outside the regions (whole) beside them."""
        if not isinstance(grad, ops.RankParts) and not isinstance(g, ops.RankParts):
            return self.prec.round(grad + g, "add")
        if not isinstance(grad, ops.RankParts):
            grad, g = g, grad
        if isinstance(g, ops.RankParts):
            out = ops.RankParts(self.prec.round(x + y, "add") for x, y in zip(grad, g))
            besides = [b for b in (grad.beside, g.beside) if b is not None]
            out.beside = self.accumulate(*besides) if len(besides) == 2 else (
                besides[0] if besides else None)
            return out
        out = ops.RankParts(grad)
        out.beside = g if grad.beside is None else self.prec.round(grad.beside + g, "add")
        return out

    def whole(self, grad):
        """A gradient as its reader sees it: the tensor ranks' parts summed (the
        gradient of fsdp.tensor_copy), then the whole reads' added."""
        if not isinstance(grad, ops.RankParts):
            return grad
        total = self.prec.tensor_sum(grad)
        return total if grad.beside is None else self.prec.round(grad.beside + total, "add")


def _finish(tape, loss, params, frozen=frozenset()):
    """(loss, {name: gradient}) of every trainable parameter (not in `frozen`)."""
    grads = tape.backward(loss)
    # Parameters never read get a zero gradient (the trainer still updates them).
    return float(loss.data), {n: grads.get(n, np.zeros_like(params[n])) for n in params
                              if n not in frozen}


def _loss_and_grads(forward, frozen=frozenset()):
    """loss_and_grads(params, inputs, prec=EXACT, **kw) of a model's forward(tape, inputs)."""
    def loss_and_grads(params, inputs, prec=EXACT, **kwargs):
        t = Tape(params, prec)
        return _finish(t, forward(t, inputs, **kwargs), params, frozen)
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


def gpt_forward(t, inputs, fused=False):
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
        o = (t(ops.attention, q, k, v, causal=True, fused=True) if fused else
             t(ops.attention, q, k, v, causal=True, key_block=16))  # [B, H, T, DH]
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


def gpt_fused_forward(t, inputs):
    return gpt_forward(t, inputs, fused=True)


# ---------------------------------------------------------------- test/e2e/Inputs/odd-sizes.mlir

# Vocabulary 37, context 7, width 13, hidden 29, batch 6: no size is a multiple of a block.
ODD_V, ODD_T, ODD_D, ODD_F = 37, 7, 13, 29

ODD_PARAMS = [
    ("wte", (ODD_V, ODD_D), "f32", "embed", normal(0.3)),
    ("wpe", (ODD_T, ODD_D), "f32", "embed", normal(0.1)),
    ("rms.g", (ODD_D,), "f32", "block", ONES),
    ("wq", (ODD_D, ODD_D), "f32", "block", normal(0.2)),
    ("wk", (ODD_D, ODD_D), "f32", "block", normal(0.2)),
    ("wv", (ODD_D, ODD_D), "f32", "block", normal(0.2)),
    ("ln.g", (ODD_D,), "f32", "block", ONES),
    ("ln.b", (ODD_D,), "f32", "block", ZEROS),
    ("w1", (ODD_D, ODD_F), "f32", "block", FAN_IN_UNIFORM),
    ("b1", (ODD_F,), "f32", "block", ZEROS),
    ("w2", (ODD_F, ODD_D), "f32", "block", FAN_IN_UNIFORM),
    ("lm_head", (ODD_D, ODD_V), "f32", "head", normal(0.2)),
]


def odd_sizes_forward(t, inputs):
    """The loss on tape t, op by op as the file writes it."""
    tokens, targets = inputs  # [6, 7] i32 each
    x0 = t(ops.add, t(ops.embedding, t.use("wte"), tokens), t.use("wpe"))
    # Attention with one head: scores, causal mask, softmax.
    a = t(ops.rms_norm, x0, t.use("rms.g"))
    q = t(ops.matmul, a, t.use("wq"))
    k = t(ops.matmul, a, t.use("wk"))
    v = t(ops.matmul, a, t.use("wv"))
    s = t(ops.batch_matmul, q, k, transpose_rhs=True)               # [6, 7, 7]
    ss = t(ops.scale, s, factor=0.277)
    m = t(ops.causal_mask, ss)
    p = t(ops.softmax, m, dim=2)
    o = t(ops.batch_matmul, p, v)
    x1 = t(ops.add, x0, o, point="add:residual")
    # MLP with a SiLU-gated tanh, through a transpose and back.
    n = t(ops.layer_norm, x1, t.use("ln.g"), t.use("ln.b"))
    h = t(ops.matmul, n, t.use("w1"))
    hb = t(ops.add, h, t.use("b1"))
    act = t(ops.silu, hb)
    th = t(ops.tanh, hb)
    gated = t(ops.mul, act, th)
    ht = t(ops.transpose, gated, (0, 2, 1))
    hback = t(ops.transpose, ht, (0, 2, 1))
    y = t(ops.matmul, hback, t.use("w2"))
    x2 = t(ops.add, x1, y, point="add:residual")
    logits = t(ops.matmul, x2, t.use("lm_head"))
    return t(ops.cross_entropy, logits, targets)


odd_sizes_loss_and_grads = _loss_and_grads(odd_sizes_forward)


# ---------------------------------------------------------------- examples/generate_llama.py

# The fields of a llama name, in canonical order: generate_llama.py's flags (with _ for -)
# that fix the model (fsdp-import-hf's Llama for the Hugging Face config of those shapes,
# with its parameter names). The first nine are required; key_block only with attention=flash;
# rope_theta (a positive integer, 10000 when absent) and freeze (parameter names joined by
# '+', generate_llama.py's --freeze) are optional. grid, param_dtype and reduce_dtype are
# the plan's, not the model's: teacher.py and sharded_check.py take them as options of
# their own.
LLAMA_REQUIRED = ("layers", "dim", "heads", "kv_heads", "ffn", "vocab", "seq", "batch",
                  "attention")
LLAMA_FIELDS = LLAMA_REQUIRED + ("key_block", "rope_theta", "freeze")
LLAMA_ATTENTION = ("explicit", "flash", "fused")
LLAMA_ROPE_THETA = 10000


def parse_llama(name):
    """{field: value} of a name 'llama:layers=2,dim=64,...' (ValueError if it does not
    state a model generate_llama.py writes: a field missing, unknown or repeated, a
    value that is not a positive integer, shapes that do not divide)."""
    if not name.startswith("llama:"):
        raise ValueError("%r: a llama name starts with 'llama:'" % name)
    cfg = {}
    for item in name[len("llama:"):].split(","):
        key, eq, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or key not in LLAMA_FIELDS:
            raise ValueError("%r: %r is not FIELD=VALUE with FIELD one of %s"
                             % (name, item, ", ".join(LLAMA_FIELDS)))
        if key in cfg:
            raise ValueError("%r: %s given twice" % (name, key))
        value = value.strip()
        if key == "attention":
            if value not in LLAMA_ATTENTION:
                raise ValueError("%r: attention is explicit, flash or fused" % name)
            cfg[key] = value
            continue
        if key == "freeze":
            cfg[key] = tuple(value.split("+"))
            continue
        if not value.isdigit() or int(value) < 1:
            raise ValueError("%r: %s must be a positive integer" % (name, key))
        cfg[key] = int(value)
    missing = [f for f in LLAMA_REQUIRED if f not in cfg]
    if missing:
        raise ValueError("%r: missing %s (every field of %s is required, so that the name "
                         "states the model)" % (name, ", ".join(missing),
                                                ", ".join(LLAMA_REQUIRED)))
    if cfg["attention"] == "flash" and "key_block" not in cfg:
        raise ValueError("%r: attention=flash needs key_block" % name)
    if cfg["attention"] == "explicit" and "key_block" in cfg:
        raise ValueError("%r: key_block is fsdp.attention's (attention=flash)" % name)
    if cfg["attention"] == "fused" and "key_block" in cfg:
        raise ValueError("%r: the fused kernel has no key_block" % name)
    if cfg["dim"] % cfg["heads"] or cfg["heads"] % cfg["kv_heads"]:
        raise ValueError("%r: dim must be a multiple of heads, heads of kv_heads" % name)
    if (cfg["dim"] // cfg["heads"]) % 2:
        raise ValueError("%r: the rotary embedding pairs features: dim / heads must be "
                         "even" % name)
    declared = {n for n, *_rest in llama_params(cfg)}
    unknown = [n for n in cfg.get("freeze", ()) if n not in declared]
    if unknown:
        raise ValueError("%r: freeze: no parameter named %s" % (name, ", ".join(unknown)))
    return cfg


def _field_text(field, value):
    return "+".join(value) if field == "freeze" else str(value)


def llama_name(cfg):
    """The canonical name of a llama configuration (fields in LLAMA_FIELDS order)."""
    return "llama:" + ",".join("%s=%s" % (f, _field_text(f, cfg[f]))
                               for f in LLAMA_FIELDS if f in cfg)


def generate_llama_flags(name):
    """examples/generate_llama.py's flags for the model of a llama name (the plan's
    --grid, --param-dtype and --reduce-dtype are the caller's to add)."""
    cfg = parse_llama(name)
    if cfg["attention"] == "fused":
        # fsdp.attention, which the CUDA target's bf16 step runs fused (the CPU's key
        # blocks: the whole sequence).
        cfg = dict(cfg, attention="flash", key_block=cfg["seq"])
    return [a for f in LLAMA_FIELDS if f in cfg
            for a in ("--" + f.replace("_", "-"),
                      ",".join(cfg[f]) if f == "freeze" else str(cfg[f]))]


def llama_spec(cfg):
    """The fsdp_hf LlamaSpec generate_llama.py writes for the llama `cfg`."""
    return fsdp_hf().config.llama2_spec(*(cfg[f] for f in ("vocab", "dim", "layers", "heads",
                                                           "kv_heads", "ffn")),
                                        cfg.get("rope_theta", LLAMA_ROPE_THETA))


def llama_params(cfg):
    """The parameter table in declaration (= manifest) order: fsdp-import-hf's for the
    Hugging Face config of `cfg` (generate_llama.py writes that model)."""
    spec = llama_spec(cfg)
    return [(n, tuple(shape), "f32", unit, hf_initializer(init))
            for n, shape, unit, init in fsdp_hf().llama.parameters(spec)]


def grouped_heads(t, x, b, T, heads, kv_heads, D, explicit):
    """Key or value [B, T, KV * D] as attention reads it: fsdp.attention takes the KV
    heads as they are ([B, T, KV, D]); the explicit form broadcasts each to the G query
    heads it serves ([B, T, KV, 1, D] -> [B, T, KV, G, D] -> [B, T, H, D]: query head h
    reads key head h // G)."""
    if not explicit:
        return t(ops.reshape, x, (b, T, kv_heads, D))
    G = heads // kv_heads
    x5 = t(ops.reshape, x, (b, T, kv_heads, 1, D))
    xg = t(ops.broadcast, x5, (b, T, kv_heads, G, D))
    return t(ops.reshape, xg, (b, T, heads, D))


def causal_attention(t, qh, kh, vh, key_block, explicit, fused=False, window=None,
                     scale=None, softcap=None):
    """Causal attention of [B, H, T, D] queries: fsdp.attention in key blocks (fused: as
    cuDNN's fused kernel computes it, where the CUDA target fuses it; with a sliding
    `window`, a `scale` other than D^-1/2 and scores soft-capped at `softcap` if given),
    or (explicit) scores, scale, causal_mask, softmax, product with the values."""
    if fused and softcap is None:
        # fsdp-fuse-attention gives cuDNN all but soft-capped scores (FuseAttention.cpp).
        return t(ops.attention, qh, kh, vh, causal=True, fused=True, window=window,
                 scale=scale)
    if not explicit:
        return t(ops.attention, qh, kh, vh, causal=True, key_block=key_block, window=window,
                 scale=scale, softcap=softcap)
    assert window is None and scale is None and softcap is None, \
        "the explicit form: full causal, D^-1/2"
    s = t(ops.batch_matmul, qh, kh, transpose_rhs=True)
    ss = t(ops.scale, s, factor=1.0 / qh.data.shape[-1] ** 0.5)
    m = t(ops.causal_mask, ss)
    pr = t(ops.softmax, m, dim=3)
    return t(ops.batch_matmul, pr, vh)


def llama_stage_roundings(cfg):
    """The float32 roundings of the longest path through one stage (teacher.py, bounds):
    a block forward chains rms_norm (C), the query projection (C), the rotation (4: its
    cosine and sine, each within an ulp or so of the float32 angle's, two products and a
    sum), the scores (D), the softmax's sum and the product with the values (T each), the
    output projection (C), rms_norm (C), w1 (C) and w2 (F); backward the transposed
    products sum the other dimension, the same total. The head: rms_norm (C), the LM head
    (C), cross-entropy's sum (V); the weight gradients and the loss's mean sum B T rows."""
    C, F, V, T, B = (cfg[f] for f in ("dim", "ffn", "vocab", "seq", "batch"))
    return decoder_roundings(C, F, V, T, B, C // cfg["heads"])


def decoder_roundings(C, F, V, T, B, D):
    """llama_stage_roundings of a decoder of width C, MLP F, vocabulary V, head size D on
    B sequences of T tokens."""
    return max(5 * C + F + D + 4 + 2 * T, 2 * C + V, B * T)


def llama(name):
    """The model entry of a llama name (see get)."""
    cfg = parse_llama(name)
    params = llama_params(cfg)
    forward = hf_llama_forward(llama_spec(cfg), {n for n, *_ in params},
                               cfg.get("key_block"), cfg["attention"] == "explicit",
                               cfg["attention"] == "fused")
    frozen = frozenset(cfg.get("freeze", ()))
    return {
        "name": llama_name(cfg),
        "config": cfg,
        "params": params,
        "frozen": frozen,
        "inputs": [((cfg["batch"], cfg["seq"]), "i32", "tokens", cfg["vocab"]),
                   ((cfg["batch"], cfg["seq"]), "i32", "classes", cfg["vocab"])],
        # generate_llama.py's plan: beta1 and eps are the dialect's defaults.
        "optimizer": {"kind": "adamw", "lr": 3e-4, "beta1": 0.9, "beta2": 0.95,
                      "eps": 1e-8, "weight_decay": 0.1},
        "clip_grad_norm": 1.0,
        "forward": forward,
        "loss_and_grads": _loss_and_grads(forward, frozen),
        # Stages: the blocks and the head.
        "bounds": {"reduction": llama_stage_roundings(cfg), "depth": cfg["layers"] + 1},
    }


# ---------------------------------------------------------------- fsdp-import-hf

# hf:DIR[,batch=B][,seq=T][,freeze=GLOB+...][,attention=fused]: the model fsdp-import-hf
# writes for the Hugging Face directory DIR (a path, or a folder name of
# test/e2e/Inputs/hf) for batches of B sequences of T tokens (4 and 16 unless given), with
# the importer's plan defaults and its --freeze globs; with attention=fused, each
# attention that fsdp-fuse-attention gives cuDNN (all but soft-capped ones) is computed
# with its roundings, as the CUDA target's bf16 step runs it. Its config.json is
# read by the importer's own reader (fsdp_hf.config: which fields mean what, checked
# against Hugging Face's loss by hf-import.test); the forward is written here, op by op.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HF_FIXTURES = os.path.join(_ROOT, "test", "e2e", "Inputs", "hf")
HF_TOOLS = os.path.join(_ROOT, "tools", "fsdp-import-hf")


def parse_hf(name):
    """(directory, batch, seq, freeze globs, fused) of an hf: name."""
    directory, *fields = name[len("hf:"):].split(",")
    sizes, freeze, fused = {"batch": 4, "seq": 16}, [], False
    for field in fields:
        key, _, value = field.partition("=")
        if key == "freeze" and value:
            freeze = value.split("+")
            continue
        if field == "attention=fused":
            fused = True
            continue
        if key not in sizes or not value.isdigit() or int(value) < 1:
            raise ValueError("%r: %r is not batch=N, seq=N, freeze=GLOB+... or "
                             "attention=fused" % (name, field))
        sizes[key] = int(value)
    if os.sep not in directory:
        directory = os.path.join(HF_FIXTURES, directory)
    return directory, sizes["batch"], sizes["seq"], freeze, fused


def fsdp_hf():
    """The importer's package (tools/fsdp-import-hf/fsdp_hf), for the checks that run it
    or read what it writes."""
    if HF_TOOLS not in sys.path:
        sys.path.insert(0, HF_TOOLS)
    import fsdp_hf.config
    import fsdp_hf.family
    import fsdp_hf.import_hf
    import fsdp_hf.mlir_text
    import fsdp_hf.plan
    import fsdp_hf.safetensors_io
    return fsdp_hf


def hf_linear(t, x, prefix, names):
    """Hugging Face's Linear: x W^T (+ b), W [out, in]."""
    y = t(ops.matmul, x, t.use(prefix + ".weight"), transpose_rhs=True)
    return t(ops.add, y, t.use(prefix + ".bias")) if prefix + ".bias" in names else y


def hf_projections(t, h, p, spec, names):
    """The flat queries, keys and values of layer `p`: three products, or Phi-3's fused
    qkv_proj cut in three (q: H * D features, then k and v: KV * D each), each of q and k
    RMS-normed over the whole projection for OLMo 2."""
    D = spec.head_dim
    sizes = (spec.heads * D, spec.kv_heads * D, spec.kv_heads * D)
    if spec.fused:
        qkv = hf_linear(t, h, p + "self_attn.qkv_proj", names)
        offsets = (0, sizes[0], sizes[0] + sizes[1])
        flat = [t(ops.slice, qkv, dim=2, offset=o, size=n) for o, n in zip(offsets, sizes)]
    else:
        flat = [hf_linear(t, h, p + "self_attn.%s_proj" % n, names) for n in "qkv"]
    if spec.qk_norm == "projection":
        for k, n in enumerate("qk"):
            flat[k] = t(ops.rms_norm, flat[k], t.use(p + "self_attn.%s_norm.weight" % n),
                        eps=spec.rms_eps)
    return dict(zip("qkv", flat))


def hf_swiglu(t, f, p, spec, names):
    """down(act(gate f) * up f), act SiLU (GeGLU: the tanh GELU, Gemma's); Phi-3's
    gate_up_proj is [gate; up]."""
    if spec.fused:
        gate_up = hf_linear(t, f, p + "mlp.gate_up_proj", names)
        gate, up = (t(ops.slice, gate_up, dim=2, offset=o, size=spec.ffn)
                    for o in (0, spec.ffn))
    else:
        gate = hf_linear(t, f, p + "mlp.gate_proj", names)
        up = hf_linear(t, f, p + "mlp.up_proj", names)
    act = ops.gelu if spec.activation == "gelu" else ops.silu
    return hf_linear(t, t(ops.mul, t(act, gate), up), p + "mlp.down_proj", names)


def hf_llama_forward(spec, names, key_block, explicit=False, fused=False):
    """forward(tape, inputs) of fsdp-import-hf's Llama-family model (fsdp_hf/llama.py:
    Llama, Mistral, Qwen2, Qwen3, OLMo 2, Phi-3), with fsdp.attention (fused: cuDNN's
    rounding) or (explicit) its definition written out."""
    H, KV, D = spec.heads, spec.kv_heads, spec.head_dim

    def norm(t, x, name):
        """RMS norm with the gain `name` (Gemma: 1 + it)."""
        gain = t.use(name)
        if spec.norm_offset:
            # In the dtype the ops compute in (a float64 constant would carry a
            # float32 calibration into float64 from here on).
            gain = t(ops.add, gain, np.full(gain.data.shape, spec.norm_offset,
                                            dtype=gain.data.dtype))
        return t(ops.rms_norm, x, gain, eps=spec.rms_eps)

    def branch(t, x, p, pre, post, body):
        """x + post(body(pre(x))), each norm where the family has it."""
        y = body(norm(t, x, p + pre + ".weight") if pre else x)
        if post:
            y = norm(t, y, p + post + ".weight")
        return t(ops.add, x, y, point="add:residual")

    def attention(t, h, i, b, T):
        p = "model.layers.%d." % i
        heads = hf_projections(t, h, p, spec, names)
        heads["q"] = t(ops.reshape, heads["q"], (b, T, H, D))
        if spec.qk_norm == "head":
            heads["q"] = norm(t, heads["q"], p + "self_attn.q_norm.weight")
            heads["k"] = norm(t, t(ops.reshape, heads["k"], (b, T, KV, D)),
                              p + "self_attn.k_norm.weight")
        for n in "kv":
            heads[n] = grouped_heads(t, heads[n], b, T, H, KV, D, explicit)
        for n in ("q", "k"):
            heads[n] = t(ops.rope, heads[n], positions=1, theta=spec.theta(i),
                         rotary_dim=spec.rotary_dim, scaling=spec.llama3_scaling,
                         yarn=spec.yarn_scaling, linear=spec.linear_factor(i))
        qh, kh, vh = (t(ops.transpose, heads[n], (0, 2, 1, 3)) for n in "qkv")
        o = causal_attention(t, qh, kh, vh, key_block, explicit, fused, spec.window(i),
                             spec.attention_scale, spec.attention_softcap)
        oc = t(ops.reshape, t(ops.transpose, o, (0, 2, 1, 3)), (b, T, H * D))
        return hf_linear(t, oc, p + "self_attn.o_proj", names)

    def forward(t, inputs):
        tokens, targets = inputs
        b, T = tokens.shape
        n = spec.norms
        x = t(ops.embedding, t.use("model.embed_tokens.weight"), tokens)
        if spec.embed_scale:
            x = t(ops.scale, x, factor=spec.embed_scale)
        for i in range(spec.layers):
            p = "model.layers.%d." % i
            x = branch(t, x, p, n.pre_attention, n.post_attention,
                       lambda h: attention(t, h, i, b, T))
            x = branch(t, x, p, n.pre_mlp, n.post_mlp,
                       lambda f: hf_swiglu(t, f, p, spec, names))
        xf = norm(t, x, "model.norm.weight")
        head = t.use("model.embed_tokens.weight" if spec.tied else "lm_head.weight")
        logits = t(ops.matmul, xf, head, transpose_rhs=True)
        if spec.final_softcap:
            cap = spec.final_softcap
            logits = t(ops.scale, t(ops.tanh, t(ops.scale, logits, factor=1.0 / cap)),
                       factor=cap)
        return t(ops.cross_entropy, logits, targets)
    return forward


def hf_gpt2_forward(spec, names, key_block):
    """forward(tape, inputs) of fsdp-import-hf's GPT-2 model (fsdp_hf/gpt2.py)."""
    H, D, C = spec.heads, spec.head_dim, spec.dim

    def norm(t, x, prefix):
        return t(ops.layer_norm, x, t.use(prefix + ".weight"), t.use(prefix + ".bias"),
                 eps=spec.ln_eps)

    def conv1d(t, x, prefix):
        """Hugging Face's Conv1D: x W + b, W [in, out]."""
        return t(ops.add, t(ops.matmul, x, t.use(prefix + ".weight")), t.use(prefix + ".bias"))

    def forward(t, inputs):
        tokens, targets = inputs
        b, T = tokens.shape
        positions = t.use("transformer.wpe.weight")
        if T < spec.positions:
            positions = t(ops.slice, positions, dim=0, offset=0, size=T)
        x = t(ops.add, t(ops.embedding, t.use("transformer.wte.weight"), tokens), positions)
        for i in range(spec.layers):
            p = "transformer.h.%d." % i
            qkv = conv1d(t, norm(t, x, p + "ln_1"), p + "attn.c_attn")
            qh, kh, vh = (t(ops.transpose, t(ops.reshape, t(ops.slice, qkv, dim=2,
                                                            offset=n * C, size=C),
                                             (b, T, H, D)), (0, 2, 1, 3))
                          for n in range(3))
            o = t(ops.attention, qh, kh, vh, causal=True, scale=spec.attention_scale(i),
                  key_block=key_block)
            oc = t(ops.reshape, t(ops.transpose, o, (0, 2, 1, 3)), (b, T, C))
            x1 = t(ops.add, x, conv1d(t, oc, p + "attn.c_proj"), point="add:residual")
            f = t(ops.gelu, conv1d(t, norm(t, x1, p + "ln_2"), p + "mlp.c_fc"))
            x = t(ops.add, x1, conv1d(t, f, p + "mlp.c_proj"), point="add:residual")
        xf = norm(t, x, "transformer.ln_f")
        head = t.use("transformer.wte.weight" if spec.tied else "lm_head.weight")
        logits = t(ops.matmul, xf, head, transpose_rhs=True)
        return t(ops.cross_entropy, logits, targets)
    return forward


def hf_initializer(text):
    """The initializer of an imported parameter's declaration: ones, zeros or
    #fsdp.normal<std = S>."""
    if text in ("#fsdp.ones", "#fsdp.zeros"):
        return {"#fsdp.ones": ONES, "#fsdp.zeros": ZEROS}[text]
    std = re.fullmatch(r"#fsdp\.normal<std = ([0-9.e+-]+)>", text)
    if not std:
        raise ValueError("an imported model's initializer %r" % text)
    return normal(float(std.group(1)))


def hf(name):
    """The model entry of an hf: name (see get)."""
    directory, batch, seq, freeze, fused = parse_hf(name)
    package = fsdp_hf()
    try:
        spec = package.config.model_spec(package.config.load(directory), seq)
        table = package.family.module(spec).parameters(spec)
        frozen = frozenset(package.mlir_text.frozen_names(table, freeze))
    except package.HfError as e:
        raise ValueError("%r: %s" % (name, e)) from None
    names = {n for n, *_ in table}
    key_block = min(512, seq)
    gpt2 = spec.family == "gpt2"
    if gpt2 and fused:
        raise ValueError("%r: attention=fused is for the Llama family" % name)
    forward = hf_gpt2_forward(spec, names, key_block) if gpt2 else \
        hf_llama_forward(spec, names, key_block, fused=fused)
    plan = package.plan.Plan()
    return {
        "name": name,
        "directory": directory,
        "batch_seq": (batch, seq),
        "freeze": freeze,
        "params": [(n, tuple(shape), "f32", unit, hf_initializer(init))
                   for n, shape, unit, init in table],
        "frozen": frozen,
        "inputs": [((batch, seq), "i32", "tokens", spec.vocab),
                   ((batch, seq), "i32", "classes", spec.vocab)],
        "optimizer": {"kind": "adamw", "lr": plan.lr, "beta1": 0.9, "beta2": plan.beta2,
                      "eps": 1e-8, "weight_decay": plan.weight_decay},
        "clip_grad_norm": plan.clip_grad_norm,
        "forward": forward,
        "loss_and_grads": _loss_and_grads(forward, frozen),
        "bounds": {"reduction": decoder_roundings(spec.dim, spec.ffn, spec.vocab, seq, batch,
                                                  spec.head_dim),
                   "depth": spec.layers + 1},
    }


# ---------------------------------------------------------------- registry

# inputs: (global shape, dtype, role, bound)
# bounds (teacher.py): `reduction`, the float32 roundings of the longest path through one
# stage (a layer, a residual block, the head); `depth`, the number of stages.
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
        # Three layers; the longest is fc1's product of 784.
        "bounds": {"reduction": 784, "depth": 3},
    },
    "gpt": {
        "params": GPT_PARAMS,
        "inputs": [((8, T), "i32", "tokens", V), ((8, T), "i32", "classes", V)],
        "optimizer": {"kind": "adamw", "lr": 3e-4, "beta1": 0.9, "beta2": 0.999,
                      "eps": 1e-8, "weight_decay": 0.1},
        "clip_grad_norm": 1.0,
        "forward": gpt_forward,
        "loss_and_grads": gpt_loss_and_grads,
        # Two blocks and the head. A block chains layer_norm (64), q (64), scores (16),
        # softmax and values (32 each), wo (64), layer_norm (64), w1 (64), w2 (256): 656
        # roundings; the head 64 + 64 + 256 (cross-entropy's sum); 256 rows. The MLP's
        # 784 is kept (the bound both examples have always had).
        "bounds": {"reduction": 784, "depth": 3},
    },
    "odd-sizes": {
        "params": ODD_PARAMS,
        "inputs": [((6, ODD_T), "i32", "tokens", ODD_V), ((6, ODD_T), "i32", "classes", ODD_V)],
        # The file's plan: AdamW lr 1e-2, weight decay 0.1, the dialect's other defaults.
        "optimizer": {"kind": "adamw", "lr": 1e-2, "beta1": 0.9, "beta2": 0.999,
                      "eps": 1e-8, "weight_decay": 0.1},
        "clip_grad_norm": 1.0,
        "forward": odd_sizes_forward,
        "loss_and_grads": odd_sizes_loss_and_grads,
        # One block and the head. The block chains rms_norm (13), q (13), scores (13),
        # softmax and values (7 each), layer_norm (13), w1 (13), w2 (29): 108 roundings
        # (backward: w2^T 13, w1^T 29, layer_norm 13, scores 13 + 7 + 7, q^T 13, rms_norm
        # 13: the same); the head 13 + 37 (cross-entropy's sum); 42 rows.
        "bounds": {"reduction": 108, "depth": 2},
    },
}
MODELS["gpt-fused"] = dict(MODELS["gpt"], forward=gpt_fused_forward,
                           loss_and_grads=_loss_and_grads(gpt_fused_forward))
for _name, _entry in MODELS.items():
    _entry.setdefault("name", _name)
    _entry.setdefault("frozen", frozenset())


def names():
    """The fixed model names, and the form of the parametrised one (for --help)."""
    return sorted(MODELS) + ["llama:" + ",".join(f + "=N" for f in LLAMA_FIELDS[:-4])
                             + ",attention=explicit|flash|fused[,key_block=N][,rope_theta=N]"
                             "[,freeze=NAME+...]",
                                 "hf:DIR[,batch=N][,seq=N][,freeze=GLOB+...][,attention=fused]"]


_LLAMAS = {}


def get(name):
    """The model entry of `name` (module docstring); KeyError if there is none, ValueError
    for a llama name that does not state a model."""
    if name in MODELS:
        return MODELS[name]
    if name.startswith("llama:"):
        canonical = llama_name(parse_llama(name))
        if canonical not in _LLAMAS:
            _LLAMAS[canonical] = llama(canonical)
        return _LLAMAS[canonical]
    if name.startswith("hf:"):
        if name not in _LLAMAS:
            _LLAMAS[name] = hf(name)
        return _LLAMAS[name]
    raise KeyError("unknown model %r (models: %s)" % (name, ", ".join(names())))


def argument(name):
    """argparse type of a --model option: the name, checked by get."""
    import argparse
    try:
        get(name)
    except (KeyError, ValueError) as e:
        raise argparse.ArgumentTypeError(str(e).strip('"'))
    return name


def trainable(model):
    """[(name, shape, dtype)] of the parameters the trainer updates, in manifest order:
    those of the trace's gradients and optimizer state."""
    m = get(model)
    return [(n, s, d) for n, s, d, _u, _i in m["params"] if n not in m["frozen"]]


def batch_size(model):
    return get(model)["inputs"][0][0][0]


def loss_and_grads(model, params, inputs):
    """(loss, {name: gradient}) of get(model) on one batch."""
    return get(model)["loss_and_grads"](params, inputs)


class Step:
    """One step as the reference computes it: loss, {name: gradient}, {name: slack} (how
    far the trainer's gradient reduction may be from `grads`, elementwise) and loss_slack
    (how far its loss may be, beyond float32 arithmetic)."""

    def __init__(self, loss, grads, slack, loss_slack):
        self.loss, self.grads, self.slack, self.loss_slack = loss, grads, slack, loss_slack


def _check_dtype(model, grads, prec):
    """A float32 calibration (teacher.py) is only one if it computed in float32: a float64
    value in a model (a constant, say) carries everything after it into float64, where
    the step lands on the reference's bits and the calibrated bound shrinks to nothing."""
    for name, g in grads.items():
        if g.dtype != prec.dtype:
            raise ValueError("%s: the gradient of %s is %s in a %s step: the model computes "
                             "in another dtype somewhere" % (model, name, g.dtype,
                                                             np.dtype(prec.dtype)))


def step(model, params, inputs, prec=EXACT, slopes=None):
    """The Step of get(model) on one global batch, computed as `prec` says.

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
    entry = get(model)
    forward = entry["forward"]
    if not prec.bf16 and (prec.reduce_dtype == "f32" or prec.ranks == 1):
        kwargs = {"slopes": slopes} if slopes else {}
        loss, grads = entry["loss_and_grads"](params, inputs, **kwargs)
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
            loss, grads = _finish(t, forward(t, micro_rows, **kwargs), params, entry["frozen"])
            _check_dtype(model, grads, prec)
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


if __name__ == "__main__":
    # `python3 models.py --generate-llama-flags NAME`: the flags of examples/generate_llama.py
    # for a llama name, one line (for shell scripts that write the model file).
    if len(sys.argv) != 3 or sys.argv[1] != "--generate-llama-flags":
        sys.exit("usage: models.py --generate-llama-flags llama:...")
    try:
        print(" ".join(generate_llama_flags(sys.argv[2])))
    except ValueError as e:
        sys.exit("models.py: %s" % e)
