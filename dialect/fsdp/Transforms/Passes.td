//===- Passes.td - fsdp pass definitions -------------------*- tablegen -*-===//

#ifndef FSDP_TRANSFORMS_PASSES_TD
#define FSDP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FSDPAutodiffPass : Pass<"fsdp-autodiff", "::mlir::ModuleOp"> {
  let summary = "Derives the training step from the model's loss function";
  let description = [{
    Replaces the model's loss function (the one function of the module, which
    returns a rank-0 float tensor) by `@train_step`: the same forward pass,
    then the backward pass built from each op's gradient rule
    (`DifferentiableOpInterface`), then the optimizer update of every
    trainable parameter as the plan says (`fsdp.update`, after global-norm
    clipping when `clip_grad_norm` is set). `@train_step` takes the model's
    inputs followed by the step number (i64, from 1) and the learning rate
    (f32), and returns the loss.

    A value used several times (fan-out) and a parameter read several times
    (tied weights) accumulate their gradients; frozen parameters get none.

    ```mlir
    func.func @train_step(%x: tensor<64x784xf32>, %y: tensor<64xi32>,
                          %step: i64, %lr: f32) -> tensor<f32> {
      ... forward ...
      ... backward ...
      fsdp.update @fc1.w, %dw1 step %step lr %lr {optimizer = #fsdp.adamw<lr = 0.001>} : tensor<784x256xf32>
      return %loss : tensor<f32>
    }
    ```

    With `forward-only`, the step is the forward pass alone, marked
    `fsdp.forward_only`: the same signature and loss, no backward, no update.
    It is the held-out evaluation step: the rest of the pipeline compiles it
    like the training step (gathers and frees, precision, micro-batches,
    buffers) on the same persistent arena layout, and `fsdpc` links it into
    the trainer beside the training step as `fsdp_eval_step`.
  }];
  let options = [
    Option<"forwardOnly", "forward-only", "bool", /*default=*/"false",
           "The loss alone: no backward and no optimizer update">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def FSDPSetGridPass : Pass<"fsdp-set-grid", "::mlir::ModuleOp"> {
  let summary = "Compiles a model for another device grid";
  let description = [{
    Replaces the grid of the module's plan, so one model file compiles for any
    number of ranks (`fsdpc --grid=N` runs this pass). The new plan is
    verified: a 2-D grid still needs `hybrid_shard`.

    ```sh
    fsdp-opt model.mlir --fsdp-set-grid="grid=8"
    fsdp-opt model.mlir --fsdp-set-grid="grid=2,4"
    ```
  }];
  let options = [
    ListOption<"grid", "grid", "int64_t", "The device grid: N, or R,S for hybrid_shard">,
  ];
}

def FSDPFormUnitsPass : Pass<"fsdp-form-units", "::mlir::ModuleOp"> {
  let summary = "Gives every parameter its FSDP unit";
  let description = [{
    After this pass every `fsdp.param` names its unit, the group of
    parameters that are flattened into one buffer, gathered and freed
    together:

    - with `units = explicit` (the default), a parameter keeps the unit it
      names; one without a unit joins the unit `root` (PyTorch's root FSDP
      module);
    - with `units = auto_wrap`, a parameter that names a unit keeps it, and
      consecutive parameters without one are grouped, in declaration order,
      into units `auto0`, `auto1`, ... each closed as soon as it holds at
      least `min_unit_params` elements.

    A unit's parameters must share one element type (they share one flat
    buffer) and be all trainable or all frozen (a unit's gradient is one
    flat buffer too).
  }];
}

def FSDPPartitionPass : Pass<"fsdp-partition", "::mlir::ModuleOp"> {
  let summary = "Lays units out as flat sharded buffers and splits the batch";
  let description = [{
    Runs on the model (before `fsdp-autodiff`), after `fsdp-form-units`:

    - every unit becomes one flat buffer: an `fsdp.unit` op gives its size,
      its shard size (the padded size over the ranks of the shard axis,
      rounded up to 16 elements, so every shard starts on a cache line) and
      its number of shards, and each `fsdp.param` gets its element offset in
      it (`at`), parameters back to back in declaration order;
    - the model's inputs get their per-rank batch: the model file is written
      for the global batch, and every rank of the data-parallel world (all
      ranks, whatever the strategy) gets `batch / ranks` rows. The types of
      the loss function are re-derived from the new input types; dimension 0
      of a value that depends on an input is its batch dimension.

    ```mlir
    fsdp.param @fc1.w unit "fc1" at 0 : tensor<784x256xf32> = #fsdp.fan_in_uniform
    fsdp.param @fc1.b unit "fc1" at 200704 : tensor<256xf32> = #fsdp.zeros
    fsdp.unit @fc1 numel 200960 shard 100480 ranks 2 : f32
    func.func @loss(%x: tensor<32x784xf32>, %y: tensor<32xi32>) -> tensor<f32>
    ```

    The loss must be a mean over the batch: the ranks' gradients are
    averaged, and so are their losses.
  }];
}

def FSDPInsertCollectivesPass : Pass<"fsdp-insert-collectives", "::mlir::ModuleOp"> {
  let summary = "Gathers units just in time, frees them, reduces their gradients";
  let description = [{
    Runs on `@train_step` (after `fsdp-autodiff`) of a partitioned module.
    For each unit whose shards are spread over several ranks:

    - `fsdp.all_gather` right before the first use of any of its parameters
      in the forward pass; the uses read `fsdp.view`s of the gathered buffer;
    - `fsdp.free` after its last use in the forward pass and, with
      `full_shard` and `hybrid_shard`, another `fsdp.all_gather` right before
      its first use in the backward pass, freed after its last one
      (`shard_grad_op` and `no_shard` keep the forward gather);
    - for a trainable unit, `fsdp.flatten` of its parameters' gradients right
      after the last of them is computed, then `fsdp.reduce_scatter` (avg)
      over the shard group, then `fsdp.all_reduce` (avg) over the replica
      group when there are replicas (`no_shard`, `hybrid_shard`);
    - one `fsdp.update` of the unit's shard, at the end of the step, in unit
      order; with gradient clipping, after an `fsdp.all_reduce` (sum) of the
      ranks' partial sums of squares.

    Frozen units are gathered and freed but get no gradient traffic. With one
    shard per unit (`no_shard`, or one rank) parameters stay `fsdp.use`s.

    ```mlir
    %fc1 = fsdp.all_gather @fc1 : tensor<200960xf32>
    %w = fsdp.view @fc1.w in %fc1 : tensor<200960xf32> -> tensor<784x256xf32>
    ...
    fsdp.free %fc1 : tensor<200960xf32>
    ...
    %g = fsdp.flatten @fc1 (%dw, %db) : tensor<784x256xf32>, tensor<256xf32> -> tensor<200960xf32>
    %s = fsdp.reduce_scatter %g avg : tensor<200960xf32> -> tensor<100480xf32>
    fsdp.update @fc1, %s step %step lr %lr {optimizer = #fsdp.adamw<lr = 0.001>} : tensor<100480xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def FSDPRematPass : Pass<"fsdp-remat", "::mlir::ModuleOp"> {
  let summary = "Recomputes activations in backward instead of keeping them (the plan's remat)";
  let description = [{
    Runs on `@train_step` (after `fsdp-autodiff`, before
    `fsdp-insert-collectives`) and does what the plan's `remat` says; with
    `remat = none` (the default) it changes nothing.

    The forward pass is cut into one part per unit: a part starts at the
    first op that reads a parameter of a unit no earlier op read (parameter
    reads and constants belong to no part). Values a part hands to another
    part, such as the residual stream between transformer blocks, are always
    kept. Of a recomputed part:

    - `remat = unit` keeps nothing else (PyTorch's checkpoint_wrapper per
      block, torchtitan's "full" activation checkpointing);
    - `remat = selective` keeps the results of matrix products
      (`fsdp.matmul`, `fsdp.batch_matmul`) and recomputes the cheap ops:
      elementwise ops, norms, softmax, reshapes (torchtitan's op-level
      selective checkpointing).

    Every other forward value a backward op reads is computed again by a
    copy of its forward op, right before the first backward op that needs
    it, from kept values and other copies. The copies are the same ops on the
    same operands: the step computes the same values, bit for bit, with less
    memory (`fsdp-assign-buffers` plans the shorter live ranges). Their
    parameter reads come after the forward pass, so `fsdp-insert-collectives`
    gathers the unit again for them along with its backward.

    The part that computes the loss is never recomputed (its backward starts
    where its forward ends). `remat_every = k` recomputes the 1st, (k+1)-th,
    ... unit part; `remat_units = [...]` only the units it names. What the
    copies add is recorded on the module for `fsdp-report` as
    `fsdp.recompute = {ops, products, product_flops, other_elements,
    step_product_flops}` (the last: the FLOPs of all the step's products,
    the copies' included).

    ```mlir
    // remat = unit: after the loss, block0's forward again for its backward
    %loss = fsdp.cross_entropy ...
    ...
    %h = fsdp.matmul %x0, %w1 : ...          // a copy of the forward op
    %a = fsdp.gelu %h : ...
    %da = fsdp.gelu_grad %a, %dy : ...
    ```
  }];
}

def FSDPLowerPrecisionPass : Pass<"fsdp-lower-precision", "::mlir::ModuleOp"> {
  let summary = "Computes the step in the plan's param_dtype, reduces in its reduce_dtype";
  let description = [{
    Runs on `@train_step` after `fsdp-insert-collectives` and makes the
    plan's `param_dtype` and `reduce_dtype` explicit in every type
    (docs/MixedPrecision.md); nothing changes when both are `f32`. With
    `param_dtype = bf16`:

    - each `fsdp.all_gather` of an f32 unit yields bf16 (the shard is rounded
      before it travels), and its `fsdp.view`s are bf16; a parameter of an
      unsharded unit (`fsdp.use`) and each float input of the step is
      rounded once by an `fsdp.convert` where the step reads it;
    - every op that reads a bf16 value computes in bf16: its other float
      operands are converted (a constant is rebuilt), its results are bf16;
      `fsdp.cross_entropy` and `fsdp.mse` results stay f32, as does the loss
      gradient `cross_entropy_grad` reads.

    Each `fsdp.flatten` that feeds a collective holds its gradients in
    `reduce_dtype` (bf16 gradients widen into f32 exactly), its collectives
    run in it, and the last one's result is converted back to the unit's type
    for clipping and `fsdp.update`; a flat gradient no collective reads is the
    gradient shard, in the unit's type.

    ```mlir
    %0 = fsdp.all_gather @fc1 : tensor<200960xbf16>
    %1 = fsdp.view @fc1.w in %0 : tensor<200960xbf16> -> tensor<784x256xbf16>
    %x = fsdp.convert %arg0 : tensor<32x784xf32> -> tensor<32x784xbf16>
    %3 = fsdp.matmul %x, %1 : tensor<32x784xbf16>, tensor<784x256xbf16> -> tensor<32x256xbf16>
    ...
    %37 = fsdp.flatten @fc1(%36, %35) : tensor<784x256xbf16>, tensor<256xbf16> -> tensor<200960xbf16>
    %38 = fsdp.reduce_scatter %37 avg : tensor<200960xbf16> -> tensor<100480xbf16>
    %39 = fsdp.convert %38 : tensor<100480xbf16> -> tensor<100480xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def FSDPAccumulateMicroBatchesPass
    : Pass<"fsdp-accumulate-micro-batches", "::mlir::ModuleOp"> {
  let summary = "Runs the step's forward and backward once per micro-batch (the plan's "
                "micro_batches)";
  let description = [{
    Runs on `@train_step` after `fsdp-lower-precision`; with
    `micro_batches = 1` (the default) it changes nothing. `fsdp-partition`
    typed the step for one micro-batch of a rank (batch / (ranks x k) rows);
    this pass gives the step k copies of its inputs, one per micro-batch (in
    order: all inputs of micro-batch 0, then of micro-batch 1, ...), and runs
    everything but the optimizer's part (the clip coefficient and the
    updates) once per micro-batch, on that micro-batch's inputs: the units
    are gathered again for each, and each micro-batch's activations are freed
    before the next one starts. The update reads the mean of the k gradients,
    the step returns the mean of the k losses (micro-batches are equal, so
    this is the gradient and loss of the whole batch). How the gradients add
    up is the plan's `accumulate`:

    - `reduce_scatter` (the default, least memory): each micro-batch's
      gradient is reduced as before and its shard, in the unit's type (f32),
      is added to the sum so far: one shard per unit lives across the
      micro-batches, the collectives run k times;
    - `no_sync` (PyTorch FSDP's `no_sync()` for all but the last
      micro-batch): the unsharded flat gradients are added in `reduce_dtype`,
      and only the sum is reduced, once, as soon as the last micro-batch's
      flat gradient exists: one collective per unit per step, one whole flat
      gradient per unit lives across the micro-batches.

    The step is marked `fsdp.micro_batches = k` (convert-fsdp-to-runtime lays
    each input's k micro-batches out one after the other, as the rank's rows
    of the batch), and what `fsdp-remat` recorded is multiplied by k.

    ```mlir
    // micro_batches = 2, accumulate = reduce_scatter
    %g0 = fsdp.reduce_scatter %f0 avg : tensor<200960xf32> -> tensor<100480xf32>
    ...                                   // micro-batch 1's forward and backward
    %g1 = fsdp.reduce_scatter %f1 avg : tensor<200960xf32> -> tensor<100480xf32>
    %s = fsdp.add %g0, %g1 : tensor<100480xf32>, tensor<100480xf32> -> tensor<100480xf32>
    %g = fsdp.scale %s by 0.5 : tensor<100480xf32>
    fsdp.update @fc1, %g step %step lr %lr {optimizer = ...} : tensor<100480xf32>
    ```
  }];
}

def FSDPReportPass : Pass<"fsdp-report", "::mlir::ModuleOp"> {
  let summary = "Prints each rank's memory and collective traffic of the plan";
  let description = [{
    An analysis, before anything runs: from the sharding layout of the units
    (run `fsdp-form-units` first) and the plan, the bytes each rank holds for
    parameter shards, gradient shards and optimizer state (exact, padding
    included), the gathered parameters at their peak (from the strategy and
    the prefetch depth), and the bytes each rank sends per step in each kind
    of collective (ring algorithms: a rank sends (S - 1) / S of an
    all-gathered or reduce-scattered buffer of S shards), unit by unit.
    With `arena`, the buffer plan of the compiled step (what `fsdpc --report`
    passes: the `arena_bytes`, `persistent_bytes` and `transient` fields of the
    manifest after `fsdp-assign-buffers`), the report adds the activations and
    temporaries, the gathered units and the flat gradients live at the arena's
    peak, and the planned arena itself; with its `recompute` field (a plan
    with `remat`: what `fsdp-remat` recorded), the ops recompute adds to each
    step, the FLOPs of its matrix products and the elements of its other
    ops. With `cost` (what `fsdpc --report` passes: the step time the cost
    model predicts on a device profile, `docs/CostModel.md`, and the memory
    budget when one is set), the predicted step by stream and the budget's
    margin. The IR is unchanged.

    ```sh
    fsdp-opt examples/llama-70b.mlir --fsdp-form-units --fsdp-report -o /dev/null
    fsdp-opt model.mlir --fsdp-set-grid="grid=16" --fsdp-form-units \
        --fsdp-report="format=json" -o /dev/null
    ```
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"table\"",
           "table (for people) or json (for scripts)">,
    Option<"arena", "arena", "std::string", /*default=*/"\"\"",
           "The compiled step's buffer plan, a JSON object (set by fsdpc --report)">,
    Option<"cost", "cost", "std::string", /*default=*/"\"\"",
           "The predicted step and the memory budget, a JSON object (set by fsdpc --report)">,
  ];
}

def FSDPFuseElementwisePass : Pass<"fsdp-fuse-elementwise"> {
  let summary = "Fuses chains of elementwise linalg generics";
  let description = [{
    Fuses each elementwise `linalg.generic` into the elementwise generics
    that consume it, so that a chain such as bias add, activation and its
    gradient mask runs as one loop nest over memory. Unlike upstream
    `linalg-fuse-elementwise-ops`, it does not propagate reshapes through
    named ops: that would turn `linalg.matmul` into a generic contraction and
    take it away from `fsdp-lower-gemms` and BLAS. Scalar (rank-0) ops are
    not fused: the chain that sums a value of every unit (the squared
    gradient norms, for clipping) stays a series of identical adds sharing
    one kernel, not one op whose operands grow with the model's depth.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def FSDPApproximateMathPass : Pass<"fsdp-approximate-math"> {
  let summary = "Replaces f32 exp, log and tanh by polynomials LLVM can vectorise";
  let description = [{
    Rewrites `math.exp`, `math.log` and `math.tanh` on f32 (scalars or vectors)
    into upstream MLIR's polynomial approximations (Cephes-style range
    reduction and minimax polynomials, a few ulps of float32 at most), built
    from `arith` and `math.fma` only. A libm call per element is what keeps a
    softmax, a cross-entropy or a GELU loop scalar on the CPU; the
    approximation is straight-line arithmetic, so LLVM's loop vectoriser
    turns those loops into SIMD code on CPUs with FMA (every AVX2 x86-64);
    on older ones LLVM calls libm's `fmaf` for each fma (the same values,
    slower). Run on host code before `convert-math-to-llvm`, which makes the
    fmas LLVM intrinsics, and `convert-math-to-libm`, which would make each a
    call; GPU kernels keep NVVM's own functions.

    ```mlir
    %y = math.exp %x : f32
    // becomes range reduction, a polynomial and an exponent insert:
    // arith.mulf / math.fma / arith.fptosi / arith.bitcast ... (no call)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def FSDPAssignBuffersPass : Pass<"fsdp-assign-buffers", "::mlir::ModuleOp"> {
  let summary = "Places every transient buffer of the step in the arena";
  let description = [{
    After bufferization, gives every `memref.alloc` of `fsdp_train_step`
    (gathered units, flat gradients, activations and temporaries) a fixed
    offset in the rank's arena, after its persistent part, and replaces it by
    a `memref.view` of the arena. A buffer is live from its allocation to the
    last op that uses it or anything derived from it (views, pointers handed
    to the runtime, the handle of a collective until its wait); buffers whose
    lives overlap get disjoint bytes. Offsets are chosen greedily, largest
    buffer first, lowest free 64-byte aligned offset. The body of an `scf.for`
    in the step (the attention's key blocks) is numbered in line after the
    loop: a buffer allocated in it lives within an iteration, whose bytes every
    iteration reuses, and a buffer from outside that the body uses lives to
    the loop's end.

    The step then allocates nothing: its memory is the arena, whose size (the
    planned peak) and a breakdown of the buffers live at the peak it writes
    into the manifest (`arena_bytes`, `transient`), before anything runs.

    ```mlir
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<32x256xf32>
    // becomes
    %c4096 = arith.constant 4096 : index
    %view = memref.view %arena[%c4096][] : memref<9000xi8> to memref<32x256xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def FSDPLowerGemmsPass : Pass<"fsdp-lower-gemms", "::mlir::ModuleOp"> {
  let summary = "Hands matrix products on buffers to the runtime's BLAS";
  let description = [{
    After bufferization, replaces each `linalg.matmul` and
    `linalg.batch_matmul` on f32 memrefs whose rows are contiguous (unit
    inner stride) and whose indexing maps are plain or transposed operands
    by a call of the runtime (docs/Runtime.md):

    ```c
    void fsdprt_sgemm(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                      int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
    void fsdprt_sgemm_batched(int32_t trans_a, int32_t trans_b, int64_t batch,
                              int64_t m, int64_t n, int64_t k, float alpha,
                              const float *a, int64_t lda, int64_t stride_a,
                              const float *b, int64_t ldb, int64_t stride_b,
                              float beta, float *c, int64_t ldc, int64_t stride_c);
    ```

    with `beta = 1`: linalg's products accumulate into their output, unless
    a zero fill of it comes right before (`beta = 0`, the fill goes). bf16
    products call `fsdprt_gemm_bf16(_batched)` (f32 sums, one rounding).
    Other f32 products are left to the loop lowering; other bf16 ones are an
    error.

    With `fuse-bias` (the CUDA target), an f32 product into a fresh buffer
    whose only reader adds a row vector to every row (`out = C + bias`, a
    linear layer's bias) computes `out` itself: `fsdprt_sgemm_bias`
    (fsdprt_sgemm's arguments, then the bias), which cuBLASLt's bias
    epilogue adds to the f32 sums before they are stored, the same numbers
    as the add. The add's kernel goes, and so does C. bf16 products keep
    their add: the epilogue would add the bias before the product's one
    rounding, where the bf16 step rounds the product, then the sum:

    ```mlir
    linalg.fill ins(%zero : f32) outs(%c : memref<128x256xf32>)
    linalg.matmul ins(%a, %w : ...) outs(%c : memref<128x256xf32>)
    %e = memref.expand_shape %c [[0, 1], [2]] ...
    linalg.generic ... ins(%e, %bias : memref<4x32x256xf32>, memref<256xf32>)
                       outs(%out : memref<4x32x256xf32>) { addf }
    // becomes
    %o = memref.collapse_shape %out [[0, 1], [2]] ...
    call @fsdprt_sgemm_bias(..., %beta0, %o_ptr, %ldo, %bias_ptr)
    ```
  }];
  let options = [
    Option<"fuseBias", "fuse-bias", "bool", /*default=*/"false",
           "Products followed by a bias add compute it (cuBLASLt's bias epilogue)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

//===----------------------------------------------------------------------===//
// The CUDA target (docs/CUDA.md)
//===----------------------------------------------------------------------===//

def FSDPOutlineKernelsPass : Pass<"fsdp-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Outlines each compute op of the step into a function; identical ones share it";
  let description = [{
    After the buffer plan, every top-level op of `fsdp_train_step` that
    computes on buffers in loops of its own (a `linalg` op, a `memref.copy`,
    an `scf.for` without results such as an embedding gradient's scatter; on
    the CUDA target, a `gpu.launch_func`) becomes a call of a private function
    `fsdp_kernel_<n>`, which takes the buffers and scalars the op uses (what
    is computed from constants alone is cloned in). Two ops that
    are identical up to the buffers they touch call the same function, so the
    decoder blocks of a deep model share their kernels and LLVM optimises each
    distinct loop nest once, on a function of its own:

    ```mlir
    %v0 = memref.view %arena[%c0][] : memref<1024xi8> to memref<64xf32>
    %v1 = memref.view %arena[%c256][] : memref<1024xi8> to memref<64xf32>
    linalg.fill ins(%cst : f32) outs(%v0 : memref<64xf32>)
    linalg.fill ins(%cst : f32) outs(%v1 : memref<64xf32>)
    // becomes
    call @fsdp_kernel_0(%v0) : (memref<64xf32>) -> ()
    call @fsdp_kernel_0(%v1) : (memref<64xf32>) -> ()
    func.func private @fsdp_kernel_0(%arg0: memref<64xf32> {llvm.noalias})
        attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]} {
      %cst = arith.constant 0.000000e+00 : f32
      linalg.fill ins(%cst : f32) outs(%arg0 : memref<64xf32>)
      return
    }
    ```

    Kernels are internal to the trainer and never inlined back into the step
    (LLVM would make it one large function again). A buffer argument whose
    arena bytes no other argument of the call overlaps is `llvm.noalias`
    (an op updating a buffer in place takes it once); the attribute is part
    of what two kernels must share to be one.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

def FSDPSplitStepPass : Pass<"fsdp-split-step", "::mlir::ModuleOp"> {
  let summary = "Cuts the step into functions of a bounded number of ops, called in order";
  let description = [{
    After `fsdp-outline-kernels`, `fsdp_train_step` is one block of calls
    whose length grows with the model's depth, and LLVM's register allocator
    is superlinear in the length of a block. This pass cuts the step's ops
    into parts of at most `max-ops-per-part` ops that do work (calls, loads,
    scalar arithmetic on loaded values), each moved into a private,
    never-inlined function `fsdp_step_part_<n>` that the step calls in order.
    A part takes the values it uses from before it as arguments (the arena,
    the step's scalars, collective handles, values loaded earlier) and
    returns those used after it; what is cheap to recompute (constants, views
    of the arena, addresses, arithmetic on the step's arguments) is cloned
    into each part that uses it instead. A step of one part is unchanged.

    ```mlir
    func.func @fsdp_train_step(%arena: memref<1024xi8>, %step: i64, %lr: f32) -> f32 {
      %h = call @fsdprt_all_gather_start(...)      // part 0
      call @fsdp_kernel_0(%v0)                      // part 0
      call @fsdprt_wait(%h)                         // part 1
      ...
    // becomes
      %h = call @fsdp_step_part_0(%arena) : (memref<1024xi8>) -> i64
      %loss = call @fsdp_step_part_1(%arena, %h) : (memref<1024xi8>, i64) -> f32
      return %loss : f32
    ```
  }];
  let options = [
    Option<"maxOpsPerPart", "max-ops-per-part", "int64_t", /*default=*/"256",
           "The most ops that do work in one part">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

def FSDPSinkHostReadsPass : Pass<"fsdp-sink-host-reads", "::mlir::ModuleOp"> {
  let summary = "Keeps the host from reading device memory in the step";
  let description = [{
    On a GPU the arena is device memory, which the host code of
    `fsdp_train_step` cannot load from. After bufferization the step's top
    level still reads scalars the kernels use: a factor computed on the
    device (gradient clipping), and the learning rate and step number, which
    `convert-fsdp-to-runtime` reads from the arena's `device_scalars` (the
    runtime writes them there before each step, so that a step replayed as a
    CUDA graph sees this step's values). This pass moves each such
    `memref.load`, and every pure op the host computes from it (the
    optimizer's bias corrections), into the blocks that use the value (a
    `linalg` body, later a kernel), once per block, at its start:

    ```mlir
    %step = memref.load %step_slot[] : memref<i64>
    %t = arith.sitofp %step : i64 to f64
    linalg.generic ... {
    ^bb0(%m: f32, %p: f32):
      %x = ... %t ...
    }
    // becomes
    linalg.generic ... {
    ^bb0(%m: f32, %p: f32):
      %step = memref.load %step_slot[] : memref<i64>
      %t = arith.sitofp %step : i64 to f64
      %x = ... %t ...
    }
    ```

    It runs before `fsdp-assign-buffers`, so that a buffer read in a kernel
    stays live until that kernel. A host op with effects that reads a device
    value (a call, the step's `return`) is an error.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def FSDPInsertStreamEventsPass : Pass<"fsdp-insert-stream-events", "::mlir::ModuleOp"> {
  let summary = "Orders the GPU streams of the step by events from the buffer plan";
  let description = [{
    On the CUDA target kernels and GEMMs run on a compute stream, all-gathers
    on a second stream, reduce-scatters and all-reduces on a third
    (docs/Runtime.md, section 7). After `fsdp-assign-buffers` every buffer
    of the step is a fixed byte range of the arena, so each op's reads and
    writes are known ranges. For every pair of ops on different streams that
    touch overlapping bytes, one of them writing, the later one must wait for
    the earlier: this pass records an event on the earlier op's stream right
    after it and makes the later op's stream wait for it, unless the streams
    are already ordered (transitively, through earlier events or a collective's
    `fsdprt_wait`, which makes the compute stream wait for the collective).
    The cases that arise: an arena region must be free (its last kernel done)
    before a gather on another stream overwrites it, and a gradient must be
    computed before its reduce-scatter reads it.

    ```mlir
    linalg.generic ... outs(%view_64 : memref<256x256xf32>)   // last reader of [4096, 266240)
    call @fsdprt_event_record(%c3_i32, %c0_i32) : (i32, i32) -> ()
    ...
    call @fsdprt_stream_wait_event(%c1_i32, %c3_i32) : (i32, i32) -> ()
    %h = call @fsdprt_all_gather_start(...)                   // writes [4096, 135168)
    ```

    Event ids are numbered in program order from 0; each is recorded once per
    step.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect"];
}

def FSDPSplitReductionsPass : Pass<"fsdp-split-reductions", "::mlir::ModuleOp"> {
  let summary = "Splits sums of whole large tensors into per-chunk partial sums, then their sum";
  let description = [{
    A GPU reduces a whole tensor in one block of threads at best, one of its
    multiprocessors. On tensors, before bufferization, each `linalg.generic`
    that reduces a one-dimensional tensor of at least `min-elements` into one
    value (the gradient norm's sum of squares over a unit's shard) is split
    by upstream `linalg::splitReduction`: the input is viewed as
    `chunks x (n / chunks)` (`chunks` the largest divisor of `n` that leaves
    at least `chunk-elements` per chunk, at most `max-chunks`), a first op
    reduces each contiguous chunk into a partial (one block each on the GPU),
    a second sums the partials. The buffer plan counts the partials. A
    reduction whose combiner has no neutral element, or a size with no such
    divisor, stays as it is. Only the CUDA target runs it: the CPU's sum keeps
    its order.

    ```mlir
    linalg.generic {iterator_types = ["reduction"]}
        ins(%g : tensor<1048576xf32>) outs(%init : tensor<f32>) ...
    // becomes
    %chunks = tensor.expand_shape %g [[0, 1]] ... into tensor<256x4096xf32>
    %partial = linalg.generic {iterator_types = ["parallel", "reduction"]}
        ins(%chunks ...) outs(%zeros : tensor<256xf32>) ...
    linalg.generic {iterator_types = ["reduction"]}
        ins(%partial : tensor<256xf32>) outs(%init : tensor<f32>) ...
    ```
  }];
  let options = [
    Option<"minElements", "min-elements", "int64_t", /*default=*/"65536",
           "Reductions of fewer elements stay whole">,
    Option<"chunkElements", "chunk-elements", "int64_t", /*default=*/"4096",
           "Fewest elements per chunk">,
    Option<"maxChunks", "max-chunks", "int64_t", /*default=*/"4096",
           "Most chunks (partial sums)">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def FSDPPreciseGpuMathPass : Pass<"fsdp-precise-gpu-math", "::mlir::ModuleOp"> {
  let summary = "IEEE-rounded square roots in GPU kernels unless the plan allows approximate math";
  let description = [{
    `convert-gpu-to-nvvm` lowers `math.sqrt` and `math.rsqrt` to libdevice,
    which the NVVM target compiles to the approximate `sqrt.approx` and
    `rsqrt.approx`. This pass (run on the outlined kernels, before that
    lowering; `fsdp-cuda-pipeline` leaves it out when the plan sets
    `approximate_math = true`) replaces
    them in every `gpu.module`: f32 and f64 `math.sqrt` by a call of
    libdevice's correctly rounded `__nv_fsqrt_rn` / `__nv_dsqrt_rn`
    (`sqrt.rn`), and `math.rsqrt` by `1.0 /` that (`div.rn`), as the CPU
    target computes them.

    ```mlir
    %r = math.rsqrt %v : f32
    // becomes
    %s = llvm.call @__nv_fsqrt_rn(%v) : (f32) -> f32
    %r = arith.divf %one, %s : f32
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

def FSDPFormKernelsPass : Pass<"fsdp-form-kernels", "::mlir::ModuleOp"> {
  let summary = "Turns the step's compute into parallel loop nests, one per GPU kernel";
  let description = [{
    Prepares the compute of `fsdp_train_step` on buffers for the upstream
    GPU mapping (`gpu-map-parallel-loops`, `convert-parallel-loops-to-gpu`):
    every `linalg` op and `memref.copy` becomes a kernel-shaped loop nest,
    and no kernel runs on a single thread.

    - A `memref.copy` becomes a `linalg.copy`; the loops of a `linalg.generic`
      are interchanged so that its parallel dimensions come first.
    - An op without reductions is an `scf.parallel` over its dimensions.
      Each thread takes the adjacent elements of the last dimension that make
      `vector-bytes` bytes (16: a vector load or store) of the smallest
      element it accesses contiguously along that dimension, as many as
      divide it: the loop goes over runs of that many, the body is repeated
      for each element of a run, and each buffer read or written contiguously
      along the row is one `vector.load` (where the run's first element was
      loaded) and one `vector.store` (where its last was stored). Other
      accesses (a value of the row's, a transposed input) stay per element,
      as does the arithmetic, so the results are the same bits. An aligned
      vector access is one 16-byte instruction on the GPU (`.v4`); LLVM splits
      one it cannot prove aligned.
    - A reduction keeps its running values in registers (`scf.for` with
      `iter_args`) and stores each output once; a `linalg.fill` just before
      it that only starts it becomes its first value, and no kernel of its
      own. A full reduction, and a reduction of at least 64 contiguous
      elements per output whose combiner is `addf`, `mulf`, `maximumf`,
      `minimumf`, `maxnumf` or `minnumf`, is a block per output whose threads
      each fold a strided slice, then combine in a `gpu.all_reduce` (a fixed
      tree: the result is the same every run, a reassociation of the CPU's
      sum); thread 0 stores. Other reductions get a thread per output.
    - A scalar (rank-0) op is done by thread 0 of the full reduction just
      before it, or else computed by every thread of the kernels just after
      it that read it (the first of them stores it).
    - A sequential scatter-add (an embedding gradient) gets a thread per
      column, which adds the rows in order.
    - Parallel nests are collapsed to one dimension; a run of consecutive
      nests that touch no byte another of them writes (by the buffer plan's
      byte ranges) becomes one kernel over their index spaces end to end,
      and a matrix product of the compute stream that touches none of their
      bytes does not break the run; a run stops before 4 KiB of kernel
      parameters, and before the same in-place update of another identical
      unit. Consecutive block reductions of one shape merge when independent
      (or, in one block, when the later folds read nothing the earlier one
      wrote).
    - An elementwise op right after a reduction whose leading loops are the
      reduced rows runs in its kernel: the block's threads (or, for a row of
      at most 64 elements, the row's thread) go through the row with the
      result in hand.
    - Each nest is tiled by `block-size`: the outer loop becomes the blocks,
      the inner one the threads of a block, and an `scf.if` guards the last,
      partial block.
    - An `scf.for` that calls the runtime (the attention's key blocks, whose
      products are library calls) stays on the host: the work of its body
      becomes kernels as above, launched once per iteration.

    ```mlir
    linalg.generic {iterator_types = ["parallel"]} ins(%a : memref<1000xf32>) ...
    // becomes 250 threads of 4 adjacent elements each
    scf.parallel (%block) = (%c0) to (%c250) step (%c250) {
      scf.parallel (%thread) = (%c0) to (%c250) step (%c1) {
        %i = arith.muli (%block + %thread), %c4 : index
        %x = vector.load %a[%i] : memref<1000xf32>, vector<4xf32>
        ... 4 x (vector.extract, arith.mulf) ...
        vector.store %y, %b[%i] : memref<1000xf32>, vector<4xf32>
      }
    }
    // and a sum of %a into memref<f32>
    scf.parallel (%block) = (%c0) to (%c1) step (%c1) {
      scf.parallel (%thread) = (%c0) to (%c256) step (%c1) {
        %partial = scf.for %i = %thread to %c1000 step %c256 iter_args(%s = %zero) ...
        %sum = gpu.all_reduce add %partial uniform {} : (f32) -> f32
        scf.if %thread_is_0 { ... memref.store ... }
      }
    }
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block">,
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"16",
           "Bytes of adjacent elements a thread of an elementwise kernel "
           "takes, for vector loads and stores (a power of two; 1 gives "
           "every thread one element)">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def FSDPBundleKernelsPass : Pass<"fsdp-bundle-kernels", "::mlir::ModuleOp"> {
  let summary = "Puts every outlined kernel in one GPU module, launched on the compute stream";
  let description = [{
    After `gpu-kernel-outlining`, moves every kernel of the step into one
    `gpu.module @fsdp_kernels` (so the device code is compiled once per
    architecture, into one binary the runtime loads once), keeps one of
    identical kernels (the same op on the same shapes, as in every block of a
    deep model: each distinct kernel is compiled once and launched for every
    block), names them `fsdp_kernel_<n>` in launch order, and launches each on
    the runtime's compute stream, fetched once at the start of the step. The stream stands
    for an async token each launch depends on, so that `gpu-to-llvm` launches
    on it without creating a stream or synchronising:

    ```mlir
    %stream = call @fsdprt_stream(%c0_i32) : (i32) -> !llvm.ptr
    %compute = builtin.unrealized_conversion_cast %stream : !llvm.ptr to !gpu.async.token
    %t = gpu.launch_func async [%compute] @fsdp_kernels::@fsdp_kernel_0 blocks in (...) threads in (...) args(...)
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

def FSDPPackFatbinPass : Pass<"fsdp-pack-fatbin", "::mlir::ModuleOp"> {
  let summary = "Packs the cubins of every target architecture into one fatbin";
  let description = [{
    `gpu-module-to-binary` (format `bin`) leaves one cubin per
    `#nvvm.target` in each `gpu.binary`; the runtime loads one image. This
    pass runs the CUDA toolkit's `fatbinary` to pack them into one fat binary
    that holds the code of every architecture (the driver picks the one of
    the device), and replaces the objects by that single `fatbin` object.
  }];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"/usr/local/cuda\"",
           "The CUDA toolkit holding bin/fatbinary">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def FSDPSinkKernelViewsPass : Pass<"fsdp-sink-kernel-views", "::mlir::ModuleOp"> {
  let summary = "Makes each view a kernel cannot take as a bare pointer, and each constant, inside the kernel";
  let description = [{
    The CUDA pipeline passes each memref to a kernel as a bare pointer
    (`convert-gpu-to-nvvm`'s `use-bare-ptr-memref-call-conv` and
    `gpu-to-llvm`'s `use-bare-pointers-for-kernels`): one 8-byte parameter
    instead of a descriptor of two pointers, the offset, the sizes and the
    strides. The kernel knows the rest from the memref's type, which must
    then be static. Every buffer of the plan is a static view of the arena;
    a view made from one at an offset a host loop computes (the attention's
    key block) is not. Before outlining, this pass clones each such view
    (a side-effect-free view-like op: subview, reshape, cast) into the
    `gpu.launch` that uses it, until the launch takes only static memrefs:
    the kernel gets the view's source and the loop's index instead. A launch
    that would still take another memref is an error.

    Each launch also gets its own copy of every constant it uses.
    `gpu-launch-sink-index-computations` would do the same one launch at a
    time, replacing a constant's uses in that launch by walking all of them:
    the step's constants are shared by thousands of launches (Llama-2-70B's
    CUDA step), which made that pass quadratic.

    ```mlir
    scf.for %kb = %c0 to %c32 step %c16 {
      %blk = memref.subview %buf[0, %kb, 0] [16, 16, 16] [1, 1, 1]
          : memref<16x32x16xf32> to memref<16x16x16xf32, strided<[512, 16, 1], offset: ?>>
      gpu.launch ... {
        memref.store %v, %blk[%i, %j, %k] : memref<16x16x16xf32, strided<[512, 16, 1], offset: ?>>
      }
    }
    // becomes
    scf.for %kb = %c0 to %c32 step %c16 {
      gpu.launch ... {
        %blk = memref.subview %buf[0, %kb, 0] [16, 16, 16] [1, 1, 1] : ...
        memref.store %v, %blk[%i, %j, %k] : ...
      }
    }
    ```
  }];
}

def FSDPAnnotateKernelArgumentsPass
    : Pass<"fsdp-annotate-kernel-arguments", "::mlir::ModuleOp"> {
  let summary = "Alignment and noalias of the kernels' pointer parameters, from the buffer plan";
  let description = [{
    After `fsdp-bundle-kernels`, and before `fsdp-outline-kernels` hides
    where the launches' memrefs come from: every memref a kernel takes is a
    static view of the step's arena (its first argument), 64-byte aligned,
    at a byte offset the buffer plan chose (or a reshape, cast or subview of
    one: the same pointer). For each parameter of each `gpu.func`, over every
    `gpu.launch_func` of it (identical kernels of identical blocks are one):

    - `llvm.align`: the largest power of two up to 64 dividing the byte
      offset of what every launch passes;
    - `llvm.noalias`: when no launch passes it bytes of the arena another of
      its memref parameters also gets (two views of one buffer, an update
      in place, are not noalias; nor is anything this pass cannot trace to a
      static view of the arena).

    With them the NVPTX backend loads the buffers a kernel only reads
    through the read-only data cache (`ld.global.nc`) and merges accesses to
    adjacent elements into vector ones where the alignment allows.

    ```mlir
    gpu.launch_func @fsdp_kernels::@k blocks in (...) threads in (...)
        args(%x : memref<64xf32>, %y : memref<64xf32>)   // views at bytes 256 and 320
    gpu.func @k(%arg0: memref<64xf32>, %arg1: memref<64xf32>) kernel
    // becomes
    gpu.func @k(%arg0: memref<64xf32> {llvm.align = 64 : i64, llvm.noalias},
                %arg1: memref<64xf32> {llvm.align = 64 : i64, llvm.noalias}) kernel
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def FSDPNarrowKernelIndicesPass : Pass<"fsdp-narrow-kernel-indices", "::mlir::ModuleOp"> {
  let summary = "32-bit index arithmetic in GPU modules whose index values all fit";
  let description = [{
    `convert-gpu-to-nvvm` makes `index` as wide as the GPU module's data
    layout says, 64 bits by default. This pass gives a `gpu.module` a 32-bit
    index (`dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>`) when every index
    value of every kernel in it provably fits a signed 32-bit integer, by
    upstream's integer range analysis: from the known block and grid sizes
    of each kernel, and for a parameter of type index from the ranges of what
    every `gpu.launch_func` passes (the same analysis of the host code, a
    host loop's bounds). Besides, an unsigned operation must see no negative
    index, and the largest element offset of each memref type in the module
    must fit (accesses are in bounds). Otherwise the module stays 64-bit.
    Run after `fsdp-bundle-kernels` with affine ops lowered in the kernels,
    before the host's launches are outlined and before structured control
    flow is lowered (loop bounds bound the induction variables).

    Addresses stay 64-bit: kernels get bare pointers (the arena of a large
    model is far beyond 2^31 bytes) and add each access's element offset to
    them sign-extended. The kernels must take memrefs as bare pointers: a
    descriptor's offset, sizes and strides are index values, which the host
    passes at 64 bits. A kernel's index parameters become `i32`, and each
    launch passes `arith.index_cast` of its value to `i32`, so that both
    sides agree.

    ```mlir
    gpu.module @fsdp_kernels {
      gpu.func @k(%arg0: memref<4x32xf32>, %arg1: index) kernel ...
    }
    // becomes
    gpu.module @fsdp_kernels attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>} {
      gpu.func @k(%arg0: memref<4x32xf32>, %arg1: i32) kernel {
        %0 = arith.index_cast %arg1 : i32 to index
        ...
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // FSDP_TRANSFORMS_PASSES_TD
