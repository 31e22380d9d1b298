//===- Passes.td - fsdp model-level passes -----------------*- tablegen -*-===//

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
    Replaces the grid of the module's plan, its tensor-parallel degree or
    both, so one model file compiles for any number of ranks (`fsdpc
    --grid=N --tensor-parallel=T --sequence-parallel` runs this pass), and
    can turn sequence parallelism on. The new plan is verified: a 2-D grid
    still needs `hybrid_shard`, sequence parallelism tensor ranks.

    ```sh
    fsdp-opt model.mlir --fsdp-set-grid="grid=8"
    fsdp-opt model.mlir --fsdp-set-grid="grid=2,4"
    fsdp-opt model.mlir --fsdp-set-grid="grid=2 tensor=4"
    fsdp-opt model.mlir --fsdp-set-grid="grid=2 tensor=4 sequence=true"
    ```
  }];
  let options = [
    ListOption<"grid", "grid", "int64_t",
               "The data-parallel grid: N, or R,S for hybrid_shard (none: the plan's)">,
    Option<"tensor", "tensor", "int64_t", /*default=*/"0",
           "The tensor-parallel degree (0: the plan's)">,
    Option<"sequence", "sequence", "bool", /*default=*/"false",
           "Sequence parallelism on the tensor axis (sequence_parallel = true; "
           "false: the plan's)">,
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

def FSDPSplitTensorsPass : Pass<"fsdp-split-tensors", "::mlir::ModuleOp"> {
  let summary = "Cuts products and what lies between them across the tensor ranks";
  let description = [{
    With the plan's `tensor_parallel = T` above 1, runs on the model before
    `fsdp-partition` and lays it out as Megatron-LM lays out a transformer
    block, from the dataflow alone:

    - a product of a whole activation and a parameter is column-parallel:
      the weight is cut along its output features into T blocks, one per
      tensor rank (`fsdp.param ... split 1`), and each rank computes its
      block of the result;
    - what follows stays cut along the same features: elementwise ops (a
      bias is cut with them), reshapes (features into heads: T must divide
      the heads), transposes, rotary embeddings, attention over the heads
      (query, key and value heads alike);
    - a product of such a cut activation, along its contraction, and a
      parameter is row-parallel: the weight is cut along its input features,
      and `fsdp.tensor_sum` adds the ranks' partial results;
    - a whole value read inside a region (the column products' input)
      enters it through `fsdp.tensor_copy`, whose gradient sums the ranks'.

    A region that reaches anything else before a row-parallel product (a
    loss, a norm, the model's result) stays whole on every rank: the output
    head and the embeddings stay whole. What the layout would cut but cannot
    (T not dividing the heads, the features or a bias; a fused product's
    parts sliced apart; key and value heads left whole) is an error at the
    op. A parameter read both cut and whole is an error at its declaration.

    ```mlir
    // tensor_parallel = 2: the MLP's first weight cut by columns, the second by rows
    fsdp.param @w1 unit "mlp" split 1 : tensor<64x128xf32> = #fsdp.normal<std = 0.02>
    fsdp.param @w2 unit "mlp" split 0 : tensor<128x64xf32> = #fsdp.normal<std = 0.02>
    %xc = fsdp.tensor_copy %x : tensor<8x64xf32>
    %h = fsdp.matmul %xc, %w1 : tensor<8x64xf32>, tensor<64x128xf32> -> tensor<8x128xf32>
    %g = fsdp.gelu %h : tensor<8x128xf32>
    %p = fsdp.matmul %g, %w2 : tensor<8x128xf32>, tensor<128x64xf32> -> tensor<8x64xf32>
    %y = fsdp.tensor_sum %p : tensor<8x64xf32>
    ```
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

def FSDPSplitSequencePass : Pass<"fsdp-split-sequence", "::mlir::ModuleOp"> {
  let summary = "Splits the activations between tensor-parallel regions along the sequence";
  let description = [{
    With the plan's `sequence_parallel = true`, runs on the model after
    `fsdp-split-tensors` and `fsdp-partition` (each value has its rank's rows)
    and gives the tensor ranks blocks of the sequence where they would hold
    whole activations between the regions (Megatron-LM's sequence
    parallelism): a region's `fsdp.tensor_sum` becomes
    `fsdp.tensor_reduce_scatter` along the tokens (the outermost dimension
    but the features that the tensor ranks divide: the batch's rows of
    `[batch, sequence, features]` where they divide them, contiguous blocks
    the collectives move as they lie, else the sequence, whose blocks are
    laid out rank-major around the rows), what follows it token by token
    stays in blocks
    (elementwise ops, norms over the features: residual adds, biases,
    RMS and layer norms), and a block entering the next region is gathered
    by `fsdp.tensor_all_gather` instead of copied by `fsdp.tensor_copy`.

    - a whole value a block op reads along the sequence (the residual the
      first region's sum is added to) is cut by `fsdp.tensor_chunk`;
    - a whole value it broadcasts over the sequence (a gain, a bias) enters
      through `fsdp.tensor_copy`, so its gradient sums the ranks' blocks';
    - a block read by anything else (the output head, the loss) is made
      whole again by `fsdp.tensor_unchunk`.

    The tensor ranks must divide the batch's rows or the sequence: else an
    error at the region's row-parallel product.

    ```mlir
    %p = fsdp.matmul %g, %w2 : tensor<4x32x128xf32>, tensor<128x64xf32> -> tensor<4x32x64xf32>
    %y = fsdp.tensor_reduce_scatter %p dim 1 : tensor<4x32x64xf32> -> tensor<4x16x64xf32>
    %x = fsdp.tensor_chunk %x0 dim 1 : tensor<4x32x64xf32> -> tensor<4x16x64xf32>
    %r = fsdp.add %x, %y : tensor<4x16x64xf32>, tensor<4x16x64xf32> -> tensor<4x16x64xf32>
    %gc = fsdp.tensor_copy %gain : tensor<64xf32>
    %n = fsdp.rms_norm %r, %gc eps 1.0e-05 : tensor<4x16x64xf32>, tensor<64xf32>
    %a = fsdp.tensor_all_gather %n dim 1 : tensor<4x16x64xf32> -> tensor<4x32x64xf32>
    ```
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
    `fsdp.recompute = #fsdp.recompute<ops, products, product_flops,
    other_elements, step_product_flops, attention_flops,
    fused_attention_flops>` (`step_product_flops`: the FLOPs of all the
    step's products, the copies' included), which the step's manifest
    carries.

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

def FSDPHoistTensorCollectivesPass
    : Pass<"fsdp-hoist-tensor-collectives", "::mlir::ModuleOp"> {
  let summary = "Starts each tensor-group collective as soon as its operand is computed";
  let description = [{
    Runs on the step before `convert-fsdp-to-runtime`, which starts a
    collective where it stands and waits for it before its first reader. The
    pure ops right before a tensor group's collective (`fsdp.tensor_sum`,
    `fsdp.tensor_reduce_scatter`, `fsdp.tensor_all_gather`,
    `fsdp.tensor_unchunk`) that its operand does not depend on move after it,
    in their order: in the backward pass, the weight gradients of the products
    whose input gradients it sums then run while it travels. Ops with effects
    (the units' gathers, frees and reduce-scatters) and other collectives stay
    where they are, and so does everything the operand needs; values do not
    change.

    ```mlir
    // before
    %dx = fsdp.matmul %dy, %w transpose_rhs : ...
    %dw = fsdp.matmul %x, %dy transpose_lhs : ...
    %s = fsdp.tensor_sum %dx : tensor<8x32x64xf32>
    // after: the weight gradient runs during the all-reduce
    %dx = fsdp.matmul %dy, %w transpose_rhs : ...
    %s = fsdp.tensor_sum %dx : tensor<8x32x64xf32>
    %dw = fsdp.matmul %x, %dy transpose_lhs : ...
    ```
  }];
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

#endif // FSDP_TRANSFORMS_PASSES_TD
