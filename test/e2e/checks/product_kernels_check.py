"""A trainer's `--version` against the rule that chooses the CPU's product kernels
(docs/Runtime.md, section 1), derived here independently of the runtime from this
machine's CPU flags (/proc/cpuinfo) and the two switches a user may set:

- OpenBLAS's core: OPENBLAS_CORETYPE when set, else OpenBLAS's own choice. A core
  below AVX2 on a CPU with AVX2 and FMA (what OpenBLAS picks for a model it does not
  know) is generic, and the line says so and names the core that suits the CPU
  (AVX-512 F/BW/DQ/VL with AVX512-BF16: Cooperlake; AVX-512: SkylakeX; AVX2: Haswell).
- oneDNN's ISA: the CPU's best (amx, bf16, vnni, avx512_core, avx2_vnni, avx2, ...),
  capped by DNNL_MAX_CPU_ISA.
- f32 products: oneDNN's brgemm where the ISA is avx512_core or newer; the products
  it declines (and all of them below avx512_core) on OpenBLAS, or on oneDNN's
  gemm:jit where OpenBLAS's core is generic.
- bf16 products: oneDNN on bf16 instructions where the ISA has them (avx512_core_bf16
  and newer), never emulated; otherwise widened to f32 for the f32 kernels.

    product_kernels_check.py TRAINER      (runs TRAINER --version in this environment)

Exits 1 with every disagreement listed.
"""

import os
import re
import subprocess
import sys

ISAS = ["sse41", "avx", "avx2", "avx2_vnni", "avx512_core", "avx512_core_vnni",
        "avx512_core_bf16", "avx512_core_amx"]
AVX2_CORES = {"haswell", "zen"}
AVX512_CORES = {"skylakex", "cooperlake", "sapphirerapids"}


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def cpu_level(flags):
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "AVX-512"
    if {"avx2", "fma"} <= flags:
        return "AVX2"
    return "AVX" if "avx" in flags else "SSE"


def core_level(core):
    core = core.lower()
    if core in AVX512_CORES:
        return "AVX-512"
    if core in AVX2_CORES:
        return "AVX2"
    if core in {"sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"}:
        return "AVX"
    return "SSE"


LEVELS = ["SSE", "AVX", "AVX2", "AVX-512"]


def core_for_cpu(flags):
    level = cpu_level(flags)
    if level == "AVX-512":
        return "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    return "Haswell" if level == "AVX2" else None


def onednn_isas(flags):
    """The ISAs oneDNN 2.x may use on this CPU, capped by DNNL_MAX_CPU_ISA: one, or, with
    AMX, also AVX512-BF16's (oneDNN takes AMX only where the kernel lets the process use
    its tiles)."""
    if cpu_level(flags) == "AVX-512":
        best = ["avx512_core_amx", "avx512_core_bf16"] if {"amx_bf16", "amx_tile"} <= flags \
            else ["avx512_core_bf16" if "avx512_bf16" in flags else
                  "avx512_core_vnni" if "avx512_vnni" in flags else "avx512_core"]
    elif "avx2" in flags:
        best = ["avx2_vnni" if "avx_vnni" in flags else "avx2"]
    else:
        best = ["avx" if "avx" in flags else "sse41"]
    cap = os.environ.get("DNNL_MAX_CPU_ISA", "").lower()
    if cap in ISAS and ISAS.index(cap) < ISAS.index(best[-1]):
        return [cap]
    return [isa for isa in best if cap not in ISAS or ISAS.index(isa) <= ISAS.index(cap)]


def at_least(isa, floor):
    return ISAS.index(isa) >= ISAS.index(floor)


def main():
    text = subprocess.run([sys.argv[1], "--version"], capture_output=True, text=True,
                          check=True).stdout
    lines = {line.split(":", 1)[0]: line for line in text.splitlines() if ":" in line}
    flags = cpu_flags()
    errors = []

    def expect(ok, what):
        if not ok:
            errors.append(what)

    # OpenBLAS's core, and why.
    blas = lines.get("blas", "")
    found = re.search(r", core (\w+) \((.*)\), \d+ threads$", blas)
    expect(found, f"the blas line names no core and reason: {blas!r}")
    if not found:
        print("\n".join(errors))
        return 1
    core, why = found.groups()
    level = cpu_level(flags)
    forced = os.environ.get("OPENBLAS_CORETYPE", "")
    if forced:
        expect(core.lower() == forced.lower(), f"core {core}, but OPENBLAS_CORETYPE={forced}")
    expect(why.startswith(f"OPENBLAS_CORETYPE={forced}" if forced else "OpenBLAS's choice"),
           f"the reason is {why!r}")
    generic = LEVELS.index(core_level(core)) < LEVELS.index("AVX2") and \
        LEVELS.index(level) >= LEVELS.index("AVX2")
    said = f"; generic on this {level} CPU, which {core_for_cpu(flags)} suits"
    expect(why.endswith(said) == generic,
           f"core {core} on this {level} CPU is {'' if generic else 'not '}generic: {why!r}")

    # oneDNN's ISA, as the lines name it.
    isas = onednn_isas(flags)
    onednn = re.search(r"oneDNN (\d+\.\d+\.\d+), (\w+)", text)
    expect(onednn and onednn.group(2) in isas,
           f"oneDNN's ISA here is {' or '.join(isas)}: "
           f"{onednn.group(0) if onednn else 'not named'}")
    isa = onednn.group(2) if onednn and onednn.group(2) in isas else isas[0]
    version = onednn.group(1) if onednn else r"\d+\.\d+\.\d+"
    onednn_at = re.escape(f"oneDNN {version}, {isa}")

    # f32 products.
    declined = (onednn_at + r" \(gemm:jit\), OpenBLAS's core " + re.escape(core) +
                " being generic here" if generic else "OpenBLAS sgemm, core " + re.escape(core))
    if at_least(isa, "avx512_core"):
        f32 = "f32 gemm: " + onednn_at + r" \(brg:\w+\); padded rows, gapped batches: " + declined
    else:
        f32 = "f32 gemm: " + declined + "; no brgemm f32 matmul in " + onednn_at
    expect(re.fullmatch(f32, lines.get("f32 gemm", "")),
           f"the f32 line should match {f32!r}: {lines.get('f32 gemm')!r}")

    # bf16 products.
    if at_least(isa, "avx512_core_bf16"):
        bf16 = "bf16 gemm: " + onednn_at + r" \((brg|gemm):\w*(bf16|amx)\w*\): bf16 instructions"
    else:
        bf16 = ("bf16 gemm: widened to f32 for the f32 products' kernels, C rounded once \\(" +
                onednn_at + ": no bf16 instructions\\)")
    expect(re.fullmatch(bf16, lines.get("bf16 gemm", "")),
           f"the bf16 line should match {bf16!r}: {lines.get('bf16 gemm')!r}")

    print("\n".join(errors) if errors else
          f"product kernels follow the rule: {level} CPU, core {core}, oneDNN {isa}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
