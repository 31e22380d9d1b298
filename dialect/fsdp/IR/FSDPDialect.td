//===- FSDPDialect.td - the fsdp dialect -------------------*- tablegen -*-===//
//
// The fsdp dialect describes a model for fully sharded data-parallel training:
// parameter declarations, the ops of the model function and the sharding plan.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DIALECT_TD
#define FSDP_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def FSDP_Dialect : Dialect {
  let name = "fsdp";
  let cppNamespace = "::mlir::fsdp";
  let summary = "Models and sharding plans for fully sharded data-parallel training.";
  let description = [{
    A model is written once, for the global batch and a single device. The
    module declares every trainable tensor with `fsdp.param`, reads it inside
    the loss function with `fsdp.use`, computes with the model ops of this
    dialect on ranked, statically shaped tensors, and carries the sharding plan
    as the `fsdp.plan` attribute:

    ```mlir
    module attributes {fsdp.plan = #fsdp.plan<grid = [2],
                                              optimizer = #fsdp.adamw<lr = 1.0e-3>>} {
      fsdp.param @fc.w unit "fc" : tensor<784x10xf32> = #fsdp.fan_in_normal<scale = 1.0>
      fsdp.param @fc.b unit "fc" : tensor<10xf32> = #fsdp.zeros
      func.func @loss(%x: tensor<64x784xf32>, %y: tensor<64xi32>) -> tensor<f32> {
        %w = fsdp.use @fc.w : tensor<784x10xf32>
        %b = fsdp.use @fc.b : tensor<10xf32>
        %h = fsdp.matmul %x, %w : tensor<64x784xf32>, tensor<784x10xf32> -> tensor<64x10xf32>
        %z = fsdp.add %h, %b : tensor<64x10xf32>, tensor<10xf32> -> tensor<64x10xf32>
        %l = fsdp.cross_entropy %z, %y : tensor<64x10xf32>, tensor<64xi32> -> tensor<f32>
        return %l : tensor<f32>
      }
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();

    /// The module attribute that carries the sharding plan.
    static constexpr ::llvm::StringLiteral getPlanAttrName() { return "fsdp.plan"; }
    /// The module attribute where fsdp-remat records what recompute adds to
    /// the step, for fsdp-report (compiler-internal: models never carry it).
    static constexpr ::llvm::StringLiteral getRecomputeAttrName() { return "fsdp.recompute"; }
    /// The module attribute that carries the lowered step's manifest, from
    /// convert-fsdp-to-runtime to fsdp-serialize-manifest.
    static constexpr ::llvm::StringLiteral getManifestAttrName() { return "fsdp.manifest"; }
    /// On @train_step after fsdp-accumulate-micro-batches: how many
    /// micro-batches its inputs hold (each input appears that many times).
    static constexpr ::llvm::StringLiteral getMicroBatchesAttrName() {
      return "fsdp.micro_batches";
    }
    /// On @train_step of `fsdp-autodiff{forward-only}`: the loss alone, no
    /// backward and no update (the held-out evaluation step).
    static constexpr ::llvm::StringLiteral getForwardOnlyAttrName() {
      return "fsdp.forward_only";
    }
  }];
}

class FSDP_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<FSDP_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class FSDP_Op<string mnemonic, list<Trait> traits = []>
    : Op<FSDP_Dialect, mnemonic, traits>;

#endif // FSDP_DIALECT_TD
