//===- CudnnAttention.cpp - Fused attention on cuDNN ----------------------===//
//
// fsdprt_attention_bf16 and fsdprt_attention_grad_bf16 (fsdprt.h) as cuDNN's
// fused scaled-dot-product attention (FlashAttention's algorithm: the scores
// live in registers and shared memory, never in device memory), described
// with the cudnn-frontend's graph API and run on the compute stream.
//
// A graph is described, checked against what cuDNN supports and given an
// execution plan once per distinct attention (pass, shape, causal, window, scale,
// determinism, workspace limit), at its first call: the trainer's first step
// runs as called, before the step is captured as a CUDA graph, so building a
// plan (which may compile a kernel) never happens inside a capture, and
// replays only enqueue the plan's kernels. The plan may use at most the
// workspace the caller planned for it (engines needing more are deselected
// before the plan is chosen); none fitting is a fatal error naming the
// attention.
//
// Tensors are cuDNN's [B, H, S, D] with the strides of a contiguous
// row-major [B, H, S, D] array, as fsdp.attention's operands are, or of a
// [B, S, H, D] one (FSDPRT_ATTENTION_BSHD: the projections' rows split into
// heads, which cuDNN reads in place of their transposes); the log-sum-exp is
// cuDNN's softmax statistics [B, H, S, 1] in f32 (the natural log of the
// row's sum of exp of the scaled scores), exactly the op's second result.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudnnAttention.h"

#include "abi/AttentionArguments.h"
#include "abi/Error.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"
#include "fsdprt/fsdprt.h"

#include <cudnn.h>
#include <cudnn_frontend.h>

#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace fsdprt {

namespace fe = cudnn_frontend;

namespace {

/// What an attention's plan depends on.
struct AttentionKey {
  AttentionPass pass;
  AttentionShape shape;
  bool deterministic;
  int64_t workspaceLimit;

  auto tied() const {
    uint32_t scaleBits;
    std::memcpy(&scaleBits, &shape.scale, sizeof(scaleBits));
    return std::make_tuple(pass, shape.batch, shape.heads, shape.kvHeads, shape.seq, shape.headDim,
                           shape.causal, shape.window, scaleBits, shape.layout, deterministic,
                           workspaceLimit);
  }
  bool operator<(const AttentionKey &other) const { return tied() < other.tied(); }
};

struct AttentionPlan {
  std::shared_ptr<fe::graph::Graph> graph;
  AttentionPlanInfo info;
};

/// The graphs' tensors, by the uids their pointers are given under.
enum Uid : int64_t {
  kQuery = 1,
  kKey,
  kValue,
  kOut,
  kLse,
  kOutGrad,
  kQueryGrad,
  kKeyGrad,
  kValueGrad,
};

cudnnHandle_t handle = nullptr;
std::map<AttentionKey, AttentionPlan> plans;

void checkCudnn(cudnnStatus_t status, const char *call) {
  if (status != CUDNN_STATUS_SUCCESS)
    fatal(std::string(call) + ": " + cudnnGetErrorString(status));
}
#define FSDPRT_CUDNN_CHECK(call) checkCudnn((call), #call)

/// "forward attention (batch = ..., causal, scale = ...)": the attention of an error.
std::string describe(const AttentionKey &key) {
  return std::string(key.pass == AttentionPass::Forward ? "forward" : "backward") +
         " attention (" + describeAttention(key.shape) +
         (key.deterministic ? ", deterministic" : "") +
         ", workspace at most " + std::to_string(key.workspaceLimit) + " bytes)";
}

/// Fatal unless `status` is good: "<what>: cuDNN's fused <attention>: <step>: <message>".
void checkFrontend(fe::error_t status, const char *what, const AttentionKey &key,
                   const char *step) {
  if (status.is_good())
    return;
  fatal(std::string(what) + ": cuDNN's fused " + describe(key) + ": " + step + ": " +
        status.get_message());
}

cudnnHandle_t openedHandle(const char *what) {
  cudaStream_t compute = deviceStream(what, FSDPRT_STREAM_COMPUTE);
  if (!handle) {
    FSDPRT_CUDNN_CHECK(cudnnCreate(&handle));
    FSDPRT_CUDNN_CHECK(cudnnSetStream(handle, compute));
  }
  return handle;
}

/// Gives `tensor` its name and uid, and the dims [batch, heads, seq, width]
/// of `type` with the strides of a contiguous row-major array of those dims,
/// or with `sequenceMajor` of [batch, seq, heads, width].
fe::graph::Tensor_attributes &laidOut(fe::graph::Tensor_attributes &tensor, const char *name,
                                      Uid uid, bool sequenceMajor, int64_t batch, int64_t heads,
                                      int64_t seq, int64_t width, fe::DataType_t type) {
  std::vector<int64_t> strides = {heads * seq * width, seq * width, width, 1};
  if (sequenceMajor)
    strides = {seq * heads * width, width, heads * width, 1};
  return tensor.set_name(name)
      .set_uid(uid)
      .set_dim({batch, heads, seq, width})
      .set_stride(strides)
      .set_data_type(type);
}

/// An input of the graph, laid out as laidOut says.
template <typename... Layout>
std::shared_ptr<fe::graph::Tensor_attributes> tensorOf(fe::graph::Graph &graph,
                                                       Layout... layout) {
  fe::graph::Tensor_attributes tensor;
  return graph.tensor(laidOut(tensor, layout...));
}

/// Marks `tensor`, a result of the graph, as an output laid out as laidOut
/// says.
template <typename... Layout>
void setOutput(const std::shared_ptr<fe::graph::Tensor_attributes> &tensor, Layout... layout) {
  laidOut(tensor->set_output(true), layout...);
}

/// The graph of `key`: bf16 operands and results, f32 scores, softmax and
/// statistics.
std::shared_ptr<fe::graph::Graph> describeGraph(const AttentionKey &key) {
  const AttentionShape &s = key.shape;
  constexpr auto kBf16 = fe::DataType_t::BFLOAT16;
  constexpr auto kF32 = fe::DataType_t::FLOAT;
  // The operands and results as the call lays them out; the log-sum-exp
  // [B, H, S, 1] always.
  bool major = s.sequenceMajor();
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(kBf16).set_intermediate_data_type(kF32).set_compute_data_type(kF32);
  auto query = tensorOf(*graph, "query", kQuery, major, s.batch, s.heads, s.seq, s.headDim, kBf16);
  auto keys = tensorOf(*graph, "key", kKey, major, s.batch, s.kvHeads, s.seq, s.headDim, kBf16);
  auto value =
      tensorOf(*graph, "value", kValue, major, s.batch, s.kvHeads, s.seq, s.headDim, kBf16);
  if (key.pass == AttentionPass::Forward) {
    auto options = fe::graph::SDPA_attributes()
                       .set_name("attention")
                       .set_generate_stats(true)
                       .set_causal_mask(s.causal)
                       .set_attn_scale(s.scale);
    if (s.window > 0)
      options.set_diagonal_band_left_bound(static_cast<int>(s.window));
    auto [out, lse] = graph->sdpa(query, keys, value, options);
    setOutput(out, "out", kOut, major, s.batch, s.heads, s.seq, s.headDim, kBf16);
    setOutput(lse, "lse", kLse, false, s.batch, s.heads, s.seq, 1, kF32);
    return graph;
  }
  auto out = tensorOf(*graph, "out", kOut, major, s.batch, s.heads, s.seq, s.headDim, kBf16);
  auto outGrad =
      tensorOf(*graph, "out_grad", kOutGrad, major, s.batch, s.heads, s.seq, s.headDim, kBf16);
  auto lse = tensorOf(*graph, "lse", kLse, false, s.batch, s.heads, s.seq, 1, kF32);
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("attention_grad")
                     .set_causal_mask(s.causal)
                     .set_attn_scale(s.scale)
                     .set_deterministic_algorithm(key.deterministic);
  if (s.window > 0)
    options.set_diagonal_band_left_bound(static_cast<int>(s.window));
  auto [queryGrad, keyGrad, valueGrad] =
      graph->sdpa_backward(query, keys, value, out, outGrad, lse, options);
  setOutput(queryGrad, "query_grad", kQueryGrad, major, s.batch, s.heads, s.seq, s.headDim, kBf16);
  setOutput(keyGrad, "key_grad", kKeyGrad, major, s.batch, s.kvHeads, s.seq, s.headDim, kBf16);
  setOutput(valueGrad, "value_grad", kValueGrad, major, s.batch, s.kvHeads, s.seq, s.headDim,
            kBf16);
  return graph;
}

/// The plan of `key`, as built by planFor.
AttentionPlan buildPlan(const char *what, const AttentionKey &key) {
  cudnnHandle_t cudnn = openedHandle(what);
  AttentionPlan plan;
  plan.graph = describeGraph(key);
  fe::graph::Graph &graph = *plan.graph;
  checkFrontend(graph.validate(), what, key, "the graph is not valid");
  checkFrontend(graph.build_operation_graph(cudnn), what, key, "building the operation graph");
  checkFrontend(graph.create_execution_plans({fe::HeurMode_t::A}), what, key,
                "asking cuDNN's heuristics for engines");
  graph.deselect_workspace_greater_than(key.workspaceLimit);
  checkFrontend(graph.check_support(cudnn), what, key,
                "no engine supports it within the workspace");
  checkFrontend(graph.build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), what, key,
                "building the plan");
  checkFrontend(graph.get_workspace_size(plan.info.workspaceBytes), what, key,
                "asking the plan's workspace");
  checkFrontend(graph.get_plan_name(plan.info.engine), what, key, "asking the plan's engine");
  if (plan.info.workspaceBytes > key.workspaceLimit)
    fatal(std::string(what) + ": cuDNN's fused " + describe(key) + ": the plan needs " +
          std::to_string(plan.info.workspaceBytes) + " bytes of workspace");
  return plan;
}

/// The plan of `key`, built at its first use.
const AttentionPlan &planFor(const char *what, const AttentionKey &key) {
  auto found = plans.find(key);
  if (found != plans.end())
    return found->second;
  try {
    return plans.emplace(key, buildPlan(what, key)).first->second;
  } catch (const std::exception &e) {
    // The frontend's JSON library, or an allocation.
    fatal(std::string(what) + ": cuDNN's fused " + describe(key) + ": " + e.what());
  }
}

void execute(const char *what, const AttentionKey &key, const AttentionPointers &pointers,
             void *workspace) {
  const AttentionPlan &plan = planFor(what, key);
  if (plan.info.workspaceBytes > 0 && !workspace)
    fatal(std::string(what) + ": cuDNN's fused " + describe(key) + " needs " +
          std::to_string(plan.info.workspaceBytes) + " bytes of workspace, and workspace is NULL");
  // The frontend's variant pack is not const.
  auto pack = pointers;
  checkFrontend(plan.graph->execute(handle, pack, workspace), what, key, "running it");
}

} // namespace

AttentionPlanInfo attentionPlan(AttentionPass pass, const AttentionShape &shape,
                                bool deterministic, int64_t workspaceLimit) {
  const char *what = "attentionPlan";
  checkAttention(what, shape);
  AttentionKey key{pass, shape, pass == AttentionPass::Backward && deterministic, workspaceLimit};
  return planFor(what, key).info;
}

std::string attentionGraphJson(AttentionPass pass, const AttentionShape &shape,
                               bool deterministic) {
  AttentionKey key{pass, shape, pass == AttentionPass::Backward && deterministic, 0};
  try {
    nlohmann::json description;
    describeGraph(key)->serialize(description);
    return description.dump();
  } catch (const std::exception &e) {
    fatal(std::string("attentionGraphJson: ") + describe(key) + ": " + e.what());
  }
}

AttentionPointers forwardPointers(const void *query, const void *key, const void *value,
                                  void *out, float *lse) {
  return {{kQuery, const_cast<void *>(query)},
          {kKey, const_cast<void *>(key)},
          {kValue, const_cast<void *>(value)},
          {kOut, out},
          {kLse, lse}};
}

AttentionPointers backwardPointers(const void *query, const void *key, const void *value,
                                   const void *out, const float *lse, const void *outGrad,
                                   void *queryGrad, void *keyGrad, void *valueGrad) {
  return {{kQuery, const_cast<void *>(query)},
          {kKey, const_cast<void *>(key)},
          {kValue, const_cast<void *>(value)},
          {kOut, const_cast<void *>(out)},
          {kLse, const_cast<float *>(lse)},
          {kOutGrad, const_cast<void *>(outGrad)},
          {kQueryGrad, queryGrad},
          {kKeyGrad, keyGrad},
          {kValueGrad, valueGrad}};
}

void closeCudnn() {
  plans.clear();
  if (handle)
    FSDPRT_CUDNN_CHECK(cudnnDestroy(handle));
  handle = nullptr;
}

} // namespace fsdprt

using namespace fsdprt;

extern "C" void fsdprt_attention_bf16(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq,
                                      int64_t head_dim, int32_t causal, int64_t window, float scale,
                                      int32_t layout, const void *query, const void *key,
                                      const void *value, void *out, float *lse, void *workspace,
                                      int64_t workspace_bytes) {
  const char *what = "fsdprt_attention_bf16";
  AttentionShape shape =
      attentionShape(batch, heads, kv_heads, seq, head_dim, causal, window, scale, layout);
  checkAttention(what, shape);
  AttentionKey plan{AttentionPass::Forward, shape, false, workspace_bytes};
  execute(what, plan, forwardPointers(query, key, value, out, lse), workspace);
  afterDeviceWork(what, deviceStream(what, FSDPRT_STREAM_COMPUTE));
}

extern "C" void fsdprt_attention_grad_bf16(
    int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq, int64_t head_dim, int32_t causal,
    int64_t window, float scale, int32_t layout, int32_t deterministic, const void *query,
    const void *key, const void *value, const void *out, const float *lse, const void *out_grad,
    void *query_grad, void *key_grad, void *value_grad, void *workspace, int64_t workspace_bytes) {
  const char *what = "fsdprt_attention_grad_bf16";
  AttentionShape shape =
      attentionShape(batch, heads, kv_heads, seq, head_dim, causal, window, scale, layout);
  checkAttention(what, shape);
  AttentionKey plan{AttentionPass::Backward, shape, deterministic != 0, workspace_bytes};
  execute(what, plan,
          backwardPointers(query, key, value, out, lse, out_grad, query_grad, key_grad,
                           value_grad),
          workspace);
  afterDeviceWork(what, deviceStream(what, FSDPRT_STREAM_COMPUTE));
}
