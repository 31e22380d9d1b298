//===- KernelOrigins.cpp - where in the model a kernel's ops come from ----===//

#include "KernelOrigins.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::fsdp;

/// The file:line:col places inside `location`.
static void collectPlaces(Location location, llvm::SetVector<Location> &places) {
  if (isa<FileLineColLoc>(location)) {
    places.insert(location);
  } else if (auto fused = dyn_cast<FusedLoc>(location)) {
    for (Location inner : fused.getLocations())
      collectPlaces(inner, places);
  } else if (auto named = dyn_cast<NameLoc>(location)) {
    collectPlaces(named.getChildLoc(), places);
  } else if (auto call = dyn_cast<CallSiteLoc>(location)) {
    collectPlaces(call.getCallee(), places);
  }
}

SmallVector<FileLineColLoc> mlir::fsdp::kernelPlaces(gpu::GPUFuncOp kernel) {
  llvm::SetVector<Location> places;
  kernel.getBody().walk([&](Operation *op) { collectPlaces(op->getLoc(), places); });
  return llvm::map_to_vector(places, [](Location place) { return cast<FileLineColLoc>(place); });
}

std::string mlir::fsdp::placeText(FileLineColLoc place) {
  return place.getFilename().str() + ":" + std::to_string(place.getLine()) + ":" +
         std::to_string(place.getColumn());
}
