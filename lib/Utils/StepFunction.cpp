//===- StepFunction.cpp - the step a pass transforms ----------------------===//

#include "Utils/StepFunction.h"

#include "Utils/RuntimeABI.h"

using namespace mlir;

func::FuncOp mlir::fsdp::requireStep(ModuleOp module, StepLevel level, StringRef pass) {
  bool model = level == StepLevel::Model;
  StringRef name = model ? kModelStepFunction : kStepFunction;
  auto step = module.lookupSymbol<func::FuncOp>(name);
  if (step && !step.isExternal())
    return step;
  module.emitError() << pass << " needs the training step @" << name << " of "
                     << (model ? "fsdp-autodiff" : "convert-fsdp-to-runtime") << "; the module has "
                     << (step ? "only its declaration" : "none");
  return nullptr;
}
