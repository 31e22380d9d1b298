//===- FSDPTensorParallelOps.td - tensor-parallel regions --*- tablegen -*-===//
//
// What `fsdp-split-tensors` puts around the parts of a model that the tensor
// ranks compute in blocks (Megatron-LM's f and g): a region is entered by
// `fsdp.tensor_copy` and left by `fsdp.tensor_sum`, each the other's
// gradient. Included from FSDPOps.td.
//
//===----------------------------------------------------------------------===//

def FSDP_TensorCopyOp : FSDP_Op<"tensor_copy",
    [Pure, FSDP_Differentiable, SameOperandsAndResultType]> {
  let summary = "Enters a tensor-parallel region: its value on every tensor rank";
  let description = [{
    The input itself: every tensor rank holds the same value and computes its
    block of what follows from it (a column-parallel product, say). Its
    gradient is the sum over the tensor ranks of their blocks' gradients
    (`fsdp.tensor_sum`), which is what makes the input's gradient whole:
    Megatron-LM's `f`.

    ```mlir
    %x = fsdp.tensor_copy %h : tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// Pure although it communicates: every rank runs the same step, so removing or
// merging one removes or merges it on every rank of the group.
def FSDP_TensorSumOp : FSDP_Op<"tensor_sum",
    [Pure, FSDP_Differentiable, SameOperandsAndResultType]> {
  let summary = "Leaves a tensor-parallel region: the sum of the tensor ranks' parts";
  let description = [{
    The elementwise sum of `input` over the ranks of the tensor group (an
    all-reduce), each of which computed a partial sum (a row-parallel
    product, say); every rank gets the whole. Its gradient is the result's
    gradient itself, which every rank holds whole: Megatron-LM's `g`.

    ```mlir
    %y = fsdp.tensor_sum %partial : tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Sequence parallelism: blocks of the sequence between the regions
//===----------------------------------------------------------------------===//

// Each moves a value between its whole form and the tensor ranks' blocks
// along `dim`: the block has the whole's shape with `dim` divided by
// `tensor_parallel`, rank t holding the t-th block. fsdp.tensor_chunk and
// fsdp.tensor_unchunk also take fewer blocks than ranks (`B` dividing
// `tensor_parallel`, each block held by consecutive ranks).
class FSDP_SequenceBlockOp<string mnemonic, list<Trait> traits = []>
    : FSDP_Op<mnemonic, !listconcat(traits, [Pure, FSDP_Differentiable])> {
  let arguments = (ins FSDP_Tensor:$input, ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def FSDP_TensorAllGatherOp : FSDP_SequenceBlockOp<"tensor_all_gather"> {
  let summary = "Enters a tensor-parallel region from sequence blocks";
  let description = [{
    The whole value, every tensor rank's block along `dim` concatenated in
    rank order (an all-gather over the tensor group), read by a region whose
    ranks each compute their block of features from it (a column-parallel
    product): sequence parallelism's `fsdp.tensor_copy`. Each rank's
    gradient of the whole is its part, so the input's gradient is the sum
    over the ranks, scattered in blocks: `fsdp.tensor_reduce_scatter`.

    ```mlir
    %x = fsdp.tensor_all_gather %h dim 1 : tensor<4x16x64xf32> -> tensor<4x32x64xf32>
    ```
  }];
}

def FSDP_TensorReduceScatterOp : FSDP_SequenceBlockOp<"tensor_reduce_scatter"> {
  let summary = "Leaves a tensor-parallel region as sequence blocks";
  let description = [{
    This rank's block along `dim` of the sum over the tensor ranks of their
    partial results (a reduce-scatter over the tensor group; a row-parallel
    product's, say): sequence parallelism's `fsdp.tensor_sum`. Every rank's
    partial result reads the whole gradient: `fsdp.tensor_all_gather`.

    ```mlir
    %y = fsdp.tensor_reduce_scatter %partial dim 1 : tensor<4x32x64xf32> -> tensor<4x16x64xf32>
    ```
  }];
}

def FSDP_TensorChunkOp : FSDP_SequenceBlockOp<"tensor_chunk"> {
  let summary = "This tensor rank's block of a value every rank holds";
  let description = [{
    Of the `B` blocks along `dim` of a whole value (`B` = the whole's size
    over the block's, dividing the `T` tensor ranks), block `t * B / T` on
    tensor rank `t` (no communication). With `B = T`, rank `t`'s own block:
    where a value every rank computed (the embeddings) meets sequence
    blocks. With fewer blocks, each is read by `T / B` consecutive ranks:
    the key and value heads of grouped-query attention with fewer of them
    than tensor ranks, each rank reading the one its query heads use. Every
    rank reads the whole gradient: `fsdp.tensor_unchunk`.

    ```mlir
    %b = fsdp.tensor_chunk %x dim 1 : tensor<4x32x64xf32> -> tensor<4x16x64xf32>
    // On 4 tensor ranks: ranks 0 and 1 read key head 0, ranks 2 and 3 head 1.
    %k = fsdp.tensor_chunk %kh dim 1 : tensor<4x2x16x16xf32> -> tensor<4x1x16x16xf32>
    ```
  }];
}

def FSDP_TensorUnchunkOp : FSDP_SequenceBlockOp<"tensor_unchunk"> {
  let summary = "The whole value of sequence blocks, for whole computation";
  let description = [{
    The tensor ranks' blocks along `dim` concatenated in rank order (an
    all-gather over the tensor group) for what every rank computes whole
    (the output head, the loss). Every rank computes the whole gradient, so
    the input's gradient is this rank's block of it: `fsdp.tensor_chunk`.
    With fewer blocks `B` than tensor ranks `T` (block `t * B / T` of rank
    `t`, as fsdp.tensor_chunk reads it), each block is the sum of its `T / B`
    ranks' (an all-reduce of each rank's block in place and zeros
    elsewhere): the gradient of a chunk that several ranks read.

    ```mlir
    %x = fsdp.tensor_unchunk %b dim 1 : tensor<4x16x64xf32> -> tensor<4x32x64xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Vocabulary parallelism: an embedding and a loss over blocks of the vocabulary
//===----------------------------------------------------------------------===//

def FSDP_TensorEmbeddingOp : FSDP_Op<"tensor_embedding",
    [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "This tensor rank's part of an embedding whose table's rows it holds a block of";
  let description = [{
    `table` is this rank's block of the `rows` rows of an embedding table
    (rank `t` the rows from `t * rows / T`): the result is `fsdp.embedding`'s
    where an index falls in the block and zeros elsewhere, so that the sum
    over the tensor ranks (`fsdp.tensor_sum`, which follows it) is the whole
    lookup. Its gradient, `fsdp.tensor_embedding_grad`, is the block's rows
    of the whole table's gradient.

    ```mlir
    // 256 rows on 2 tensor ranks: 128 of them here.
    %part = fsdp.tensor_embedding %wte[%tokens] rows 256
        : tensor<128x64xf32>, tensor<8x32xi32> -> tensor<8x32x64xf32>
    %e = fsdp.tensor_sum %part : tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$table, FSDP_IndexTensor:$indices,
                       ConfinedAttr<I64Attr, [IntPositive]>:$rows);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $table `[` $indices `]` `rows` $rows attr-dict `:` type($table) `,` type($indices) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def FSDP_TensorEmbeddingGradOp : FSDP_Op<"tensor_embedding_grad", [Pure]> {
  let summary = "This tensor rank's block of rows of fsdp.tensor_embedding's table gradient";
  let description = [{
    Scatter-adds each row of the incoming gradient (the whole lookup's,
    which every rank holds) into the table row its index selects, for the
    indices in this rank's block of the `rows` rows.

    ```mlir
    %dt = fsdp.tensor_embedding_grad %tokens, %de rows 256
        : tensor<8x32xi32>, tensor<8x32x64xf32> -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins FSDP_IndexTensor:$indices, FSDP_Tensor:$grad,
                       ConfinedAttr<I64Attr, [IntPositive]>:$rows);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $indices `,` $grad `rows` $rows attr-dict `:` type($indices) `,` type($grad) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def FSDP_BlockIndicesOp : FSDP_Op<"block_indices", [Pure, AllTypesMatch<["indices", "result"]>]> {
  let summary = "Indices into one block of rows, the others past its end";
  let description = [{
    `index - first` for the indices in `[first, first + size)`, `size` for
    the others: what convert-fsdp-to-runtime lowers fsdp.tensor_embedding
    and its gradient to, the block's table followed by a row of zeros read
    (or written and dropped) at `size`. `first` is a 1-element tensor the
    runtime fills per tensor rank.

    ```mlir
    %local = fsdp.block_indices %tokens, %first size 128
        : tensor<8x32xi32>, tensor<1xi64> -> tensor<8x32xi32>
    ```
  }];
  let arguments = (ins FSDP_IndexTensor:$indices, FSDP_IndexTensor:$first,
                       ConfinedAttr<I64Attr, [IntPositive]>:$size);
  let results = (outs FSDP_IndexTensor:$result);
  let assemblyFormat = [{
    $indices `,` $first `size` $size attr-dict `:` type($indices) `,` type($first) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def FSDP_TensorCrossEntropyOp : FSDP_Op<"tensor_cross_entropy",
    [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "fsdp.cross_entropy of logits the tensor ranks hold in blocks of classes";
  let description = [{
    The mean softmax cross-entropy of `fsdp.cross_entropy` over `classes`
    classes, each tensor rank holding the block of `logits` of its classes
    (rank `t` the classes from `t * C / T`, the block of a column-parallel
    output head): the logits are never gathered. Every rank computes its
    block's statistics a position (its maximum, the sum of exponentials
    below it, the target's logit where the rank holds the target), the ranks
    gather those three floats a position and each combines them in rank
    order into the same loss. Its gradient, `fsdp.tensor_cross_entropy_grad`,
    is each rank's block of the whole gradient.

    ```mlir
    // 256 classes on 2 tensor ranks: 128 of them here.
    %l = fsdp.tensor_cross_entropy %z, %y classes 256
        : tensor<8x32x128xf32>, tensor<8x32xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$logits, FSDP_IndexTensor:$targets,
                       ConfinedAttr<I64Attr, [IntPositive]>:$classes);
  let results = (outs FSDP_Loss:$result);
  let assemblyFormat = [{
    $logits `,` $targets `classes` $classes attr-dict `:` type($logits) `,` type($targets)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def FSDP_TensorCrossEntropyGradOp : FSDP_Op<"tensor_cross_entropy_grad",
    [Pure, AllTypesMatch<["logits", "result"]>]> {
  let summary = "This tensor rank's block of fsdp.tensor_cross_entropy's gradient";
  let description = [{
    `(softmax(logits) - onehot(targets)) * dl / positions` on this rank's
    block of the classes, the softmax over all `classes` of them: the
    block's statistics are gathered from the tensor ranks and combined as
    the loss combines them, then the block's gradient computed in f32 from
    the f32 loss gradient `dl`; the result has the logits' type.

    ```mlir
    %dz = fsdp.tensor_cross_entropy_grad %z, %y, %dl classes 256
        : tensor<8x32x128xf32>, tensor<8x32xi32>, tensor<f32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$logits, FSDP_IndexTensor:$targets, FSDP_Loss:$grad,
                       ConfinedAttr<I64Attr, [IntPositive]>:$classes);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $grad `classes` $classes attr-dict `:` type($logits) `,`
    type($targets) `,` type($grad)
  }];
  let hasVerifier = 1;
}

// What convert-fsdp-to-runtime lowers the two to, around the tensor ranks'
// all-gather of the statistics: `first`, the block's first class, is a
// 1-element tensor the runtime fills per rank.

def FSDP_CrossEntropyStatsOp : FSDP_Op<"cross_entropy_stats", [Pure]> {
  let summary = "One block of classes' log-sum-exp statistics and target logits";
  let description = [{
    For the `N` positions of `logits` `[..., Cb]`, holding classes `first`
    to `first + Cb - 1`: row 0 of the result is each position's maximum
    logit `m`, row 1 the sum of `exp(logit - m)`, row 2 the target's logit
    where `first <= target < first + Cb` and 0 elsewhere; all f32, computed
    from the logits widened to f32.

    ```mlir
    %s = fsdp.cross_entropy_stats %z, %y, %first
        : tensor<8x32x128xbf16>, tensor<8x32xi32>, tensor<1xi64> -> tensor<1x3x256xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$logits, FSDP_IndexTensor:$targets,
                       FSDP_IndexTensor:$first);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $first attr-dict `:` type($logits) `,` type($targets) `,`
    type($first) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FSDP_CrossEntropyCombineOp : FSDP_Op<"cross_entropy_combine", [Pure]> {
  let summary = "The cross-entropy from the tensor ranks' statistics";
  let description = [{
    `stats` is `[T, 3, N]`, the `fsdp.cross_entropy_stats` of the `T`
    blocks in rank order. Each position's log-sum-exp is
    `M + log(sum_t s_t * exp(m_t - M))` with `M = max_t m_t`, its loss that
    minus the sum of the blocks' target logits (one holds it); the result is
    their mean, f32.

    ```mlir
    %l = fsdp.cross_entropy_combine %s : tensor<2x3x256xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$stats);
  let results = (outs FSDP_Loss:$result);
  let assemblyFormat = "$stats attr-dict `:` type($stats) `->` type($result)";
  let hasVerifier = 1;
}

def FSDP_CrossEntropyBlockGradOp : FSDP_Op<"cross_entropy_block_grad",
    [Pure, AllTypesMatch<["logits", "result"]>]> {
  let summary = "The cross-entropy's gradient on one block of classes";
  let description = [{
    `(exp(logit - lse) - [class == target]) * dl / N` for the block of
    classes from `first`, each position's log-sum-exp `lse` combined from
    the tensor ranks' `stats` `[T, 3, N]` as `fsdp.cross_entropy_combine`
    combines them; computed in f32, the result has the logits' type.

    ```mlir
    %dz = fsdp.cross_entropy_block_grad %z, %y, %first, %s, %dl
        : tensor<8x32x128xf32>, tensor<8x32xi32>, tensor<1xi64>, tensor<2x3x256xf32>,
          tensor<f32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$logits, FSDP_IndexTensor:$targets,
                       FSDP_IndexTensor:$first, FSDP_Tensor:$stats, FSDP_Loss:$grad);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $first `,` $stats `,` $grad attr-dict `:` type($logits) `,`
    type($targets) `,` type($first) `,` type($stats) `,` type($grad)
  }];
  let hasVerifier = 1;
}
