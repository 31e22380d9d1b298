"""Fused attention's rate on this GPU: PyTorch's scaled_dot_product_attention (bf16, causal,
GQA) through cuDNN's and FlashAttention's backends, forward and forward+backward, at the
attention shapes of the 1B Llama and of Llama-2-70B. Prints one JSON line per case: the
measured milliseconds and TFLOP/s counting the causal half of the products (forward 2
products, backward 5, as FlashAttention counts them). Bench only: the figure the cost
model's fused-attention rate (issue 34) is set from."""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = {  # batch, heads, kv heads, sequence, head dim
    "llama-1b": (8, 32, 4, 2048, 64),
    "llama2-70b": (1, 64, 8, 4096, 128),
    "llama3-8b": (2, 32, 8, 8192, 128),
}
BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def timed(fn, repeats):
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeats


def case(name, backend, repeats):
    b, h, kv, t, d = SHAPES[name]
    q = torch.randn(b, h, t, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, kv, t, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(b, kv, t, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn(b, h, t, d, device="cuda", dtype=torch.bfloat16)
    flops_fwd = 2 * 2 * b * h * t * t * d / 2

    def forward():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    def both():
        forward().backward(grad)

    with sdpa_kernel([BACKENDS[backend]]):
        fwd = timed(forward, repeats)
        total = timed(both, repeats)
    return {"shape": name, "backend": backend, "fwd_ms": fwd, "fwd_bwd_ms": total,
            "fwd_tflops": flops_fwd / fwd / 1e9, "fwd_bwd_tflops": 3.5 * flops_fwd / total / 1e9}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                      "cudnn": torch.backends.cudnn.version()}), flush=True)
    for name in SHAPES:
        for backend in BACKENDS:
            try:
                print(json.dumps(case(name, backend, args.repeats)), flush=True)
            except Exception as e:  # noqa: BLE001 - a refused shape is a result too
                print(json.dumps({"shape": name, "backend": backend,
                                  "error": f"{type(e).__name__}: {str(e)[:300]}"}), flush=True)


if __name__ == "__main__":
    main()
