//===- FormUnits.cpp - fsdp-form-units: every parameter in a unit ---------===//

#include "fsdp/Transforms/Passes.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPFORMUNITSPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

constexpr StringLiteral kRootUnit = "root";

/// Groups consecutive parameters without a unit into units of at least
/// `minParams` elements, in declaration order.
void autoWrap(ModuleOp module, int64_t minParams) {
  MLIRContext *ctx = module.getContext();
  int64_t unitIndex = 0, inUnit = 0;
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (param.getUnit())
      continue;
    param.setUnitAttr(StringAttr::get(ctx, "auto" + std::to_string(unitIndex)));
    inUnit += param.getTensorType().getNumElements();
    if (inUnit >= minParams) {
      ++unitIndex;
      inUnit = 0;
    }
  }
}

/// A unit is one flat buffer of one dtype, with one flat gradient (or none).
LogicalResult verifyUnits(ModuleOp module) {
  llvm::MapVector<StringRef, ParamOp> first;
  for (ParamOp param : module.getOps<ParamOp>()) {
    auto [it, inserted] = first.insert({*param.getUnit(), param});
    ParamOp other = it->second;
    if (inserted)
      continue;
    if (param.getTensorType().getElementType() != other.getTensorType().getElementType())
      return param.emitError("unit '")
                 .append(*param.getUnit(), "' mixes element types: ")
             << param.getTensorType().getElementType() << " here, "
             << other.getTensorType().getElementType() << " for '" << other.getSymName()
             << "'";
    if (param.getFrozen() != other.getFrozen())
      return param.emitError("unit '")
                 .append(*param.getUnit(), "' mixes frozen and trainable parameters ('")
             << param.getSymName() << "' and '" << other.getSymName() << "')";
  }
  return success();
}

struct FSDPFormUnitsPass : public fsdp::impl::FSDPFormUnitsPassBase<FSDPFormUnitsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
    if (!plan) {
      module.emitError("fsdp-form-units needs the module's 'fsdp.plan'");
      return signalPassFailure();
    }
    if (plan.getUnits() == UnitPolicy::AutoWrap)
      autoWrap(module, plan.getMinUnitParams());
    for (ParamOp param : module.getOps<ParamOp>())
      if (!param.getUnit())
        param.setUnitAttr(StringAttr::get(module.getContext(), kRootUnit));
    if (failed(verifyUnits(module)))
      signalPassFailure();
  }
};

} // namespace
