"""The random numbers of docs/Runtime.md (sections 3 and 4) in plain Python.

An implementation independent of the C++ runtime, written from the contract's
text, so that the end-to-end tests can check the trainer's initial parameters
and synthetic data bit for bit.
"""

import math
import struct

MASK32 = 0xFFFFFFFF


def philox4x32_10(counter, key):
    """Philox4x32-10 with the constants of Random123."""
    x0, x1, x2, x3 = counter
    k0, k1 = key
    for round_index in range(10):
        if round_index:
            k0 = (k0 + 0x9E3779B9) & MASK32
            k1 = (k1 + 0xBB67AE85) & MASK32
        p0 = 0xD2511F53 * x0
        p1 = 0xCD9E8D57 * x2
        x0, x1, x2, x3 = ((p1 >> 32) ^ x1 ^ k0, p1 & MASK32, (p0 >> 32) ^ x3 ^ k1, p0 & MASK32)
    return x0, x1, x2, x3


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def lo32(value):
    return value & MASK32


def hi32(value):
    return (value >> 32) & MASK32


def uniform(a, b):
    return ((a >> 5) * 2.0**26 + (b >> 6) + 0.5) / 2.0**53


def normal(words):
    u1 = uniform(words[0], words[1])
    u2 = uniform(words[2], words[3])
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


def to_f32(value):
    """Round a double to float32 (nearest even), as a Python float."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def init_value(seed, name, shape, init, index):
    """The initial value (double) of element `index` of a parameter."""
    pid = fnv1a64(name)
    words = philox4x32_10((lo32(index), hi32(index), lo32(pid), hi32(pid)), (lo32(seed), hi32(seed)))
    fan_in = math.prod(shape[:-1])
    kind = init["kind"]
    if kind == "zeros":
        return 0.0
    if kind == "ones":
        return 1.0
    if kind == "constant":
        return init["value"]
    if kind == "normal":
        return init["mean"] + init["std"] * normal(words)
    if kind == "uniform":
        return init["low"] + (init["high"] - init["low"]) * uniform(words[0], words[1])
    if kind == "fan_in_normal":
        return (init["scale"] / math.sqrt(fan_in)) * normal(words)
    if kind == "fan_in_uniform":
        return (2 * uniform(words[0], words[1]) - 1) * init["scale"] / math.sqrt(fan_in)
    raise ValueError(kind)


def synthetic_normal(seed, input_index, sample, element):
    """A synthetic `features` element: standard normal (double)."""
    key = (lo32(seed), hi32(seed) ^ 0x5EED5EED)
    return normal(philox4x32_10((lo32(element), hi32(element), lo32(sample), input_index), key))


def teacher_weight(seed, j, c, outputs):
    key = (lo32(seed), hi32(seed) ^ 0x7EAC7EAC)
    e = j * outputs + c
    return normal(philox4x32_10((lo32(e), hi32(e), 0, 0), key))
