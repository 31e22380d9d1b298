#!/usr/bin/env python3
"""PyTorch's training step of examples/generate_llama.py's Llama on one GPU: the reference
that our compiled CUDA trainers are timed against.

    python3 bench/gpu/torch_llama_step.py --config '{"layers": 2, "dim": 64, "heads": 4,
        "kv_heads": 2, "ffn": 128, "vocab": 128, "seq": 32, "batch": 2}' \\
        [--modes eager,compile] [--warmup 3] [--steps 10] [--device cuda] \\
        [--peak-tflops X] [--json OUT] [--timeout-per-mode S]

The model, optimizer and step are bench/torch_llama.py's. For each mode (--modes):
  eager    the model as it is;
  compile  torch.compile(model) (default mode; --compile-mode to change), its compilation
           in the warm-up steps;
with f32 master weights, the forward under torch.autocast(device, dtype=torch.bfloat16)
(--precision bf16, the default: our trainers' bf16 plan, f32 masters and bf16 compute; f32:
no autocast), attention F.scaled_dot_product_attention(is_causal=True) (--attention sdpa,
the default; explicit: scores, mask, softmax), AdamW fused on CUDA (--adamw), clip 1.0.
One step = zero_grad + forward + backward + clip_grad_norm_ + optimizer.step on random
tokens (a seeded generator, 4 batches in turn), --warmup untimed steps then --steps timed.

Each mode runs in a child process of its own (a clean CUDA context and peak-memory
counter, and a hard --timeout-per-mode), which writes its result as JSON. A mode that
fails (out of memory, a compile error, the timeout, a crash) is reported with its error;
the others still run. Exit status 0 unless the arguments are bad (2).

Timing: on CUDA, a CUDA event pair around each step (the steps are queued without a
synchronisation in between, as a training loop does; a final synchronize), the result the
median; also the wall time of all timed steps / steps. On the CPU, perf_counter around each
step and its loss's .item().
"""

import argparse
import json
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch_llama  # noqa: E402

MODES = ("eager", "compile")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True,
                    help="the model as JSON: " + ", ".join(torch_llama.CONFIG_KEYS)
                    + " (generate_llama.py's options); or @FILE")
    ap.add_argument("--modes", default="eager,compile", help="of eager,compile (default both)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed first steps (default 3)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps (default 10)")
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    ap.add_argument("--precision", choices=["bf16", "f32"], default="bf16",
                    help="bf16: f32 weights, bf16 autocast (default); f32: no autocast")
    ap.add_argument("--attention", choices=["sdpa", "explicit"], default="sdpa")
    ap.add_argument("--adamw", choices=["auto", "fused", "foreach", "default"], default="auto",
                    help="AdamW implementation (auto: fused on CUDA, PyTorch's default on CPU)")
    ap.add_argument("--compile-mode", default=None,
                    help="torch.compile's mode (default: its default mode)")
    ap.add_argument("--peak-tflops", type=float, default=None,
                    help="the device's peak TFLOP/s at the step's precision, for MFU")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    ap.add_argument("--seed", type=int, default=0, help="the weights' seed (tokens: seed + 1)")
    ap.add_argument("--timeout-per-mode", type=float, default=900.0,
                    help="seconds a mode may take in all, start-up and compilation included "
                         "(default 900)")
    ap.add_argument("--in-process", action="store_true",
                    help="run the modes in this process (no timeout, no isolation; debugging)")
    ap.add_argument("--json", default=None, help="write the result here")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # mode, in a child
    ap.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    text = args.config
    try:
        if text.startswith("@"):
            with open(text[1:]) as f:
                text = f.read()
        args.cfg = torch_llama.check_config(json.loads(text))
    except (OSError, json.JSONDecodeError, ValueError, TypeError, AttributeError) as error:
        ap.error(f"--config: {error}")
    args.mode_list = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not args.mode_list or any(m not in MODES for m in args.mode_list):
        ap.error(f"--modes: a comma-separated list of {', '.join(MODES)}")
    if args.warmup < 0 or args.steps < 1:
        ap.error("--warmup must be >= 0, --steps >= 1")
    if not (args.device == "cpu" or args.device == "cuda" or args.device.startswith("cuda:")):
        ap.error("--device: cuda, cuda:N or cpu")
    if args.peak_tflops is not None and args.peak_tflops <= 0:
        ap.error("--peak-tflops must be > 0")
    if args.timeout_per_mode <= 0:
        ap.error("--timeout-per-mode must be > 0")
    return args


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# ---------------------------------------------------------------------------
# One mode (in the child process)
# ---------------------------------------------------------------------------


def select_device(torch, args, cuda, res):
    """The device of --device (its properties into res) and the thread count."""
    if cuda:
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA is not available to this PyTorch "
                               f"({torch.__version__}, built for CUDA {torch.version.cuda})")
        device = torch.device(args.device)
        if device.index is None:  # "cuda": the current device, with its index
            device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(device)
        props = torch.cuda.get_device_properties(device)
        res.update(device_name=torch.cuda.get_device_name(device),
                   device_capability=list(torch.cuda.get_device_capability(device)),
                   device_memory_bytes=props.total_memory,
                   allow_tf32=torch.backends.cuda.matmul.allow_tf32)
        torch.cuda.reset_peak_memory_stats(device)
    else:
        device = torch.device("cpu")
        res.update(device_name=cpu_name())
    if args.threads:
        torch.set_num_threads(args.threads)
    res["threads"] = torch.get_num_threads()
    return device


def choose_adamw(args, cuda, res):
    """(fused, foreach) of make_optimizer for --adamw."""
    fused = foreach = None
    adamw = args.adamw if args.adamw != "auto" else ("fused" if cuda else "default")
    if adamw == "fused":
        fused = True
    elif adamw == "foreach":
        foreach = True
    res["adamw"] = adamw
    return fused, foreach


def build_train_step(torch, args, mode, device, fused, foreach):
    """The model, its optimizer and batches; returns step(i), which runs step i and returns
    its loss."""
    cfg = args.cfg
    # rope_k "kv" with SDPA: the rotary on the KV heads, as --attention flash writes it.
    model = torch_llama.build_llama(torch, cfg, attention=args.attention, device=device,
                                    dtype=torch.float32, seed=args.seed,
                                    rope_k="kv" if args.attention == "sdpa" else "heads")
    opt = torch_llama.make_optimizer(torch, model, fused=fused, foreach=foreach)
    params = list(model.parameters())
    batches = torch_llama.random_batches(torch, cfg, count=4, seed=args.seed + 1,
                                         device=device)
    step_model = model
    if mode == "compile":
        kw = {"mode": args.compile_mode} if args.compile_mode else {}
        step_model = torch.compile(model, **kw)
    autocast = device.type if args.precision == "bf16" else None

    def step(i):
        tokens, targets = batches[i % len(batches)]
        return torch_llama.train_step(torch, step_model, opt, tokens, targets,
                                      autocast=autocast, params=params)

    return step


def warm_up_steps(args, step, sync, res, save):
    """Runs the --warmup untimed steps; returns their losses."""
    losses, warm_s = [], []
    for i in range(args.warmup):
        start = time.perf_counter()
        losses.append(step(i).item())
        sync()
        warm_s.append(time.perf_counter() - start)
        res.update(warmup_step_s=[round(x, 4) for x in warm_s], first_loss=losses[0])
        save(res)
    return losses


def timed_steps(torch, args, step, sync, cuda, losses):
    """Runs the --steps timed steps, their losses appended to losses; returns (the steps'
    times in ms, the wall time of them all in s)."""
    n = args.steps
    times_ms, loss_tensors = [], []
    sync()
    wall0 = time.perf_counter()
    if cuda:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(n)]
        for i in range(n):
            events[i][0].record()
            loss = step(args.warmup + i).detach()
            # A CUDA-graph mode (--compile-mode reduce-overhead) reuses its outputs.
            loss_tensors.append(loss.clone() if args.compile_mode else loss)
            events[i][1].record()
        sync()
        wall = time.perf_counter() - wall0
        times_ms = [a.elapsed_time(b) for a, b in events]
        losses += [x.item() for x in loss_tensors]
    else:
        for i in range(n):
            start = time.perf_counter()
            losses.append(step(args.warmup + i).item())
            times_ms.append(1e3 * (time.perf_counter() - start))
        wall = time.perf_counter() - wall0
    return times_ms, wall


def record_step_times(args, res, times_ms, wall, losses):
    n = args.steps
    cfg = args.cfg
    median_ms = statistics.median(times_ms)
    tokens = torch_llama.llama_tokens_per_step(cfg)
    flops = torch_llama.llama_step_flops(cfg)
    tflops = flops / (median_ms * 1e-3) / 1e12
    res.update(
        ok=True, phase="done",
        median_step_ms=median_ms, min_step_ms=min(times_ms),
        mean_step_ms=statistics.fmean(times_ms),
        wall_ms_per_step=1e3 * wall / n,
        step_ms=[round(x, 4) for x in times_ms],
        tokens_per_s=tokens / (median_ms * 1e-3),
        model_tflops=tflops,
        mfu=(tflops / args.peak_tflops) if args.peak_tflops else None,
        first_loss=losses[0], last_loss=losses[-1])
    if any(x != x or x in (float("inf"), float("-inf")) for x in (losses[0], losses[-1])):
        res["note"] = "non-finite loss"


def record_mode_error(res, error):
    """The error being handled, and its traceback, into res."""
    text = f"{type(error).__name__}: {error}"
    if len(text) > 4000:
        text = text[:2000] + "\n...\n" + text[-2000:]
    res.update(ok=False, error=text, traceback=traceback.format_exc()[-4000:])


def record_memory_and_duration(torch, cuda, res, t0):
    if cuda and torch.cuda.is_available():
        try:
            res["max_memory_allocated_bytes"] = torch.cuda.max_memory_allocated()
            res["max_memory_reserved_bytes"] = torch.cuda.max_memory_reserved()
        except Exception:  # noqa: BLE001 - e.g. a broken context after a CUDA error
            pass
    else:
        res["max_memory_allocated_bytes"] = None
    res["max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    res["mode_s"] = round(time.perf_counter() - t0, 3)


def run_mode(args, mode, save):
    """Measures one mode; save(result) is called at each phase, so that a killed child
    still leaves how far it got. Returns the result (error set on failure)."""
    res = {"mode": mode, "ok": False, "phase": "import torch", "error": None}
    save(res)
    t0 = time.perf_counter()
    try:
        import torch
    except ImportError as error:
        res.update(error=f"{type(error).__name__}: {error} (PyTorch is not installed in "
                   f"{sys.executable})", mode_s=round(time.perf_counter() - t0, 3))
        save(res)
        return res

    cuda = args.device.startswith("cuda")
    res.update(torch=torch.__version__, cuda_runtime=getattr(torch.version, "cuda", None),
               python=platform.python_version(), import_s=round(time.perf_counter() - t0, 3))
    try:
        res["phase"] = "device"
        device = select_device(torch, args, cuda, res)
        fused, foreach = choose_adamw(args, cuda, res)
        save(res)

        res["phase"] = "build"
        step = build_train_step(torch, args, mode, device, fused, foreach)

        def sync():
            if cuda:
                torch.cuda.synchronize(device)

        res["phase"] = "warm-up"
        save(res)
        losses = warm_up_steps(args, step, sync, res, save)

        res["phase"] = "timed steps"
        save(res)
        times_ms, wall = timed_steps(torch, args, step, sync, cuda, losses)
        record_step_times(args, res, times_ms, wall, losses)
    except BaseException as error:  # noqa: BLE001 - reported; the other modes still run
        if isinstance(error, KeyboardInterrupt):
            raise
        record_mode_error(res, error)
    finally:
        record_memory_and_duration(torch, cuda, res, t0)
        save(res)
    return res


def worker(args):
    out = args.worker_out

    def save(res):
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f)
        os.replace(tmp, out)

    run_mode(args, args.worker, save)
    return 0


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------


def tail(text, n=3000):
    text = (text or "").strip()
    return text if len(text) <= n else "..." + text[-n:]


def run_child(argv, mode, timeout, workdir):
    out = os.path.join(workdir, f"{mode}.json")
    log = os.path.join(workdir, f"{mode}.log")
    cmd = [sys.executable, os.path.abspath(__file__), *argv, "--worker", mode, "--worker-out", out]
    start = time.perf_counter()
    with open(log, "w") as logf:
        # A session of its own, so that a timeout ends the child and the compile workers it
        # started (they share its process group), and nothing else.
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        error = None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            error = f"timeout: the mode took more than {timeout:g} s (--timeout-per-mode)"
    elapsed = time.perf_counter() - start
    with open(log, errors="replace") as f:
        output = f.read()
    res = None
    if os.path.exists(out):
        with open(out) as f:
            try:
                res = json.load(f)
            except json.JSONDecodeError:
                res = None
    if res is None:
        res = {"mode": mode, "ok": False, "phase": "start", "error": None}
    if error:
        res.update(ok=False, error=error + f" (in phase: {res.get('phase')})")
    elif proc.returncode != 0 and res.get("ok"):
        res["note"] = f"the child exited {proc.returncode} after its result"
    elif proc.returncode != 0 or (not res.get("ok") and not res.get("error")):
        how = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
               else f"exited {proc.returncode}")
        res.update(ok=False, error=f"the child process {how} in phase {res.get('phase')}")
    if not res.get("ok"):
        res["output_tail"] = tail(output)
    res["child_s"] = round(elapsed, 3)
    return res


def child_argv(argv):
    """argv without --json (the child writes --worker-out) and without --in-process."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--json":
            skip = True
            continue
        if a.startswith("--json=") or a == "--in-process":
            continue
        out.append(a)
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    cfg = args.cfg
    result = {
        "bench": "torch_llama_step",
        "config": cfg,
        "tokens_per_step": torch_llama.llama_tokens_per_step(cfg),
        "step_flops": torch_llama.llama_step_flops(cfg),
        "flop_convention": torch_llama.FLOP_CONVENTION,
        "params": torch_llama.llama_param_count(cfg),
        "precision": args.precision,
        "attention": args.attention,
        "device": args.device,
        "device_name": None,
        "torch": None,
        "cuda_runtime": None,
        "python": platform.python_version(),
        "warmup": args.warmup,
        "steps": args.steps,
        "peak_tflops": args.peak_tflops,
        "compile_mode": args.compile_mode,
        "timeout_per_mode_s": args.timeout_per_mode,
        "modes": {},
    }
    with tempfile.TemporaryDirectory(prefix="torch-llama-step-") as workdir:
        for mode in args.mode_list:
            print(f"{mode}: running ...", file=sys.stderr, flush=True)
            if args.in_process:
                res = run_mode(args, mode, lambda r: None)
            else:
                res = run_child(child_argv(argv), mode, args.timeout_per_mode, workdir)
            for key in ("device_name", "torch", "cuda_runtime"):
                if result[key] is None and res.get(key):
                    result[key] = res[key]
            result["modes"][mode] = res
            print(f"{mode}: " + (f"{res['median_step_ms']:.2f} ms/step" if res.get("ok")
                                 else f"FAILED: {(res.get('error') or '?').splitlines()[0]}"),
                  file=sys.stderr, flush=True)

    print(f"PyTorch {result['torch']} on {result['device_name']} ({args.device}); "
          f"{args.precision}{' autocast' if args.precision == 'bf16' else ''}, {args.attention}; "
          f"config {json.dumps(cfg)}; {result['tokens_per_step']} tokens, "
          f"{result['step_flops'] / 1e9:.3f} model GFLOP per step; "
          f"{args.warmup} warm-up + {args.steps} timed steps, medians")
    print(f"  {'mode':<8} {'ms/step':>10} {'tokens/s':>12} {'TFLOP/s':>9} {'MFU':>7} "
          f"{'max alloc':>10}  loss")
    for mode, res in result["modes"].items():
        if not res.get("ok"):
            print(f"  {mode:<8} FAILED ({res.get('phase')}): "
                  f"{(res.get('error') or '?').splitlines()[0][:200]}")
            continue
        mem = res.get("max_memory_allocated_bytes")
        print(f"  {mode:<8} {res['median_step_ms']:10.3f} {res['tokens_per_s']:12.0f} "
              f"{res['model_tflops']:9.4g} "
              + (f"{100 * res['mfu']:6.1f}%" if res.get("mfu") is not None else f"{'-':>7}")
              + (f" {mem / 2**30:8.2f}Gi" if mem is not None else f" {'-':>10}")
              + f"  {res['first_loss']:.4f} -> {res['last_loss']:.4f}")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
