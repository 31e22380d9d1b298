//===- TensorBlocks.cpp - A split parameter's block in the whole ----------===//

#include "trainer/TensorBlocks.h"

namespace fsdprt {

BlockLayout BlockLayout::of(const std::vector<int64_t> &shape, std::optional<int64_t> splitDim,
                            int64_t blocks) {
  BlockLayout layout;
  for (int64_t dim : shape)
    layout.blockElements *= dim;
  if (!splitDim || blocks == 1) {
    layout.runElements = layout.blockElements;
    return layout;
  }
  layout.blocks = blocks;
  for (size_t i = static_cast<size_t>(*splitDim); i < shape.size(); ++i)
    layout.runElements *= shape[i];
  return layout;
}

int64_t BlockLayout::wholeIndex(int64_t tensorIndex, int64_t element) const {
  int64_t block = blocks == 1 ? 0 : tensorIndex;
  int64_t run = element / runElements;
  return (run * blocks + block) * runElements + element % runElements;
}

BlockLayout::Place BlockLayout::locate(int64_t whole) const {
  int64_t stride = runElements * blocks;
  int64_t run = whole / stride, within = whole % stride;
  Place place;
  place.block = within / runElements;
  int64_t offset = within % runElements;
  place.element = run * runElements + offset;
  place.runLeft = runElements - offset;
  return place;
}

} // namespace fsdprt
