"""Reference trainer: float64 training of an example model on an FSDPDATA file.

    python3 train.py --model MODEL --data FILE [--steps 20] [--seed 0] [--lr X]
                     [--optimizer JSON] [--out losses.json] [--export FILE]
                     [--round-params]

Parameters start from the Philox init rounded to their dtype (as the trainer stores
them); then every step computes the loss of its batch (before the update), the gradients,
the optional global-norm clip and the optimizer update, all in float64. --out writes
{"model", "seed", "steps", "lr", "losses": [loss of step 1, ...]}; --export writes the
final parameters as the trainer's --export does by default (a safetensors file, one
tensor per parameter named as in the manifest, with its shape: each rounded to its dtype,
then stored as F32; params_file.read_params reads it). --optimizer replaces the example's
optimizer (manifest form, e.g. '{"kind": "sgd", "lr": 0.1, "momentum": 0.9}').
"""
import argparse
import json
import os
import sys

# Small matrices: multi-threaded BLAS only adds overhead (and contention on busy hosts).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import datafile
import models
import optim
import params_file
import philox


def init_params(model, seed):
    return {name: philox.init_param(seed, name, shape, dtype, init)
            for name, shape, dtype, _unit, init in models.get(model)["params"]}


def train(model, arrays, steps, seed, lr=None, round_params=False, params=None,
          optimizer=None):
    """Returns (losses, params). arrays: the data file's [N, ...] arrays."""
    m = models.get(model)
    params = init_params(model, seed) if params is None else params
    dtypes = {name: dtype for name, _s, dtype, _u, _i in m["params"]}
    optimizer = optimizer or m["optimizer"]
    opt = optim.make(optimizer)
    lr = optimizer["lr"] if lr is None else lr
    losses = []
    for step, inputs in datafile.batches(arrays, models.batch_size(model), steps):
        loss, grads = m["loss_and_grads"](params, inputs)
        if not np.isfinite(loss):
            raise FloatingPointError("loss is %r at step %d" % (loss, step))
        losses.append(loss)
        if m["clip_grad_norm"] > 0:
            optim.clip_grad_norm(grads, m["clip_grad_norm"])
        opt.step(params, grads, step, lr)
        if round_params:  # optional: keep parameters in their storage dtype
            for name in params:
                params[name] = philox.round_to(params[name], dtypes[name])
    return losses, params


def export_params(model, params, path):
    """What the trainer's --export writes (f32): every parameter rounded to its dtype (as
    the trainer stores it), then widened to float32, which is exact."""
    table = models.get(model)["params"]
    params_file.write_params(path, table, {name: philox.round_to(params[name], dtype)
                                           for name, _shape, dtype, _unit, _init in table})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, type=models.argument,
                    help="; ".join(models.names()))
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--optimizer", default=None, help="JSON, replaces the example's")
    ap.add_argument("--out", default=None)
    ap.add_argument("--export", default=None,
                    help="write the final parameters as the trainer's --export (f32)")
    ap.add_argument("--round-params", action="store_true",
                    help="round parameters to their dtype after every update")
    a = ap.parse_args(argv)
    if a.seed < 0 or a.seed >= 2 ** 64:
        ap.error("--seed must be in [0, 2^64)")
    m = models.get(a.model)
    optimizer = json.loads(a.optimizer) if a.optimizer else m["optimizer"]
    try:
        specs, arrays = datafile.read(a.data)
        datafile.check(a.data, specs, arrays, m["inputs"])
        losses, params = train(a.model, arrays, a.steps, a.seed, a.lr, a.round_params,
                               optimizer=optimizer)
    except (datafile.DataError, FloatingPointError) as e:
        print("train.py: error: %s" % e, file=sys.stderr)
        return 1
    for i, loss in enumerate(losses, 1):
        print("step %d | loss %.6f" % (i, loss))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"model": a.model, "seed": a.seed, "steps": a.steps,
                       "lr": optimizer["lr"] if a.lr is None else a.lr,
                       "losses": losses}, f, indent=1)
    if a.export:
        export_params(a.model, params, a.export)
    return 0


if __name__ == "__main__":
    sys.exit(main())
