//===- TestPasses.h - passes only tests use ---------------------*- C++ -*-===//

#ifndef FSDP_TEST_CODEGEN_CUDA_TESTPASSES_H
#define FSDP_TEST_CODEGEN_CUDA_TESTPASSES_H

#include <memory>

namespace mlir {
class Pass;
namespace fsdp::test {

/// `test-fsdp-launch-to-loops`: each gpu.launch as loops over block and
/// thread ids, so that the CUDA target's kernels run on the CPU.
std::unique_ptr<Pass> createTestLaunchToLoopsPass();
void registerTestLaunchToLoopsPass();

/// `test-fsdp-launch-summary`: prints the kernels of each function, the
/// launches per call and those that run on a single thread.
std::unique_ptr<Pass> createTestLaunchSummaryPass();
void registerTestLaunchSummaryPass();

/// `test-fsdp-check-stream-order`: reports every pair of ops of the step on
/// different streams that touch the same arena bytes, unordered.
void registerTestCheckStreamOrderPass();

} // namespace fsdp::test
} // namespace mlir

#endif // FSDP_TEST_CODEGEN_CUDA_TESTPASSES_H
