#!/usr/bin/env python3
"""fsdp.attention through the real compiler and trainer, against NumPy float64 and
against the explicit form (batch_matmul, causal_mask, softmax, batch_matmul).

For each case a model whose loss is mse(attention(q, k, v), t) (+ mse(lse, u) when the
case says so), with q, k, v its parameters, is compiled with fsdpc --grid=1 and trained
one SGD step with lr 1 from our own parameters P0 (--init-from), so that the loss of
the step is the forward pass and P0 - P1 is the gradient. Both are compared with the
same computation in float64 written the textbook way (scores, mask, softmax, weighted
sum; the softmax's backward), which shares nothing with the tiled lowering but the
definition. The bound: every value computed in float32 from O(1) data through sums of
at most S * D terms is within a few hundred units of roundoff (2^-24) of the exact
value, relative to the tensor's largest magnitude; TOL = 2e-5 leaves a factor of 3 of
margin over the worst case measured (6.4e-6), and a 0.1% error in one term of the
gradient (the softmax's row sum, tried by hand) already lands at 2.8e-4 to 5e-3.

The windowed cases mask keys W or more positions before their query as well (a
sliding window); the capped ones turn each scaled score s into C tanh(s / C) first. With --explicit, MHA cases without a window are also compiled in the explicit form and must agree with
the attention model within the same bound, and the compiled plans' activation peaks
(fsdpc --report) are printed for both at the case's length and at 4 times it: the
attention's grows linearly in T (blocks of keys), the explicit one's quadratically.

    attention_check.py --fsdpc FSDPC --work DIR [--explicit]
"""

import argparse
import json
import os
import shlex
import sys

import numpy as np

from gradcheck import datafile, module, mse, run, seeded, ty
from params_file import read_params, write_params  # test/reference, on the path by gradcheck

TOL = 2e-5
PLAN_SGD = "#fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 1.0>>"

# name, batch, query heads, key heads, T, S, D, causal, scale (None: 1/sqrt(D)),
# key_block, whether the loss also reads the log-sum-exp
CASES = [
    ("causal_mha", 2, 2, 2, 9, 9, 4, True, None, 4, False),
    ("causal_gqa", 1, 4, 2, 7, 7, 3, True, None, 3, False),
    ("cross_gqa", 2, 6, 3, 5, 11, 4, False, 0.6, 4, False),
    ("causal_lse", 1, 2, 1, 6, 6, 5, True, None, 4, True),
    ("one_block", 1, 2, 2, 8, 8, 4, True, None, 512, False),
    ("window_gqa", 1, 4, 2, 19, 19, 4, True, None, 4, False),
    ("window_lse", 2, 2, 2, 13, 13, 3, True, None, 5, True),
    ("window_wide", 1, 2, 1, 10, 10, 4, True, None, 4, False),
    ("capped_gqa", 1, 4, 2, 9, 9, 4, True, None, 4, False),
    ("capped_window_lse", 2, 2, 1, 11, 11, 3, True, 0.8, 4, True),
]
# The sliding window of the windowed cases (query t sees keys t - W < s <= t): shorter
# than a block of queries, longer than one, and reaching back past key 0 from every block.
WINDOWS = {"window_gqa": 6, "window_lse": 3, "window_wide": 8, "capped_window_lse": 4}
# The soft cap C of the capped cases (each scaled score s becomes C tanh(s / C)): scores
# of N(0, 1) data are of the order of 1, well into tanh's bend.
SOFTCAPS = {"capped_gqa": 1.5, "capped_window_lse": 1.0}


def attention_model(c):
    name, b, hq, hkv, t, s, d, causal, scale, block, with_lse = c
    q, k = [b, hq, t, d], [b, hkv, s, d]
    window = WINDOWS.get(name)
    attrs = (" causal" if causal else "") + ("" if window is None else " window %d" % window) \
        + ("" if scale is None else " scale %r" % scale) \
        + ("" if name not in SOFTCAPS else " softcap %r" % SOFTCAPS[name]) \
        + " key_block %d" % block
    body = ["%%o, %%lse = fsdp.attention %%q, %%k, %%v%s : %s, %s, %s -> %s, %s"
            % (attrs, ty(q), ty(k), ty(k), ty(q), ty([b, hq, t]))]
    args = [("t", q, "f32")]
    if with_lse:
        args.append(("u", [b, hq, t], "f32"))
        body += [mse("%o", "%t", q, "%l1"), mse("%lse", "%u", [b, hq, t], "%l2"),
                 "%l = fsdp.add %l1, %l2 : tensor<f32>, tensor<f32> -> tensor<f32>"]
    else:
        body.append(mse("%o", "%t", q))
    params = [("q", q, "#fsdp.normal<std = 1.0>"), ("k", k, "#fsdp.normal<std = 1.0>"),
              ("v", k, "#fsdp.normal<std = 1.0>")]
    return module(params, args, body)


def explicit_model(c):
    """The same loss with the scores materialised (multi-head only)."""
    name, b, hq, hkv, t, s, d, causal, scale, block, with_lse = c
    assert hq == hkv and not with_lse
    q, k, sc = [b, hq, t, d], [b, hkv, s, d], [b, hq, t, s]
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    body = ["%%s = fsdp.batch_matmul %%q, %%k transpose_rhs : %s, %s -> %s" % (ty(q), ty(k), ty(sc)),
            "%%ss = fsdp.scale %%s by %r : %s" % (float(scale), ty(sc))]
    last = "%ss"
    if causal:
        body.append("%%m = fsdp.causal_mask %%ss : %s" % ty(sc))
        last = "%m"
    body += ["%%p = fsdp.softmax %s dim 3 : %s" % (last, ty(sc)),
             "%%o = fsdp.batch_matmul %%p, %%v : %s, %s -> %s" % (ty(sc), ty(k), ty(q)),
             mse("%o", "%t", q)]
    params = [("q", q, "#fsdp.normal<std = 1.0>"), ("k", k, "#fsdp.normal<std = 1.0>"),
              ("v", k, "#fsdp.normal<std = 1.0>")]
    return module(params, [("t", q, "f32")], body)


def reference(c, q, k, v, t, u):
    """Loss and gradients in float64, the textbook way."""
    name, b, hq, hkv, tq, s, d, causal, scale, block, with_lse = c
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    g = hq // hkv
    kk, vv = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)  # head h reads h // g
    scores = scale * q @ kk.transpose(0, 1, 3, 2)
    cap = SOFTCAPS.get(name)
    if cap is not None:
        scores = cap * np.tanh(scores / cap)
        # d(cap tanh(x / cap)) / dx, for the chain rule below.
        cap_slope = 1.0 - np.tanh(scale * q @ kk.transpose(0, 1, 3, 2) / cap) ** 2
    if causal:
        hidden = np.triu(np.ones((tq, s), bool), 1)
        if name in WINDOWS:
            hidden |= np.tril(np.ones((tq, s), bool), -WINDOWS[name])
        scores = np.where(hidden, -np.inf, scores)
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - top)
    lse = (top + np.log(e.sum(axis=-1, keepdims=True)))[..., 0]
    p = e / e.sum(axis=-1, keepdims=True)
    o = p @ vv
    loss = np.mean((o - t) ** 2)
    do = 2 * (o - t) / o.size
    dlse = np.zeros_like(lse)
    if with_lse:
        loss += np.mean((lse - u) ** 2)
        dlse = 2 * (lse - u) / lse.size
    dvv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ vv.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) + p * dlse[..., None]
    if cap is not None:
        ds = ds * cap_slope
    dq = scale * ds @ kk
    dkk = scale * ds.transpose(0, 1, 3, 2) @ q
    fold = lambda x: x.reshape(b, hkv, g, s, d).sum(axis=2)  # noqa: E731
    return loss, [dq, fold(dkk), fold(dvv)]


def train_one_step(fsdpc, work, tag, text, p0, tensors):
    """(loss of step 1, P0 - P1) of the model `text` from parameters p0 (q, k, v)."""
    path = lambda n: os.path.join(work, "%s.%s" % (tag, n))  # noqa: E731
    with open(path("mlir"), "w") as f:
        f.write(text.replace("#fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 1.0>>",
                             PLAN_SGD))
    run([*shlex.split(fsdpc), path("mlir"), "--grid=1", "-o", path("trainer")])
    datafile.write(path("data"), tensors)
    params = [(name, a.shape) for name, a in zip(("q", "k", "v"), p0)]  # manifest order
    flat0 = np.concatenate([a.astype(np.float32).ravel() for a in p0])
    write_params(path("p0.safetensors"), params, flat0)
    run([path("trainer"), "--steps", "1", "--lr", "1", "--data", path("data"), "--init-from",
         path("p0.safetensors"), "--export", path("p1.safetensors"), "--log-json", path("log")])
    with open(path("log")) as f:
        loss = [json.loads(line)["loss"] for line in f if '"step"' in line][0]
    flat1 = read_params(path("p1.safetensors"), params)
    grad, out, offset = flat0.astype(np.float64) - flat1, [], 0
    for a in p0:
        out.append(grad[offset:offset + a.size].reshape(a.shape))
        offset += a.size
    return loss, out


def compare(label, loss, grads, ref_loss, ref_grads):
    """(worst error relative to each tensor's largest magnitude, line)."""
    errors = [abs(loss - ref_loss) / abs(ref_loss)]
    for got, want in zip(grads, ref_grads):
        errors.append(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    worst = max(errors)
    verdict = "PASS" if worst <= TOL else "FAIL"
    return worst, "%s: loss %.7g (reference %.7g), worst relative error %.2e (loss, dq, dk, dv: " \
        "%s): %s" % (label, loss, ref_loss, worst, ", ".join("%.1e" % e for e in errors), verdict)


def activation_bytes(fsdpc, work, tag, text):
    path = os.path.join(work, tag + ".report.mlir")
    with open(path, "w") as f:
        f.write(text)
    report = json.loads(run([*shlex.split(fsdpc), path, "--grid=1", "--report=json"]))
    return report["per_rank_bytes"]["arena"]["activation_bytes"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--explicit", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failures = 0
    for c in CASES:
        name, b, hq, hkv, t, s, d, causal, scale, block, with_lse = c
        rng = seeded(name)
        q = rng.standard_normal((b, hq, t, d)).astype(np.float32)
        k = rng.standard_normal((b, hkv, s, d)).astype(np.float32)
        v = rng.standard_normal((b, hkv, s, d)).astype(np.float32)
        target = rng.standard_normal((b, hq, t, d)).astype(np.float32)
        u = rng.standard_normal((b, hq, t)).astype(np.float32)
        tensors = [("f32", target)] + ([("f32", u)] if with_lse else [])
        ref_loss, ref_grads = reference(c, *(x.astype(np.float64) for x in (q, k, v, target, u)))
        loss, grads = train_one_step(args.fsdpc, args.work, name, attention_model(c),
                                     [q, k, v], tensors)
        worst, line = compare(name, loss, grads, ref_loss, ref_grads)
        print(line, flush=True)
        failures += worst > TOL
        if args.explicit and hq == hkv and not with_lse and name not in WINDOWS \
                and name not in SOFTCAPS:
            loss2, grads2 = train_one_step(args.fsdpc, args.work, name + "-explicit",
                                           explicit_model(c), [q, k, v], tensors)
            worst2, line2 = compare(name + " explicit form", loss2, grads2, loss, grads)
            print(line2, flush=True)
            failures += worst2 > TOL
            long = (name, b, hq, hkv, 4 * t, 4 * s, d, causal, scale, block, with_lse)
            sizes = [activation_bytes(args.fsdpc, args.work, "%s-%s-%d" % (name, form, n),
                                      build(cc))
                     for cc, n in ((c, t), (long, 4 * t))
                     for form, build in (("attention", attention_model),
                                         ("explicit", explicit_model))]
            print("%s planned activations, T = %d -> %d: attention %d -> %d B (x%.1f), "
                  "explicit %d -> %d B (x%.1f)"
                  % (name, t, 4 * t, sizes[0], sizes[2], sizes[2] / sizes[0], sizes[1], sizes[3],
                     sizes[3] / sizes[1]), flush=True)
    if failures:
        print("FAIL: %d comparisons" % failures)
        sys.exit(1)
    print("PASS: %d attention cases" % len(CASES))


if __name__ == "__main__":
    main()
