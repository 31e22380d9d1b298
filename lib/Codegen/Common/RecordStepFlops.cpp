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
#include "fsdprt/ManifestSchema.h"

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
  using namespace fsdprt::manifest::recompute;
  const json::Object *recompute = manifest.getObject(fsdprt::manifest::root::kRecompute.key);
  if (!recompute)
    return 0;
  auto count = [&](const fsdprt::manifest::Field &field) {
    return static_cast<double>(recompute->getInteger(field.key).value_or(0));
  };
  double attention = count(kAttentionFlops);
  if (fusesAttention)
    attention -= count(kCausalAttentionFlops) / 2;
  return count(kProductFlops) + attention;
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
          using namespace fsdprt::manifest::step_flops;
          object[fsdprt::manifest::root::kStepFlops.key] =
              json::Object{{kProducts.key, whole(flops.products)},
                           {kBf16Products.key, whole(flops.bf16Products)},
                           {kAttention.key, whole(flops.attention)},
                           {kRecomputed.key, whole(recomputed)},
                           {kOther.key, whole(flops.other)}};
        })))
      return signalPassFailure();
  }
};

} // namespace
