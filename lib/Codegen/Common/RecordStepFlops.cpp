//===- RecordStepFlops.cpp - fsdp-record-step-flops -----------------------===//
//
// The compiler knows a step's FLOPs exactly; the trainer divides them by the
// time it measures to print achieved TFLOP/s and MFU, as people training
// language models read them.
//
//===----------------------------------------------------------------------===//

#include "Analysis/StepCost.h"
#include "Utils/ManifestGlobal.h"
#include "Utils/RuntimeABI.h"
#include "Utils/StepFunction.h"
#include "fsdp/Codegen/Common/Passes.h"

#include <cmath>

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPRECORDSTEPFLOPSPASS
#include "fsdp/Codegen/Common/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;
namespace json = llvm::json;

namespace {

/// A count as the manifest's integer.
int64_t whole(double count) { return static_cast<int64_t>(std::llround(count)); }

/// What the plan's rematerialisation adds to the products and attention
/// (the manifest's recompute, from fsdp-remat): its products, and its
/// attentions' forward products as this step computes them, half of a
/// causal one's where the step fuses attention, all where it tiles it.
double rematFlops(const json::Object &manifest, bool fusesAttention) {
  const json::Object *recompute = manifest.getObject("recompute");
  if (!recompute)
    return 0;
  auto count = [&](StringRef key) {
    return static_cast<double>(recompute->getInteger(key).value_or(0));
  };
  double attention = count("attention_flops");
  if (fusesAttention)
    attention -= count("causal_attention_flops") / 2;
  return count("product_flops") + attention;
}

struct FSDPRecordStepFlopsPass
    : public fsdp::impl::FSDPRecordStepFlopsPassBase<FSDPRecordStepFlopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
    auto manifest = module.lookupSymbol<LLVM::GlobalOp>(kManifestGlobal);
    if (!manifest || !step.getBody().hasOneBlock()) {
      module.emitError("fsdp-record-step-flops needs the step, as one block, and the manifest "
                       "of convert-fsdp-to-runtime");
      return signalPassFailure();
    }
    StepFlops flops = countStepFlops(step);
    if (failed(editManifest(manifest, [&](json::Object &object) {
          double recomputed = flops.recomputed + rematFlops(object, flops.attention > 0);
          object["step_flops"] = json::Object{{"products", whole(flops.products)},
                                              {"bf16_products", whole(flops.bf16Products)},
                                              {"attention", whole(flops.attention)},
                                              {"recomputed", whole(recomputed)},
                                              {"other", whole(flops.other)}};
        })))
      return signalPassFailure();
  }
};

} // namespace
