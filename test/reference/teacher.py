"""Teacher-forced comparison of a trainer's --trace-state with the float64 reference.

A float32 trajectory of AdamW drifts away from a float64 one (a ReLU flips, AdamW moves
an element whose gradient is nearly zero by about lr), so comparing two runs of 20 steps
checks the machine as much as the trainer. Instead, every step k is checked from the
trainer's own state after step k-1 (docs/Runtime.md, --trace-state), with bounds that
follow from float32 arithmetic, so a wrong step fails where it happens on any machine:

- loss: the reference loss of step k's batch from the trainer's parameters, relative
  error at most loss_rtol (LOSS_RTOL for the MLP and GPT; each model's own from its
  longest chain of roundings and its depth, see "Bounds" below);
- gradients: per parameter, |g - g_ref|_2 <= grad_rtol |g_ref|_2. A ReLU input within
  float32 rounding error of 0 may fall on either side of the kink, and its slope (0 or 1)
  changes a whole sample's gradient: when the check fails, the reference takes, at each
  such input, the slope that brings it closest to the trainer (fit_relu_slopes), and the
  bound must then hold;
- clip coefficient (with clip_grad_norm): the one the trainer applied, read back from its
  optimizer state, against min(1, max_norm / (|g| + 1e-6)) of its own gradient, relative
  error at most gamma(N) / 2 + gamma(4) (the square root of a float32 sum of N squares);
- optimizer state and parameters: elementwise, the optimizer's formula applied in float64
  to the trainer's values of step k-1 and its gradient (the parameters: to its new state)
  must be within ELEMENT_ULPS units of float32 roundoff of the magnitudes of the terms;
- frozen parameters (a Llama's `freeze` field): unchanged, bit for bit. The trace holds
  them with the parameters, not with the gradients and optimizer state.

bf16 mixed precision (--param-dtype bf16, docs/MixedPrecision.md): the reference rounds
where the compiled step does (precision.py), each rank on its rows, and reduces as the
plan says; the loss and gradient bounds change (check_bf16_grads, README.md), the clip and
optimizer checks do not (they start from the trainer's own f32 gradient).

    python3 teacher.py --model MODEL --data FILE --trace FILE --log FILE [--lr X]
                       [--optimizer JSON] [--param-dtype f32|bf16] [--reduce-dtype f32|bf16]
                       [--grid N|RxS] [--strategy S]

MODEL (models.get): mlp, gpt (examples/), odd-sizes (test/e2e/Inputs/odd-sizes.mlir), or
the Llama examples/generate_llama.py writes, named by its flags (models.py says which
are required):

    llama:layers=2,dim=64,heads=4,kv_heads=2,ffn=96,vocab=97,seq=16,batch=4,attention=flash,key_block=8
    llama:layers=2,dim=64,heads=4,kv_heads=2,ffn=96,vocab=97,seq=16,batch=4,attention=explicit,freeze=model.embed_tokens.weight

The plan's dtypes and grid are not part of the name: a file written with
`generate_llama.py $(python3 models.py --generate-llama-flags NAME) --grid 2
--param-dtype bf16 --reduce-dtype f32` is checked with `--model NAME --param-dtype bf16
--reduce-dtype f32 --grid 2` (and `make_data.py --model NAME` writes its data). Its
parameters may start from any values (--init-from): the reference reads them from the
trace.
"""
import argparse
import collections
import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import datafile  # noqa: E402
import models  # noqa: E402
import precision  # noqa: E402
from precision import EXACT, U_BF16  # noqa: E402

U = 2.0 ** -24  # float32 unit roundoff (round to nearest)


def gamma(n):
    """Higham's gamma_n = n u / (1 - n u): the relative error bound of n float32 roundings,
    e.g. of a sum of n terms relative to the sum of their magnitudes."""
    if n * U >= 1.0:
        raise ValueError("gamma(%d): n u >= 1, no float32 bound" % n)
    return n * U / (1.0 - n * U)


# Bounds. A float32 dot product of length n is within gamma(n) of the exact one relative
# to the sum of the magnitudes of its terms, and so is every other float32 sum (a norm's
# statistics, a softmax's denominator); a chain of such reductions adds their errors
# (first order), so it is within gamma of the total number of roundings it chains. A
# model is a chain of stages (a layer of the MLP; a residual block, or the head: final
# norm, LM head and cross-entropy, of the transformers), and the error of each stage's
# output, relative to the magnitudes of its terms, is at most gamma(n) with n the
# roundings of the longest path through one stage (the model's `bounds`: `reduction`,
# models.py counts them; the MLP's 784 is one product, fc1's; GPT's blocks chain 656,
# kept at the MLP's 784; the Llama's block 5 C + F + 2 D + 2 T, the head 2 C + V, the
# weight gradients B T rows: the largest of these). The loss composes the stages with
# Lipschitz-1 maps (ReLU, residual adds, norms of O(1) inputs, log-softmax, mean) and a
# gradient passes through every stage forward and backward, so both errors grow with the
# number of stages (`depth`), linearly: per stage, 2/3 gamma(n) of the loss (on a loss of
# order 1) and 8/3 gamma(n) of a gradient (normwise: cancellation within a tensor raises
# it). These are the constants the MLP (3 layers) and GPT (2 blocks and the head) have
# always been checked with: 2 gamma(784) = 9.3e-5 and 8 gamma(784) = 3.7e-4, measured
# 1e-7 to 1e-6.


def loss_rtol(reduction, depth):
    """The loss's relative error bound of a model of `depth` stages of `reduction`
    roundings each."""
    return 2 * depth / 3 * gamma(reduction)


def grad_rtol(reduction, depth):
    """A gradient's relative L2 error bound (as loss_rtol)."""
    return 8 * depth / 3 * gamma(reduction)


def bounds(model):
    """(loss_rtol, grad_rtol) of a model (models.get(model)["bounds"])."""
    b = models.get(model)["bounds"]
    return loss_rtol(b["reduction"], b["depth"]), grad_rtol(b["reduction"], b["depth"])


# The MLP's and GPT's (eval_check.py reads LOSS_RTOL).
LOSS_RTOL = loss_rtol(784, 3)
GRAD_RTOL = grad_rtol(784, 3)
# A ReLU input z = h w + b computed in float32 is within gamma(784) (|h| |w| + |b|) of the
# exact one: closer to 0 than that, its sign (so its slope) may differ. The slopes fitted to
# the trainer are at most MAX_FITTED_SLOPES of the inputs closest to 0.
KINK_ERROR = gamma(785)
MAX_FITTED_SLOPES = 64
# An optimizer step is at most ~10 float32 roundings per element (AdamW: decay, two
# moments, square root, two divisions, step size, subtraction; constants rounded once).
ELEMENT_ULPS = 16
TINY = 2.0 ** -126  # below the smallest normal float32, an error is lost in underflow

# bf16 mode (README.md, "bf16 mixed precision" derives and measures these). The trainer
# and the reference round at the same points, so one op given the same bf16 operands
# differs only where float32 (gamma(K) relative) moves a value across a bf16 rounding
# boundary: that element is one ulp (2u |x|, u = 2^-8) off. But the next op reads it:
# every value that sums over it moves a little, a few of those cross a boundary, and so
# on through the 20 to 40 rounding points between the inputs and a gradient (a cascade).
# Measured, a correct float32 step lands at a relative L2 distance of 0.2u to 0.6u from
# the float64 one on GPT (15 to 30% of the gradient elements an ulp off), 0 to 0.15u on
# the MLP; a moved rounding point (up to half an ulp on every element of one op, carried
# by the same cascade) at 1.4 to 4 times that on GPT. No a-priori bound separates the
# two; the reference measures the cascade instead: the same step computed in float32
# arithmetic (Precision.calibration), CALIBRATIONS times: three orders of the products,
# the same with the other sums added as loops do and exp, log and tanh moved within the
# trainer's approximation error (one run can miss the early flip that starts a cascade
# and land 7 times closer), and the first of those again with one early value rounded
# the other way (where float32 holds the sums exactly, every order can miss it:
# precision.py). The
# trainer is another float32 computation: another
# order of the same sums. Over 100+ states (BLAS, blocked and sequential loop orders) its
# distance is 0.66 to 1.24 times the largest calibration's: CASCADE = 1.5. Below FLOOR (u / 16 relative L2) a handful of
# elements are an ulp off, which one early flip in any order produces. Per parameter,
# FLIPS more elements than the calibrations' one ulp (2u |g|) off are allowed.
CASCADE = 1.5
FLIPS = 64
FLOOR = U_BF16 / 16
CALIBRATIONS = 7
# A ReLU input z = bf16(bf16(h w) + b) of the trainer may differ from the reference's by
# an ulp of h w (its rounding flipped: 2u |h| |w|) and by the flips of h (2u |h| |w|),
# plus float32's gamma(785): within that of 0, its slope may differ.
KINK_ERROR_BF16 = 4 * U_BF16 + gamma(785)


def slot_names(optimizer):
    if optimizer["kind"] == "adamw":
        return ["exp_avg", "exp_avg_sq"]
    return ["momentum"] if optimizer.get("momentum", 0.0) > 0 else []


class Trace:
    """The records of a --trace-state file: record k is the state after step k (0: before
    the first), each {"params", "grads", slot name: {param name: float64 array}}: "params"
    has every parameter, the other parts the trainable ones (docs/Runtime.md), each in
    manifest order."""

    def __init__(self, path, model, optimizer):
        self.table = [(name, shape, dtype) for name, shape, dtype, _u, _i
                      in models.get(model)["params"]]
        self.trainable = models.trainable(model)
        self.parts = ["params", "grads"] + slot_names(optimizer)
        self.record_bytes = sum(self.part_bytes(part) for part in self.parts)
        size = os.path.getsize(path)
        if size % self.record_bytes:
            raise ValueError("%s: %d bytes is not a whole number of %d-byte records"
                             % (path, size, self.record_bytes))
        self.records = size // self.record_bytes
        self.data = np.memmap(path, dtype=np.uint8, mode="r")

    def part_table(self, part):
        return self.table if part == "params" else self.trainable

    def part_bytes(self, part):
        return sum(int(np.prod(shape)) * np.dtype(datafile.NP_DTYPES[dtype]).itemsize
                   for _n, shape, dtype in self.part_table(part))

    def record(self, k):
        offset = k * self.record_bytes
        out = {}
        for part in self.parts:
            values = {}
            for name, shape, dtype in self.part_table(part):
                count = int(np.prod(shape))
                size = count * np.dtype(datafile.NP_DTYPES[dtype]).itemsize
                raw = np.asarray(self.data[offset:offset + size]).view(datafile.NP_DTYPES[dtype])
                values[name] = datafile.from_storage(raw, dtype).astype(np.float64).reshape(shape)
                offset += size
            out[part] = values
        return out


def clip_sum_chain(model, ranks):
    """The longest chain of roundings in the trainer's sum of squares for the clip norm
    (fsdp-insert-collectives): one per square, a rank's sum over its shard of a unit's flat
    gradient (at most the unit's elements), the sum over the units, then the ranks'
    all-reduce. No path through that sum, in any order the trainer takes, is longer."""
    units = collections.Counter()
    for _name, shape, _dtype, unit, _init in models.get(model)["params"]:
        units[unit] += int(np.prod(shape))
    return 1 + max(units.values()) + len(units) + ranks


def clip_coefficient(grads, max_norm):
    """torch.nn.utils.clip_grad_norm_'s factor: min(1, max_norm / (|g|_2 + 1e-6))."""
    total = np.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
    return min(1.0, max_norm / (total + 1e-6))


def applied_coefficient(before, after, grads, optimizer, lr):
    """The factor the trainer applied to its gradient, read back from what it wrote (least
    squares over every element): the first optimizer slot, or the parameters (SGD without
    momentum)."""
    wd = optimizer.get("weight_decay", 0.0)
    if optimizer["kind"] == "adamw":
        b1 = optimizer["beta1"]
        pairs = [((1 - b1) * grads[n], after["exp_avg"][n] - b1 * before["exp_avg"][n])
                 for n in grads]
    elif "momentum" in after:
        mom = optimizer["momentum"]
        pairs = [(grads[n], after["momentum"][n] - mom * before["momentum"][n]
                  - wd * before["params"][n]) for n in grads]
    else:
        pairs = [(grads[n], (before["params"][n] - after["params"][n]) / lr
                  - wd * before["params"][n]) for n in grads]
    num = sum(float(np.sum(a * r)) for a, r in pairs)
    den = sum(float(np.sum(a * a)) for a, _ in pairs)
    return num / den if den > 0 else 1.0


def expected_update(before, after, grads, coef, step, lr, optimizer):
    """{part: {name: (expected, magnitude)}} of the optimizer step in float64: each slot
    from the trainer's state before the step and its gradient times `coef`; the
    parameters from the parameters before and the trainer's new state."""
    out = {part: {} for part in ["params"] + slot_names(optimizer)}
    wd = optimizer.get("weight_decay", 0.0)
    for name, g in grads.items():
        g = g * coef
        p = before["params"][name]
        if optimizer["kind"] == "adamw":
            b1, b2, eps = optimizer["beta1"], optimizer["beta2"], optimizer["eps"]
            m, v = before["exp_avg"][name], before["exp_avg_sq"][name]
            out["exp_avg"][name] = (b1 * m + (1 - b1) * g, np.abs(b1 * m) + np.abs((1 - b1) * g))
            out["exp_avg_sq"][name] = (b2 * v + (1 - b2) * g * g, b2 * v + (1 - b2) * g * g)
            m_new, v_new = after["exp_avg"][name], after["exp_avg_sq"][name]
            delta = (lr / (1 - b1 ** step)) * m_new / (
                np.sqrt(v_new) / np.sqrt(1 - b2 ** step) + eps)
            decayed = p * (1 - lr * wd)
            out["params"][name] = (decayed - delta, np.abs(decayed) + np.abs(delta))
        else:
            d = g + wd * p
            mag = np.abs(g) + np.abs(wd * p)
            if "momentum" in out:
                mom, buf = optimizer["momentum"], before["momentum"][name]
                out["momentum"][name] = (mom * buf + d, np.abs(mom * buf) + mag)
                d = after["momentum"][name]
                mag = np.abs(d)
            out["params"][name] = (p - lr * d, np.abs(p) + lr * mag)
    return out


def check_bf16_grads(grads, ref, cals, margins=None):
    """bf16 mode: failures of the trainer's reduced `grads` against the reference Step
    `ref`, given the float32 calibration Steps `cals`. Elementwise, what exceeds the
    reduction's slack counts (excess); its L2 norm, over all parameters pooled and over
    each parameter, must be within CASCADE times the calibrations' largest distance from
    the reference plus FLIPS elements off by one ulp. The pooled norm sees a moved
    rounding point (it moves every gradient a little); the per-parameter norms see an
    error in one small tensor. `margins` (a dict) receives the worst error / bound."""
    failures, total = [], {"err": 0.0, "cal": np.zeros(len(cals)), "norm": 0.0, "n": 0}
    worst = {"pooled": 0.0, "tensor": 0.0}

    def bound(cal_err, norm, n):
        return CASCADE * cal_err + 2 * U_BF16 * np.sqrt(min(1.0, FLIPS / n)) * norm + TINY

    for name, want in ref.grads.items():
        excess = np.maximum(np.abs(grads[name] - want) - ref.slack[name], 0.0)
        err, norm, n = np.linalg.norm(excess), np.linalg.norm(want), want.size
        cal_errs = np.array([np.linalg.norm(cal.grads[name] - want) for cal in cals])
        for key, value in (("err", err), ("cal", cal_errs), ("norm", norm)):
            total[key] = np.hypot(total[key], value)
        total["n"] += n
        cal_err = cal_errs.max()
        allowed = bound(cal_err, norm, n)
        worst["tensor"] = max(worst["tensor"], err / allowed)
        if err > allowed:
            failures.append("gradient of %s: |excess| %.3g > %.3g (float32 calibration %.3g, "
                            "rel.L2 %.1e)" % (name, err, allowed, cal_err, err / max(norm, TINY)))
    total["cal"] = total["cal"].max()
    allowed = CASCADE * total["cal"] + FLOOR * total["norm"] + TINY
    worst["pooled"] = total["err"] / allowed
    if total["err"] > allowed:
        failures.append("gradient (all parameters): rel.L2 %.2e > %.2e = %.1f x float32 "
                        "calibration %.2e + u/16" % (
                            total["err"] / total["norm"], allowed / total["norm"], CASCADE,
                            total["cal"] / total["norm"]))
    if margins is not None:
        margins.update(worst)
    return failures


def not_bf16(grads, prec):
    """Parameters whose gradient should be bf16 values and is not: with one rank (the
    rounded result of its last op) or a bf16 reduction (rounded after the division), of
    one micro-batch (the mean of several is taken in f32)."""
    if (not prec.bf16 or (prec.ranks > 1 and prec.reduce_dtype != "bf16")
            or prec.micro_batches > 1):
        return []
    return ["gradient of %s: %d elements are not bf16 values" % (name, int(np.sum(
        precision.round_bf16(g) != g))) for name, g in grads.items()
        if not np.array_equal(precision.round_bf16(g), g)]


def grad_misfit(grads, want, slack=None, rtol=GRAD_RTOL):
    """(worst |g - g_ref| / allowed over the parameters, failures); `slack`: elementwise
    allowance of a bf16 reduction (f32 parameters, --reduce-dtype bf16), subtracted;
    `rtol`: the model's grad_rtol."""
    worst, failures = 0.0, []
    for name, ref in want.items():
        diff = np.abs(grads[name] - ref)
        err = np.linalg.norm(diff if slack is None else np.maximum(diff - slack[name], 0.0))
        allowed = rtol * np.linalg.norm(ref) + TINY
        worst = max(worst, err / allowed)
        if err > allowed:
            failures.append("gradient of %s: |g - g_ref| %.3g > %.3g (rel.L2 %.1e)"
                            % (name, err, allowed, relative_l2(grads[name], ref)))
    return worst, failures


def fit_relu_slopes(model, params, inputs, grads, ref, prec=EXACT):
    """The reference Step `ref` with the ReLU slopes of the inputs within rounding error
    of 0 (KINK_ERROR, bf16: KINK_ERROR_BF16) flipped where that brings its gradients closer
    to the trainer's `grads` (greedily, closest to 0 first), and the number flipped."""
    relu_inputs = models.get(model).get("relu_inputs")
    if relu_inputs is None:
        return ref, 0
    kink = KINK_ERROR_BF16 if prec.bf16 else KINK_ERROR
    slopes, candidates = {}, []
    for layer, (z, magnitude) in relu_inputs(params, inputs, prec).items():
        slopes[layer] = (z > 0).astype(np.float64)
        margin = np.abs(z) / np.maximum(magnitude, TINY)
        for index in zip(*np.nonzero(margin <= kink)):
            candidates.append((margin[index], layer, index))
    best, flipped = ref, 0
    misfit = lambda s: sum(float(np.sum(np.maximum(  # noqa: E731
        np.abs(grads[n] - g) - s.slack[n], 0.0) ** 2)) for n, g in s.grads.items())
    current = misfit(best)
    for _margin, layer, index in sorted(candidates, key=lambda c: c[0])[:MAX_FITTED_SLOPES]:
        slopes[layer][index] = 1.0 - slopes[layer][index]
        trial = models.step(model, params, inputs, prec, slopes=slopes)
        if misfit(trial) < current:
            best, current, flipped = trial, misfit(trial), flipped + 1
        else:
            slopes[layer][index] = 1.0 - slopes[layer][index]
    return best, flipped


def relative_l2(got, want):
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def check(model, arrays, trace, losses, lr, optimizer, clip, prec=EXACT, margins=None):
    """Checks every step of `trace` against the reference; returns (rows, failures): per
    step (step, loss error, gradient rel.L2 error, {part: worst ulps of the update}, ReLU
    slopes fitted), and a message per failed check. `prec`: how the trainer computes
    (precision.Precision; float32 by default). `margins` (a list) receives per step
    {check: worst measured error / bound}."""
    steps = trace.records - 1
    failures, rows = [], []
    if len(losses) != steps:
        failures.append("%d losses logged, the trace has %d steps" % (len(losses), steps))
    batch = models.batch_size(model)
    loss_bound, grad_bound = bounds(model)
    chain = clip_sum_chain(model, prec.ranks)
    frozen = models.get(model)["frozen"]
    after = trace.record(0)
    # Record 0 is the state before the first step: no gradient yet (docs/Runtime.md).
    for name, g in after["grads"].items():
        if np.any(g):
            failures.append("record 0: gradient of %s is not zero" % name)
    for step, inputs in datafile.batches(arrays, batch, min(steps, len(losses))):
        before, after = after, trace.record(step)
        fail = lambda what: failures.append("step %d: %s" % (step, what))  # noqa: E731
        for name in sorted(frozen):
            if not np.array_equal(after["params"][name], before["params"][name]):
                fail("frozen parameter %s changed" % name)

        ref = models.step(model, before["params"], inputs, prec)
        loss = ref.loss
        # bf16: the loss reads bf16 logits (Step.loss_slack), then float32 as above.
        allowed = loss_bound + ref.loss_slack / abs(loss)
        loss_err = abs(losses[step - 1] - loss) / abs(loss)
        if loss_err > allowed:
            fail("loss %.9g, reference %.9g (rel.err %.1e > %.1e)"
                 % (losses[step - 1], loss, loss_err, allowed))
        margin = {"loss": loss_err / allowed}

        grads = after["grads"]
        if prec.bf16:
            cals = [models.step(model, before["params"], inputs, prec.calibration(order))
                    for order in range(CALIBRATIONS)]
            misfit = lambda r: check_bf16_grads(grads, r, cals, margin)  # noqa: E731
        else:
            def misfit(r):
                margin["gradient"], found = grad_misfit(grads, r.grads, r.slack, grad_bound)
                return found
        grad_failures, flipped = misfit(ref), 0
        if grad_failures:
            ref, flipped = fit_relu_slopes(model, before["params"], inputs, grads, ref, prec)
            grad_failures = misfit(ref)
        for failure in grad_failures + not_bf16(grads, prec):
            fail(failure)
        if prec.bf16:  # pooled, as the bound
            grad_err = float(np.sqrt(sum(np.sum(np.maximum(np.abs(grads[n] - g) - ref.slack[n],
                                                           0.0) ** 2)
                                         for n, g in ref.grads.items())
                                     / sum(np.sum(g * g) for g in ref.grads.values())))
        else:
            grad_err = max(relative_l2(grads[n], g) for n, g in ref.grads.items())

        coef = 1.0
        if clip > 0:
            # The trainer's sum of squares is within gamma(chain) of the exact one (its
            # terms are positive), the square root halves that relative error, and a few
            # more roundings make the coefficient.
            want = clip_coefficient(grads, clip)
            coef = applied_coefficient(before, after, grads, optimizer, lr)
            if abs(coef - want) > (gamma(chain) / 2 + gamma(4)) * want:
                fail("clip coefficient %.9g, from the trainer's gradient %.9g" % (coef, want))

        worst = {}
        for part, expected in expected_update(before, after, grads, coef, step, lr,
                                              optimizer).items():
            worst[part] = 0.0
            for name, (want, magnitude) in expected.items():
                got = after[part][name]
                bound = ELEMENT_ULPS * U * magnitude + TINY
                ulps = np.abs(got - want) / np.maximum(U * magnitude, TINY)
                worst[part] = max(worst[part], float(np.max(ulps)))
                over = np.abs(got - want) > bound
                if over.any():
                    i = np.unravel_index(np.argmax(np.abs(got - want) - bound), want.shape)
                    fail("%s of %s: %d elements off, e.g. [%s] %.9g vs %.9g (bound %.2g)"
                         % (part, name, int(over.sum()), ",".join(map(str, i)), got[i],
                            want[i], bound[i]))
        rows.append((step, loss_err, grad_err, worst, flipped))
        if margins is not None:
            margins.append(margin)
    return rows, failures


def read_losses(path):
    with open(path) as f:
        return [r["loss"] for r in map(json.loads, f) if "step" in r]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, type=models.argument,
                    help="; ".join(models.names()))
    ap.add_argument("--data", required=True)
    ap.add_argument("--trace", required=True, help="the trainer's --trace-state file")
    ap.add_argument("--log", required=True, help="the trainer's --log-json file")
    ap.add_argument("--lr", type=float, default=None, help="the trainer's --lr, if given")
    ap.add_argument("--optimizer", default=None,
                    help="JSON optimizer of the trainer's plan, if not the example's")
    ap.add_argument("--param-dtype", choices=["f32", "bf16"], default="f32",
                    help="the plan's param_dtype (bf16: mixed precision)")
    ap.add_argument("--reduce-dtype", choices=["f32", "bf16"], default="f32",
                    help="the plan's reduce_dtype")
    ap.add_argument("--grid", default="1",
                    help="the trainer's grid: N ranks, or RxS (hybrid_shard)")
    ap.add_argument("--strategy", choices=list(precision.STRATEGIES), default="full_shard",
                    help="the plan's strategy (which collectives reduce)")
    a = ap.parse_args(argv)
    try:
        prec = precision.Precision(a.param_dtype, a.reduce_dtype,
                                   [int(n) for n in a.grid.split("x")], a.strategy)
    except ValueError as e:
        ap.error("--grid %s --strategy %s: %s" % (a.grid, a.strategy, e))
    m = models.get(a.model)
    optimizer = json.loads(a.optimizer) if a.optimizer else m["optimizer"]
    # The trainer's learning rate is a float32.
    lr = float(np.float32(a.lr if a.lr is not None else optimizer["lr"]))
    specs, arrays = datafile.read(a.data)
    datafile.check(a.data, specs, arrays, m["inputs"])
    rows, failures = check(a.model, arrays, Trace(a.trace, a.model, optimizer),
                           read_losses(a.log), lr, optimizer, m["clip_grad_norm"], prec)
    print("step  loss rel.err  grad rel.L2  worst ulps (%s)  ReLU slopes fitted"
          % ", ".join(rows[0][3]) if rows else "no steps")
    for step, loss_err, grad_err, worst, flipped in rows:
        print("%4d  %12.1e  %11.1e  %s  %d" % (step, loss_err, grad_err,
                                               "  ".join("%.1f" % w for w in worst.values()),
                                               flipped))
    if failures:
        print("FAILED:\n" + "\n".join(failures[:20]))
        return 1
    print("PASS: %s, %d teacher-forced steps match the float64 reference" % (a.model, len(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
