"""examples/generate_llama.py's Llama in PyTorch, and its FLOP count: for the benchmarks only.

PyTorch is never a dependency of the project: this module imports without it. The functions
that need it take the `torch` module as their first argument; the FLOP and token counts are
plain Python, so that a driver without PyTorch (the GPU check kit, our trainers' benchmarks)
can compute the MFU of our trainer and of PyTorch alike.

The model is the one the file writes, op for op:
  - weights stored [out, in] as Hugging Face's (and torch.nn.Linear's) and used as
    `F.linear(x, W)` = x W^T, as the file's `fsdp.matmul ... transpose_rhs` (the embedding
    [V, C], wq [C, C], wk / wv [KV*D, C], wo [C, C], w1 / w3 (gate, up) [F, C], w2 (down)
    [C, F], the untied head [V, C]), initialised N(0, 0.02); the RMSNorm weights ones;
  - per block: h = rms_norm(x) (eps 1e-5); q, k, v = h wq^T, h wk^T, h wv^T; the rotary
    embedding of q and k (`fsdp.rope ... positions 1 theta 10000.0`, Hugging Face's
    LlamaRotaryEmbedding, rotate-half convention): `y * cos + rotate_half(y) * sin` with
    rotate_half(y) = cat(-y[..., D/2:], y[..., :D/2]) and cos, sin [T, D] of the angles
    float32(p * f_i), p the position 0..T-1, f_i = theta^(-2i/D) (i < D/2, computed in
    float64, rounded to float32), repeated over both halves; grouped-query attention with
    each key/value head broadcast to the H / KV query heads it serves; causal softmax
    attention with scale 1/sqrt(D); x1 = x + o wo^T; x + (silu(f w1^T) * (f w3^T)) w2^T with
    f = rms_norm(x1); then rms_norm, the head and the mean cross-entropy;
  - attention "explicit" (scores, causal mask, softmax, as `--attention explicit` writes
    it) or "sdpa" (F.scaled_dot_product_attention(is_causal=True), the fast path; the same
    softmax attention, as `--attention flash`'s fsdp.attention);
  - rope_k="heads": the rotary of k after the broadcast to H heads (`--attention explicit`'s
    order); rope_k="kv": on the KV heads, broadcast after (`--attention flash`'s order: it
    rotates the KV heads, which fsdp.attention reads shared). The same values either way.
The plan's optimizer: AdamW lr 3e-4, betas (0.9, 0.95), eps 1e-8, weight decay 0.1; gradient
clipping to a global norm of 1.0.
"""

ADAMW = {"lr": 3.0e-4, "beta1": 0.9, "beta2": 0.95, "eps": 1.0e-8, "weight_decay": 0.1}
CLIP_GRAD_NORM = 1.0
RMS_EPS = 1.0e-5  # fsdp.rms_norm's default eps
ROPE_THETA = 10000.0  # the `theta` of the file's fsdp.rope
CONFIG_KEYS = ("layers", "dim", "heads", "kv_heads", "ffn", "vocab", "seq", "batch")

FLOP_CONVENTION = (
    "model FLOPs of one training step = 3 x the forward's matrix-product FLOPs (backward = "
    "2 x forward: dX and dW of every weight product, dQ/dK and dP/dV of the attention's); "
    "2*m*n*k per product; counted: every x @ W (q, k, v, o, w1, w3, w2 of each block) and "
    "the head, and the attention's Q K^T and P V for the causal half (exactly half of the "
    "full T x T products); not counted: the rotary embedding (elementwise), the "
    "embedding gather, norms, softmax, SwiGLU's elementwise ops, cross-entropy, clipping, "
    "AdamW. = 6 * (matrix parameters) * tokens + 6 * layers * batch * seq^2 * dim")


def check_config(cfg):
    """cfg (a dict with CONFIG_KEYS, extra keys ignored) as a dict of ints; ValueError if
    something is missing, not a positive integer, or dim % heads or heads % kv_heads."""
    missing = [k for k in CONFIG_KEYS if k not in cfg]
    if missing:
        raise ValueError(f"config: missing {', '.join(missing)} (needs {', '.join(CONFIG_KEYS)})")
    out = {}
    for k in CONFIG_KEYS:
        v = cfg[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"config: {k} must be a positive integer, not {v!r}")
        out[k] = v
    if out["dim"] % out["heads"] or out["heads"] % out["kv_heads"]:
        raise ValueError("config: dim must be a multiple of heads, heads of kv_heads")
    return out


def _shape(cfg):
    c = check_config(cfg)
    return (c["batch"], c["seq"], c["dim"], c["heads"], c["kv_heads"], c["ffn"], c["vocab"],
            c["layers"])


def llama_forward_flops(cfg):
    """The forward's matrix-product FLOPs (2*m*n*k each) by part, all layers:
    linear (q, k, v, o, w1, w3, w2), attention_causal (Q K^T and P V, half of the T x T
    products), attention_full (both halves), head. (The rotary embedding is elementwise:
    no products.)"""
    B, T, C, H, KV, F, V, L = _shape(cfg)
    D = C // H
    BT = B * T
    full = 2 * (2 * B * H * T * T * D) * L
    return {
        "linear": 2 * BT * (2 * C * C + 2 * C * KV * D + 3 * C * F) * L,
        "attention_causal": full // 2,
        "attention_full": full,
        "head": 2 * BT * C * V,
    }


def llama_step_flops(cfg):
    """Model FLOPs of one training step (see FLOP_CONVENTION): 3 x (every x @ W, the
    attention's Q K^T and P V for the causal half, the head) of the forward. Pure Python.

    torch.utils.flop_counter.FlopCounterMode counts more: on the explicit-attention model
    the full (masked) T x T products, so there counted = llama_step_flops +
    3 * attention_causal (exactly; `python3 bench/torch_llama.py --flop-counter` checks
    it). With SDPA it counts the fused attention's backward as 2.5 x its (full) forward
    (FlashAttention's 5 products, Q K^T recomputed): counted = llama_step_flops +
    4 * attention_causal. The rotary embedding (elementwise) it does not count, whichever
    rope_k."""
    f = llama_forward_flops(cfg)
    return 3 * (f["linear"] + f["attention_causal"] + f["head"])


def llama_tokens_per_step(cfg):
    """Tokens of one step: batch * seq (the global batch)."""
    c = check_config(cfg)
    return c["batch"] * c["seq"]


def llama_param_count(cfg):
    """Trained parameters (embedding, blocks, norms, head; the rotary embedding has none)."""
    B, T, C, H, KV, F, V, L = _shape(cfg)
    CKV = KV * (C // H)
    return V * C + L * (2 * C + 2 * C * C + 2 * C * CKV + 3 * C * F) + C + C * V


# ---------------------------------------------------------------------------
# PyTorch
# ---------------------------------------------------------------------------

_CLASSES = {}


def _llama_class(torch):
    cls = _CLASSES.get(id(torch))
    if cls is not None:
        return cls
    F = torch.nn.functional

    class Llama(torch.nn.Module):
        """examples/generate_llama.py's model (see the module's docstring)."""

        def __init__(self, cfg, attention, device, dtype, rope_k):
            super().__init__()
            B, T, C, H, KV, FF, V, L = _shape(cfg)
            D = C // H
            CKV = KV * D
            self.B, self.T, self.C, self.H, self.KV, self.V = B, T, C, H, KV, V
            self.D, self.G = D, H // KV
            self.attention, self.rope_k = attention, rope_k
            kw = {"device": device, "dtype": dtype}
            normal = lambda *s: torch.nn.Parameter(torch.randn(*s, **kw) * 0.02)  # noqa: E731
            ones = lambda *s: torch.nn.Parameter(torch.ones(*s, **kw))  # noqa: E731
            self.tok_embeddings = normal(V, C)
            # The rotary's cos and sin [T, 1, D] (broadcast over the heads of [B, T, *, D]):
            # non-trainable buffers, computed once in float32 as Hugging Face's
            # LlamaRotaryEmbedding does (the angles float32 products p * inv_freq, their
            # cos and sin repeated over both halves). inv_freq as fsdp.rope specifies it:
            # theta^(-2i/D) in float64, rounded to float32 (Hugging Face's float32 power
            # differs from that by 1 ulp in some entries).
            inv_freq = (ROPE_THETA ** (-2.0 * torch.arange(D // 2, dtype=torch.float64) / D)
                        ).to(torch.float32)
            pos = torch.arange(T, dtype=torch.float32)
            angle = torch.outer(pos, inv_freq)
            emb = torch.cat((angle, angle), dim=-1).reshape(T, 1, D)
            self.register_buffer("cos4", emb.cos().to(**kw), persistent=False)
            self.register_buffer("sin4", emb.sin().to(**kw), persistent=False)
            self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool, device=device).triu(1))
            self.layers = torch.nn.ModuleList()
            for _ in range(L):
                blk = torch.nn.Module()
                blk.attention_norm, blk.ffn_norm = ones(C), ones(C)
                blk.wq, blk.wk, blk.wv, blk.wo = normal(C, C), normal(CKV, C), normal(CKV, C), normal(C, C)
                blk.w1, blk.w3, blk.w2 = normal(FF, C), normal(FF, C), normal(C, FF)
                self.layers.append(blk)
            self.norm, self.output = ones(C), normal(V, C)

        def rms_norm(self, x, w):
            if hasattr(F, "rms_norm"):
                return F.rms_norm(x, (self.C,), w, RMS_EPS)
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS) * w

        def rope(self, x4):
            """fsdp.rope of [B, T, heads, D] (any head count): x * cos + rotate_half(x) * sin."""
            half = self.D // 2
            rotated = torch.cat((-x4[..., half:], x4[..., :half]), dim=-1)
            return x4 * self.cos4 + rotated * self.sin4

        def heads(self, y):
            """[B, T, KV*D] or [B, T, KV, D] -> [B, T, H, D]: each KV head broadcast to G."""
            B, T, KV, G, D = self.B, self.T, self.KV, self.G, self.D
            return y.reshape(B, T, KV, 1, D).expand(B, T, KV, G, D).reshape(B, T, self.H, D)

        def forward(self, tokens, targets):
            B, T, C, H, KV, D, V = self.B, self.T, self.C, self.H, self.KV, self.D, self.V
            x = F.embedding(tokens, self.tok_embeddings)
            for blk in self.layers:
                h = self.rms_norm(x, blk.attention_norm)
                q, k, v = F.linear(h, blk.wq), F.linear(h, blk.wk), F.linear(h, blk.wv)
                qp = self.rope(q.reshape(B, T, H, D))
                if self.rope_k == "kv":
                    kp = self.heads(self.rope(k.reshape(B, T, KV, D)))
                    v4 = self.heads(v)
                else:
                    k4 = self.heads(k)
                    v4 = self.heads(v)
                    kp = self.rope(k4)
                qh, kh, vh = qp.transpose(1, 2), kp.transpose(1, 2), v4.transpose(1, 2)
                if self.attention == "sdpa":
                    o = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)
                else:
                    s = (qh @ kh.transpose(-1, -2)) * (1.0 / D ** 0.5)
                    s = s.masked_fill(self.mask, float("-inf"))
                    o = torch.softmax(s, dim=3) @ vh
                x1 = x + F.linear(o.transpose(1, 2).reshape(B, T, C), blk.wo)
                f = self.rms_norm(x1, blk.ffn_norm)
                x = x1 + F.linear(F.silu(F.linear(f, blk.w1)) * F.linear(f, blk.w3), blk.w2)
            logits = F.linear(self.rms_norm(x, self.norm), self.output)
            return F.cross_entropy(logits.reshape(B * T, V).float(), targets.reshape(B * T))

    _CLASSES[id(torch)] = Llama
    return Llama


def build_llama(torch, cfg, attention="sdpa", device="cpu", dtype=None, seed=0, rope_k="heads"):
    """The model (a torch.nn.Module; model(tokens, targets) -> the mean cross-entropy) with
    parameters of `dtype` (default torch.float32: the master weights) created on `device`
    after torch.manual_seed(seed) (seed None: no seeding). attention: "sdpa" or "explicit";
    rope_k: "heads" or "kv" (see the module's docstring)."""
    if attention not in ("sdpa", "explicit"):
        raise ValueError(f"attention must be 'sdpa' or 'explicit', not {attention!r}")
    if rope_k not in ("heads", "kv"):
        raise ValueError(f"rope_k must be 'heads' or 'kv', not {rope_k!r}")
    if seed is not None:
        torch.manual_seed(seed)
    return _llama_class(torch)(cfg, attention, device, dtype or torch.float32, rope_k)


def make_optimizer(torch, model, fused=None, foreach=None):
    """torch.optim.AdamW with the plan's hyperparameters; fused / foreach passed only when
    not None (None: PyTorch's default implementation)."""
    kwargs = {}
    if foreach is not None:
        kwargs["foreach"] = foreach
    if fused is not None:
        kwargs["fused"] = fused
    return torch.optim.AdamW(model.parameters(), lr=ADAMW["lr"],
                             betas=(ADAMW["beta1"], ADAMW["beta2"]), eps=ADAMW["eps"],
                             weight_decay=ADAMW["weight_decay"], **kwargs)


def random_batches(torch, cfg, count=4, seed=1, device=None):
    """`count` (tokens, targets) pairs of int64 [batch, seq] in [0, vocab), drawn from a CPU
    torch.Generator seeded with `seed` (so the same on every device), moved to device."""
    B, T, V = cfg["batch"], cfg["seq"], cfg["vocab"]
    gen = torch.Generator().manual_seed(seed)
    batches = [(torch.randint(0, V, (B, T), generator=gen),
                torch.randint(0, V, (B, T), generator=gen)) for _ in range(count)]
    if device is not None:
        batches = [(a.to(device), b.to(device)) for a, b in batches]
    return batches


def train_step(torch, model, optimizer, tokens, targets, autocast=None, params=None,
               clip=CLIP_GRAD_NORM):
    """One step: zero_grad(set_to_none) + forward (under torch.autocast(autocast,
    dtype=torch.bfloat16) when autocast is a device type such as "cuda" or "cpu") + backward
    + clip_grad_norm_(clip) + optimizer.step(). Returns the loss tensor (no sync: call
    .item() to read it). params: what to clip (default model.parameters())."""
    optimizer.zero_grad(set_to_none=True)
    if autocast:
        with torch.autocast(autocast, dtype=torch.bfloat16):
            loss = model(tokens, targets)
    else:
        loss = model(tokens, targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters() if params is None else params, clip)
    optimizer.step()
    return loss


# ---------------------------------------------------------------------------
# python3 bench/torch_llama.py [--config JSON] [--flop-counter]
# ---------------------------------------------------------------------------


def flop_counter_check(torch, cfg):
    """[(what, counted by FlopCounterMode, expected from llama_forward_flops)] of one
    forward + backward, f32 on the CPU: the explicit-attention model and SDPA, each with
    rope_k "heads" and "kv"."""
    from torch.utils.flop_counter import FlopCounterMode

    f = llama_forward_flops(cfg)
    step = llama_step_flops(cfg)
    rows = []
    for attention, rope_k, expected in (
            ("explicit", "heads", step + 3 * f["attention_causal"]),
            ("explicit", "kv", step + 3 * f["attention_causal"]),
            ("sdpa", "heads", step + 4 * f["attention_causal"]),
            ("sdpa", "kv", step + 4 * f["attention_causal"])):
        model = build_llama(torch, cfg, attention=attention, device="cpu", rope_k=rope_k)
        tokens, targets = random_batches(torch, cfg, count=1)[0]
        counter = FlopCounterMode(display=False)
        with counter:
            model(tokens, targets).backward()
        rows.append((f"{attention}, rope_k={rope_k}", counter.get_total_flops(), expected))
    return rows


def main(argv=None):
    import argparse
    import json

    ap = argparse.ArgumentParser(description="The model's FLOP count (FLOP_CONVENTION); "
                                 "--flop-counter checks it against PyTorch's FlopCounterMode")
    ap.add_argument("--config", default='{"layers": 2, "dim": 64, "heads": 4, "kv_heads": 2, '
                    '"ffn": 128, "vocab": 128, "seq": 32, "batch": 2}',
                    help="the model as JSON (" + ", ".join(CONFIG_KEYS) + ")")
    ap.add_argument("--flop-counter", action="store_true",
                    help="count with torch.utils.flop_counter.FlopCounterMode too (needs torch)")
    args = ap.parse_args(argv)
    try:
        cfg = check_config(json.loads(args.config))
    except (json.JSONDecodeError, ValueError, TypeError, AttributeError) as error:
        ap.error(f"--config: {error}")
    f = llama_forward_flops(cfg)
    print(f"config {json.dumps(cfg)}: {llama_param_count(cfg)} parameters, "
          f"{llama_tokens_per_step(cfg)} tokens per step")
    print("forward matrix-product FLOPs: " + ", ".join(f"{k} {v}" for k, v in f.items()))
    print(f"llama_step_flops = 3 x (linear + attention_causal + head) = {llama_step_flops(cfg)}")
    if not args.flop_counter:
        return 0
    import torch

    ok = True
    for what, counted, expected in flop_counter_check(torch, cfg):
        ok &= counted == expected
        print(f"FlopCounterMode, {what}: {counted}; expected {expected}: "
              f"{'equal' if counted == expected else 'DIFFERENT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    import sys

    sys.exit(main())
