//===- CudaTrainerTest.cpp - The trainer's start-up on the CUDA backend ---===//
//
// runTrainer on the fake CUDA runtime (FakeCuda.h), with a step function that
// looks at what the runtime did before it: the manifest's allow_tf32 sets
// the fp32 products' math mode, the start-up's asynchronous uploads and
// marker fill are waited for once before the first step (its all-gathers
// read the shards on another stream), and each step's inputs are then
// uploaded with no wait.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"
#include "TestManifest.h"
#include "Trainer.h"
#include "fsdprt/fsdprt.h"

#include <cublas_v2.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

using namespace fsdprt;
using testing::HasSubstr;
using testing::IsEmpty;

namespace {

/// The fake's log when each step began.
std::vector<std::vector<std::string>> logAtStep;
/// The classes input (arena offset 448) each step saw.
std::vector<int32_t> firstClass;

float loggingStep(void *arena, int64_t, float) {
  logAtStep.push_back(fake_cuda::calls());
  int32_t label;
  std::memcpy(&label, static_cast<uint8_t *>(arena) + 448, sizeof(label));
  firstClass.push_back(label);
  return 1.0f;
}

int run(const nlohmann::json &manifest, const char *steps) {
  logAtStep.clear();
  firstClass.clear();
  fake_cuda::reset();
  std::string text = manifest.dump();
  const char *args[] = {"trainer", "--steps", steps};
  testing::internal::CaptureStdout();
  int status = runTrainer(3, args, text.c_str(), loggingStep);
  testing::internal::GetCapturedStdout();
  return status;
}

/// The position of the first call in `log` at or after `from` that starts
/// with `prefix`, or log.size().
size_t find(const std::vector<std::string> &log, const std::string &prefix, size_t from = 0) {
  for (size_t i = from; i < log.size(); ++i)
    if (log[i].compare(0, prefix.size(), prefix) == 0)
      return i;
  return log.size();
}

std::vector<std::string> mathModes(const std::vector<std::string> &log) {
  std::vector<std::string> modes;
  for (const std::string &call : log)
    if (call.compare(0, 17, "cublasSetMathMode") == 0)
      modes.push_back(call.substr(call.rfind(", ") + 2));
  return modes;
}

TEST(CudaTrainer, AllowTf32SetsTheMathModeBeforeTheFirstStep) {
  nlohmann::json manifest = test::classifierManifest();
  ASSERT_EQ(run(manifest, "1"), 0);
  ASSERT_EQ(logAtStep.size(), 1u);
  std::string exact =
      std::to_string(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) + ")";
  EXPECT_THAT(mathModes(logAtStep[0]), testing::Each(exact)) << "absent: exact fp32";
  manifest["allow_tf32"] = true;
  ASSERT_EQ(run(manifest, "1"), 0);
  ASSERT_EQ(logAtStep.size(), 1u);
  std::vector<std::string> modes = mathModes(logAtStep[0]);
  ASSERT_FALSE(modes.empty());
  EXPECT_EQ(modes.back(), std::to_string(CUBLAS_TF32_TENSOR_OP_MATH) + ")");
}

// The parameter shard [0, 128), then the marker over [640, 768): then one
// wait for the device, before the first step's inputs and the step.
TEST(CudaTrainer, StartUpUploadsAreWaitedForOnceBeforeTheFirstStep) {
  ASSERT_EQ(run(test::classifierManifest(), "2"), 0);
  ASSERT_EQ(logAtStep.size(), 2u);
  const std::vector<std::string> &start = logAtStep[0];
  size_t shard = find(start, "cudaMemcpyAsync(device2+0 <- pinned");
  size_t marker = find(start, "cudaMemsetAsync(device2+640, 165, 128, ");
  ASSERT_LT(shard, start.size());
  ASSERT_LT(marker, start.size());
  EXPECT_LT(shard, marker);
  size_t wait = find(start, "cudaDeviceSynchronize()", marker);
  size_t inputs = find(start, "cudaMemcpyAsync(device2+384 <- pinned");
  ASSERT_LT(inputs, start.size()) << "the features";
  EXPECT_LT(wait, inputs) << "the start-up is done before the step's inputs and the step";
  // The first step's inputs and the second's: copies with no wait for a
  // stream or the device (only, when a staging buffer comes round again, for
  // its last copy, long done).
  auto noWait = [](const std::string &call) {
    EXPECT_THAT(call, testing::Not(HasSubstr("cudaDeviceSynchronize")));
    EXPECT_THAT(call, testing::Not(HasSubstr("cudaStreamSynchronize")));
  };
  std::for_each(start.begin() + static_cast<ptrdiff_t>(inputs), start.end(), noWait);
  const std::vector<std::string> &second = logAtStep[1];
  size_t finished = find(second, "cudaDeviceSynchronize()", start.size());
  ASSERT_LT(finished, second.size()) << "the first step is finished";
  std::for_each(second.begin() + static_cast<ptrdiff_t>(finished) + 1, second.end(), noWait);
  EXPECT_GE(find(second, "cudaMemcpyAsync(device2+448 <- pinned", finished), finished);
  // The step sees its classes (in [0, 5)), copied from the staging buffers.
  for (int32_t label : firstClass) {
    EXPECT_GE(label, 0);
    EXPECT_LT(label, 5);
  }
  EXPECT_THAT(fake_cuda::callsTo("race"), IsEmpty());
}

} // namespace
