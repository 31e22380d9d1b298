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
