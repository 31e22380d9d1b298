//===- CudnnAttentionTest.cpp - The fused attention's cuDNN graphs --------===//
//
// fsdprt_attention_bf16 and its gradient describe a cudnn-frontend graph per
// attention; cuDNN itself needs a GPU, but the description is built on the
// host. These tests read it back as the frontend's JSON, before cuDNN sees
// it: the tensors' dims, strides and types (queries [B, H, S, D], keys and
// values [B, Hkv, S, D] for grouped queries, the log-sum-exp [B, H, S, 1] in
// f32), the causal band, the scale, the statistics and the deterministic
// backward; and that each entry point gives every pointer under the uid of
// the tensor it is.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudnnAttention.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace fsdprt;
using nlohmann::json;

namespace {

/// Two batches of 4 query heads sharing 2 key/value heads, 64 positions of 32.
AttentionShape gqaShape(bool causal, int64_t window = 0) {
  return attentionShape(/*batch=*/2, /*heads=*/4, /*kvHeads=*/2, /*seq=*/64,
                        /*headDim=*/32, causal, window, /*scale=*/0.125f);
}

json graphOf(AttentionPass pass, const AttentionShape &shape,
             bool deterministic = false) {
  return json::parse(attentionGraphJson(pass, shape, deterministic));
}

/// The graph's tensor named `name`.
json tensorNamed(const json &graph, const std::string &name) {
  for (const json &tensor : graph.at("tensors"))
    if (tensor.at("name") == name)
      return tensor;
  ADD_FAILURE() << "no tensor " << name << " in " << graph.dump();
  return json::object();
}

/// The graph's only node.
json nodeOf(const json &graph) {
  EXPECT_EQ(graph.at("nodes").size(), 1u);
  return graph.at("nodes").at(0);
}

/// Expects `name` to be a [b, h, s, w] tensor of `type` with the strides of
/// a row-major contiguous array of those dims, or with `sequenceMajor` of
/// [b, s, h, w] (FSDPRT_ATTENTION_BSHD).
void expectTensor(const json &graph, const std::string &name, std::vector<int64_t> dims,
                  const std::string &type, bool sequenceMajor = false) {
  json tensor = tensorNamed(graph, name);
  SCOPED_TRACE(name);
  EXPECT_EQ(tensor.at("dim").get<std::vector<int64_t>>(), dims);
  std::vector<int64_t> strides{dims[1] * dims[2] * dims[3], dims[2] * dims[3],
                               dims[3], 1};
  if (sequenceMajor)
    strides = {dims[1] * dims[2] * dims[3], dims[3], dims[1] * dims[3], 1};
  EXPECT_EQ(tensor.at("stride").get<std::vector<int64_t>>(), strides);
  EXPECT_EQ(tensor.at("data_type"), type);
  EXPECT_EQ(tensor.at("is_virtual"), false);
}

/// The frontend writes a float attribute as its bits in hex.
std::string floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  char text[16];
  std::snprintf(text, sizeof(text), "%08X", bits);
  return text;
}

/// Expects the node's inputs or outputs (port -> uid) to be the tensors named.
void expectPorts(const json &graph, const json &ports,
                 const std::map<std::string, std::string> &tensorOfPort) {
  EXPECT_EQ(ports.size(), tensorOfPort.size()) << ports.dump();
  for (const auto &[port, name] : tensorOfPort) {
    SCOPED_TRACE(port);
    EXPECT_EQ(ports.at(port), tensorNamed(graph, name).at("uid"));
  }
}

int64_t uidOf(const json &graph, const std::string &name) {
  return tensorNamed(graph, name).at("uid").get<int64_t>();
}

TEST(CudnnAttentionGraph, ForwardLaysOutGroupedQueriesAndTheLogSumExp) {
  json graph = graphOf(AttentionPass::Forward, gqaShape(/*causal=*/true));
  expectTensor(graph, "query", {2, 4, 64, 32}, "BFLOAT16");
  expectTensor(graph, "key", {2, 2, 64, 32}, "BFLOAT16");
  expectTensor(graph, "value", {2, 2, 64, 32}, "BFLOAT16");
  expectTensor(graph, "out", {2, 4, 64, 32}, "BFLOAT16");
  expectTensor(graph, "lse", {2, 4, 64, 1}, "FLOAT");
  json node = nodeOf(graph);
  EXPECT_EQ(node.at("tag"), "SDPA");
  expectPorts(graph, node.at("inputs"),
              {{"Q", "query"}, {"K", "key"}, {"V", "value"}});
  expectPorts(graph, node.at("outputs"), {{"O", "out"}, {"Stats", "lse"}});
  EXPECT_EQ(node.at("generate_stats"), true);
  // The natural log, as fsdp.attention's second result.
  EXPECT_EQ(node.at("stats_use_log2"), false);
  EXPECT_EQ(node.at("attn_scale_value"), floatBits(0.125f));
  EXPECT_EQ(graph.at("context").at("io_data_type"), "BFLOAT16");
  EXPECT_EQ(graph.at("context").at("compute_data_type"), "FLOAT");
  EXPECT_EQ(graph.at("context").at("intermediate_data_type"), "FLOAT");
}

TEST(CudnnAttentionGraph, SequenceMajorOperandsAreStridedTheLogSumExpIsNot) {
  // The projections' rows split into heads, [B, S, H, D], read and written
  // in place of their transposes.
  AttentionShape shape =
      attentionShape(2, 4, 2, 64, 32, /*causal=*/1, /*window=*/0, 0.125f, FSDPRT_ATTENTION_BSHD);
  json forward = graphOf(AttentionPass::Forward, shape);
  expectTensor(forward, "query", {2, 4, 64, 32}, "BFLOAT16", true);
  expectTensor(forward, "key", {2, 2, 64, 32}, "BFLOAT16", true);
  expectTensor(forward, "value", {2, 2, 64, 32}, "BFLOAT16", true);
  expectTensor(forward, "out", {2, 4, 64, 32}, "BFLOAT16", true);
  expectTensor(forward, "lse", {2, 4, 64, 1}, "FLOAT");
  json backward = graphOf(AttentionPass::Backward, shape, /*deterministic=*/true);
  for (const char *name : {"query", "out", "out_grad", "query_grad"})
    expectTensor(backward, name, {2, 4, 64, 32}, "BFLOAT16", true);
  for (const char *name : {"key", "value", "key_grad", "value_grad"})
    expectTensor(backward, name, {2, 2, 64, 32}, "BFLOAT16", true);
  expectTensor(backward, "lse", {2, 4, 64, 1}, "FLOAT");
}

TEST(CudnnAttentionGraph, CausalIsTheBandBelowTheDiagonal) {
  // Causal: key j is seen by query i when j - i <= 0, from the top left.
  json causal = nodeOf(graphOf(AttentionPass::Forward, gqaShape(true)));
  EXPECT_EQ(causal.at("right_bound"), 0);
  EXPECT_EQ(causal.at("diagonal_alignment"), "TOP_LEFT");
  EXPECT_TRUE(causal.at("left_bound").is_null());
  json full = nodeOf(graphOf(AttentionPass::Forward, gqaShape(false)));
  EXPECT_TRUE(full.at("right_bound").is_null());
  EXPECT_TRUE(full.at("left_bound").is_null());
  json causalGrad = nodeOf(graphOf(AttentionPass::Backward, gqaShape(true)));
  EXPECT_EQ(causalGrad.at("right_bound"), 0);
  EXPECT_EQ(causalGrad.at("diagonal_alignment"), "TOP_LEFT");
}

TEST(CudnnAttentionGraph, AWindowIsTheBandsLeftBound) {
  // A sliding window of 16: key j is seen by query i when i - 16 < j <= i,
  // the frontend's left bound (it keeps j + 16 > i, from the top left).
  for (AttentionPass pass : {AttentionPass::Forward, AttentionPass::Backward}) {
    json node = nodeOf(graphOf(pass, gqaShape(true, /*window=*/16)));
    SCOPED_TRACE(node.at("tag").get<std::string>());
    EXPECT_EQ(node.at("left_bound"), 16);
    EXPECT_EQ(node.at("right_bound"), 0);
    EXPECT_EQ(node.at("diagonal_alignment"), "TOP_LEFT");
  }
}

TEST(CudnnAttentionGraph,
     BackwardTakesTheForwardsResultsAndGivesGroupedGradients) {
  json graph =
      graphOf(AttentionPass::Backward, gqaShape(true), /*deterministic=*/true);
  expectTensor(graph, "out", {2, 4, 64, 32}, "BFLOAT16");
  expectTensor(graph, "out_grad", {2, 4, 64, 32}, "BFLOAT16");
  expectTensor(graph, "lse", {2, 4, 64, 1}, "FLOAT");
  expectTensor(graph, "query_grad", {2, 4, 64, 32}, "BFLOAT16");
  expectTensor(graph, "key_grad", {2, 2, 64, 32}, "BFLOAT16");
  expectTensor(graph, "value_grad", {2, 2, 64, 32}, "BFLOAT16");
  json node = nodeOf(graph);
  EXPECT_EQ(node.at("tag"), "SDPA_BWD");
  expectPorts(graph, node.at("inputs"),
              {{"Q", "query"},
               {"K", "key"},
               {"V", "value"},
               {"O", "out"},
               {"dO", "out_grad"},
               {"Stats", "lse"}});
  expectPorts(graph, node.at("outputs"),
              {{"dQ", "query_grad"}, {"dK", "key_grad"}, {"dV", "value_grad"}});
  EXPECT_EQ(node.at("attn_scale_value"), floatBits(0.125f));
  EXPECT_EQ(node.at("is_deterministic_algorithm"), true);
  json fast = nodeOf(graphOf(AttentionPass::Backward, gqaShape(true),
                             /*deterministic=*/false));
  EXPECT_EQ(fast.at("is_deterministic_algorithm"), false);
}

TEST(CudnnAttentionGraph, EachPointerGoesUnderItsTensorsUid) {
  // Distinct addresses, one per argument.
  std::vector<char> memory(16);
  char *at = memory.data();
  json forward = graphOf(AttentionPass::Forward, gqaShape(true));
  AttentionPointers pointers = forwardPointers(
      at + 0, at + 1, at + 2, at + 3, reinterpret_cast<float *>(at + 4));
  std::map<std::string, void *> expected{{"query", at + 0},
                                         {"key", at + 1},
                                         {"value", at + 2},
                                         {"out", at + 3},
                                         {"lse", at + 4}};
  EXPECT_EQ(pointers.size(), expected.size());
  for (const auto &[name, pointer] : expected)
    EXPECT_EQ(pointers.at(uidOf(forward, name)), pointer) << name;

  json backward = graphOf(AttentionPass::Backward, gqaShape(true));
  pointers = backwardPointers(at + 0, at + 1, at + 2, at + 3,
                              reinterpret_cast<float *>(at + 4), at + 5, at + 6,
                              at + 7, at + 8);
  expected = {
      {"query", at + 0},      {"key", at + 1},      {"value", at + 2},
      {"out", at + 3},        {"lse", at + 4},      {"out_grad", at + 5},
      {"query_grad", at + 6}, {"key_grad", at + 7}, {"value_grad", at + 8}};
  EXPECT_EQ(pointers.size(), expected.size());
  for (const auto &[name, pointer] : expected)
    EXPECT_EQ(pointers.at(uidOf(backward, name)), pointer) << name;
}

} // namespace
