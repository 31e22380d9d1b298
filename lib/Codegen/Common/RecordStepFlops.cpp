//===- RecordStepFlops.cpp - fsdp-record-step-flops -----------------------===//
//
// The compiler knows a step's FLOPs exactly; the trainer divides them by the
// time it measures to print achieved TFLOP/s and MFU, as people training
// language models read them.
//
//===----------------------------------------------------------------------===//

#include "Analysis/StepCost.h"
#include "Utils/StepFunction.h"
#include "fsdp/Codegen/Common/Passes.h"

#include <cmath>

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPRECORDSTEPFLOPSPASS
#include "fsdp/Codegen/Common/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// A count as the manifest's whole number.
int64_t whole(double count) { return static_cast<int64_t>(std::llround(count)); }

/// What the plan's rematerialisation adds to the products and attention
/// (the manifest's recompute, from fsdp-remat): its products, and its
/// attentions' forward products as this step computes them: as fused calls
/// where the step fuses attention, as key-block loops where it tiles it.
double rematFlops(RecomputeAttr recompute, bool fusesAttention) {
  if (!recompute)
    return 0;
  double attention = static_cast<double>(fusesAttention ? recompute.getFusedAttentionFlops()
                                                        : recompute.getAttentionFlops());
  return static_cast<double>(recompute.getProductFlops()) + attention;
}

struct FSDPRecordStepFlopsPass
    : public fsdp::impl::FSDPRecordStepFlopsPassBase<FSDPRecordStepFlopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
    auto manifest = module->getAttrOfType<ManifestAttr>(FSDPDialect::getManifestAttrName());
    if (!manifest || !step.getBody().hasOneBlock()) {
      module.emitError("fsdp-record-step-flops needs the step, as one block, and the manifest "
                       "of convert-fsdp-to-runtime");
      return signalPassFailure();
    }
    StepFlops flops = countStepFlops(step);
    double recomputed = flops.recomputed + rematFlops(manifest.getRecompute(), flops.attention > 0);
    auto counts =
        StepFlopsAttr::get(&getContext(), whole(flops.products), whole(flops.bf16Products),
                           whole(flops.attention), whole(recomputed), whole(flops.other));
    module->setAttr(FSDPDialect::getManifestAttrName(), manifest.withStepFlops(counts));
  }
};

} // namespace
