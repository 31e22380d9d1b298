"""Writes an FSDPDATA file of valid inputs for an example model.

    python3 make_data.py --model MODEL --samples N --seed S --out FILE [--synthetic]

MODEL: any name models.get knows (mlp, gpt, odd-sizes, llama:layers=...,...; teacher.py).

Default: NumPy random data seeded by S: features (and regression targets) standard
normal, classes uniform in [0, bound); a tokens input is a uniform random sequence and a
classes input of the same shape holds its next tokens (the sequence is drawn one longer
and shifted).

--synthetic: the trainer's own synthetic data (with --samples batch * ceil(1024 / batch),
the trainer's whole synthetic data set) (docs/Runtime.md section 4, "Synthetic
data"), samples 0..N-1, so that `trainer` without --data can be compared with train.py.
"""
import argparse
import sys

import numpy as np

import datafile
import models
import philox

SEED_DATA, SEED_TEACHER = 0x5EED5EED, 0x7EAC7EAC


def random_data(inputs, n, seed):
    rng = np.random.default_rng(seed)
    out = [None] * len(inputs)
    for i, (shape, dtype, role, bound) in enumerate(inputs):
        per = tuple(shape[1:])
        if role in ("features", "regression_target"):
            out[i] = rng.standard_normal((n,) + per)
        elif role == "tokens":
            seq = rng.integers(0, bound, size=(n,) + per[:-1] + (per[-1] + 1,))
            out[i] = seq[..., :-1]
            for k, (s2, _d, r2, b2) in enumerate(inputs):  # next-token targets
                if r2 == "classes" and tuple(s2) == tuple(shape) and out[k] is None:
                    out[k] = seq[..., 1:] % b2
        elif out[i] is None:  # classes
            out[i] = rng.integers(0, bound, size=(n,) + per)
    return out


def _normal(key, idx, c2, c3):
    w0, w1, w2, w3 = philox.words(key, idx, c2, c3)
    return w0, w1, philox.box_muller(philox.uniform(w0, w1), philox.uniform(w2, w3))


def _teacher(seed, x, c_count):
    """x [N, J] -> x @ W with W[j, c] standard normal (double) from the teacher key."""
    key = (seed & 0xFFFFFFFF, ((seed >> 32) & 0xFFFFFFFF) ^ SEED_TEACHER)
    j = x.shape[1]
    _, _, w = _normal(key, np.arange(j * c_count, dtype=np.uint64), 0, 0)
    return x @ w.reshape(j, c_count)


def synthetic_data(inputs, n, seed):
    key = (seed & 0xFFFFFFFF, ((seed >> 32) & 0xFFFFFFFF) ^ SEED_DATA)
    samples = np.arange(n, dtype=np.uint64)[:, None]
    out = [None] * len(inputs)
    for i, (shape, dtype, role, bound) in enumerate(inputs):  # sources first
        per = tuple(shape[1:])
        if role == "features":
            j = np.arange(int(np.prod(per, dtype=np.int64)), dtype=np.uint64)[None, :]
            _, _, z = _normal(key, j, samples, i)
            out[i] = philox.round_to(z, dtype).reshape((n,) + per)
        elif role == "tokens":
            w0, w1, _, _ = philox.words(key, np.zeros((n, 1), np.uint64), samples, i)
            x0 = np.floor(philox.uniform(w0, w1) * bound).astype(np.int64)  # [n, 1]
            out[i] = ((x0 + 7 * np.arange(per[-1])) % bound).reshape((n,) + per)
    feats = [k for k, inp in enumerate(inputs) if inp[2] == "features"]
    for i, (shape, dtype, role, bound) in enumerate(inputs):  # targets
        per = tuple(shape[1:])
        if role == "classes":
            tok = [k for k, inp in enumerate(inputs)
                   if inp[2] == "tokens" and tuple(inp[0]) == tuple(shape)]
            if tok:
                out[i] = (out[tok[0]] + 7) % inputs[tok[0]][3]
            else:
                logits = _teacher(seed, out[feats[0]].reshape(n, -1), bound)
                out[i] = logits.argmax(axis=1).reshape((n,) + per)
        elif role == "regression_target":
            c = int(np.prod(per, dtype=np.int64))
            y = _teacher(seed, out[feats[0]].reshape(n, -1), c)
            out[i] = philox.round_to(y, dtype).reshape((n,) + per)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, type=models.argument,
                    help="; ".join(models.names()))
    ap.add_argument("--samples", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--synthetic", action="store_true")
    a = ap.parse_args(argv)
    if a.samples < 1:
        ap.error("--samples must be >= 1")
    inputs = models.get(a.model)["inputs"]
    make = synthetic_data if a.synthetic else random_data
    arrays = make(inputs, a.samples, a.seed)
    datafile.write(a.out, [(inp[1], arr) for inp, arr in zip(inputs, arrays)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
