//===- FSDPOps.h - fsdp operations ------------------------------*- C++ -*-===//

#ifndef FSDP_IR_FSDPOPS_H
#define FSDP_IR_FSDPOPS_H

#include "fsdp/IR/FSDPAttrs.h"
#include "fsdp/IR/FSDPDialect.h"
#include "fsdp/IR/FSDPOpInterfaces.h.inc"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

namespace mlir::fsdp {
/// A tensor the model ops accept: ranked, static, every dimension at least 1,
/// an element count that fits in int64 and no encoding.
bool isModelTensorType(Type type);

/// fsdp.attention's and fsdp.attention_grad's scale: `scale` when given, else
/// 1 / sqrt(D) for a query [B, H, T, D].
double attentionScale(std::optional<llvm::APFloat> scale, RankedTensorType query);

/// Keys per block of the attention lowering when the op does not say.
constexpr int64_t kDefaultAttentionKeyBlock = 512;
} // namespace mlir::fsdp

#define GET_OP_CLASSES
#include "fsdp/IR/FSDPOps.h.inc"

#endif // FSDP_IR_FSDPOPS_H
