//===- ManifestGlobal.cpp - Edits of the step's embedded manifest ---------===//

#include "Utils/ManifestGlobal.h"

using namespace mlir;
namespace json = llvm::json;

LogicalResult mlir::fsdp::editManifest(LLVM::GlobalOp global,
                                       llvm::function_ref<void(json::Object &)> edit) {
  auto text = llvm::dyn_cast_or_null<StringAttr>(global.getValueOrNull());
  if (!text)
    return global.emitError("the manifest global holds no string");
  llvm::Expected<json::Value> parsed = json::parse(text.getValue().rtrim('\0'));
  json::Object *manifest = parsed ? parsed->getAsObject() : nullptr;
  if (!manifest) {
    llvm::consumeError(parsed.takeError());
    return global.emitError("the manifest is not a JSON object");
  }
  edit(*manifest);
  std::string updated;
  llvm::raw_string_ostream os(updated);
  os << json::Value(std::move(*manifest));
  updated.push_back('\0');
  MLIRContext *ctx = global.getContext();
  global.setValueAttr(StringAttr::get(ctx, updated));
  global.setGlobalType(LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), updated.size()));
  return success();
}
