"""Self-test of the NumPy reference; exits non-zero on any failure.

    python3 selftest.py

1. Philox4x32-10 known-answer vectors, FNV-1a, bf16/f32 rounding, init statistics.
2. Every op's hand-written vjp against central finite differences (float64).
3. Every model's gradients against finite differences of the loss (a few elements each):
   the examples, odd-sizes and a small Llama in both attention forms (which must agree).
4. Optimizers against hand-computed steps; data file round trip and step -> sample map;
   parameter files (params_file.py): round trip in manifest order, wrong tensors refused.
5. A short training of both models (train.py CLI) on which the loss must fall.
6. The teacher-forced checker (teacher.py) on a trainer simulated in float32: it accepts
   correct steps and rejects each kind of wrong one (loss, gradient, clip, state, update,
   a frozen parameter changed), for every model.
7. bf16 mixed precision: rounding, the ops' split gradients, and teacher.py's bf16 mode on
   trainers simulated in float32 with bf16 rounding points (1, 2 and 4 ranks, hybrid,
   reduce_dtype f32 and bf16): correct ones pass, ones with a rounding point moved fail;
   each line shows the margins (worst measured error / bound). The examples, and the
   small Llama with grouped-query flash attention on fewer plans.
8. The imported models (hf: names) against Hugging Face itself: on each fixture of
   test/e2e/Inputs/hf, the float64 forward from the checkpoint's weights gives the loss
   transformers computed in float32 (expected.json) within 1e-6 relative.
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile

# Small matrices: multi-threaded BLAS only adds overhead (and contention on busy hosts).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import datafile  # noqa: E402
import make_data  # noqa: E402
import models  # noqa: E402
import ops  # noqa: E402
import optim  # noqa: E402
import params_file  # noqa: E402
import philox  # noqa: E402
import precision  # noqa: E402
import teacher  # noqa: E402

FAILURES = []

# A small Llama in both attention forms (grouped-query: 4 query heads on 2 key heads; key
# blocks of 3 that do not divide the 8 positions), as test/e2e uses larger ones; the
# explicit one with its embedding frozen.
LLAMA = "llama:layers=2,dim=16,heads=4,kv_heads=2,ffn=24,vocab=11,seq=8,batch=8,attention="
LLAMA_FLASH = LLAMA + "flash,key_block=3"
LLAMA_EXPLICIT = LLAMA + "explicit,freeze=model.embed_tokens.weight"
LABELS = {LLAMA_FLASH: "llama flash", LLAMA_EXPLICIT: "llama explicit"}
ALL_MODELS = ("mlp", "gpt", "odd-sizes", LLAMA_FLASH, LLAMA_EXPLICIT)


def model_label(model):
    return LABELS.get(model, model)


def initial_params(model, seed=0):
    """The model's initial parameters, as its initializers give them."""
    return {n: philox.init_param(seed, n, s, d, i)
            for n, s, d, _u, i in models.get(model)["params"]}


def report(name, ok, detail=""):
    print("%-4s %s%s" % ("ok" if ok else "FAIL", name, (": " + detail) if detail else ""))
    if not ok:
        FAILURES.append(name)


# ---------------------------------------------------------------- 1. RNG

def test_rng():
    report("philox KATs, fnv1a64, rounding", philox.self_check(verbose=False) == 0)
    # Init statistics and determinism on a large-ish tensor.
    w = philox.init_param(0, "w", (256, 512), "f32", {"kind": "normal", "mean": 0.5, "std": 2.0})
    ok = abs(w.mean() - 0.5) < 0.03 and abs(w.std() - 2.0) < 0.03
    report("normal init statistics", ok, "mean %.4f std %.4f" % (w.mean(), w.std()))
    u = philox.init_param(1, "u", (784, 256), "f32", {"kind": "fan_in_uniform", "scale": 1.0})
    bound = 1 / np.sqrt(784)
    ok = u.min() >= philox.round_f32(-bound) and u.max() <= philox.round_f32(bound) and abs(u.std() - bound / np.sqrt(3)) < 1e-3
    report("fan_in_uniform init range", ok)
    same = philox.init_param(0, "w", (256, 512), "f32",
                             {"kind": "normal", "mean": 0.5, "std": 2.0})
    other = philox.init_param(0, "w2", (256, 512), "f32",
                              {"kind": "normal", "mean": 0.5, "std": 2.0})
    report("init depends on (seed, name) only", np.array_equal(w, same)
           and not np.array_equal(w, other)
           and np.array_equal(w.astype(np.float32).astype(np.float64), w))
    b = philox.init_param(3, "b", (1000,), "bf16", {"kind": "uniform", "low": -1, "high": 1})
    report("bf16 init values representable",
           np.array_equal(philox.bf16_from_bits(philox.bf16_bits(b)), b))


# ---------------------------------------------------------------- 2. ops

def cases_with_own_draws():
    """More vjp cases of test_ops, each drawing its operands from a generator of its own
    (so that adding one changes no other case's draws)."""
    def normal(seed, shape):
        return np.random.default_rng(seed).standard_normal(shape)
    return [
        ("broadcast", ops.broadcast, (normal(5, (2, 1, 3)),), {"shape": (4, 2, 5, 3)}),
        ("rope", ops.rope, (normal(6, (2, 5, 3, 8)),), {"positions": 1, "theta": 10000.0}),
        ("rope partial, scaled, inverse", ops.rope, (normal(6, (2, 3, 6, 10)),),
         {"positions": 2, "theta": 500.0, "rotary_dim": 6, "scaling": (4.0, 1.0, 4.0, 8),
          "inverse": True}),
        ("rope partial, yarn", ops.rope, (normal(6, (2, 3, 6, 10)),),
         {"positions": 2, "theta": 500.0, "rotary_dim": 8,
          "yarn": (4.0, 32.0, 1.0, 4, 1.1386, True)}),
        ("rope linear", ops.rope, (normal(6, (2, 5, 3, 8)),),
         {"positions": 1, "theta": 10000.0, "linear": 8.0}),
        # Scores of some 2 against a cap of 0.8: tanh well into its bend.
        ("attention soft-capped, windowed", ops.attention,
         (2 * normal(7, (1, 2, 6, 2)), 2 * normal(8, (1, 1, 6, 2)), normal(9, (1, 1, 6, 2))),
         {"causal": True, "window": 3, "softcap": 0.8}),
    ]


def test_ops():
    rng = np.random.default_rng(1)
    r = rng.standard_normal
    pos = lambda *s: rng.uniform(0.5, 2.0, s)  # noqa: E731  (divisors)
    cases = [
        ("matmul", ops.matmul, (r((2, 3, 4)), r((4, 5))), {}),
        ("matmul transpose_lhs", ops.matmul, (r((2, 4, 3)), r((4, 5))), {"transpose_lhs": True}),
        ("matmul transpose_rhs", ops.matmul, (r((3, 4)), r((5, 4))), {"transpose_rhs": True}),
        ("matmul both", ops.matmul, (r((2, 2, 4, 3)), r((5, 4))),
         {"transpose_lhs": True, "transpose_rhs": True}),
        ("batch_matmul", ops.batch_matmul, (r((2, 3, 4, 5)), r((2, 3, 5, 2))), {}),
        ("batch_matmul transpose_rhs", ops.batch_matmul, (r((2, 3, 4, 5)), r((2, 3, 6, 5))),
         {"transpose_rhs": True}),
        ("batch_matmul transpose_lhs", ops.batch_matmul, (r((3, 5, 4)), r((3, 5, 2))),
         {"transpose_lhs": True}),
        ("add broadcast", ops.add, (r((2, 3, 4)), r((4,))), {}),
        ("add size-1 dims", ops.add, (r((2, 1, 4)), r((3, 1))), {}),
        ("sub broadcast", ops.sub, (r((3, 1)), r((2, 3, 4))), {}),
        ("mul broadcast", ops.mul, (r((2, 3, 4)), r((1, 3, 1))), {}),
        ("div broadcast", ops.div, (r((2, 3, 4)), pos(3, 4)), {}),
        ("scale", ops.scale, (r((3, 4)),), {"factor": 0.25}),
        ("relu", ops.relu, (r((3, 4)),), {}),
        ("gelu", ops.gelu, (2 * r((3, 4)),), {}),
        ("silu", ops.silu, (2 * r((3, 4)),), {}),
        ("tanh", ops.tanh, (r((3, 4)),), {}),
        ("exp", ops.exp, (r((3, 4)),), {}),
        ("softmax dim 1", ops.softmax, (r((2, 5, 3)),), {"dim": 1}),
        ("softmax dim -1", ops.softmax, (r((2, 3, 5)),), {"dim": 2}),
        ("layer_norm", ops.layer_norm, (r((2, 3, 6)), r((6,)), r((6,))), {}),
        ("layer_norm eps", ops.layer_norm, (r((4, 5)), r((5,)), r((5,))), {"eps": 0.1}),
        ("rms_norm", ops.rms_norm, (r((2, 3, 6)), r((6,))), {}),
        ("causal_mask", ops.causal_mask, (r((2, 4, 4)),), {}),
        ("attention causal", ops.attention, (r((2, 2, 5, 3)), r((2, 2, 5, 3)), r((2, 2, 5, 3))),
         {"causal": True}),
        ("attention grouped", ops.attention, (r((1, 4, 3, 2)), r((1, 2, 6, 2)), r((1, 2, 6, 2))),
         {"scale": 0.7}),
        ("attention key blocks of 2", ops.attention,
         (r((1, 4, 5, 2)), r((1, 2, 5, 2)), r((1, 2, 5, 2))), {"causal": True, "key_block": 2}),
        ("attention sliding window 2", ops.attention,
         (r((1, 4, 6, 2)), r((1, 2, 6, 2)), r((1, 2, 6, 2))), {"causal": True, "window": 2}),
        ("reshape", ops.reshape, (r((2, 3, 4)),), {"shape": (2, 3, 2, 2)}),
        ("transpose", ops.transpose, (r((2, 3, 4, 5)),), {"permutation": (0, 2, 1, 3)}),
        ("transpose 3-cycle", ops.transpose, (r((2, 3, 4)),), {"permutation": (2, 0, 1)}),
        ("slice", ops.slice, (r((2, 6, 4)),), {"dim": 1, "offset": 2, "size": 3}),
        ("reduce_sum", ops.reduce_sum, (r((2, 3, 4)),), {"dims": (0, 2)}),
        ("reduce_sum all", ops.reduce_sum, (r((2, 3)),), {"dims": (0, 1)}),
        ("reduce_mean", ops.reduce_mean, (r((2, 3, 4)),), {"dims": (1,)}),
        ("mse", ops.mse, (r((4, 3)), r((4, 3))), {}),
    ]
    for name, op, args, kw in cases + cases_with_own_draws():
        err = ops.check_vjp(op, args, range(len(args)), kw)
        report("vjp " + name, err < 1e-7, "max rel err %.1e" % err)
    # Ops with integer operands (indices, targets): only the float operand is checked.
    tab, idx = r((7, 3)), rng.integers(0, 7, (2, 5))
    idx[0, :2] = 4  # repeated rows exercise the scatter-add
    err = ops.check_vjp(ops.embedding, (tab, idx), [0])
    report("vjp embedding", err < 1e-7, "max rel err %.1e" % err)
    err = ops.check_vjp(ops.cross_entropy, (3 * r((2, 3, 6)), rng.integers(0, 6, (2, 3))), [0])
    report("vjp cross_entropy", err < 1e-7, "max rel err %.1e" % err)
    # A few forward values that differences cannot see.
    m, _ = ops.causal_mask(np.zeros((3, 3)))
    report("causal_mask pattern", np.array_equal(np.isinf(m), np.triu(np.ones((3, 3)), 1) > 0))
    p, _ = ops.softmax(m, 1)
    report("softmax of masked row", np.allclose(p[1], [0.5, 0.5, 0.0]))
    q, k, v = r((2, 4, 5, 3)), r((2, 2, 5, 3)), r((2, 2, 5, 3))
    o, _ = ops.attention(q, k, v, causal=True)
    kb, vb = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)  # key head h // 2 per query head
    sc, _ = ops.causal_mask(ops.scale(ops.batch_matmul(q, kb, transpose_rhs=True)[0],
                                      1 / np.sqrt(3))[0])
    explicit, _ = ops.batch_matmul(ops.softmax(sc, 3)[0], vb)
    report("attention = explicit form (grouped, causal)", np.allclose(o, explicit, atol=1e-13))
    ob, _ = ops.attention(q, k, v, causal=True, key_block=2)
    report("attention in key blocks of 2 = one block", np.allclose(ob, o, atol=1e-13))
    test_rope_forward()
    g, _ = ops.gelu(np.array([1.0]))
    report("gelu(1) tanh form", abs(g[0] - 0.8411919906082768) < 1e-12)
    ce, _ = ops.cross_entropy(np.zeros((4, 10)), np.arange(4))
    report("cross_entropy uniform = ln C", abs(ce - np.log(10)) < 1e-12)
    y, _ = ops.layer_norm(np.array([[1.0, 2.0, 3.0, 4.0]]), np.ones(4), np.zeros(4))
    report("layer_norm biased variance", np.allclose(y, (np.arange(4) - 1.5) / np.sqrt(1.25 + 1e-5)))


def test_rope_forward():
    """fsdp.rope against Hugging Face's form of it: x cos + rotate_half(x) sin, with
    rotate_half([x1, x2]) = [-x2, x1] and cos, sin tables [T, D] of the angles repeated
    for both halves; and Llama 3's scaling at its three kinds of frequency."""
    x = np.random.default_rng(8).standard_normal((2, 7, 3, 8))
    f = ops.rope_frequencies(8, 10000.0).astype(np.float64)
    report("rope frequencies theta^(-2i/D)",
           np.allclose(f, 10000.0 ** (-np.arange(4) / 4), rtol=2 ** -24, atol=0))
    angles = np.float32(np.arange(7)[:, None]) * np.float32(f)[None, :]
    cos = np.tile(np.cos(angles.astype(np.float64)), 2)[None, :, None, :]
    sin = np.tile(np.sin(angles.astype(np.float64)), 2)[None, :, None, :]
    half = np.concatenate([-x[..., 4:], x[..., :4]], axis=-1)
    y, _ = ops.rope(x, 1, 10000.0)
    report("rope = x cos + rotate_half(x) sin", np.allclose(y, x * cos + half * sin, atol=1e-14))
    y0, _ = ops.rope(x[:, :1], 1, 10000.0)
    report("rope at position 0 is the identity", np.array_equal(y0, x[:, :1]))
    # Llama 3.1: theta 500000, factor 8, frequencies bounds 1 and 4 of an 8192 context.
    base = 500000.0 ** (-np.arange(64) / 64)
    scaled = ops.rope_frequencies(128, 500000.0, (8.0, 1.0, 4.0, 8192)).astype(np.float64)
    wavelength = 2 * np.pi / base
    high, low = wavelength < 8192 / 4, wavelength > 8192 / 1
    mid = ~high & ~low
    smooth = (8192 / wavelength[mid] - 1.0) / 3.0
    report("llama3 scaling: short wavelengths kept, long ones / 8, the others between",
           high.any() and low.any() and mid.any()
           and np.allclose(scaled[high], base[high], rtol=2 ** -24, atol=0)
           and np.allclose(scaled[low], base[low] / 8, rtol=2 ** -24, atol=0)
           and np.allclose(scaled[mid], (1 - smooth) * base[mid] / 8 + smooth * base[mid],
                           rtol=2 ** -24, atol=0))


# ---------------------------------------------------------------- 3. models

def test_model_grads():
    rng = np.random.default_rng(2)
    losses = {}
    for model in ALL_MODELS:
        m = models.get(model)
        params = initial_params(model)
        # Both Llamas with the same draws (they must compute the same function).
        rng = np.random.default_rng(7) if model in LABELS else rng
        # Perturb norms/biases away from 1/0 so every gradient path is non-trivial.
        for n in params:
            params[n] = params[n] + 0.05 * rng.standard_normal(params[n].shape)
        inputs = make_data.random_data(m["inputs"], models.batch_size(model), 5)
        loss, grads = m["loss_and_grads"](params, inputs)
        losses[model] = loss, grads
        if sorted(grads) != sorted(n for n, _s, _d in models.trainable(model)):
            report("%s: a gradient of every trainable parameter only" % model_label(model), False)
        worst, h = 0.0, 1e-5
        for n in grads:
            for j in rng.choice(params[n].size, 3, replace=False):
                x0 = params[n].flat[j]
                params[n].flat[j] = x0 + h
                fp = m["loss_and_grads"](params, inputs)[0]
                params[n].flat[j] = x0 - h
                fm = m["loss_and_grads"](params, inputs)[0]
                params[n].flat[j] = x0
                num, ana = (fp - fm) / (2 * h), grads[n].flat[j]
                worst = max(worst, abs(num - ana) / max(1e-3, abs(num), abs(ana)))
        report("%s gradients vs finite differences" % model_label(model), worst < 1e-5,
               "loss %.4f, max rel err %.1e" % (loss, worst))
    # Both attention forms are the same function.
    (flash, gf), (explicit, ge) = losses[LLAMA_FLASH], losses[LLAMA_EXPLICIT]
    worst = max(np.max(np.abs(gf[n] - ge[n])) / np.max(np.abs(ge[n])) for n in ge)
    report("llama: flash attention = explicit form (loss, gradients)",
           abs(flash - explicit) < 1e-12 and worst < 1e-10, "max rel diff %.1e" % worst)
    for bad in ("llama:layers=2", LLAMA + "flash", LLAMA + "explicit,key_block=4",
                LLAMA_FLASH + ",layers=3", LLAMA_FLASH.replace("kv_heads=2", "kv_heads=3"),
                LLAMA_FLASH + ",freeze=model.embed_tokens.weight+rope.cos",
                LLAMA_FLASH.replace("dim=16", "dim=12"), LLAMA_FLASH + ",rope_theta=0"):
        try:
            models.get(bad)
            report("model name %s refused" % bad, False)
        except ValueError:
            pass
    report("llama names: flags of generate_llama.py, partial or inconsistent names refused",
           models.generate_llama_flags(LLAMA_FLASH)[-4:] == ["--attention", "flash",
                                                             "--key-block", "3"]
           and models.generate_llama_flags(LLAMA_EXPLICIT + "+model.norm.weight")[-2:] == [
               "--freeze", "model.embed_tokens.weight,model.norm.weight"]
           and models.get(LLAMA_FLASH.replace("kv_heads", "kv-heads")) is models.get(LLAMA_FLASH))


# ---------------------------------------------------------------- 4. optimizers, data

def test_optim_and_data():
    p, g = {"w": np.array([1.0, -2.0])}, {"w": np.array([0.5, 0.25])}
    opt = optim.AdamW({"weight_decay": 0.1})
    opt.step(p, g, 1, 0.01)
    # step 1: m_hat = g, v_hat = g^2 -> update ~ lr * sign(g), after decay 1 - lr*wd.
    want = np.array([1.0, -2.0]) * (1 - 0.001) - 0.01 * np.array([0.5, 0.25]) / (
        np.array([0.5, 0.25]) + 1e-8)
    ok1 = np.allclose(p["w"], want, rtol=0, atol=1e-15)
    opt.step(p, {"w": np.array([0.5, 0.25])}, 2, 0.01)
    ok2 = np.allclose(p["w"], want * (1 - 0.001) - 0.01 * np.array([1, 1]) / (1 + 1e-8 / g["w"]),
                      atol=1e-12)
    report("adamw steps 1-2", ok1 and ok2)
    p, s = {"w": np.array([1.0])}, optim.SGD({"momentum": 0.9, "weight_decay": 0.5})
    s.step(p, {"w": np.array([1.0])}, 1, 0.1)   # v = 1 + 0.5 = 1.5; p = 0.85
    s.step(p, {"w": np.array([1.0])}, 2, 0.1)   # v = 1.35 + 1 + 0.425 = 2.775
    report("sgd momentum + weight decay", np.isclose(p["w"][0], 0.85 - 0.2775))
    gr = {"a": np.array([3.0]), "b": np.array([4.0])}
    tot = optim.clip_grad_norm(gr, 1.0)
    report("clip_grad_norm", tot == 5.0 and np.isclose(gr["a"][0], 3 / (5 + 1e-6)))
    gr = {"a": np.array([0.3])}
    optim.clip_grad_norm(gr, 1.0)
    report("clip_grad_norm below the limit is a no-op", gr["a"][0] == 0.3)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.bin")
        rng = np.random.default_rng(3)
        f = philox.round_f32(rng.standard_normal((5, 2, 3)))
        bf = philox.round_bf16(rng.standard_normal((5, 4)))
        i32, i64 = rng.integers(0, 9, (5, 2)), rng.integers(0, 9, (5,))
        datafile.write(path, [("f32", f), ("i32", i32), ("bf16", bf), ("i64", i64)])
        specs, arrs = datafile.read(path)
        size = os.path.getsize(path)
        want_size = 8 + 8 + (8 + 16) + (8 + 8) + (8 + 8) + 8 + 8 + 5 * (24 + 8 + 8 + 8)
        ok = (specs == [("f32", (2, 3)), ("i32", (2,)), ("bf16", (4,)), ("i64", ())]
              and all(np.array_equal(a, b) for a, b in zip(arrs, [f, i32, bf, i64]))
              and size == want_size)
        report("data file round trip", ok, "%d bytes" % size)
        batch = datafile.batch(arrs, 3, 4)  # step 3, batch 4: samples 8..11 mod 5
        report("step -> sample mapping", np.array_equal(batch[3], i64[[3, 4, 0, 1]]))
        with open(path, "r+b") as fh:
            fh.truncate(size - 1)
        try:
            datafile.read(path)
            report("short file rejected", False)
        except datafile.DataError as e:
            report("short file rejected", path in str(e))

        # Parameter files (safetensors): flat in manifest order, whatever the file's order;
        # a file without exactly the table's names and shapes is refused.
        path = os.path.join(d, "p.safetensors")
        table = [("z", (2, 3)), ("a", (4,)), ("m.w", ())]
        flat = philox.round_f32(rng.standard_normal(11))
        params_file.write_params(path, table, flat)
        report("params file round trip",
               np.array_equal(params_file.read_params(path, table), flat))
        params_file.write_params(path, table, {"m.w": 1.0, "a": flat[6:10], "z": flat[:6]})
        report("params file from a dict", np.array_equal(
            params_file.read_params(path, table, dtype=np.float32)[:10], flat[:10]))
        for label, other in (("missing", table + [("b", (1,))]), ("extra", table[:2]),
                             ("wrong shape", [("z", (3, 2))] + table[1:])):
            try:
                params_file.read_params(path, other)
                report("params file: %s tensor rejected" % label, False)
            except ValueError as e:
                report("params file: %s tensor rejected" % label, path in str(e), str(e))


# ---------------------------------------------------------------- 5. training

def test_training():
    with tempfile.TemporaryDirectory() as d:
        for model, samples in (("mlp", 512), ("gpt", 64)):
            data, out, export = (os.path.join(d, model + s)
                                 for s in (".bin", ".json", ".safetensors"))
            for args in (["make_data.py", "--model", model, "--samples", str(samples),
                          "--seed", "1", "--out", data, "--synthetic"],
                         ["train.py", "--model", model, "--data", data, "--steps", "20",
                          "--seed", "0", "--out", out, "--export", export]):
                r = subprocess.run([sys.executable] + args, cwd=HERE, capture_output=True,
                                   text=True)
                if r.returncode:
                    report("%s %s" % (model, args[0]), False, r.stderr.strip())
                    return
            losses = json.load(open(out))["losses"]
            table = models.MODELS[model]["params"]
            nparams = sum(int(np.prod(s)) for _n, s, _d, _u, _i in table)
            try:  # every parameter by name and shape, as f32 tensors (the trainer's --export)
                exported = params_file.read_params(export, table)
                stored = {str(a.dtype) for a in load_file(export).values()}
            except ValueError as e:
                report("%s --export" % model, False, str(e))
                return
            ok = (len(losses) == 20 and all(np.isfinite(losses))
                  and np.mean(losses[-3:]) < losses[0] - 0.05
                  and exported.size == nparams and stored == {"float32"})
            report("%s training: loss falls" % model, ok,
                   "step 1 %.4f -> step 20 %.4f" % (losses[0], losses[-1]))
        # Initial loss of an untrained GPT is close to ln(256).
        report("gpt initial loss ~ ln V", abs(losses[0] - np.log(256)) < 0.05)


# ---------------------------------------------------------------- 6. teacher forcing

def simulated_trace(model, arrays, steps, path, mutate=None, sim=None):
    """A trainer's --trace-state and losses, simulated: each step of the float64 reference
    (optim.py) from the float32 state, every result rounded to float32. `mutate(step, what,
    value)` may change a value ("loss", "grads", "coef", "lr", "beta2") to simulate a bug.
    sim: a SimulatedTrainer computing the loss and gradients (bf16 mode)."""
    m = models.get(model)
    cfg = dict(m["optimizer"])
    mutate = mutate or (lambda step, what, value: value)
    f32 = lambda a: a.astype(np.float32).astype(np.float64)  # noqa: E731
    names = [n for n, *_ in m["params"]]
    trained = [n for n, _s, _d in models.trainable(model)]
    params = initial_params(model)
    opt = optim.make(cfg)
    zeros = {n: np.zeros_like(params[n]) for n in names}
    losses = []
    with open(path, "wb") as f:
        def write(grads):
            # Every parameter, then the trainable ones' gradients and state (Runtime.md).
            parts = [params, grads] + [getattr(opt, {"exp_avg": "m", "exp_avg_sq": "v"}[s])
                                       for s in teacher.slot_names(cfg)]
            for i, part in enumerate(parts):
                for n in names if i == 0 else trained:
                    f.write(np.asarray(part.get(n, zeros[n]), dtype="<f4").tobytes())
        write(zeros)
        for step, inputs in datafile.batches(arrays, models.batch_size(model), steps):
            if sim is None:
                loss, grads = models.loss_and_grads(model, params, inputs)
            else:
                result = models.step(model, params, inputs, sim)
                loss, grads = result.loss, result.grads
            losses.append(float(np.float32(mutate(step, "loss", loss))))
            grads = {n: f32(mutate(step, "grads", g)) if n == trained[0] else f32(g)
                     for n, g in grads.items()}
            clipped = {n: g.copy() for n, g in grads.items()}
            if m["clip_grad_norm"] > 0:
                coef = mutate(step, "coef", teacher.clip_coefficient(grads, m["clip_grad_norm"]))
                clipped = {n: g * coef for n, g in clipped.items()}
            opt.cfg["beta2"] = mutate(step, "beta2", cfg["beta2"])
            opt.step(params, clipped, step, mutate(step, "lr", float(np.float32(cfg["lr"]))))
            opt.m = {n: f32(v) for n, v in opt.m.items()}
            opt.v = {n: f32(v) for n, v in opt.v.items()}
            params = {n: f32(v) for n, v in params.items()}
            params = mutate(step, "params", params)
            write(grads)
    return losses


def teacher_case(d, model):
    """(data file, trace file, arrays) of a small data set for `model` in directory d."""
    tag = model_label(model).replace(" ", "-")
    data, trace = os.path.join(d, tag + ".bin"), os.path.join(d, tag + ".trace")
    make_data.main(["--model", model, "--samples", "64", "--seed", "3", "--out", data])
    return data, trace, datafile.read(data)[1]


def check_trace(model, arrays, trace, losses, prec=precision.EXACT, margins=None):
    """teacher.check of a simulated trace with the example's optimizer, lr and clip."""
    m = models.get(model)
    cfg = m["optimizer"]
    return teacher.check(model, arrays, teacher.Trace(trace, model, cfg), losses,
                         float(np.float32(cfg["lr"])), cfg, m["clip_grad_norm"], prec, margins)


def test_teacher():
    steps = 3
    at = lambda k, f: (lambda step, what, value, k=k: f(what, value) if step == k else value)  # noqa: E731
    bugs = {
        "loss": at(2, lambda w, x: x * (1 + 1e-3) if w == "loss" else x),
        "gradient": at(2, lambda w, x: x * 1.01 if w == "grads" else x),
        "exp_avg_sq": at(3, lambda w, x: 0.99 if w == "beta2" else x),
        "params": at(1, lambda w, x: x * 1.001 if w == "lr" else x),
        "clip coefficient": at(2, lambda w, x: x * 0.99 if w == "coef" else x),
        "frozen parameter": at(2, lambda w, x: {n: v * (1 + 2.0 ** -20) if n == "model.embed_tokens.weight"
                                                else v for n, v in x.items()}
                               if w == "params" else x),
    }
    with tempfile.TemporaryDirectory() as d:
        for model in ALL_MODELS:
            _data, trace, arrays = teacher_case(d, model)
            clip = models.get(model)["clip_grad_norm"]

            def check(mutate=None):
                return check_trace(model, arrays, trace,
                                   simulated_trace(model, arrays, steps, trace, mutate))

            rows, failures = check()
            report("teacher: %s, float32 steps pass" % model_label(model),
                   not failures and len(rows) == steps, "; ".join(failures[:2]))
            for what, bug in bugs.items():
                if (what == "clip coefficient" and not clip) or (
                        what == "frozen parameter" and not models.get(model)["frozen"]):
                    continue
                _rows, failures = check(bug)
                report("teacher: %s, a wrong %s fails" % (model_label(model), what),
                       any(what in f for f in failures), "; ".join(failures[:2]) or "no failure")


# ---------------------------------------------------------------- 7. bf16 mixed precision

class SimulatedTrainer(precision.Precision):
    """A bf16 trainer simulated in float32 arithmetic (NumPy's float32 BLAS and sums) with
    the rounding points of `plan`, its products summed in another order than teacher.py's
    float32 calibration (K in 4 blocks, last first), and its gradient reduced as the
    runtime does (each group summed in rank order, a ring), its micro-batches' gradients
    summed in order as the compiled step does. A bug: `skip(point)` keeps those results in
    f32, `inner` rounds those values inside an op, `reduce_in` reduces in that dtype
    whatever the plan says, `accumulate` sums micro-batches the other way. Not a bug:
    `flip` rounds the first step's first ambiguous value the other way, as the
    calibration that flips one does (Precision.flip_nearest)."""

    def __init__(self, plan, skip=lambda point: False, inner=(), reduce_in=None,
                 accumulate=None, flip=False):
        super().__init__(plan.param_dtype, plan.reduce_dtype, plan.grid, plan.strategy,
                         np.float32, plan.micro_batches, accumulate or plan.accumulate)
        self.skip, self.inner_points = skip, set(inner)
        self.reduce_in = reduce_in or plan.reduce_dtype
        self.flips_left = int(flip)

    def round(self, x, point):
        return x if self.skip(point) else super().round(x, point)

    def inner(self, x, point):
        return precision.round_bf16(x) if point in self.inner_points else x

    def matmul(self, a, b):
        out = 0
        for block in reversed(np.array_split(np.arange(a.shape[-1]), 4)):
            out = out + a[..., block] @ b[..., block, :]
        return out

    def accumulate_micro_batches(self, grads):
        k, f32 = len(grads[0]), np.float32
        if self.accumulate == "reduce_scatter" or self.ranks == 1:
            total = None
            for m in range(k):
                v = np.asarray(self.reduce([g[m] for g in grads])[0], f32)
                total = v if total is None else total + v
        else:
            bf16 = self.reduce_in == "bf16"
            sums = []
            for per_micro in grads:
                parts = [np.asarray(g, f32) for g in per_micro]
                parts = [precision.round_bf16(v) for v in parts] if bf16 else parts
                acc = parts[0]
                for v in parts[1:]:
                    acc = precision.round_bf16(acc + v) if bf16 else acc + v
                sums.append(acc)
            total = np.asarray(self.reduce(sums)[0], f32)
        return total / f32(k), None

    def reduce(self, per_rank, slacks=None):
        bf16 = self.reduce_in == "bf16"
        values = [np.asarray(g, dtype=np.float32) for g in per_rank]
        values = [precision.round_bf16(v) for v in values] if bf16 else values
        for size in self.stages:
            out = []
            for i in range(0, len(values), size):
                total = values[i]
                for v in values[i + 1:i + size]:
                    total = precision.round_bf16(total + v) if bf16 else total + v
                mean = total / np.float32(size)
                out.append(precision.round_bf16(mean) if bf16 else mean)
            values = out
        return values[0], None


def test_bf16_ops():
    x = np.array([1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -0.1, np.inf, -np.inf, np.nan, 3.4e38])
    want = np.array([1.0, 1.0 + 2.0 ** -6, -0.10009765625, np.inf, -np.inf, np.nan, np.inf])
    ok = all(np.array_equal(precision.round_bf16(x.astype(t)), want.astype(t), equal_nan=True)
             and precision.round_bf16(x.astype(t)).dtype == t for t in (np.float64, np.float32))
    report("bf16 rounding of float64 and float32 (ties to even, inf, NaN, overflow)", ok)
    # The split gradients (compiled op graph) are the same derivatives: bf16 mode with
    # rounding switched off against finite differences.
    unrounded = precision.Precision("bf16")
    unrounded.round = lambda value, point: value
    rng = np.random.default_rng(4)
    r = rng.standard_normal
    for name, op, args in [("div", ops.div, (r((2, 3, 4)), rng.uniform(0.5, 2, (3, 4)))),
                           ("tanh", ops.tanh, (r((3, 4)),)), ("mse", ops.mse, (r((4, 3)), r((4, 3)))),
                           ("reduce_mean", ops.reduce_mean, (r((2, 3, 4)),), )]:
        kw = {"prec": unrounded, **({"dims": (1,)} if name == "reduce_mean" else {})}
        err = ops.check_vjp(op, args, range(len(args)), kw)
        report("vjp %s as compiled (unrounded)" % name, err < 1e-7, "max rel err %.1e" % err)
    # Every op result of a bf16 step is a bf16 value, and the gradients too.
    for model in ALL_MODELS:
        m = models.get(model)
        params = initial_params(model)
        inputs = make_data.random_data(m["inputs"], models.batch_size(model), 5)
        t = models.Tape(params, precision.Precision("bf16"))
        loss = m["forward"](t, inputs)
        grads = models._finish(t, loss, params)[1]
        values = [v.data for v, _a, _f in t.nodes[:-1]] + list(grads.values())
        report("%s bf16 step: every op result and gradient is a bf16 value" % model_label(model),
               all(np.array_equal(precision.round_bf16(v), v) for v in values))


def test_teacher_bf16():
    configs = [("1 rank", "bf16", (1,), "full_shard", "f32"),
               ("2 ranks reduce f32", "bf16", (2,), "full_shard", "f32"),
               ("2 ranks reduce bf16", "bf16", (2,), "full_shard", "bf16"),
               ("4 ranks reduce bf16", "bf16", (4,), "no_shard", "bf16"),
               ("hybrid 2x2 reduce bf16", "bf16", (2, 2), "hybrid_shard", "bf16"),
               ("f32 params, 2 ranks reduce bf16", "f32", (2,), "full_shard", "bf16"),
               ("2 micro-batches, 2 ranks reduce bf16", "bf16", (2,), "full_shard", "bf16",
                2, "reduce_scatter"),
               ("2 micro-batches no_sync, 2x2 reduce bf16", "bf16", (2, 2), "hybrid_shard",
                "bf16", 2, "no_sync")]
    with tempfile.TemporaryDirectory() as d:
        for model in ("mlp", "gpt", LLAMA_FLASH):
            data, trace, arrays = teacher_case(d, model)
            name = model_label(model)

            def check(plan, sim, steps, mutate=None):
                losses = simulated_trace(model, arrays, steps, trace, mutate, sim)
                margins = []
                _rows, failures = check_trace(model, arrays, trace, losses, plan, margins)
                worst = {k: max(m.get(k, 0.0) for m in margins) for k in margins[0]}
                return failures, "margins %s" % ", ".join("%s %.2f" % kv for kv in worst.items())

            plans = {}
            for label, param, grid, strategy, reduce, *micro in configs:
                plans[label] = plan = precision.Precision(param, reduce, grid, strategy,
                                                          np.float64, *micro)
                failures, margins = check(plan, SimulatedTrainer(plan), 3)
                report("teacher bf16: %s, %s, steps pass" % (name, label), not failures,
                       "; ".join(failures[:2]) or margins)
            one, pair = plans["1 rank"], plans["2 ranks reduce f32"]
            # Where every order rounds alike, a trainer's first flip is a cascade the
            # reorderings never start: without the calibration that flips one value, the
            # Llama's step 1 below is at 6.5 times the pooled bound (0.60 with it).
            failures, margins = check(one, SimulatedTrainer(one, flip=True), 2)
            report("teacher bf16: %s, 1 rank, one value rounded the other way passes" % name,
                   not failures, "; ".join(failures[:2]) or margins)
            bugs = [("forward matmul results not rounded", one,
                     SimulatedTrainer(one, skip=lambda p: p == "matmul")),
                    ("reduced in f32, bf16 asked", plans["2 ranks reduce bf16"],
                     SimulatedTrainer(plans["2 ranks reduce bf16"], reduce_in="f32")),
                    ("reduced in bf16, f32 asked", pair, SimulatedTrainer(pair, reduce_in="bf16")),
                    ("micro-batches summed unreduced (no_sync), reduce_scatter asked",
                     plans["2 micro-batches, 2 ranks reduce bf16"],
                     SimulatedTrainer(plans["2 micro-batches, 2 ranks reduce bf16"],
                                      accumulate="no_sync"))]
            if model == LLAMA_FLASH:
                bugs += [("rotary result kept in f32", one,
                          SimulatedTrainer(one, skip=lambda p: p == "rope")),
                         ("silu result not rounded", one,
                          SimulatedTrainer(one, skip=lambda p: p == "silu"))]
            if model != "mlp":
                bugs += [("attention's log-sum-exp rounded", one,
                          SimulatedTrainer(one, inner=["attention.lse"])),
                         ("residual add kept in f32", one,
                          SimulatedTrainer(one, skip=lambda p: p == "add:residual")),
                         ("residual add kept in f32 on 2 ranks", pair,
                          SimulatedTrainer(pair, skip=lambda p: p == "add:residual"))]
            else:
                bugs += [("logits add kept in f32", one,
                          SimulatedTrainer(one, skip=lambda p: p == "add:logits"))]
            for what, plan, sim in bugs:
                failures, margins = check(plan, sim, 2)
                caught = ", ".join(kind for kind, key in (
                    ("all parameters", "(all parameters)"), ("one parameter", "|excess|"),
                    ("not bf16 values", "not bf16")) if any(key in f for f in failures))
                report("teacher bf16: %s, %s fails" % (name, what), bool(failures),
                       "%s; caught by %s: %s" % (margins, caught, failures[0]) if failures
                       else margins)
            # Wrong values, as in float32 mode (the loss bound is bf16's: 1e-2 off).
            for what, mutate in (("loss", lambda step, w, x: x * 1.01 if w == "loss" else x),
                                 ("gradient", lambda step, w, x: x * 1.01 if w == "grads"
                                  else x)):
                failures, margins = check(one, SimulatedTrainer(one), 2, mutate)
                report("teacher bf16: %s, a wrong %s fails" % (name, what),
                       any(what in f for f in failures),
                       "%s: %s" % (margins, failures[0]) if failures else margins)
            # The command line, as the end-to-end tests run it.
            plan = plans["2 ranks reduce bf16"]
            losses = simulated_trace(model, arrays, 2, trace, sim=SimulatedTrainer(plan))
            log = os.path.join(d, "trainer.log")
            with open(log, "w") as f:
                f.writelines(json.dumps({"step": k, "loss": x}) + "\n"
                             for k, x in enumerate(losses, 1))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = teacher.main(["--model", model, "--data", data, "--trace", trace,
                                   "--log", log, "--param-dtype", "bf16", "--reduce-dtype",
                                   "bf16", "--grid", "2", "--strategy", "full_shard"])
            report("teacher.py --param-dtype bf16 --reduce-dtype bf16 --grid 2: %s" % name,
                   rc == 0 and "PASS" in out.getvalue(), out.getvalue().splitlines()[-1])


def fixture_params(package, directory, table, module):
    """{name: float64 array} of a fixture's checkpoint, named as the model names them."""
    wanted = {n for n, *_ in table}
    params = {}
    for name, ref in package.safetensors_io.checkpoint_tensors(directory).items():
        if name.endswith(module.RECOMPUTED):
            continue
        params[module.checkpoint_name(name, wanted)] = ref.read_f32().astype(np.float64)
    return params


def test_hf_fixtures():
    """The reference's hf: models against transformers' float32 loss. Both compute the same
    function; the float32 roundoff of a 2-layer, width-64 model over 256 classes moves
    the loss by some 1e-7 relative (hf_import_check.py), so 1e-6 holds it with room, while
    any op written wrong (a norm's placement, a split, a rotation) moves it by 1e-3 or
    more."""
    package = models.fsdp_hf()
    for folder in sorted(os.listdir(models.HF_FIXTURES)):
        directory = os.path.join(models.HF_FIXTURES, folder)
        batch = np.load(os.path.join(directory, "batch.npz"))
        tokens, targets = batch["input_ids"], batch["targets"]
        model = models.get("hf:%s,batch=%d,seq=%d" % ((folder,) + tokens.shape))
        spec = package.config.model_spec(package.config.load(directory), tokens.shape[1])
        module = package.family.module(spec)
        params = fixture_params(package, directory, module.parameters(spec), module)
        t = models.Tape(params)
        loss = float(model["forward"](t, (tokens, targets)).data)
        with open(os.path.join(directory, "expected.json")) as f:
            expected = json.load(f)["loss"]
        rel = abs(loss - expected) / abs(expected)
        report("hf: %s: float64 loss %.9g, transformers' %.9g" % (folder, loss, expected),
               rel <= 1e-6, "rel. %.1e" % rel)


if __name__ == "__main__":
    for t in (test_rng, test_ops, test_model_grads, test_optim_and_data, test_training,
              test_teacher, test_bf16_ops, test_teacher_bf16, test_hf_fixtures):
        t()
    print("%d failure(s)%s" % (len(FAILURES), (": " + ", ".join(FAILURES)) if FAILURES else ""))
    sys.exit(1 if FAILURES else 0)
