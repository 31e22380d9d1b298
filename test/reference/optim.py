"""Optimizers and gradient clipping, as PyTorch's torch.optim.SGD / torch.optim.AdamW and
torch.nn.utils.clip_grad_norm_ (docs/Reference/FSDPDialect.md SGDAttr / AdamWAttr)."""
import numpy as np

ADAMW_DEFAULTS = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01}
SGD_DEFAULTS = {"momentum": 0.0, "weight_decay": 0.0}


def clip_grad_norm(grads, max_norm):
    """Scale every gradient by max_norm / (total_norm + 1e-6) when that is < 1.
    grads: dict name -> array (modified in place). Returns the total norm (before)."""
    total = float(np.sqrt(sum(float(np.sum(g * g)) for g in grads.values())))
    if max_norm > 0:
        coef = max_norm / (total + 1e-6)
        if coef < 1.0:
            for g in grads.values():
                g *= coef
    return total


class SGD:
    """v = momentum v + g + wd p; p -= lr v. With momentum 0 there is no state."""

    def __init__(self, cfg):
        self.cfg = dict(SGD_DEFAULTS, **cfg)
        self.buf = {}

    def step(self, params, grads, step, lr):
        mom, wd = self.cfg["momentum"], self.cfg["weight_decay"]
        for name, g in grads.items():
            p = params[name]
            d = g + wd * p if wd else g
            if mom:
                v = self.buf.get(name)
                v = d.copy() if v is None else mom * v + d  # v starts at 0
                self.buf[name] = v
                d = v
            p -= lr * d


class AdamW:
    """torch.optim.AdamW (single-tensor path): decoupled decay first, then Adam."""

    def __init__(self, cfg):
        self.cfg = dict(ADAMW_DEFAULTS, **cfg)
        self.m, self.v = {}, {}

    def step(self, params, grads, step, lr):
        b1, b2 = self.cfg["beta1"], self.cfg["beta2"]
        eps, wd = self.cfg["eps"], self.cfg["weight_decay"]
        bc1 = 1.0 - b1 ** step          # step counts from 1
        bc2_sqrt = np.sqrt(1.0 - b2 ** step)
        for name, g in grads.items():
            p = params[name]
            p *= 1.0 - lr * wd
            m = self.m[name] = b1 * self.m.get(name, 0.0) + (1.0 - b1) * g
            v = self.v[name] = b2 * self.v.get(name, 0.0) + (1.0 - b2) * g * g
            p -= (lr / bc1) * m / (np.sqrt(v) / bc2_sqrt + eps)


def make(cfg):
    """cfg: manifest-style {"kind": "sgd"|"adamw", "lr": ..., ...}."""
    kind = cfg["kind"]
    rest = {k: v for k, v in cfg.items() if k not in ("kind", "lr")}
    if kind == "sgd":
        return SGD(rest)
    if kind == "adamw":
        return AdamW(rest)
    raise ValueError("unknown optimizer %r" % kind)
