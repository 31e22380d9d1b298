//===- Passes.td - fsdp conversion passes ------------------*- tablegen -*-===//

#ifndef FSDP_CONVERSION_PASSES_TD
#define FSDP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertFSDPToLinalgPass : Pass<"convert-fsdp-to-linalg"> {
  let summary = "Lowers the fsdp compute ops to linalg, tensor, arith and math";
  let description = [{
    Rewrites every model, gradient and clipping op on tensors into upstream
    dialects: matrix products become `linalg.matmul` / `linalg.batch_matmul`
    (transposes as indexing maps, leading dimensions collapsed), so that
    `fsdp-lower-gemms` can hand them to BLAS after bufferization;
    elementwise ops become `linalg.generic` ops with NumPy-broadcasting
    indexing maps, which `linalg-fuse-elementwise-ops` fuses; reductions,
    normalisations, softmax and losses become reductions followed by
    elementwise generics. `fsdp.use` and `fsdp.update` are left for
    `convert-fsdp-to-runtime`.

    ```mlir
    %z = fsdp.add %m, %b : tensor<64x256xf32>, tensor<256xf32> -> tensor<64x256xf32>
    // becomes
    %e = tensor.empty() : tensor<64x256xf32>
    %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d1)>,
                                          affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%m, %b : tensor<64x256xf32>, tensor<256xf32>) outs(%e : tensor<64x256xf32>) {
    ^bb0(%a: f32, %c: f32, %out: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<64x256xf32>
    ```

    The embedding gradient's scatter-add (`fsdp.embedding_grad`) is one loop
    over the positions in order, adding each gradient row into the f32 table
    row its index selects. With `sort-scatter-positions=true` (GPU targets,
    where that loop would be one thread per column walking every position)
    the positions are instead sorted by row, with gathers only: keys
    `id * N + n` merged in `ceil(log2 N)` rounds (each output finds its key
    by a merge-path search), then each row's positions within a chunk of 256
    sorted positions summed by one thread, then each row's pieces in order.
    Every thread runs at most max(256, N / 256) iterations in order, and
    every sum has one order, so every run gives the same bits.
  }];
  let options = [
    Option<"sortScatterPositions", "sort-scatter-positions", "bool", /*default=*/"false",
           "Lower scatter-adds by sorting their positions (parallel, deterministic)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ConvertFSDPToRuntimePass : Pass<"convert-fsdp-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Binds the training step to the runtime's arena and ABI";
  let description = [{
    Lays out what each rank keeps from step to step in one arena (every
    unit's parameter shard, the gradient shards and optimizer state of
    trainable units, the rank's rows of the batch's inputs, each at a 64-byte
    aligned offset), and turns `@train_step` of a partitioned module (after
    `fsdp-insert-collectives`) into the function the runtime calls:

    ```c
    float fsdp_train_step(void *arena, int64_t step, float lr);
    ```

    Inputs and the `fsdp.use` of unsharded units become tensors read from
    arena views (`bufferization.to_tensor restrict`). `fsdp.all_gather` gets a
    buffer (a `memref.alloc` that `fsdp-assign-buffers` places later) filled by
    `fsdprt_all_gather_start` / `fsdprt_wait`, and each `fsdp.view` is a view
    of it; `fsdp.flatten` writes the gradients into a flat buffer (with one
    shard, the arena's gradient shard) whose padding it zeroes;
    `fsdp.reduce_scatter` and `fsdp.all_reduce` become the runtime's
    nonblocking calls; each `fsdp.update` of a unit applies the optimizer in
    place with one `linalg.generic` over the shard's views. Collectives overlap
    with compute: after a gather completes, the next `min(prefetch,
    max_inflight_gathers)` gathers start, and a reduction is waited for right
    before its result is first read. The layout, the units and parameters
    (offsets in their unit, initializers), the inputs' roles and the plan are recorded
    in the module's `fsdp.manifest` (`#fsdp.manifest`, which later passes
    complete and `fsdp-serialize-manifest` writes as the JSON document the
    runtime reads, docs/Runtime.md). The fsdp ops, the params and the plan
    are gone afterwards. Run it before `convert-fsdp-to-linalg`: it reads how the
    model ops use the inputs.

    With `device-arena=true` (GPU targets) the step reads nothing from the
    host that a replay could not see: 16 bytes after the inputs hold the
    manifest's `device_scalars`, where the runtime writes `lr` and `step`
    before each step and the step, which reads them there for its optimizer
    updates, leaves its loss (an f32 at offset 4); it returns NaN instead of
    the loss. The arguments stay for host code (offload below).

    With `offload = optimizer` (GPU targets, `device-arena=true`), a trainable
    unit's f32 master shard and optimizer state live in a second, host arena
    (`float fsdp_train_step(void *arena, void *host_arena, int64_t step,
    float lr)`); the device keeps the shard in `param_dtype`, which its
    gathers read. Each gradient shard is copied to the host
    (`fsdprt_copy_to_host_start`) as soon as its reduction completes; with
    one copy in flight, the host waits for each in arrival order and applies
    the update (at once, or at the end of the step with clipping): a task
    function `fsdp_host_update_<unit>` over a range of the shard's elements on
    the host arena, run by the runtime's host threads
    (`fsdprt_host_parallel`); then it copies the new shard back
    (`fsdprt_copy_to_device_start`), waited for before the step returns. On the
    CPU target the plan field is an error.
  }];
  let options = [
    Option<"deviceArena", "device-arena", "bool", /*default=*/"false",
           "The arena is a GPU's memory (the plan may offload to the host)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::tensor::TensorDialect",
  ];
}


def FSDPFuseAttentionPass : Pass<"fsdp-fuse-attention", "::mlir::ModuleOp"> {
  let summary = "Runs bf16 fsdp.attention as the runtime's fused attention";
  let description = [{
    On a GPU, attention as key-block loops (`convert-fsdp-to-linalg`) writes
    every block's scores to device memory and reads them back several times;
    a fused kernel (FlashAttention's algorithm) keeps them on chip. This pass
    replaces each bf16 `fsdp.attention` by one call of the runtime's
    `fsdprt_attention_bf16` and each `fsdp.attention_grad` by one of
    `fsdprt_attention_grad_bf16` (cuDNN's fused attention on the CUDA target,
    docs/CUDA.md): the operands are read from their buffers
    (`bufferization.to_buffer read_only`), the results get buffers of their
    own, and so does the workspace cuDNN's plans ask for, which
    `fsdp-assign-buffers` then places in the arena like any buffer. Run after
    `convert-fsdp-to-runtime` and before `convert-fsdp-to-linalg`.

    A sliding window is the call's `window` (cuDNN's diagonal band). An
    attention the call cannot compute keeps the loops: f32 operands, as many
    queries as keys required, a head dimension that is a multiple of 8 up to
    256, no soft cap on the scores, and (for the gradient) a log-sum-exp
    nobody differentiates.
    Each reason is said once, as a remark at the first such op with the
    number of ops it applies to (`quiet`: not at all, for a second compile of
    the same model, the evaluation step's):

    ```
    model.mlir:12:10: remark: attention runs as key-block loops, not cuDNN's fused kernel (2 ops, forward and backward): its operands are not bf16 (...)
    ```

    With `deterministic`, the backward pass uses cuDNN's deterministic
    algorithm (the same bits on every run, at the cost of a bf16 T x S
    workspace per attention).
  }];
  let options = [
    Option<"deterministic", "deterministic", "bool", /*default=*/"false",
           "The gradient's bits do not depend on the GPU's scheduling (the plan's deterministic)">,
    Option<"quiet", "quiet", "bool", /*default=*/"false",
           "No remark for the attention ops that keep their loops">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

#endif // FSDP_CONVERSION_PASSES_TD
