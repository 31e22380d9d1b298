"""Parameter initialisation RNG of docs/Runtime.md section 3, in NumPy.

Philox4x32-10 (Random123 constants) on arrays of counters, FNV-1a 64 parameter ids,
the uniform and Box-Muller transforms, and round-to-nearest-even to f32 / bf16.

    python3 philox.py      # runs the Random123 known-answer tests
"""
import math
import sys

import numpy as np

M32 = np.uint64(0xFFFFFFFF)
PHILOX_M0, PHILOX_M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85


def philox4x32(c0, c1, c2, c3, k0, k1, rounds=10):
    """Philox4x32-R. c0..c3: arrays (or ints) of 32-bit counter words; k0, k1: ints.

    Words are held in uint64 so that the 32x32 -> 64-bit products are exact.
    Returns four uint64 arrays (each < 2^32)."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) & M32 for c in (c0, c1, c2, c3))
    k0, k1 = k0 & 0xFFFFFFFF, k1 & 0xFFFFFFFF
    for r in range(rounds):
        if r:  # key schedule: bumped between rounds, as in Random123's philox4x32_R
            k0 = (k0 + PHILOX_W0) & 0xFFFFFFFF
            k1 = (k1 + PHILOX_W1) & 0xFFFFFFFF
        p0 = PHILOX_M0 * c0  # hi0:lo0
        p1 = PHILOX_M1 * c2  # hi1:lo1
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & M32,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & M32)
    return c0, c1, c2, c3


def fnv1a64(name):
    """64-bit FNV-1a of the UTF-8 bytes of name."""
    h = 0xcbf29ce484222325
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def uniform(a, b):
    """u(a, b) = ((a >> 5) * 2^26 + (b >> 6) + 0.5) / 2^53, in double.

    The integer part is < 2^53 so it is exact; the + 0.5 is a double addition (for
    integers >= 2^52 it rounds to even, as it does in C), then an exact division."""
    k = ((a >> np.uint64(5)) << np.uint64(26)) + (b >> np.uint64(6))
    return (k.astype(np.float64) + 0.5) / 9007199254740992.0


def box_muller(u1, u2):
    """First Box-Muller output: sqrt(-2 ln u1) * cos(2 pi u2).

    log and cos come from the C library (Python's math module), as in the C++ runtime:
    NumPy's SIMD versions differ from glibc by 1 ulp on ~0.2% of inputs."""
    u1, u2 = np.asarray(u1, dtype=np.float64), np.asarray(u2, dtype=np.float64)
    ln = np.asarray(np.frompyfunc(math.log, 1, 1)(u1), dtype=np.float64)
    cs = np.asarray(np.frompyfunc(math.cos, 1, 1)((2.0 * math.pi) * u2), dtype=np.float64)
    return np.sqrt(-2.0 * ln) * cs


def split64(x):
    """(lo32, hi32) of a non-negative integer or uint64 array."""
    x = np.asarray(x, dtype=np.uint64)
    return x & M32, x >> np.uint64(32)


def words(seed_key, idx, c2, c3):
    """Philox words for key (k0, k1) and counters (lo32(idx), hi32(idx), c2, c3)."""
    lo, hi = split64(idx)
    return philox4x32(lo, hi, c2, c3, *seed_key)


# ---------------------------------------------------------------- rounding to dtypes

def round_f32(x):
    """Double -> nearest f32 (ties to even), returned as float64 values."""
    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)


def round_bf16(x):
    """Double -> nearest bf16 (ties to even), rounded directly from double (no
    intermediate f32 rounding), returned as float64 values. Overflow gives +-inf."""
    x = np.asarray(x, dtype=np.float64)
    _, e = np.frexp(x)                    # x = m 2^e, 0.5 <= |m| < 1
    e = np.maximum(e - 1, -126)           # unbiased exponent; bf16 subnormals below 2^-126
    ulp = np.ldexp(1.0, e - 7)            # 8 significant bits
    r = np.round(x / ulp) * ulp           # np.round: half to even; x / ulp is exact
    bf16_max = (2.0 - 2.0 ** -7) * 2.0 ** 127
    r = np.where(np.abs(r) > bf16_max, np.copysign(np.inf, x), r)
    return np.where(np.isfinite(x), r, x)


def round_to(x, dtype):
    if dtype == "f32":
        return round_f32(x)
    if dtype == "bf16":
        return round_bf16(x)
    raise ValueError("unknown float dtype %r" % dtype)


def bf16_bits(x):
    """uint16 bit patterns of values already exactly representable in bf16."""
    return (np.asarray(x, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_from_bits(bits):
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32).astype(np.float64)


# ---------------------------------------------------------------- parameter init

def init_values(seed, name, shape, init):
    """Initial values in double, before rounding to the parameter dtype."""
    n = int(np.prod(shape, dtype=np.int64))
    kind = init["kind"]
    if kind == "zeros":
        return np.zeros(shape)
    if kind == "ones":
        return np.ones(shape)
    if kind == "constant":
        return np.full(shape, float(init["value"]))
    pid = fnv1a64(name)
    key = (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)
    w0, w1, w2, w3 = words(key, np.arange(n, dtype=np.uint64),
                           pid & 0xFFFFFFFF, pid >> 32)
    u1, u2 = uniform(w0, w1), uniform(w2, w3)
    if kind in ("fan_in_normal", "fan_in_uniform"):
        if len(shape) < 2:
            raise ValueError("%s: %s needs rank >= 2" % (name, kind))
        fan_in = int(np.prod(shape[:-1]))
        scale = float(init.get("scale", 1.0))
    if kind == "normal":
        v = float(init.get("mean", 0.0)) + float(init["std"]) * box_muller(u1, u2)
    elif kind == "uniform":
        lo, hi = float(init["low"]), float(init["high"])
        v = lo + (hi - lo) * u1
    elif kind == "fan_in_normal":
        v = (scale / math.sqrt(fan_in)) * box_muller(u1, u2)
    elif kind == "fan_in_uniform":
        v = (2.0 * u1 - 1.0) * scale / math.sqrt(fan_in)
    else:
        raise ValueError("unknown init kind %r" % kind)
    return v.reshape(shape)


def init_param(seed, name, shape, dtype, init):
    """Initial values of one parameter, rounded to dtype ('f32'/'bf16'), as float64."""
    return round_to(init_values(seed, name, tuple(shape), init), dtype)


# ---------------------------------------------------------------- self-check

KATS = [  # Random123 kat_vectors, philox4x32 10 rounds: (ctr, key, expected)
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def self_check(verbose=True):
    """Returns the number of failures of the KATs and of a few rounding checks."""
    fails = 0
    for ctr, key, want in KATS:
        got = tuple(int(w) for w in philox4x32(*ctr, *key))
        ok = got == want
        fails += not ok
        if verbose:
            print("philox KAT %s: %s" % ("ok" if ok else "FAIL",
                                         " ".join("%08x" % g for g in got)))
    # The vectorised path must agree with the scalar one.
    c = np.array([0, 0xffffffff, 0x243f6a88], dtype=np.uint64)
    vec = philox4x32(c, c, c, c, 0xa4093822, 0x299f31d0)
    for i, ci in enumerate(c):
        sc = philox4x32(int(ci), int(ci), int(ci), int(ci), 0xa4093822, 0x299f31d0)
        fails += any(int(vec[j][i]) != int(sc[j]) for j in range(4))
    # FNV-1a 64 reference values ("" and "a").
    fails += fnv1a64("") != 0xcbf29ce484222325 or fnv1a64("a") != 0xaf63dc4c8601ec8c
    # bf16 rounding: ties to even, direct from double, overflow.
    cases = [(1.0 + 2.0 ** -8, 1.0), (1.0 + 3 * 2.0 ** -8, 1.0 + 2.0 ** -6),
             (1.0 + 2.0 ** -8 + 2.0 ** -40, 1.0 + 2.0 ** -7), (-2.0 ** -133, -2.0 ** -133),
             (2.0 ** -134, 0.0), (3.4e38, np.inf), (0.1, 0.10009765625)]
    for x, want in cases:
        fails += float(round_bf16(x)) != want
    fails += float(round_f32(1.0 + 2.0 ** -24)) != 1.0
    if verbose:
        print("fnv1a64 / rounding checks: %s" % ("ok" if fails == 0 else "FAIL"))
    return fails


if __name__ == "__main__":
    sys.exit(1 if self_check() else 0)
