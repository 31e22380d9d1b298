#!/usr/bin/env python3
"""Finite-difference check of the gradient of every differentiable fsdp op, through
the real compiler and trainer.

For each case a tiny model (a plan with SGD, lr 1, no momentum, weight decay or
clipping) is compiled with `fsdpc --grid=1`. With one fixed data file and our own
parameters P0 (docs/Runtime.md: --init-from / --export, safetensors files of float32
tensors named as the manifest's parameters; test/reference/params_file.py):

  analytic   one step from P0 gives P1; SGD with lr 1 makes the gradient P0 - P1.
  numerical  for a few elements i of each parameter, the step-1 loss (computed
             before the update) from P0 + h e_i and from P0 - h e_i:
             (L+ - L-) / (x_i+ - x_i-), with the perturbed values as stored in f32.

An element passes when |num - ana| <= RTOL * max(|num|, |ana|) + ATOL. Each
parameter must also have a checked element whose gradient is well above ATOL, so
that a sign error or a missing factor could not hide in the tolerance.

A gradient only checks the forward values it differentiates: an op whose forward
the difference cannot see (rope's angles: a wrong frequency is differentiated just
as well) also has a `reference`, the float64 loss of P0 from test/reference/ops.py,
which the trainer's step-1 loss must match within REF_RTOL.

    gradcheck.py --fsdpc FSDPC --work DIR [--only NAME[,NAME...]] [--jobs N] [--list]
                 [--verbose] [--mutate F]

Prints `PASS name max_rel_err (...)` or `FAIL name ...` (with the failing elements) per
case, where max_rel_err is |num - ana| / max(|num|, |ana|) over the checked elements
whose gradient is at least MIN_GRAD, then a summary line; exits with 1 if any case fails.
--verbose prints every checked element; --mutate F multiplies the analytic gradients by
F (a self-test of the checker: with F = -1, 0 or 0.95 every case fails).
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "reference"))
import datafile  # noqa: E402
import ops  # noqa: E402
from params_file import read_params, write_params  # noqa: E402

H = 1e-2              # finite-difference step
RTOL = 1e-2           # relative tolerance
ATOL = 2e-4           # absolute tolerance: f32 loss rounding / 2h is ~3e-6 * loss
MIN_GRAD = 1e-2       # each parameter needs a checked |gradient| at least this large
REF_RTOL = 1e-5       # step-1 loss against a case's float64 reference (f32: a few
                      # roundings per element, then the mean of at most a few hundred)
CHECKS_PER_PARAM = 6  # elements checked per parameter (all of them if fewer)

PLAN = "#fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 1.0>>"


# ---------------------------------------------------------------- model text helpers

def ty(shape, dtype="f32"):
    """MLIR tensor type of `shape`."""
    if not shape:
        return "tensor<%s>" % dtype
    return "tensor<%sx%s>" % ("x".join(str(d) for d in shape), dtype)


def module(params, args, body, result="%l"):
    """A model: params [(name, shape, init)], args [(name, shape, dtype)], body lines."""
    lines = ["module attributes {fsdp.plan = %s} {" % PLAN]
    for name, shape, init in params:
        lines.append("  fsdp.param @%s : %s = %s" % (name, ty(shape), init))
    sig = ", ".join("%%%s: %s" % (n, ty(s, d)) for n, s, d in args)
    lines.append("  func.func @loss(%s) -> tensor<f32> {" % sig)
    for name, shape, _ in params:
        lines.append("    %%%s = fsdp.use @%s : %s" % (name, name, ty(shape)))
    lines.extend("    " + line for line in body)
    lines.append("    return %s : tensor<f32>" % result)
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def mse(pred, target, shape, out="%l"):
    return "%s = fsdp.mse %s, %s : %s, %s -> tensor<f32>" % (out, pred, target, ty(shape),
                                                             ty(shape))


# ---------------------------------------------------------------- value generators
# Each parameter's P0 and each input's data come from a generator called with a NumPy
# Generator seeded from the case name. A parameter's declared initializer (`init`) only
# documents the distribution: the trainer's own initial values are replaced by P0.

class Gen:
    def __init__(self, fn, init="#fsdp.normal<std = 1.0>", bound=None):
        self.fn, self.init, self.bound = fn, init, bound

    def __call__(self, rng, shape):
        return self.fn(rng, shape)


def normal(std=1.0, mean=0.0):
    init = "#fsdp.normal<mean = %r, std = %r>" % (mean, std) if mean else \
        "#fsdp.normal<std = %r>" % std
    return Gen(lambda rng, shape: mean + std * rng.standard_normal(shape), init)


def uniform(low, high):
    return Gen(lambda rng, shape: rng.uniform(low, high, shape),
               "#fsdp.uniform<low = %r, high = %r>" % (low, high))


def away_from_zero(low, high):
    """|v| in [low, high) with a random sign: keeps relu away from its kink."""
    def gen(rng, shape):
        mag = rng.uniform(low, high, shape)
        sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        return sign * mag
    return Gen(gen, "#fsdp.uniform<low = %r, high = %r>" % (-high, high))


def integers(bound, high=None):
    """Integers in [0, high or bound) for an input whose manifest bound is `bound`: a
    small `high` forces repeated indices and leaves rows high..bound-1 unused."""
    return Gen(lambda rng, shape: rng.integers(0, high or bound, shape), bound=bound)


class Case:
    """params: [(name, shape, generator)]; inputs: [(name, shape, dtype, role, generator)];
    body: MLIR lines computing %l; picks: {param: [flat indices]} overrides."""

    def __init__(self, name, params, inputs, body, picks=None, result="%l", reference=None):
        self.name = name
        self.params = params
        self.inputs = inputs
        self.picks = picks or {}
        self.reference = reference  # (params {name: array}, inputs [array]) -> loss
        decl = [(n, s, gen.init) for n, s, gen in params]
        args = [(n, s, d) for n, s, d, _, _ in inputs]
        self.mlir = module(decl, args, body, result)


CASES = []


def case(*args, **kwargs):
    CASES.append(Case(*args, **kwargs))


def target(shape, std=1.0):
    return ("t", shape, "f32", "regression_target", normal(std))


def features(name, shape, gen=None):
    return (name, shape, "f32", "features", gen or normal())


# ---------------------------------------------------------------- matmul

# [M, K] x [K, N] with the four transpose combinations; both operands are parameters.
for ta in (False, True):
    for tb in (False, True):
        M, K, N = 4, 5, 3
        a_shape = [K, M] if ta else [M, K]
        b_shape = [N, K] if tb else [K, N]
        attrs = (" transpose_lhs" if ta else "") + (" transpose_rhs" if tb else "")
        case("matmul_%s%s" % ("t" if ta else "n", "t" if tb else "n"),
             [("a", a_shape, normal(0.7)), ("b", b_shape, normal(0.7))],
             [target([M, N])],
             ["%%y = fsdp.matmul %%a, %%b%s : %s, %s -> %s"
              % (attrs, ty(a_shape), ty(b_shape), ty([M, N])),
              mse("%y", "%t", [M, N])])

# lhs of rank 3 ([B, M, K]), plain and with both transposes.
for ta, tb in ((False, False), (True, True)):
    B, M, K, N = 2, 3, 4, 3
    a_shape = [B, K, M] if ta else [B, M, K]
    b_shape = [N, K] if tb else [K, N]
    attrs = (" transpose_lhs" if ta else "") + (" transpose_rhs" if tb else "")
    case("matmul_rank3_%s" % ("tt" if ta else "nn"),
         [("a", a_shape, normal(0.7)), ("b", b_shape, normal(0.7))],
         [target([B, M, N])],
         ["%%y = fsdp.matmul %%a, %%b%s : %s, %s -> %s"
          % (attrs, ty(a_shape), ty(b_shape), ty([B, M, N])),
          mse("%y", "%t", [B, M, N])])

# lhs an input (features) of rank 3, weight a parameter: the usual linear layer.
case("matmul_rank3_input",
     [("w", [4, 3], normal(0.7))],
     [features("x", [2, 3, 4]), target([2, 3, 3])],
     ["%y = fsdp.matmul %x, %w : tensor<2x3x4xf32>, tensor<4x3xf32> -> tensor<2x3x3xf32>",
      mse("%y", "%t", [2, 3, 3])])

# ---------------------------------------------------------------- batch_matmul

for ta in (False, True):
    for tb in (False, True):
        lead, M, K, N = [2, 2], 3, 4, 2
        a_shape = lead + ([K, M] if ta else [M, K])
        b_shape = lead + ([N, K] if tb else [K, N])
        attrs = (" transpose_lhs" if ta else "") + (" transpose_rhs" if tb else "")
        case("batch_matmul_%s%s" % ("t" if ta else "n", "t" if tb else "n"),
             [("a", a_shape, normal(0.7)), ("b", b_shape, normal(0.7))],
             [target(lead + [M, N])],
             ["%%y = fsdp.batch_matmul %%a, %%b%s : %s, %s -> %s"
              % (attrs, ty(a_shape), ty(b_shape), ty(lead + [M, N])),
              mse("%y", "%t", lead + [M, N])])

# ---------------------------------------------------------------- broadcasting binary ops

# u = x op p (p [3, 1] broadcast as rhs), v = q op u (q [4] broadcast as lhs): both
# operand gradients are reduced over the batch, a size-1 dimension and a missing one.
for op in ("add", "sub", "mul", "div"):
    positive = op == "div"
    pgen = uniform(0.5, 1.5) if positive else normal(1.0)
    xgen = uniform(0.5, 1.5) if positive else normal(1.0)
    S = [4, 3, 4]
    case(op,
         [("p", [3, 1], pgen), ("q", [4], pgen)],
         [features("x", S, xgen), target(S)],
         ["%%u = fsdp.%s %%x, %%p : %s, tensor<3x1xf32> -> %s" % (op, ty(S), ty(S)),
          "%%v = fsdp.%s %%q, %%u : tensor<4xf32>, %s -> %s" % (op, ty(S), ty(S)),
          mse("%v", "%t", S)])

# Both operands parameters of the full shape (no broadcasting), divisor positive.
case("div_full",
     [("a", [4, 3], normal(1.0)), ("b", [4, 3], uniform(0.5, 1.5))],
     [target([4, 3])],
     ["%y = fsdp.div %a, %b : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>",
      mse("%y", "%t", [4, 3])])

# ---------------------------------------------------------------- scale, broadcast

case("scale",
     [("w", [4, 3], normal(1.0))],
     [target([4, 3])],
     ["%y = fsdp.scale %w by -1.5 : tensor<4x3xf32>",
      mse("%y", "%t", [4, 3])])

case("broadcast",
     [("p", [3, 1], normal(1.0))],
     [features("x", [4, 2, 3, 4]), target([4, 2, 3, 4])],
     ["%b = fsdp.broadcast %p : tensor<3x1xf32> -> tensor<4x2x3x4xf32>",
      "%y = fsdp.mul %b, %x : tensor<4x2x3x4xf32>, tensor<4x2x3x4xf32> -> tensor<4x2x3x4xf32>",
      mse("%y", "%t", [4, 2, 3, 4])])

# ---------------------------------------------------------------- unary elementwise

for op, gen in (("relu", away_from_zero(0.2, 1.5)), ("gelu", normal(1.2)),
                ("silu", normal(1.5)), ("tanh", normal(1.0)), ("exp", normal(0.5))):
    case(op,
         [("w", [4, 3], gen)],
         [target([4, 3])],
         ["%%y = fsdp.%s %%w : tensor<4x3xf32>" % op,
          mse("%y", "%t", [4, 3])])

# ---------------------------------------------------------------- softmax, causal_mask

case("softmax_mid",
     [("w", [2, 4, 3], normal(1.0))],
     [target([2, 4, 3], 2.0)],
     ["%y = fsdp.softmax %w dim 1 : tensor<2x4x3xf32>",
      mse("%y", "%t", [2, 4, 3])])

case("softmax_last",
     [("w", [4, 5], normal(1.0))],
     [target([4, 5], 2.0)],
     ["%y = fsdp.softmax %w dim 1 : tensor<4x5xf32>",
      mse("%y", "%t", [4, 5])])

# [B, H, T, T] scores; picks: strictly lower-triangular (live) scores and two masked ones.
_T = 4
_live = [b * 2 * _T * _T + h * _T * _T + i * _T + j
         for b, h, i, j in ((0, 0, 1, 0), (0, 1, 2, 1), (1, 0, 3, 2), (1, 1, 3, 0),
                            (0, 0, 2, 2), (1, 1, 3, 3))]
_masked = [0 * 2 * _T * _T + 0 * _T * _T + 0 * _T + 3, 1 * 2 * _T * _T + 1 * _T * _T + 1 * _T + 2]
case("causal_mask_softmax",
     [("s", [2, 2, _T, _T], normal(1.0))],
     [target([2, 2, _T, _T], 2.0)],
     ["%m = fsdp.causal_mask %s : tensor<2x2x4x4xf32>",
      "%y = fsdp.softmax %m dim 3 : tensor<2x2x4x4xf32>",
      mse("%y", "%t", [2, 2, _T, _T])],
     picks={"s": _live + _masked})

# ---------------------------------------------------------------- normalisation

case("layer_norm",
     [("x", [2, 3, 6], normal(1.0)), ("g", [6], normal(0.3, 1.0)), ("b", [6], normal(0.5))],
     [target([2, 3, 6])],
     ["%y = fsdp.layer_norm %x, %g, %b : tensor<2x3x6xf32>, tensor<6xf32>, tensor<6xf32>",
      mse("%y", "%t", [2, 3, 6])])

case("rms_norm",
     [("x", [2, 3, 6], normal(1.0)), ("g", [6], normal(0.3, 1.0))],
     [target([2, 3, 6])],
     ["%y = fsdp.rms_norm %x, %g : tensor<2x3x6xf32>, tensor<6xf32>",
      mse("%y", "%t", [2, 3, 6])])

# ---------------------------------------------------------------- rotary embeddings

def rope_case(name, shape, attrs, **kwargs):
    """loss = mse(rope(x), t), its forward checked against ops.rope as well."""
    text = ("positions %d theta %r" % (kwargs["positions"], kwargs["theta"])
            + (" rotary_dim %d" % kwargs["rotary_dim"] if "rotary_dim" in kwargs else "")
            + attrs + (" inverse" if kwargs.get("inverse") else ""))
    if "scaling" in kwargs:
        factor, low, high, context = kwargs["scaling"]
        text = text.replace("SCALING", "llama3_scaling <factor = %r, "
                            "low_freq_factor = %r, high_freq_factor = %r, "
                            "original_max_positions = %d>" % (factor, low, high, context))

    def reference(params, inputs):
        y, _ = ops.rope(params["x"], **kwargs)
        return ops.mse(y, inputs[0])[0]
    case(name, [("x", shape, normal(1.0))], [target(shape, 2.0)],
         ["%%y = fsdp.rope %%x %s : %s" % (text, ty(shape)), mse("%y", "%t", shape)],
         reference=reference)


# [B, T, H, D], positions along T: every feature turns.
rope_case("rope", [2, 5, 3, 8], "", positions=1, theta=10000.0)
# Positions along the last but one dimension, 6 of 10 features turning, Llama 3's
# scaling with a frequency of each kind (kept, between the bounds, divided).
rope_case("rope_partial_scaled", [1, 3, 6, 10], " SCALING", positions=2, theta=500.0,
          rotary_dim=6, scaling=(4.0, 1.0, 4.0, 64))
rope_case("rope_inverse", [3, 7, 4], "", positions=1, theta=100.0, inverse=True)

# ---------------------------------------------------------------- attention

# fsdp.attention's tiled lowering and its FlashAttention-2 gradient, with blocks of keys
# that do not divide the key count (key_block 2 over 5 keys, 4 over 6).
case("attention_causal",
     [("q", [1, 2, 5, 3], normal(1.0)), ("k", [1, 2, 5, 3], normal(1.0)),
      ("v", [1, 2, 5, 3], normal(1.0))],
     [target([1, 2, 5, 3])],
     ["%o, %lse = fsdp.attention %q, %k, %v causal key_block 2 : tensor<1x2x5x3xf32>, "
      "tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32> -> tensor<1x2x5x3xf32>, tensor<1x2x5xf32>",
      mse("%o", "%t", [1, 2, 5, 3])])

# Grouped-query attention (4 query heads on 2 key heads), not causal, its own scale, more
# keys than queries.
case("attention_gqa",
     [("q", [2, 4, 3, 4], normal(1.0)), ("k", [2, 2, 6, 4], normal(1.0)),
      ("v", [2, 2, 6, 4], normal(1.0))],
     [target([2, 4, 3, 4])],
     ["%o, %lse = fsdp.attention %q, %k, %v scale 0.7 key_block 4 : tensor<2x4x3x4xf32>, "
      "tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32> -> tensor<2x4x3x4xf32>, tensor<2x4x3xf32>",
      mse("%o", "%t", [2, 4, 3, 4])])

# The log-sum-exp in the loss too: its gradient enters the scores' gradient.
case("attention_lse",
     [("q", [1, 2, 4, 3], normal(1.0)), ("k", [1, 1, 4, 3], normal(1.0)),
      ("v", [1, 1, 4, 3], normal(1.0))],
     [target([1, 2, 4, 3]), ("u", [1, 2, 4], "f32", "regression_target", normal(1.0))],
     ["%o, %lse = fsdp.attention %q, %k, %v causal key_block 3 : tensor<1x2x4x3xf32>, "
      "tensor<1x1x4x3xf32>, tensor<1x1x4x3xf32> -> tensor<1x2x4x3xf32>, tensor<1x2x4xf32>",
      mse("%o", "%t", [1, 2, 4, 3], "%l1"),
      mse("%lse", "%u", [1, 2, 4], "%l2"),
      "%l = fsdp.add %l1, %l2 : tensor<f32>, tensor<f32> -> tensor<f32>"])

# ---------------------------------------------------------------- embedding

# 7 rows, indices drawn from [0, 4): every used row repeats; rows 4..6 get no gradient.
case("embedding",
     [("e", [7, 3], normal(1.0))],
     [("ids", [4, 5], "i32", "tokens", integers(7, 4)), target([4, 5, 3])],
     ["%y = fsdp.embedding %e[%ids] : tensor<7x3xf32>, tensor<4x5xi32> -> tensor<4x5x3xf32>",
      mse("%y", "%t", [4, 5, 3])],
     picks={"e": [0, 4, 5, 7, 11, 15]})

# ---------------------------------------------------------------- layout

case("reshape",
     [("p", [4, 6], normal(1.0))],
     [features("x", [4, 2, 3]), target([4, 2, 3])],
     ["%r = fsdp.reshape %p : tensor<4x6xf32> -> tensor<4x2x3xf32>",
      "%y = fsdp.mul %r, %x : tensor<4x2x3xf32>, tensor<4x2x3xf32> -> tensor<4x2x3xf32>",
      mse("%y", "%t", [4, 2, 3])])

# Rows of a table (as GPT-2's learned positions), two overlapping column ranges of
# them (as its fused query, key and value, whose gradients add in the overlap), and a
# range of a batched activation's features. Picks include elements no slice reads
# (rows 0-1, column 5): their gradient must be exactly 0.


def slice_reference(params, inputs):
    a, _ = ops.slice(params["w"], 0, 2, 4)
    y = ops.slice(a, 1, 0, 4)[0] * ops.slice(a, 1, 1, 4)[0]
    s, _ = ops.slice(inputs[0] * y, 2, 1, 2)
    return ops.mse(s, inputs[1])[0]


case("slice",
     [("w", [6, 6], normal(1.0))],
     [features("x", [3, 4, 4]), target([3, 4, 2])],
     ["%a = fsdp.slice %w dim 0 offset 2 size 4 : tensor<6x6xf32> -> tensor<4x6xf32>",
      "%b = fsdp.slice %a dim 1 offset 0 size 4 : tensor<4x6xf32> -> tensor<4x4xf32>",
      "%c = fsdp.slice %a dim 1 offset 1 size 4 : tensor<4x6xf32> -> tensor<4x4xf32>",
      "%y = fsdp.mul %b, %c : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>",
      "%z = fsdp.mul %x, %y : tensor<3x4x4xf32>, tensor<4x4xf32> -> tensor<3x4x4xf32>",
      "%s = fsdp.slice %z dim 2 offset 1 size 2 : tensor<3x4x4xf32> -> tensor<3x4x2xf32>",
      mse("%s", "%t", [3, 4, 2])],
     picks={"w": [0, 7, 12, 14, 20, 25, 29, 35]}, reference=slice_reference)

case("transpose",
     [("p", [3, 4, 2], normal(1.0))],
     [features("x", [4, 2, 3]), target([4, 2, 3])],
     ["%r = fsdp.transpose %p [1, 2, 0] : tensor<3x4x2xf32> -> tensor<4x2x3xf32>",
      "%y = fsdp.mul %r, %x : tensor<4x2x3xf32>, tensor<4x2x3xf32> -> tensor<4x2x3xf32>",
      mse("%y", "%t", [4, 2, 3])])

# ---------------------------------------------------------------- reductions

for op, in_shape, dims, out_shape in (
        ("reduce_sum", [3, 4, 5], [0, 2], [4]),
        ("reduce_sum", [4, 3, 5], [2], [4, 3]),
        ("reduce_mean", [4, 3, 5], [1], [4, 5]),
        ("reduce_mean", [4, 2, 2, 3], [1, 3], [4, 2]),
        ("reduce_mean", [3, 4, 5], [0, 2], [4])):
    name = "%s_%s" % (op, "".join(str(d) for d in dims))
    case(name,
         [("p", in_shape, normal(1.0))],
         [features("x", out_shape), target(out_shape)],
         ["%%r = fsdp.%s %%p dims [%s] : %s -> %s"
          % (op, ", ".join(str(d) for d in dims), ty(in_shape), ty(out_shape)),
          "%%y = fsdp.mul %%r, %%x : %s, %s -> %s" % (ty(out_shape), ty(out_shape),
                                                    ty(out_shape)),
          mse("%y", "%t", out_shape)])

# Reductions to rank 0 inside the loss: l = mse(p, t) + 0.05 * sum(p * p) - mean(p).
case("reduce_all_rank0",
     [("p", [4, 3], normal(1.0))],
     [target([4, 3])],
     [mse("%p", "%t", [4, 3], "%l1"),
      "%sq = fsdp.mul %p, %p : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>",
      "%s = fsdp.reduce_sum %sq dims [0, 1] : tensor<4x3xf32> -> tensor<f32>",
      "%s2 = fsdp.scale %s by 0.05 : tensor<f32>",
      "%m = fsdp.reduce_mean %p dims [0, 1] : tensor<4x3xf32> -> tensor<f32>",
      "%l2 = fsdp.add %l1, %s2 : tensor<f32>, tensor<f32> -> tensor<f32>",
      "%l = fsdp.sub %l2, %m : tensor<f32>, tensor<f32> -> tensor<f32>"])

# ---------------------------------------------------------------- losses

case("cross_entropy",
     [("z", [2, 3, 5], normal(1.0))],
     [("y", [2, 3], "i32", "classes", integers(5))],
     ["%l = fsdp.cross_entropy %z, %y : tensor<2x3x5xf32>, tensor<2x3xi32> -> tensor<f32>"])

# Prediction side (p against the input target) and target side (q against an input).
case("mse",
     [("p", [4, 3], normal(1.0)), ("q", [4, 3], normal(1.0))],
     [features("x", [4, 3]), target([4, 3])],
     [mse("%p", "%t", [4, 3], "%l1"),
      mse("%x", "%q", [4, 3], "%l2"),
      "%l = fsdp.add %l1, %l2 : tensor<f32>, tensor<f32> -> tensor<f32>"])

# ---------------------------------------------------------------- tied and fan-out

# GPT-style weight tying: the table embeds the tokens and, read by a second fsdp.use,
# is the output projection (transpose_rhs); plus an mse on the embeddings.
case("tied_embedding_head",
     [("e", [6, 4], normal(1.0))],
     [("ids", [2, 3], "i32", "tokens", integers(6, 4)),
      ("y", [2, 3], "i32", "classes", integers(6)), target([2, 3, 4])],
     ["%e2 = fsdp.use @e : tensor<6x4xf32>",
      "%h = fsdp.embedding %e[%ids] : tensor<6x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>",
      "%z = fsdp.matmul %h, %e2 transpose_rhs : tensor<2x3x4xf32>, tensor<6x4xf32> -> tensor<2x3x6xf32>",
      "%l1 = fsdp.cross_entropy %z, %y : tensor<2x3x6xf32>, tensor<2x3xi32> -> tensor<f32>",
      mse("%h", "%t", [2, 3, 4], "%l2"),
      "%l = fsdp.add %l1, %l2 : tensor<f32>, tensor<f32> -> tensor<f32>"],
     picks={"e": [0, 5, 6, 9, 14, 17, 20, 23]})

# One parameter value as both operands of one op, and used again: y = w * w + w.
case("tied_same_value",
     [("w", [4, 3], normal(1.0))],
     [target([4, 3])],
     ["%sq = fsdp.mul %w, %w : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>",
      "%y = fsdp.add %sq, %w : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>",
      mse("%y", "%t", [4, 3])])

# Fan-out: h feeds tanh, mul and add: y = h * tanh(h) + h.
case("fanout",
     [("w", [3, 5], normal(0.6)), ("b", [5], normal(0.5))],
     [features("x", [4, 3]), target([4, 5])],
     ["%m = fsdp.matmul %x, %w : tensor<4x3xf32>, tensor<3x5xf32> -> tensor<4x5xf32>",
      "%h = fsdp.add %m, %b : tensor<4x5xf32>, tensor<5xf32> -> tensor<4x5xf32>",
      "%a = fsdp.tanh %h : tensor<4x5xf32>",
      "%g = fsdp.mul %h, %a : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>",
      "%y = fsdp.add %g, %h : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>",
      mse("%y", "%t", [4, 5])])

# ---------------------------------------------------------------- composite

# One pre-norm causal attention block as in examples/gpt.mlir (2 heads of 2, T = 3).
case("attention_block",
     [("ln.g", [4], normal(0.2, 1.0)), ("ln.b", [4], normal(0.2)),
      ("wq", [4, 4], normal(0.7)), ("wk", [4, 4], normal(0.7)),
      ("wv", [4, 4], normal(0.7)), ("wo", [4, 4], normal(0.7))],
     [features("x", [2, 3, 4]), target([2, 3, 4])],
     ["%a = fsdp.layer_norm %x, %ln.g, %ln.b : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>",
      "%q = fsdp.matmul %a, %wq : tensor<2x3x4xf32>, tensor<4x4xf32> -> tensor<2x3x4xf32>",
      "%q4 = fsdp.reshape %q : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>",
      "%qh = fsdp.transpose %q4 [0, 2, 1, 3] : tensor<2x3x2x2xf32> -> tensor<2x2x3x2xf32>",
      "%k = fsdp.matmul %a, %wk : tensor<2x3x4xf32>, tensor<4x4xf32> -> tensor<2x3x4xf32>",
      "%k4 = fsdp.reshape %k : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>",
      "%kh = fsdp.transpose %k4 [0, 2, 1, 3] : tensor<2x3x2x2xf32> -> tensor<2x2x3x2xf32>",
      "%v = fsdp.matmul %a, %wv : tensor<2x3x4xf32>, tensor<4x4xf32> -> tensor<2x3x4xf32>",
      "%v4 = fsdp.reshape %v : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>",
      "%vh = fsdp.transpose %v4 [0, 2, 1, 3] : tensor<2x3x2x2xf32> -> tensor<2x2x3x2xf32>",
      "%s = fsdp.batch_matmul %qh, %kh transpose_rhs : tensor<2x2x3x2xf32>, tensor<2x2x3x2xf32> -> tensor<2x2x3x3xf32>",
      "%ss = fsdp.scale %s by 0.7071 : tensor<2x2x3x3xf32>",
      "%sm = fsdp.causal_mask %ss : tensor<2x2x3x3xf32>",
      "%p = fsdp.softmax %sm dim 3 : tensor<2x2x3x3xf32>",
      "%o = fsdp.batch_matmul %p, %vh : tensor<2x2x3x3xf32>, tensor<2x2x3x2xf32> -> tensor<2x2x3x2xf32>",
      "%ot = fsdp.transpose %o [0, 2, 1, 3] : tensor<2x2x3x2xf32> -> tensor<2x3x2x2xf32>",
      "%oc = fsdp.reshape %ot : tensor<2x3x2x2xf32> -> tensor<2x3x4xf32>",
      "%pr = fsdp.matmul %oc, %wo : tensor<2x3x4xf32>, tensor<4x4xf32> -> tensor<2x3x4xf32>",
      "%y = fsdp.add %x, %pr : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>",
      mse("%y", "%t", [2, 3, 4])])


# ---------------------------------------------------------------- running a case

class CaseError(Exception):
    pass


def run(command, timeout=120):
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CaseError("timed out: %s" % " ".join(command))
    except OSError as e:
        raise CaseError("cannot run %s: %s" % (command[0], e))
    if result.returncode != 0:
        raise CaseError("exit %d: %s\n%s%s" % (result.returncode, " ".join(command),
                                               result.stdout, result.stderr))
    return result.stdout


def seeded(name, *salt):
    return np.random.default_rng([zlib.crc32(name.encode())] + list(salt))


def step1_loss(trainer, data, params_path, log_path):
    run([trainer, "--steps", "1", "--lr", "1", "--data", data, "--init-from", params_path,
         "--log-json", log_path, "--log-every", "1000"])
    return logged_step1_loss(log_path)


def logged_step1_loss(log_path):
    """The loss of the one step a --log-json file records."""
    with open(log_path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    records = [r for r in records if "step" in r]
    if len(records) != 1 or records[0]["step"] != 1:
        raise CaseError("%s: expected one step-1 record, got %r" % (log_path, records))
    return float(records[0]["loss"])


class CaseProbe:
    """What the checks of one case read: the case, its files (path(name) in its
    directory), its trainer and data file, P0 (flat float32) and the analytic gradient."""

    def __init__(self, c, path, trainer, data, flat0):
        self.case, self.path, self.trainer, self.data, self.flat0 = c, path, trainer, data, flat0
        self.grad = None


class CaseTally:
    """What the checks of one case found so far: whether they all passed, the worst
    relative error (of elements with |gradient| >= MIN_GRAD) and |diff| / tol, the number
    of checks and the lines to print."""

    def __init__(self, verbose):
        self.verbose = verbose
        self.ok, self.worst, self.worst_ratio, self.checks, self.lines = True, 0.0, 0.0, 0, []


def compile_case(c, fsdpc, p):
    """Writes the case's model and compiles it; returns the trainer and its manifest."""
    with open(p("model.mlir"), "w") as f:
        f.write(c.mlir)
    trainer = p("trainer")
    run([*shlex.split(fsdpc), p("model.mlir"), "--grid=1", "-o", trainer])
    manifest = json.loads(run([trainer, "--print-manifest"]))
    return trainer, manifest


def check_manifest(c, manifest):
    # The manifest must list our parameters and inputs, in order, with the roles we mean.
    got = [(q["name"], list(q["shape"])) for q in manifest["params"]]
    want = [(n, list(s)) for n, s, _ in c.params]
    if got != want:
        raise CaseError("manifest params %r, expected %r" % (got, want))
    got = [(i["role"], list(i["shape"]), i.get("bound")) for i in manifest["inputs"]]
    want = [(r, list(s), g.bound) for _, s, _, r, g in c.inputs]
    if got != want:
        raise CaseError("manifest inputs %r, expected %r" % (got, want))
    opt = manifest["optimizer"]
    if (opt["kind"], opt["lr"], opt["momentum"], opt["weight_decay"],
            manifest["clip_grad_norm"]) != ("sgd", 1, 0, 0, 0):
        raise CaseError("optimizer is not plain SGD with lr 1: %r" % (opt,))


def write_case_data(c, p, batch):
    """Returns the data file and its tensors [(dtype, values)]."""
    # One batch of data: sample b of the file is batch element b of step 1.
    tensors = []
    for k, (name, shape, dtype, _role, gen) in enumerate(c.inputs):
        values = gen(seeded(c.name, 1, k), shape)
        tensors.append((dtype, np.asarray(values)))
    data = p("data.bin")
    datafile.write(data, tensors)
    assert tensors[0][1].shape[0] == batch
    return data, tensors


def write_p0(c, p):
    """Returns P0, per parameter and flat."""
    # P0, float32 in manifest order (flat: element j of the concatenated parameters).
    p0 = [np.asarray(gen(seeded(c.name, 2, k), shape), dtype=np.float32)
          for k, (_, shape, gen) in enumerate(c.params)]
    flat0 = np.concatenate([a.ravel() for a in p0])
    write_params(p("p0.safetensors"), c.params, flat0)
    return p0, flat0


def analytic_gradient(probe):
    c, p, flat0 = probe.case, probe.path, probe.flat0
    # Analytic gradient: one SGD step with lr 1.
    run([probe.trainer, "--steps", "1", "--lr", "1", "--data", probe.data, "--init-from",
         p("p0.safetensors"), "--export", p("p1.safetensors"), "--log-json", p("p1.json"),
         "--log-every", "1000"])
    try:
        flat1 = read_params(p("p1.safetensors"), c.params, dtype=np.float32)
    except ValueError as e:
        raise CaseError("--export: %s" % e)
    return flat0.astype(np.float64) - flat1.astype(np.float64)


def check_reference_loss(probe, p0, tensors, tally):
    """The step-1 loss of the analytic step against the case's float64 reference."""
    c = probe.case
    loss = logged_step1_loss(probe.path("p1.json"))
    want = c.reference({n: a.astype(np.float64) for (n, _, _), a in zip(c.params, p0)},
                       [values for _, values in tensors])
    tally.checks += 1
    within = abs(loss - want) <= REF_RTOL * abs(want)
    tally.ok = tally.ok and within
    if not within or tally.verbose:
        tally.lines.append("  step-1 loss %.9g, reference %.9g: relative %.2g %s %g"
                           % (loss, want, abs(loss - want) / abs(want), "<=" if within else ">",
                              REF_RTOL))


def numerical_gradient(probe, pname, i, j):
    """(L+ - L-) / (x_j+ - x_j-) of element j of the flat parameters, element i of pname."""
    c, p, flat0 = probe.case, probe.path, probe.flat0
    plus, minus = flat0.copy(), flat0.copy()
    plus[j] = np.float32(np.float64(flat0[j]) + H)
    minus[j] = np.float32(np.float64(flat0[j]) - H)
    tag = "%s_%d" % (pname, i)
    write_params(p(tag + "+.safetensors"), c.params, plus)
    write_params(p(tag + "-.safetensors"), c.params, minus)
    lp = step1_loss(probe.trainer, probe.data, p(tag + "+.safetensors"), p(tag + "+.json"))
    lm = step1_loss(probe.trainer, probe.data, p(tag + "-.safetensors"), p(tag + "-.json"))
    return (lp - lm) / (np.float64(plus[j]) - np.float64(minus[j]))


def tally_element(tally, pname, shape, i, num, ana):
    """Compares the numerical and analytic gradient of element i of pname."""
    scale = max(abs(num), abs(ana))
    err = abs(num - ana)
    tol = RTOL * scale + ATOL
    rel = err / scale if scale > 0 else 0.0
    if scale >= MIN_GRAD:
        tally.worst = max(tally.worst, rel)
    tally.worst_ratio = max(tally.worst_ratio, err / tol)
    tally.checks += 1
    if err > tol:
        tally.ok = False
    if err > tol or tally.verbose:
        tally.lines.append("  %s[%s]: numerical %.6g analytic %.6g |diff| %.3g %s tol %.3g"
                           % (pname, ",".join(str(v) for v in np.unravel_index(i, shape)),
                              num, ana, err, ">" if err > tol else "<=", tol))


def check_param_gradient(probe, tally, k, pname, shape, size, offset):
    """Checks the picked elements of parameter k, pname, at offset in the flat parameters."""
    c = probe.case
    if pname in c.picks:
        picks = list(c.picks[pname])
    else:
        n = min(CHECKS_PER_PARAM, size)
        picks = sorted(seeded(c.name, 3, k).choice(size, n, replace=False).tolist())
    largest = 0.0
    for i in picks:
        j = offset + i
        num = numerical_gradient(probe, pname, i, j)
        ana = probe.grad[j]
        tally_element(tally, pname, shape, i, num, ana)
        largest = max(largest, abs(ana))
    if largest < MIN_GRAD:
        tally.ok = False
        tally.lines.append("  %s: largest checked |gradient| %.3g < %.3g: not discriminating"
                           % (pname, largest, MIN_GRAD))


def check_case(c, fsdpc, work, mutate=None, verbose=False):
    """Returns (ok, (worst relative error, worst |diff| / tol), message lines, number of
    checks, seconds). The relative error is over elements with |gradient| >= MIN_GRAD.
    `mutate` multiplies the analytic gradient (a self-test: every case must fail)."""
    start = time.time()
    d = os.path.join(work, c.name)
    os.makedirs(d, exist_ok=True)
    p = lambda name: os.path.join(d, name)
    trainer, manifest = compile_case(c, fsdpc, p)
    check_manifest(c, manifest)
    batch = manifest["batch"]
    data, tensors = write_case_data(c, p, batch)
    p0, flat0 = write_p0(c, p)
    probe = CaseProbe(c, p, trainer, data, flat0)
    probe.grad = analytic_gradient(probe)
    if mutate is not None:
        probe.grad *= mutate

    tally = CaseTally(verbose)
    if c.reference is not None:
        check_reference_loss(probe, p0, tensors, tally)
    offset = 0
    for k, ((pname, shape, _), values) in enumerate(zip(c.params, p0)):
        size = values.size
        check_param_gradient(probe, tally, k, pname, shape, size, offset)
        offset += size
    seconds = time.time() - start
    return tally.ok, (tally.worst, tally.worst_ratio), tally.lines, tally.checks, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--verbose", action="store_true", help="print every checked element")
    parser.add_argument("--mutate", type=float,
                        help="self-test: multiply every analytic gradient by this factor "
                             "(every case must then FAIL)")
    args = parser.parse_args()

    names = [c.name for c in CASES]
    assert len(set(names)) == len(names), "duplicate case names"
    if args.list:
        print("\n".join(names))
        return 0
    cases = CASES
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in names]
        if unknown:
            sys.exit("gradcheck: unknown case(s) %s; see --list" % ", ".join(unknown))
        cases = [c for c in CASES if c.name in wanted]
    os.makedirs(args.work, exist_ok=True)

    start = time.time()
    failed, total_checks = [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(check_case, c, args.fsdpc, args.work, args.mutate,
                               args.verbose) for c in cases]
        for c, future in zip(cases, futures):
            try:
                ok, worst, lines, checks, _secs = future.result()
            except CaseError as e:
                ok, worst, lines, checks = False, (float("nan"),) * 2, ["  " + str(e)], 0
            total_checks += checks
            failed += [] if ok else [c.name]
            print("%s %s %.2e (%d checks, worst |diff|/tol %.2f)"
                  % ("PASS" if ok else "FAIL", c.name, worst[0], checks, worst[1]))
            if lines:
                print("\n".join(lines))
            sys.stdout.flush()
    print("gradcheck: %d/%d cases passed, %d gradient elements checked, %.1f s"
          % (len(cases) - len(failed), len(cases), total_checks, time.time() - start))
    if failed:
        print("FAILED: %s" % " ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
