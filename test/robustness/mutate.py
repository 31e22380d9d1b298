#!/usr/bin/env python3
"""Mutation (robustness) test for fsdp-opt.

Derives mutated model files from the given examples, deterministically from
--seed, runs fsdp-opt on each and checks that every run either succeeds
(exit 0) or rejects the input cleanly (exit 1 with at least one located
`<file>:<line>:<col>: error:` diagnostic). A crash, a signal, a timeout, an
assertion, a sanitizer report or any other exit status is a failure; the
failing mutant is kept in --out-dir together with its stderr.

Standard library only.
"""

import argparse
import concurrent.futures
import errno
import hashlib
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import OrderedDict

DEFAULT_SEED = 20240521
DEFAULT_COUNT = 240
MIN_MUTANTS = 200
DEFAULT_TIMEOUT = 20.0
EXEC_RETRIES = 30

FORBIDDEN = [
    "Assertion",
    "assertion",
    "AddressSanitizer",
    "UndefinedBehaviorSanitizer",
    "runtime error:",
    "LeakSanitizer",
    "Stack dump",
    "PLEASE submit a bug report",
    "Segmentation fault",
    "LLVM ERROR",
]

TYPES = ["f32", "bf16", "i32", "f64", "i1"]
NUMBER_REPLACEMENTS = [
    "0", "-1", "1e309", "nan", "99999999999999999999", "-0.0", "inf",
    "1.0e-320", "-99999999999999999999", "9223372036854775807",
    "-9223372036854775808", "0x7FF8000000000000", "1",
]
DIM_REPLACEMENTS = [
    "0", "1", "-1", "-7", "99999999999999999999", "9223372036854775807",
    "4294967296", "?", "3", "7", "65536", "2147483648",
]
PUNCTUATION = list("<>{}[](),:=@#%\"!^*-?.+|;'\\$") + ["->", "::", "<<", ">>", "[[", "}}"]
SYMBOL_REPLACEMENTS = ["@nonexistent", "@loss", "@", "@\"\"", "@\"quoted sym\"", "@_", "@1"]
VALUE_REPLACEMENTS = ["%undefined", "%0", "%", "%arg0", "%x#1"]
UNIT_REPLACEMENTS = [
    '""', '"nonexistent"', '"fc1"', '"block0"', '"head"', '"embed"', 'fc1', '"\\00"',
    '"' + "u" * 5000 + '"', '"\\ff\\fe"', '"a\\"b"', '"\u00e9\u6f22"', '0', '@fc1',
]
OPTIMIZERS = [
    "#fsdp.sgd<lr = 0.1>", "#fsdp.sgd<lr = -1.0>", "#fsdp.sgd<lr = 0.1, momentum = 1.5>",
    "#fsdp.sgd<>", "#fsdp.sgd", "#fsdp.adamw<lr = 0.0>", "#fsdp.adamw<lr = nan>",
    "#fsdp.adamw<lr = 1.0e-3, beta1 = 1.0>", "#fsdp.adamw<lr = 1.0e-3, beta2 = -0.5>",
    "#fsdp.adamw<lr = 1.0e-3, eps = 0.0>", "#fsdp.adamw<lr = 1.0e-3, weight_decay = -1.0>",
    "#fsdp.adamw<lr = 1.0e-3, lr = 2.0e-3>", "#fsdp.adamw<weight_decay = 0.1>",
    "#fsdp.zeros", "#fsdp.normal<std = 0.02>", "1.0", "unit", "\"adamw\"",
    "#fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>", "#fsdp.adamw<lr = 1e309>",
]
PLAN_FIELD_VALUES = OrderedDict([
    ("grid", ["[]", "[0]", "[-1]", "[1]", "[3]", "[2, 4]", "[2, 0]", "[0, 2]", "[2, 2, 2]",
              "[99999999999999999999]", "[4294967296, 4294967296]",
              "[9223372036854775807, 2]", "2", "[2.5]", "[?]", "[2,]"]),
    ("strategy", ["full_shard", "shard_grad_op", "no_shard", "hybrid_shard", "bogus",
                  "0", "\"full_shard\""]),
    ("optimizer", OPTIMIZERS),
    ("param_dtype", ["f32", "bf16", "i32", "f64", "bogus"]),
    ("reduce_dtype", ["f32", "bf16", "i1", "f16"]),
    ("clip_grad_norm", ["0.0", "-1.0", "1e309", "nan", "inf", "1", "99999999999999999999"]),
    ("prefetch", ["0", "-1", "99999999999999999999", "9223372036854775807", "1.5", "3"]),
    ("max_inflight_gathers", ["0", "-5", "1", "99999999999999999999", "-9223372036854775808"]),
    ("remat", ["none", "selective", "unit", "bogus"]),
    ("units", ["explicit", "auto_wrap", "bogus"]),
    ("min_unit_params", ["0", "-1", "1", "1000000", "99999999999999999999",
                         "9223372036854775807"]),
    ("bogus_field", ["1"]),
])
INIT_REPLACEMENTS = [
    "#fsdp.normal<std = 0.02>", "#fsdp.normal<>", "#fsdp.normal", "#fsdp.normal<std = -1.0>",
    "#fsdp.normal<std = 0.0>", "#fsdp.normal<std = nan>", "#fsdp.normal<std = 1e309>",
    "#fsdp.normal<mean = 1.0>", "#fsdp.normal<mean = 1.0, std = 0.02, mean = 2.0>",
    "#fsdp.normal<std = 0.02, bogus = 1.0>", "#fsdp.normal<0.02>", "#fsdp.normal<std 0.02>",
    "#fsdp.uniform<low = 1.0, high = 0.0>", "#fsdp.uniform<low = 0.0>",
    "#fsdp.uniform<low = -inf, high = inf>", "#fsdp.constant<1.0>", "#fsdp.constant<nan>",
    "#fsdp.constant<>", "#fsdp.constant", "#fsdp.zeros<>", "#fsdp.zeros<1.0>", "#fsdp.ones",
    "#fsdp.fan_in_uniform", "#fsdp.fan_in_uniform<scale = -1.0>",
    "#fsdp.fan_in_uniform<scale = 0.0>", "#fsdp.fan_in_normal<scale = 1e309>",
    "#fsdp.fan_in_normal", "#fsdp.bogus", "#fsdp.adamw<lr = 1.0>", "#fsdp.plan<grid = [2]>",
    "#fsdp", "#fsdp.", "0.0", "unit", "dense<0.0> : tensor<f32>", "#fsdp.sgd<lr = 0.1>",
]
OP_GROUPS = [
    ["matmul", "batch_matmul", "add", "sub", "mul", "div", "cross_entropy", "mse", "embedding"],
    ["relu", "gelu", "silu", "tanh", "exp", "causal_mask", "scale", "softmax", "rope"],
    ["layer_norm", "rms_norm"],
    ["transpose", "reduce_sum", "reduce_mean", "reshape", "slice"],
    ["use", "param"],
]
ALL_OPS = sorted({op for group in OP_GROUPS for op in group})

TOKEN_RE = re.compile(
    r'"(?:[^"\\\n]|\\.)*"'            # string literal
    r"|[%@#^][\w.$\-]*"               # SSA value, symbol, attribute alias, block
    r"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"  # number
    r"|[A-Za-z_][\w.$]*"              # identifier / keyword
    r"|->|::"                         # multi-char punctuation
    r"|\S"                            # any other single character
)
# Free-standing numeric literals (not dimensions like the 64 in 64x32xf32, and
# not digits that are part of identifiers like %b0 or @fc1).
NUMBER_RE = re.compile(r"(?<![\w.$%@#-])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
TYPE_RE = re.compile(r"(?:(?<=x)|(?<![\w.$%@#\"]))(f32|bf16|i32|f64|i1)(?![\w.])")
TENSOR_RE = re.compile(r"tensor<([^<>]*)>")
SYMBOL_RE = re.compile(r"@[\w.$\-]+")
VALUE_RE = re.compile(r"%[\w.$\-]+")
UNIT_RE = re.compile(r'unit\s+("[^"\n]*")')
INIT_RE = re.compile(r"#fsdp\.(?:normal|uniform|constant|zeros|ones|fan_in_normal|fan_in_uniform)"
                     r"(?:<[^<>\n]*>)?")
OP_RE = re.compile(r"\bfsdp\.(" + "|".join(sorted(ALL_OPS, key=len, reverse=True)) + r")\b")


class Skip(Exception):
    """The chosen mutation does not apply to this input."""


# ----------------------------------------------------------------------------
# Helpers over the source text.
# ----------------------------------------------------------------------------

def code_mask(text):
    """List of (start, end) character ranges that are code, not // comments."""
    ranges = []
    pos = 0
    for line in text.splitlines(keepends=True):
        end = pos + len(line.rstrip("\n"))
        cut = end
        in_str = False
        i = pos
        while i < end:
            c = text[i]
            if in_str:
                if c == "\\":
                    i += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == "/" and i + 1 < end and text[i + 1] == "/":
                cut = i
                break
            i += 1
        if cut > pos:
            ranges.append((pos, cut))
        pos += len(line)
    return ranges


def in_code(ranges, start, end):
    return any(s <= start and end <= e for s, e in ranges)


def code_matches(regex, text, group=0):
    ranges = code_mask(text)
    out = []
    for m in regex.finditer(text):
        if in_code(ranges, m.start(group), m.end(group)):
            out.append(m)
    return out


def tokens(text):
    return code_matches(TOKEN_RE, text)


def code_lines(text):
    """Indices of lines that contain code (not blank, not comment only)."""
    lines = text.splitlines(keepends=True)
    return lines, [i for i, l in enumerate(lines) if l.strip() and not l.strip().startswith("//")]


def splice(text, start, end, new):
    return text[:start] + new + text[end:]


def line_col(text, offset):
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def short(s, n=60):
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 3] + "..."


def where(text, offset):
    return "%d:%d" % line_col(text, offset)


def find_balanced(text, open_pos):
    """Given the index of a '<', return the index of its matching '>'."""
    depth = 0
    i = open_pos
    while i < len(text):
        c = text[i]
        if c == "<":
            depth += 1
        elif c == ">" and not (i > 0 and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise Skip("unbalanced <")


def split_top_level(body):
    parts, depth, cur = [], 0, []
    for c in body:
        if c in "<[({":
            depth += 1
        elif c in ">])}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


# ----------------------------------------------------------------------------
# Mutators. Each takes (rng, text) and returns (new_text, description).
# ----------------------------------------------------------------------------

def m_delete_token(rng, text):
    toks = tokens(text)
    if not toks:
        raise Skip("no tokens")
    t = rng.choice(toks)
    return splice(text, t.start(), t.end(), ""), "deleted token %r at %s" % (
        short(t.group()), where(text, t.start()))


def m_delete_line(rng, text):
    lines, idx = code_lines(text)
    if not idx:
        raise Skip("no lines")
    i = rng.choice(idx)
    desc = "deleted line %d: %s" % (i + 1, short(lines[i].strip()))
    del lines[i]
    return "".join(lines), desc


def m_truncate(rng, text):
    lines = text.splitlines(keepends=True)
    if rng.random() < 0.5:
        i = rng.randrange(1, len(lines))
        off = sum(len(l) for l in lines[:i])
        return text[:off], "truncated before line %d" % (i + 1)
    ranges = code_mask(text)
    s, e = rng.choice(ranges)
    off = rng.randrange(s, e + 1)
    return text[:off], "truncated mid-line at %s" % where(text, off)


def m_swap_type(rng, text):
    ms = code_matches(TYPE_RE, text, 1)
    if not ms:
        raise Skip("no types")
    m = rng.choice(ms)
    old = m.group(1)
    new = rng.choice([t for t in TYPES if t != old])
    r = rng.random()
    if r < 0.2:
        # Every occurrence in the file, so that types stay consistent between
        # definitions and uses and the mutant reaches the verifiers.
        lines = [TYPE_RE.sub(lambda mm: new if mm.group(1) == old else mm.group(0), l)
                 for l in text.splitlines(keepends=True)]
        return "".join(lines), "swapped every %s in the file to %s" % (old, new)
    if r < 0.4:
        # Every element type on that line, to keep operands consistent.
        ln = text.count("\n", 0, m.start()) + 1
        lines = text.splitlines(keepends=True)
        lines[ln - 1] = TYPE_RE.sub(lambda mm: new if mm.group(1) == old else mm.group(0),
                                    lines[ln - 1])
        return "".join(lines), "swapped every %s on line %d to %s" % (old, ln, new)
    return (splice(text, m.start(1), m.end(1), new),
            "swapped type %s -> %s at %s" % (old, new, where(text, m.start(1))))


def tensor_dims(text):
    """(start, end) of every dimension literal inside a tensor<...> in code."""
    out = []
    for m in code_matches(TENSOR_RE, text):
        body_start = m.start(1)
        for d in re.finditer(r"(\d+)x", m.group(1)):
            out.append((body_start + d.start(1), body_start + d.end(1)))
    return out


def m_change_dim(rng, text):
    dims = tensor_dims(text)
    if not dims:
        raise Skip("no dims")
    s, e = rng.choice(dims)
    old = text[s:e]
    choices = [d for d in DIM_REPLACEMENTS if d != old]
    choices.append(str(int(old) + rng.choice([1, 2, int(old)])))
    new = rng.choice(choices)
    if rng.random() < 0.35:
        # Change that tensor type everywhere it occurs, consistently.
        m = next(t for t in code_matches(TENSOR_RE, text) if t.start() <= s < t.end())
        ty = m.group()
        new_ty = text[m.start():s] + new + text[e:m.end()]
        return text.replace(ty, new_ty), "every %s -> %s" % (ty, new_ty)
    return splice(text, s, e, new), "dimension %s -> %s at %s" % (old, new, where(text, s))


def m_change_rank(rng, text):
    ms = code_matches(TENSOR_RE, text)
    if not ms:
        raise Skip("no tensors")
    m = rng.choice(ms)
    body = m.group(1)
    parts = body.split("x")
    dims, elt = parts[:-1], parts[-1]
    r = rng.random()
    if r < 0.4 and dims:
        del dims[rng.randrange(len(dims))]
        what = "dropped a dimension"
    elif r < 0.8:
        dims.insert(rng.randrange(len(dims) + 1), rng.choice(["1", "2", "4", "0"]))
        what = "added a dimension"
    else:
        dims = ["1"] * rng.choice([7, 9, 33])
        what = "made the rank huge"
    new = "x".join(dims + [elt])
    if rng.random() < 0.3:
        old_ty, new_ty = "tensor<%s>" % body, "tensor<%s>" % new
        return text.replace(old_ty, new_ty), "%s: every %s -> %s" % (what, old_ty, new_ty)
    return (splice(text, m.start(1), m.end(1), new),
            "%s: tensor<%s> -> tensor<%s> at %s" % (what, body, new, where(text, m.start())))


def m_swap_tokens(rng, text):
    toks = tokens(text)
    if len(toks) < 2:
        raise Skip("too few tokens")
    for _ in range(20):
        i = rng.randrange(len(toks))
        if rng.random() < 0.6:
            j = min(len(toks) - 1, max(0, i + rng.choice([-3, -2, -1, 1, 2, 3])))
        else:
            j = rng.randrange(len(toks))
        a, b = sorted((i, j))
        ta, tb = toks[a], toks[b]
        if a != b and ta.group() != tb.group():
            new = (text[: ta.start()] + tb.group() + text[ta.end(): tb.start()] + ta.group()
                   + text[tb.end():])
            return new, "swapped tokens %r at %s and %r at %s" % (
                short(ta.group()), where(text, ta.start()), short(tb.group()),
                where(text, tb.start()))
    raise Skip("no distinct tokens")


def m_swap_lines(rng, text):
    lines, idx = code_lines(text)
    if len(idx) < 2:
        raise Skip("too few lines")
    i = rng.choice(idx)
    if rng.random() < 0.6:
        near = [k for k in idx if k != i and abs(k - i) <= 3]
        j = rng.choice(near) if near else rng.choice([k for k in idx if k != i])
    else:
        j = rng.choice([k for k in idx if k != i])
    if lines[i] == lines[j]:
        raise Skip("identical lines")
    li, lj = lines[i], lines[j]
    # Keep line terminators in place so the last line stays well formed.
    lines[i] = lj.rstrip("\n") + ("\n" if li.endswith("\n") else "")
    lines[j] = li.rstrip("\n") + ("\n" if lj.endswith("\n") else "")
    return "".join(lines), "swapped lines %d and %d" % (i + 1, j + 1)


def m_duplicate_line(rng, text):
    lines, idx = code_lines(text)
    i = rng.choice(idx)
    line = lines[i] if lines[i].endswith("\n") else lines[i] + "\n"
    lines.insert(i + 1, line)
    return "".join(lines), "duplicated line %d: %s" % (i + 1, short(line.strip()))


def m_replace_number(rng, text):
    ms = code_matches(NUMBER_RE, text)
    if not ms:
        raise Skip("no numbers")
    m = rng.choice(ms)
    new = rng.choice([n for n in NUMBER_REPLACEMENTS if n != m.group()])
    return splice(text, m.start(), m.end(), new), "number %s -> %s at %s" % (
        m.group(), new, where(text, m.start()))


def m_rename_symbol(rng, text):
    ms = code_matches(SYMBOL_RE, text)
    if not ms:
        raise Skip("no symbols")
    m = rng.choice(ms)
    others = sorted({x.group() for x in ms if x.group() != m.group()})
    choices = list(SYMBOL_REPLACEMENTS)
    if others:
        choices += [rng.choice(others)] * 3
    new = rng.choice([c for c in choices if c != m.group()])
    return splice(text, m.start(), m.end(), new), "symbol %s -> %s at %s" % (
        m.group(), new, where(text, m.start()))


def m_rename_value(rng, text):
    ms = code_matches(VALUE_RE, text)
    if not ms:
        raise Skip("no values")
    m = rng.choice(ms)
    others = sorted({x.group() for x in ms if x.group() != m.group()})
    choices = list(VALUE_REPLACEMENTS)
    if others:
        choices += [rng.choice(others)] * 4
    new = rng.choice([c for c in choices if c != m.group()])
    return splice(text, m.start(), m.end(), new), "value %s -> %s at %s" % (
        m.group(), new, where(text, m.start()))


def m_attr_plan(rng, text):
    start = text.find("#fsdp.plan<")
    if start < 0:
        raise Skip("no plan")
    lt = start + len("#fsdp.plan")
    gt = find_balanced(text, lt)
    fields = split_top_level(text[lt + 1: gt])
    names = [f.split("=", 1)[0].strip() for f in fields]
    r = rng.random()
    if r < 0.25 and fields:
        k = rng.randrange(len(fields))
        desc = "dropped plan field %r" % short(fields[k])
        del fields[k]
    elif r < 0.35 and fields:
        k = rng.randrange(len(fields))
        fields.insert(rng.randrange(len(fields) + 1), fields[k])
        desc = "duplicated plan field %r" % short(fields[k])
    elif r < 0.45 and len(fields) > 1:
        rng.shuffle(fields)
        desc = "shuffled plan fields"
    else:
        name = rng.choice(list(PLAN_FIELD_VALUES))
        value = rng.choice(PLAN_FIELD_VALUES[name])
        field = "%s = %s" % (name, value)
        if name in names:
            fields[names.index(name)] = field
            desc = "plan field set to %r" % short(field)
        else:
            fields.append(field)
            desc = "plan field added %r" % short(field)
        if rng.random() < 0.3:
            extra = rng.choice(list(PLAN_FIELD_VALUES))
            fields.append("%s = %s" % (extra, rng.choice(PLAN_FIELD_VALUES[extra])))
            desc += " and %r" % short(fields[-1])
    new = "<" + ", ".join(fields) + ">"
    if rng.random() < 0.1:
        name_at = text.rfind("fsdp.plan", 0, start)
        if name_at >= 0:
            bad = rng.choice(["fsdp.plans", "fsdp.pla", "plan", "fsdp.plan.x"])
            text2 = splice(text, lt, gt + 1, new)
            return (splice(text2, name_at, name_at + len("fsdp.plan"), bad),
                    desc + "; attribute renamed to %s" % bad)
    return splice(text, lt, gt + 1, new), desc


def m_attr_init(rng, text):
    ms = code_matches(INIT_RE, text)
    if not ms:
        raise Skip("no initializers")
    m = rng.choice(ms)
    new = rng.choice([x for x in INIT_REPLACEMENTS if x != m.group()])
    if rng.random() < 0.15:
        # Drop the initializer entirely.
        eq = text.rfind("=", 0, m.start())
        return splice(text, eq, m.end(), ""), "dropped initializer %s at %s" % (
            m.group(), where(text, m.start()))
    return splice(text, m.start(), m.end(), new), "initializer %s -> %s at %s" % (
        m.group(), short(new), where(text, m.start()))


def m_attr_unit(rng, text):
    ms = code_matches(UNIT_RE, text, 1)
    if not ms:
        raise Skip("no units")
    m = rng.choice(ms)
    r = rng.random()
    if r < 0.2:
        return (splice(text, m.start(), m.end(), ""),
                "dropped `unit %s` at %s" % (m.group(1), where(text, m.start())))
    if r < 0.3:
        kw = rng.choice(["units", "Unit", "frozen", "unit unit"])
        return (splice(text, m.start(), m.start() + 4, kw),
                "keyword unit -> %s at %s" % (kw, where(text, m.start())))
    others = sorted({x.group(1) for x in ms if x.group(1) != m.group(1)})
    choices = UNIT_REPLACEMENTS + others
    new = rng.choice([c for c in choices if c != m.group(1)])
    return splice(text, m.start(1), m.end(1), new), "unit %s -> %s at %s" % (
        m.group(1), short(new), where(text, m.start(1)))


def m_swap_op(rng, text):
    ms = code_matches(OP_RE, text, 1)
    if not ms:
        raise Skip("no ops")
    m = rng.choice(ms)
    old = m.group(1)
    group = next(g for g in OP_GROUPS if old in g)
    pool = [o for o in group if o != old] if rng.random() < 0.8 else [
        o for o in ALL_OPS + ["bogus", "func", "Matmul"] if o != old]
    new = rng.choice(pool)
    return splice(text, m.start(1), m.end(1), new), "op fsdp.%s -> fsdp.%s at %s" % (
        old, new, where(text, m.start()))


def m_op_flag(rng, text):
    """Add, remove or alter an optional keyword/attribute of an operation."""
    cands = []
    for m in code_matches(re.compile(r"fsdp\.(?:batch_)?matmul (%[\w.]+), (%[\w.]+)"), text):
        cands.append(("matmul", m))
    for m in code_matches(re.compile(r" transpose_rhs"), text):
        cands.append(("drop", m))
    for m in code_matches(re.compile(r"fsdp\.layer_norm %[\w.]+, %[\w.]+, %[\w.]+"), text):
        cands.append(("eps", m))
    for m in code_matches(re.compile(r"fsdp\.param "), text):
        cands.append(("param", m))
    for m in code_matches(re.compile(r"(?:dim \d+|\[\d+(?:, \d+)*\]) :"), text):
        cands.append(("list", m))
    for m in code_matches(re.compile(r" : tensor<"), text):
        cands.append(("attrdict", m))
    if not cands:
        raise Skip("no op flags")
    kind, m = rng.choice(cands)
    at = where(text, m.start())
    if kind == "matmul":
        flag = rng.choice([" transpose_lhs", " transpose_rhs", " transpose_lhs transpose_rhs",
                           " transpose_rhs transpose_lhs", " transpose_lhs transpose_lhs"])
        return splice(text, m.end(), m.end(), flag), "added%s at %s" % (flag, at)
    if kind == "drop":
        return splice(text, m.start(), m.end(), ""), "dropped transpose_rhs at %s" % at
    if kind == "eps":
        eps = rng.choice(["0.0", "-1.0", "1e309", "nan", "1.0e-5", "1", "-0.0"])
        return splice(text, m.end(), m.end(), " eps " + eps), "added eps %s at %s" % (eps, at)
    if kind == "param":
        return splice(text, m.end(), m.end(), "frozen "), "marked param frozen at %s" % at
    if kind == "list":
        body = m.group()
        if body.startswith("dim"):
            new = "dim " + rng.choice(["0", "4", "-1", "99999999999999999999", "1"]) + " :"
        else:
            new = rng.choice(["[0, 1, 2, 3]", "[0, 0, 1, 3]", "[3, 2, 1, 0, 4]", "[]",
                              "[0, 2, 1]", "[0, 2, 1, -1]", "[0, 2, 1, 99999999999999999999]",
                              "[0, 2, 1, 4]"]) + " :"
        return splice(text, m.start(), m.end(), new), "%r -> %r at %s" % (body, new, at)
    attr = rng.choice(["{}", "{foo}", "{transpose_rhs}", "{eps = 1.0 : f32}",
                       "{dim = 99 : i64}", "{permutation = array<i64: 0>}",
                       "{sym_name = \"x\"}", "{param = @nonexistent}", "{unit = 1 : i32}"])
    return splice(text, m.start(), m.start(), " " + attr), "added attr-dict %s at %s" % (
        attr, at)


def m_insert_punct(rng, text):
    ranges = code_mask(text)
    out = text
    descs = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        s, e = rng.choice(ranges)
        off = rng.randrange(s, e + 1)
        p = rng.choice(PUNCTUATION)
        descs.append("%r at %s" % (p, where(out, off)))
        out = splice(out, off, off, p)
        ranges = code_mask(out)
    return out, "inserted " + ", ".join(descs)


COMBINABLE = ["swap_type", "change_dim", "change_rank", "replace_number", "rename_symbol",
              "rename_value", "attr_plan", "attr_init", "attr_unit", "swap_op", "op_flag",
              "swap_lines", "duplicate_line", "delete_line"]


def m_combo(rng, text):
    """Two or three of the structure-preserving mutations, one after another."""
    descs = []
    for kind in rng.sample(COMBINABLE, rng.choice([2, 2, 3])):
        try:
            text, desc = MUTATORS[kind](rng, text)
        except Skip:
            continue
        descs.append("%s: %s" % (kind, desc))
    if not descs:
        raise Skip("nothing applied")
    return text, " + ".join(descs)


MUTATORS = OrderedDict([
    ("delete_token", m_delete_token),
    ("delete_line", m_delete_line),
    ("truncate", m_truncate),
    ("swap_type", m_swap_type),
    ("change_dim", m_change_dim),
    ("change_rank", m_change_rank),
    ("swap_tokens", m_swap_tokens),
    ("swap_lines", m_swap_lines),
    ("duplicate_line", m_duplicate_line),
    ("replace_number", m_replace_number),
    ("rename_symbol", m_rename_symbol),
    ("rename_value", m_rename_value),
    ("attr_plan", m_attr_plan),
    ("attr_init", m_attr_init),
    ("attr_unit", m_attr_unit),
    ("swap_op", m_swap_op),
    ("op_flag", m_op_flag),
    ("insert_punct", m_insert_punct),
    ("combo", m_combo),
])


# ----------------------------------------------------------------------------
# Generation and running.
# ----------------------------------------------------------------------------

class Mutant(object):
    def __init__(self, index, kind, source, text, desc):
        self.index = index
        self.kind = kind
        self.source = source
        self.text = text
        self.desc = desc
        self.path = None
        self.cmd = None
        self.status = None  # "accepted", "rejected" or "failed"
        self.why = None
        self.returncode = None
        self.stderr = ""


def generate(sources, count, seed):
    """Deterministically derive `count` distinct mutants from `sources`."""
    kinds = list(MUTATORS)
    seen = {hashlib.sha256(t.encode()).hexdigest() for _, t in sources}
    mutants = []
    for i in range(count):
        kind = kinds[i % len(kinds)]
        src_name, src_text = sources[(i // len(kinds)) % len(sources)]
        made = None
        for attempt in range(100):
            rng = random.Random("%s/%d/%d" % (seed, i, attempt))
            # After many failed attempts on this input, try the other inputs.
            if attempt >= 50:
                src_name, src_text = sources[attempt % len(sources)]
            try:
                text, desc = MUTATORS[kind](rng, src_text)
            except Skip:
                continue
            h = hashlib.sha256(text.encode()).hexdigest()
            if h in seen:
                continue
            seen.add(h)
            made = Mutant(i, kind, src_name, text, desc)
            break
        if made is not None:
            mutants.append(made)
    return mutants


def signal_name(num):
    try:
        return signal.Signals(num).name
    except (ValueError, AttributeError):
        return "signal %d" % num


def located_error_re(path):
    return re.compile(r"^" + re.escape(path) + r":(\d+):(\d+): error:", re.M)


def execute(cmd, timeout):
    """Runs cmd; retries for a while if the binary cannot be executed, since
    it may be in the middle of being relinked by a concurrent build."""
    for attempt in range(EXEC_RETRIES + 1):
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            if attempt == EXEC_RETRIES or e.errno not in (errno.ENOENT, errno.EACCES,
                                                          errno.ETXTBSY, errno.ENOEXEC):
                raise
            time.sleep(1.0)
            continue
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # Kill the whole process group, so no helper keeps stderr open.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            _, err = proc.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, stderr=err)
        return subprocess.CompletedProcess(cmd, proc.returncode, None, err)


def run_one(fsdp_opt, mutant, timeout, tool_args=()):
    mutant.cmd = [fsdp_opt, mutant.path, *tool_args]
    try:
        proc = execute(mutant.cmd, timeout)
    except subprocess.TimeoutExpired as e:
        mutant.status = "failed"
        mutant.why = "timed out after %gs" % timeout
        err = e.stderr or b""
        mutant.stderr = err.decode("utf-8", "replace") if isinstance(err, bytes) else err
        return mutant
    except OSError as e:
        mutant.status = "failed"
        mutant.why = "could not execute: %s" % e
        return mutant
    mutant.returncode = proc.returncode
    mutant.stderr = proc.stderr.decode("utf-8", "replace")
    problems = []
    if proc.returncode < 0:
        problems.append("killed by %s" % signal_name(-proc.returncode))
    elif proc.returncode not in (0, 1):
        problems.append("exit status %d" % proc.returncode)
    found = [f for f in FORBIDDEN if f in mutant.stderr]
    if found:
        problems.append("stderr contains %s" % ", ".join(repr(f) for f in found))
    if proc.returncode == 1 and not found:
        nlines = mutant.text.count("\n") + 1
        locs = [(int(l), int(c)) for l, c in located_error_re(mutant.path).findall(mutant.stderr)]
        if not locs:
            problems.append("exit status 1 without a located '%s:<line>:<col>: error:'"
                            % mutant.path)
        elif not any(1 <= l <= nlines and c >= 1 for l, c in locs):
            problems.append("error location(s) %s outside the input (%d lines)"
                            % (", ".join("%d:%d" % lc for lc in locs), nlines))
    if problems:
        mutant.status = "failed"
        mutant.why = "; ".join(problems)
    else:
        mutant.status = "accepted" if proc.returncode == 0 else "rejected"
    return mutant


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fsdp-opt", required=True, help="path (or name on PATH) of fsdp-opt")
    ap.add_argument("--out-dir", required=True, help="where mutants are written; failing "
                    "ones are kept")
    ap.add_argument("--count", type=int, default=DEFAULT_COUNT,
                    help="number of mutants (default %(default)s)")
    ap.add_argument("--seed", default=str(DEFAULT_SEED), help="seed (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help="per-run timeout in seconds (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="parallel runs (default: os.cpu_count())")
    ap.add_argument("--keep-all", action="store_true", help="keep passing mutants too")
    ap.add_argument("--min-count", type=int, default=MIN_MUTANTS,
                    help="fail when fewer mutants run (default %(default)s)")
    ap.add_argument("--tool-arg", action="append", default=[], dest="tool_args",
                    help="an argument passed to the tool after the mutant (repeatable), "
                         "e.g. to run fsdpc or a pass pipeline instead of plain parsing")
    ap.add_argument("inputs", nargs="+", help="example .mlir files to mutate")
    return ap.parse_args(argv)


def resolve_tool(fsdp_opt):
    """The tool's absolute path when it exists (a bare name looked up on PATH)."""
    if os.sep not in fsdp_opt:
        fsdp_opt = shutil.which(fsdp_opt) or fsdp_opt
    return os.path.abspath(fsdp_opt) if os.path.exists(fsdp_opt) else fsdp_opt


def read_sources(inputs):
    sources = []
    for path in inputs:
        with open(path, encoding="utf-8") as f:
            sources.append((path, f.read()))
    return sources


def prepare_out_dir(out_dir):
    out_dir = os.path.abspath(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        os.remove(out_dir)  # e.g. a stale lit %t file
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):  # remove only our own leftovers
        if re.match(r"mutant-\d+-[\w-]+\.mlir(\.stderr)?$", name):
            os.remove(os.path.join(out_dir, name))
    return out_dir


def write_mutants(mutants, out_dir):
    for m in mutants:
        base = os.path.splitext(os.path.basename(m.source))[0]
        m.path = os.path.join(out_dir, "mutant-%04d-%s-%s.mlir" % (m.index, m.kind, base))
        with open(m.path, "w", encoding="utf-8") as f:
            f.write(m.text)


def baseline_mutants(sources):
    baseline = []
    for name, text in sources:
        b = Mutant(-1, "original", name, text, "unmodified input")
        b.path = os.path.abspath(name)
        baseline.append(b)
    return baseline


def run_all(fsdp_opt, args, baseline, mutants):
    """Runs the baseline, then the mutants, args.jobs at a time; returns both, run."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        run = lambda m: run_one(fsdp_opt, m, args.timeout, args.tool_args)
        baseline = list(pool.map(run, baseline))
        done = list(pool.map(run, mutants))
    return baseline, done


def keep_failing_mutants(done, keep_all):
    """Writes each failing mutant's stderr beside it; removes the others unless keep_all."""
    for m in done:
        if m.status == "failed":
            with open(m.path + ".stderr", "w", encoding="utf-8") as f:
                f.write("# %s: %s\n# from %s (%s)\n# %s\n" % (
                    m.kind, m.why, m.source, m.desc, " ".join(shlex.quote(c) for c in m.cmd)))
                f.write(m.stderr)
        elif not keep_all:
            os.remove(m.path)


def print_summary(args, fsdp_opt, sources, done, baseline):
    """Prints the counts per kind of mutation and the baseline's outcome; returns the totals
    [mutants, accepted, rejected, failed]."""
    per_kind = OrderedDict((k, [0, 0, 0, 0]) for k in MUTATORS)
    for m in done:
        row = per_kind[m.kind]
        row[0] += 1
        row[{"accepted": 1, "rejected": 2, "failed": 3}[m.status]] += 1
    total = [sum(r[i] for r in per_kind.values()) for i in range(4)]
    print("fsdp-opt robustness: seed %s, %s, %d inputs" % (args.seed, fsdp_opt, len(sources)))
    print("%-16s %8s %8s %8s %8s" % ("kind", "mutants", "accepted", "rejected", "failed"))
    for k, r in per_kind.items():
        print("%-16s %8d %8d %8d %8d" % ((k,) + tuple(r)))
    print("%-16s %8d %8d %8d %8d" % (("total",) + tuple(total)))
    for b in baseline:
        print("baseline: %s %s" % (b.source, b.status))
        if b.status == "rejected":
            print("warning: the unmodified input %s is rejected; its mutants mostly "
                  "exercise the error path" % b.source)
    return total


def print_failures(failures):
    for m in failures:
        print("")
        print("FAIL [%s] %s" % (m.kind, m.why))
        print("  mutation: %s (from %s)" % (m.desc, m.source))
        print("  command:  %s" % " ".join(shlex.quote(c) for c in m.cmd))
        status = ("none (timed out / not run)" if m.returncode is None else
                  signal_name(-m.returncode) if m.returncode < 0 else str(m.returncode))
        print("  exit:     %s" % status)
        lines = m.stderr.splitlines()
        print("  stderr:   (%d lines)" % len(lines))
        for l in lines[:12]:
            print("    | " + short(l, 200))
        print("  mutant:   %s" % m.path)


def report_verdict(min_count, done, failures, baseline, out_dir, total):
    """Prints PASS or why not; returns whether it passed."""
    ok = True
    if len(done) < min_count:
        print("\nFAIL: only %d mutants were run, at least %d are required"
              % (len(done), min_count))
        ok = False
    if failures:
        bad_base = [b for b in baseline if b.status == "failed"]
        print("\nFAIL: %d of %d mutants failed; they are kept in %s"
              % (len(failures) - len(bad_base), len(done), out_dir))
        if bad_base:
            print("FAIL: %d of the %d unmodified inputs failed"
                  % (len(bad_base), len(baseline)))
        ok = False
    if ok:
        print("\nPASS: %d mutants, %d accepted, %d rejected with located errors"
              % (total[0], total[1], total[2]))
    return ok


def main(argv=None):
    args = parse_args(argv)
    fsdp_opt = resolve_tool(args.fsdp_opt)
    if not (os.path.isfile(fsdp_opt) and os.access(fsdp_opt, os.X_OK)):
        print("error: fsdp-opt not found or not executable: %s" % args.fsdp_opt)
        return 2

    sources = read_sources(args.inputs)
    out_dir = prepare_out_dir(args.out_dir)
    mutants = generate(sources, args.count, args.seed)
    write_mutants(mutants, out_dir)

    # The unmodified inputs run first, as a baseline: they must not crash either,
    # and if one is rejected most of its mutants only exercise the error path.
    baseline, done = run_all(fsdp_opt, args, baseline_mutants(sources), mutants)

    failures = [m for m in baseline + done if m.status == "failed"]
    keep_failing_mutants(done, args.keep_all)
    total = print_summary(args, fsdp_opt, sources, done, baseline)
    print_failures(failures)
    ok = report_verdict(args.min_count, done, failures, baseline, out_dir, total)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
