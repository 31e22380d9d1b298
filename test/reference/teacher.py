"""Teacher-forced comparison of a trainer's --trace-state with the float64 reference.

A float32 trajectory of AdamW drifts away from a float64 one (a ReLU flips, AdamW moves
an element whose gradient is nearly zero by about lr), so comparing two runs of 20 steps
checks the machine as much as the trainer. Instead, every step k is checked from the
trainer's own state after step k-1 (docs/Runtime.md, --trace-state), with bounds that
follow from float32 arithmetic, so a wrong step fails where it happens on any machine:

- loss: the reference loss of step k's batch from the trainer's parameters, relative
  error at most LOSS_RTOL;
- gradients: per parameter, |g - g_ref|_2 <= GRAD_RTOL |g_ref|_2. A ReLU input within
  float32 rounding error of 0 may fall on either side of the kink, and its slope (0 or 1)
  changes a whole sample's gradient: when the check fails, the reference takes, at each
  such input, the slope that brings it closest to the trainer (fit_relu_slopes), and the
  bound must then hold;
- clip coefficient (with clip_grad_norm): the one the trainer applied, read back from its
  optimizer state, against min(1, max_norm / (|g| + 1e-6)) of its own gradient, relative
  error at most gamma(N) / 2 + gamma(4) (the square root of a float32 sum of N squares);
- optimizer state and parameters: elementwise, the optimizer's formula applied in float64
  to the trainer's values of step k-1 and its gradient (the parameters: to its new state)
  must be within ELEMENT_ULPS units of float32 roundoff of the magnitudes of the terms.

    python3 teacher.py --model mlp|gpt --data FILE --trace FILE --log FILE [--lr X]
                       [--optimizer JSON]
"""
import argparse
import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import datafile  # noqa: E402
import models  # noqa: E402

U = 2.0 ** -24  # float32 unit roundoff (round to nearest)


def gamma(n):
    """Higham's gamma_n = n u / (1 - n u): the relative error bound of n float32 roundings,
    e.g. of a sum of n terms relative to the sum of their magnitudes."""
    return n * U / (1.0 - n * U)


# The longest reduction of either model is 784 (the MLP's first product; GPT's longest is
# 256). A float32 dot product of that length is within gamma(784) = 4.7e-5 of the exact one
# relative to the sum of the magnitudes of its terms; the loss composes a few such sums
# with Lipschitz-1 maps (ReLU, log-softmax, mean), so its relative error is a small
# multiple of gamma(784) on a loss of order 1: bound 2 gamma(784).
LOSS_RTOL = 2 * gamma(784)
# A gradient is a product of the backward chain: each factor carries gamma(784) relative
# to its magnitudes, and cancellation within a tensor raises the normwise error; 8 factors
# of gamma(784) cover the depth of both models (3 products in the MLP, 2 blocks of 5 in GPT
# whose residual stream keeps the magnitudes of order 1).
GRAD_RTOL = 8 * gamma(784)
# A ReLU input z = h w + b computed in float32 is within gamma(784) (|h| |w| + |b|) of the
# exact one: closer to 0 than that, its sign (so its slope) may differ. The slopes fitted to
# the trainer are at most MAX_FITTED_SLOPES of the inputs closest to 0.
KINK_ERROR = gamma(785)
MAX_FITTED_SLOPES = 64
# An optimizer step is at most ~10 float32 roundings per element (AdamW: decay, two
# moments, square root, two divisions, step size, subtraction; constants rounded once).
ELEMENT_ULPS = 16
TINY = 2.0 ** -126  # below the smallest normal float32, an error is lost in underflow


def slot_names(optimizer):
    if optimizer["kind"] == "adamw":
        return ["exp_avg", "exp_avg_sq"]
    return ["momentum"] if optimizer.get("momentum", 0.0) > 0 else []


class Trace:
    """The records of a --trace-state file: record k is the state after step k (0: before
    the first), each {"params", "grads", slot name: {param name: float64 array}}. Every
    parameter of the example models is trainable, so every part has all of them."""

    def __init__(self, path, model, optimizer):
        self.table = [(name, shape, dtype) for name, shape, dtype, _u, _i
                      in models.MODELS[model]["params"]]
        self.parts = ["params", "grads"] + slot_names(optimizer)
        self.record_bytes = sum(int(np.prod(shape)) * np.dtype(datafile.NP_DTYPES[dtype]).itemsize
                                for _n, shape, dtype in self.table) * len(self.parts)
        size = os.path.getsize(path)
        if size % self.record_bytes:
            raise ValueError("%s: %d bytes is not a whole number of %d-byte records"
                             % (path, size, self.record_bytes))
        self.records = size // self.record_bytes
        self.data = np.memmap(path, dtype=np.uint8, mode="r")

    def record(self, k):
        offset = k * self.record_bytes
        out = {}
        for part in self.parts:
            values = {}
            for name, shape, dtype in self.table:
                count = int(np.prod(shape))
                size = count * np.dtype(datafile.NP_DTYPES[dtype]).itemsize
                raw = np.asarray(self.data[offset:offset + size]).view(datafile.NP_DTYPES[dtype])
                values[name] = datafile.from_storage(raw, dtype).astype(np.float64).reshape(shape)
                offset += size
            out[part] = values
        return out


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


def grad_misfit(grads, want):
    """(worst |g - g_ref| / allowed over the parameters, failures)."""
    worst, failures = 0.0, []
    for name, ref in want.items():
        err = np.linalg.norm(grads[name] - ref)
        allowed = GRAD_RTOL * np.linalg.norm(ref) + TINY
        worst = max(worst, err / allowed)
        if err > allowed:
            failures.append("gradient of %s: |g - g_ref| %.3g > %.3g (rel.L2 %.1e)"
                            % (name, err, allowed, relative_l2(grads[name], ref)))
    return worst, failures


def fit_relu_slopes(model, params, inputs, grads, ref_grads):
    """The reference's gradients with the ReLU slopes of the inputs within float32 rounding
    of 0 flipped where that brings them closer to the trainer's `grads` (greedily, closest
    to 0 first), and the number of slopes flipped."""
    relu_inputs = models.MODELS[model].get("relu_inputs")
    if relu_inputs is None:
        return ref_grads, 0
    slopes, candidates = {}, []
    for layer, (z, magnitude) in relu_inputs(params, inputs).items():
        slopes[layer] = (z > 0).astype(np.float64)
        margin = np.abs(z) / np.maximum(magnitude, TINY)
        for index in zip(*np.nonzero(margin <= KINK_ERROR)):
            candidates.append((margin[index], layer, index))
    best, flipped = ref_grads, 0
    misfit = lambda g: sum(float(np.sum((grads[n] - g[n]) ** 2)) for n in g)  # noqa: E731
    current = misfit(best)
    for _margin, layer, index in sorted(candidates, key=lambda c: c[0])[:MAX_FITTED_SLOPES]:
        slopes[layer][index] = 1.0 - slopes[layer][index]
        _, trial = models.MODELS[model]["loss_and_grads"](params, inputs, slopes=slopes)
        if misfit(trial) < current:
            best, current, flipped = trial, misfit(trial), flipped + 1
        else:
            slopes[layer][index] = 1.0 - slopes[layer][index]
    return best, flipped


def relative_l2(got, want):
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def check(model, arrays, trace, losses, lr, optimizer, clip):
    """Checks every step of `trace` against the reference; returns (rows, failures): per
    step (step, loss error, gradient rel.L2 error, {part: worst ulps of the update}, ReLU
    slopes fitted), and a message per failed check."""
    steps = trace.records - 1
    failures, rows = [], []
    if len(losses) != steps:
        failures.append("%d losses logged, the trace has %d steps" % (len(losses), steps))
    batch = models.batch_size(model)
    numel = sum(int(np.prod(s)) for _n, s, _d in trace.table)
    after = trace.record(0)
    for step, inputs in datafile.batches(arrays, batch, min(steps, len(losses))):
        before, after = after, trace.record(step)
        fail = lambda what: failures.append("step %d: %s" % (step, what))  # noqa: E731

        loss, ref_grads = models.loss_and_grads(model, before["params"], inputs)
        loss_err = abs(losses[step - 1] - loss) / abs(loss)
        if loss_err > LOSS_RTOL:
            fail("loss %.9g, reference %.9g (rel.err %.1e > %.1e)"
                 % (losses[step - 1], loss, loss_err, LOSS_RTOL))

        grads = after["grads"]
        _, grad_failures = grad_misfit(grads, ref_grads)
        flipped = 0
        if grad_failures:
            ref_grads, flipped = fit_relu_slopes(model, before["params"], inputs, grads,
                                                 ref_grads)
            _, grad_failures = grad_misfit(grads, ref_grads)
        for failure in grad_failures:
            fail(failure)
        grad_err = max(relative_l2(grads[n], g) for n, g in ref_grads.items())

        coef = 1.0
        if clip > 0:
            # The trainer sums numel float32 squares (gamma(numel)), and the square root
            # halves that relative error; a few more roundings make the coefficient.
            want = clip_coefficient(grads, clip)
            coef = applied_coefficient(before, after, grads, optimizer, lr)
            if abs(coef - want) > (gamma(numel) / 2 + gamma(4)) * want:
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
    return rows, failures


def read_losses(path):
    with open(path) as f:
        return [r["loss"] for r in map(json.loads, f) if "step" in r]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, choices=sorted(models.MODELS))
    ap.add_argument("--data", required=True)
    ap.add_argument("--trace", required=True, help="the trainer's --trace-state file")
    ap.add_argument("--log", required=True, help="the trainer's --log-json file")
    ap.add_argument("--lr", type=float, default=None, help="the trainer's --lr, if given")
    ap.add_argument("--optimizer", default=None,
                    help="JSON optimizer of the trainer's plan, if not the example's")
    a = ap.parse_args(argv)
    m = models.MODELS[a.model]
    optimizer = json.loads(a.optimizer) if a.optimizer else m["optimizer"]
    # The trainer's learning rate is a float32.
    lr = float(np.float32(a.lr if a.lr is not None else optimizer["lr"]))
    specs, arrays = datafile.read(a.data)
    datafile.check(a.data, specs, arrays, m["inputs"])
    rows, failures = check(a.model, arrays, Trace(a.trace, a.model, optimizer),
                           read_losses(a.log), lr, optimizer, m["clip_grad_norm"])
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
