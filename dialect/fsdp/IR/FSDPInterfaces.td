//===- FSDPInterfaces.td - fsdp attribute interfaces -------*- tablegen -*-===//

#ifndef FSDP_INTERFACES_TD
#define FSDP_INTERFACES_TD

include "mlir/IR/OpBase.td"

def FSDP_InitializerAttrInterface : AttrInterface<"InitializerAttrInterface"> {
  let cppNamespace = "::mlir::fsdp";
  let description = [{
    An attribute that says how the initial values of a parameter are drawn.
    The runtime evaluates it element by element from a counter-based random
    generator keyed by (seed, parameter, element), so the values never depend
    on how many ranks hold the parameter.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{Checks that this initializer can fill a tensor of `type`.}],
      /*retTy=*/"::llvm::LogicalResult", /*methodName=*/"verifyForType",
      /*args=*/(ins "::mlir::RankedTensorType":$type,
                    "::llvm::function_ref<::mlir::InFlightDiagnostic()>":$emitError),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{ return ::mlir::success(); }]>,
  ];
}

def FSDP_OptimizerAttrInterface : AttrInterface<"OptimizerAttrInterface"> {
  let cppNamespace = "::mlir::fsdp";
  let description = [{
    An optimizer of the training step. Each optimizer attribute carries its
    hyper-parameters; the training-step derivation reads them to build the
    update of every trainable parameter.
  }];
  let methods = [
    InterfaceMethod<"The base learning rate.", "double", "getLearningRate">,
    InterfaceMethod<[{
        The names of the tensors of state the optimizer keeps per parameter,
        each of the parameter's shape (e.g. AdamW's `exp_avg`, `exp_avg_sq`).
      }], "::llvm::SmallVector<::llvm::StringRef>", "getStateSlots">,
  ];
}

def FSDP_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::fsdp";
  let description = [{
    An op with a gradient rule. `fsdp-autodiff` builds the backward pass by
    calling `buildGradients` on each op of the forward pass in reverse order,
    so a new model op brings its rule with it.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{
        Builds, at the builder's insertion point, the vector-Jacobian product
        of this op: given the gradient of the loss with respect to each result
        (`resultGradients`, one per result, null where a result does not reach
        the loss), appends to `operandGradients` the gradient with respect to
        each operand, or null for an operand that is not differentiable (such
        as integer indices).
      }],
      /*retTy=*/"void", /*methodName=*/"buildGradients",
      /*args=*/(ins "::mlir::OpBuilder &":$builder,
                    "::mlir::ValueRange":$resultGradients,
                    "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGradients)>,
  ];
}

#endif // FSDP_INTERFACES_TD
