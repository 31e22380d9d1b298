//===- SetGrid.cpp - fsdp-set-grid: compile for another device grid -------===//

#include "fsdp/Transforms/Passes.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSETGRIDPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {
struct FSDPSetGridPass : public fsdp::impl::FSDPSetGridPassBase<FSDPSetGridPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
    if (!plan) {
      module.emitError("fsdp-set-grid needs the module's 'fsdp.plan'");
      return signalPassFailure();
    }
    SmallVector<int64_t> sizes(grid.begin(), grid.end());
    if (sizes.empty())
      sizes.assign(plan.getGrid().begin(), plan.getGrid().end());
    PlanAttr changed = plan.withGrid(sizes, [&] {
      InFlightDiagnostic diag = module.emitError("grid [");
      llvm::interleaveComma(sizes, diag);
      return std::move(diag << "]: ");
    });
    if (changed && (tensor != 0 || sequence)) {
      PlanFields fields = changed.getFields();
      fields.tensorParallel = tensor != 0 ? tensor : fields.tensorParallel;
      fields.sequenceParallel = fields.sequenceParallel || sequence;
      changed = PlanAttr::get(&getContext(), fields, [&] {
        InFlightDiagnostic diag = module.emitError();
        if (tensor != 0)
          diag << "tensor=" << tensor << (sequence ? " " : "");
        if (sequence)
          diag << "sequence=true";
        return std::move(diag << ": ");
      });
    }
    if (!changed)
      return signalPassFailure();
    module->setAttr(FSDPDialect::getPlanAttrName(), changed);
  }
};
} // namespace
