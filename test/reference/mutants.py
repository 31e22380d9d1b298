"""Runs a checker with one op of the reference broken, to show that its check fails.

    python3 mutants.py MUTANT SCRIPT [ARGS...]

SCRIPT (test/e2e/checks/sharded_check.py, teacher.py, ...) runs in this process, as
`python3 SCRIPT ARGS...` would, with the reference's ops or models patched as MUTANT says;
nothing on disk changes. A check that passes the real reference must fail each mutant
that changes what its model computes (test/e2e/llama-reference.test and
odd-sizes-reference.test run some). The mutants:

    silu-as-gelu          fsdp.silu computed as GELU
    rms-norm-without-eps  rms_norm's eps (1e-5) dropped
    layer-norm-without-eps
    kv-heads-interleaved  grouped-query attention with query head h reading key head
                          h % KV instead of h // (H / KV) (both attention forms)
    rotary-inverted       fsdp.rope turning by -angle (the inverse rotation)
    rotary-pairs-interleaved
                          fsdp.rope pairing features (2i, 2i + 1), as GPT-J and Meta's
                          original checkpoints do, instead of rotate-half's (i, i + D/2)
    softmax-scale-rounded odd-sizes' score scale 0.277 taken as 0.28
    qkv-split-swapped     a fused query-key-value product (a slice of a third of the last
                          dimension) split with the queries and keys swapped
    gate-up-swapped       a fused gate-up product (a slice of half the last dimension,
                          Phi-3's gate_up_proj) split with gate and up swapped
    rotary-full-width     fsdp.rope's rotary_dim ignored: every feature turns
    head-norm-over-heads  an RMS norm of heads [B, T, H, D] (Qwen3's q_norm, k_norm)
                          taken over all of a position's heads rather than each one's D
    window-one-longer     a sliding window of W taken as W + 1 (the key W positions back
                          seen too)
    yarn-factor-dropped   YaRN's attention factor left out of the cosines and sines
    linear-scaling-dropped
                          fsdp.rope's linear scaling ignored: positions not interpolated
    softcap-gradient-uncapped
                          soft-capped attention whose gradient is the uncapped one's (the
                          forward pass unchanged)
    bf16-rotary-unrounded bf16 mode: fsdp.rope's result kept in f32
    bf16-silu-unrounded   bf16 mode: silu's result kept in f32
"""
import os
import runpy
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import models  # noqa: E402
import ops  # noqa: E402
import precision  # noqa: E402


def silu_as_gelu():
    ops.silu = ops.gelu


def without_eps(name):
    real = getattr(ops, name)

    def patched(*args, **kwargs):
        kwargs["eps"] = 0.0
        return real(*args, **kwargs)
    return lambda: setattr(ops, name, patched)


def kv_heads_interleaved():
    """Query head h reads key head h % KV: fsdp.attention's queries permuted so that ops'
    grouping (h // G) lands there; the explicit form's broadcast on the other axis."""
    real_attention = ops.attention

    def attention(q, k, v, **kwargs):
        hq, hkv = q.shape[1], k.shape[1]
        heads = np.arange(hq)
        slot = (heads % hkv) * (hq // hkv) + heads // hkv  # reads key head h % KV
        permuted = np.empty_like(q)
        permuted[:, slot] = q
        out, vjp = real_attention(permuted, k, v, **kwargs)

        def permuted_vjp(d):
            spread = np.empty_like(d)
            spread[:, slot] = d
            dq, dk, dv = vjp(spread)
            return dq[:, slot], dk, dv
        return out[:, slot], permuted_vjp

    def grouped_heads(t, x, b, T, H, KV, D, explicit):
        if not explicit:
            return t(ops.reshape, x, (b, T, KV, D))
        x5 = t(ops.reshape, x, (b, T, 1, KV, D))
        return t(ops.reshape, t(ops.broadcast, x5, (b, T, H // KV, KV, D)), (b, T, H, D))

    ops.attention = attention
    models.grouped_heads = grouped_heads


def rotary_inverted():
    real = ops.rope
    ops.rope = lambda *args, inverse=False, **kwargs: real(*args, inverse=not inverse, **kwargs)


def rotary_pairs_interleaved():
    """Rotate-half on the features gathered evens first: pairs (2i, 2i + 1) turn."""
    real = ops.rope

    def rope(x, *args, **kwargs):
        evens_first = np.concatenate([np.arange(0, x.shape[-1], 2), np.arange(1, x.shape[-1], 2)])
        out, vjp = real(x[..., evens_first], *args, **kwargs)

        def scatter(y):
            back = np.empty_like(y)
            back[..., evens_first] = y
            return back
        return scatter(out), lambda d: (scatter(vjp(d[..., evens_first])[0]),)
    ops.rope = rope


def qkv_split_swapped():
    real = ops.slice

    def patched(x, dim, offset, size, **kwargs):
        if dim == x.ndim - 1 and x.shape[dim] == 3 * size and offset < 2 * size:
            offset = size - offset
        return real(x, dim, offset, size, **kwargs)
    ops.slice = patched


def gate_up_swapped():
    real = ops.slice

    def patched(x, dim, offset, size, **kwargs):
        if dim == x.ndim - 1 and x.shape[dim] == 2 * size:
            offset = size - offset
        return real(x, dim, offset, size, **kwargs)
    ops.slice = patched


def rotary_full_width():
    real = ops.rope
    ops.rope = lambda *args, rotary_dim=None, **kwargs: real(*args, **kwargs)


def head_norm_over_heads():
    """rms_norm of a rank-4 input normalised over its last two dimensions."""
    real = ops.rms_norm

    def rms_norm(x, gamma, **kwargs):
        if x.ndim != 4:
            return real(x, gamma, **kwargs)
        shape = x.shape
        wide = np.tile(gamma, shape[2])
        out, vjp = real(x.reshape(shape[:2] + (-1,)), wide, **kwargs)

        def narrow_vjp(d):
            dx, dwide = vjp(d.reshape(shape[:2] + (-1,)))
            return dx.reshape(shape), dwide.reshape(shape[2], -1).sum(0)
        return out.reshape(shape), narrow_vjp
    ops.rms_norm = rms_norm


def window_one_longer():
    real = ops.attention

    def attention(*args, window=None, **kwargs):
        return real(*args, window=None if window is None else window + 1, **kwargs)
    ops.attention = attention


def yarn_factor_dropped():
    real = ops.rope

    def rope(*args, yarn=None, **kwargs):
        return real(*args, yarn=None if yarn is None else yarn[:4] + (1.0,) + yarn[5:],
                    **kwargs)
    ops.rope = rope


def linear_scaling_dropped():
    real = ops.rope

    def rope(*args, linear=None, **kwargs):
        return real(*args, **kwargs)
    ops.rope = rope


def softcap_gradient_uncapped():
    """The capped forward pass with the uncapped one's gradient (a cap a million times
    larger is the identity on these scores)."""
    real = ops.attention

    def attention(*args, softcap=None, **kwargs):
        out, vjp = real(*args, softcap=softcap, **kwargs)
        if softcap is None:
            return out, vjp
        _, loose = real(*args, softcap=softcap * 1e6, **kwargs)
        return out, loose
    ops.attention = attention


def softmax_scale_rounded():
    real = ops.scale
    ops.scale = lambda x, factor, **kw: real(x, 0.28 if factor == 0.277 else factor, **kw)


def bf16_unrounded(point):
    real = precision.Precision.round

    def patched(self, x, where):
        return x if where == point else real(self, x, where)
    return lambda: setattr(precision.Precision, "round", patched)


MUTANTS = {
    "silu-as-gelu": silu_as_gelu,
    "rms-norm-without-eps": without_eps("rms_norm"),
    "layer-norm-without-eps": without_eps("layer_norm"),
    "kv-heads-interleaved": kv_heads_interleaved,
    "rotary-inverted": rotary_inverted,
    "rotary-pairs-interleaved": rotary_pairs_interleaved,
    "softmax-scale-rounded": softmax_scale_rounded,
    "qkv-split-swapped": qkv_split_swapped,
    "gate-up-swapped": gate_up_swapped,
    "rotary-full-width": rotary_full_width,
    "head-norm-over-heads": head_norm_over_heads,
    "window-one-longer": window_one_longer,
    "yarn-factor-dropped": yarn_factor_dropped,
    "linear-scaling-dropped": linear_scaling_dropped,
    "softcap-gradient-uncapped": softcap_gradient_uncapped,
    "bf16-rotary-unrounded": bf16_unrounded("rope"),
    "bf16-silu-unrounded": bf16_unrounded("silu"),
    # The fused attention's (cuDNN's) probabilities or scores' gradient not rounded
    # before their products.
    "bf16-attention-p-unrounded": bf16_unrounded("attention.p"),
    "bf16-attention-ds-unrounded": bf16_unrounded("attention.ds"),
}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in MUTANTS:
        sys.exit("usage: mutants.py {%s} SCRIPT [ARGS...]" % "|".join(MUTANTS))
    MUTANTS[sys.argv[1]]()
    print("mutant: %s" % sys.argv[1], flush=True)
    script = sys.argv[2]
    sys.argv = sys.argv[2:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
