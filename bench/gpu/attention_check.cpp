//===- attention_check.cpp - The runtime's fused attention on a GPU -------===//
//
// fsdp-attention-check runs fsdprt_attention_bf16 and
// fsdprt_attention_grad_bf16 (the CUDA runtime's cuDNN calls, as a trainer
// makes them) on operands read from files, writes the results, and times
// them; attention_check.py draws the operands, compares the results with a
// float64 reference and prints the table. Built with the CUDA backend; runs
// only where there is a GPU (the check kit, docs/CUDA.md section 5).
//
//   fsdp-attention-check B,H,HKV,T,D [causal] [window=W] [deterministic] [bshd] DIR
//                        [repeats]
//
// (window=W: a sliding window of W positions, with causal.)
//
// DIR holds query.bin, key.bin, value.bin and out_grad.bin (bf16, row-major
// [B, H, T, D] and [B, HKV, T, D]; with `bshd` the calls take them as
// [B, T, H, D], FSDPRT_ATTENTION_BSHD, swapped on the way in and the results
// on the way out); the program writes out.bin, lse.bin (f32
// [B, H, T]), query_grad.bin, key_grad.bin and value_grad.bin there, and
// prints one JSON object: each pass's engine and workspace, the median
// milliseconds of `repeats` calls of each (CUDA events; 0: no timing), and
// whether a second backward pass gave the same bits. Every output is filled
// with NaN bit patterns first, so an element the call leaves unwritten shows.
//
// Built twice: fsdp-attention-check against the CUDA runtime (cuDNN), and
// fsdp-attention-check-host against the CPU runtime's loops (no plans, no
// timing), which test/e2e/host-attention.test checks the same way.
//
//===----------------------------------------------------------------------===//

#include "abi/AttentionArguments.h"
#include "fsdprt/fsdprt.h"

#ifdef FSDP_ATTENTION_CHECK_CUDA
#include "abi/Device.h"
#include "cuda/CudnnAttention.h"

#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "fsdp-attention-check: %s\n", message.c_str());
  std::exit(1);
}

std::vector<char> readFile(const std::string &path, size_t bytes) {
  std::ifstream file(path, std::ios::binary);
  std::vector<char> data(bytes);
  if (!file.read(data.data(), static_cast<std::streamsize>(bytes)))
    fail("cannot read " + std::to_string(bytes) + " bytes from " + path);
  return data;
}

void writeFile(const std::string &path, const std::vector<char> &data) {
  std::ofstream file(path, std::ios::binary);
  if (!file.write(data.data(), static_cast<std::streamsize>(data.size())))
    fail("cannot write " + path);
}

#ifdef FSDP_ATTENTION_CHECK_CUDA
void check(cudaError_t status, const char *call) {
  if (status != cudaSuccess)
    fail(std::string(call) + ": " + cudaGetErrorString(status));
}
#define CHECK(call) check((call), #call)

/// A device buffer of `bytes`, from `host` or full of 0xFF bytes (NaN in
/// bf16 and f32).
void *upload(const std::vector<char> *host, size_t bytes) {
  void *device = nullptr;
  CHECK(cudaMalloc(&device, bytes));
  if (host)
    CHECK(cudaMemcpy(device, host->data(), bytes, cudaMemcpyHostToDevice));
  else
    CHECK(cudaMemset(device, 0xFF, bytes));
  return device;
}

std::vector<char> download(const void *device, size_t bytes) {
  std::vector<char> host(bytes);
  CHECK(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
  return host;
}

void release(void *device) { CHECK(cudaFree(device)); }

void synchronize() {
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGetLastError());
}

/// The median milliseconds of `repeats` calls of `call`, after two unmeasured ones.
template <typename Call> double medianMs(int repeats, Call call) {
  if (repeats <= 0)
    return 0;
  call();
  call();
  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  cudaStream_t stream = static_cast<cudaStream_t>(fsdprt_stream(FSDPRT_STREAM_COMPUTE));
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    CHECK(cudaEventRecord(start, stream));
    call();
    CHECK(cudaEventRecord(end, stream));
    CHECK(cudaEventSynchronize(end));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}
#else
void *upload(const std::vector<char> *host, size_t bytes) {
  char *buffer = new char[bytes];
  if (host)
    std::memcpy(buffer, host->data(), bytes);
  else
    std::memset(buffer, 0xFF, bytes);
  return buffer;
}

std::vector<char> download(const void *buffer, size_t bytes) {
  const char *data = static_cast<const char *>(buffer);
  return std::vector<char>(data, data + bytes);
}

void release(void *buffer) { delete[] static_cast<char *>(buffer); }

void synchronize() {}

template <typename Call> double medianMs(int, Call) { return 0; }
#endif

std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text)
    out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

/// A bf16 [b, x, y, d] array as [b, y, x, d].
std::vector<char> swapMiddle(const std::vector<char> &data, int64_t b, int64_t x, int64_t y,
                             int64_t d) {
  std::vector<char> swapped(data.size());
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < x; ++j)
      for (int64_t k = 0; k < y; ++k)
        std::memcpy(&swapped[(((i * y + k) * x + j) * d) * 2],
                    &data[(((i * x + j) * y + k) * d) * 2], static_cast<size_t>(d) * 2);
  return swapped;
}

/// The command line: the attention, its flags, the folder and the repeats.
struct Arguments {
  fsdprt::AttentionShape shape;
  bool deterministic = false;
  std::string dir;
  int repeats = 0;
};

Arguments parseArguments(std::vector<std::string> args) {
  auto flag = [&](const char *name) {
    auto found = std::find(args.begin(), args.end(), name);
    if (found == args.end())
      return false;
    args.erase(found);
    return true;
  };
  bool causal = flag("causal"), bshd = flag("bshd");
  Arguments parsed;
  parsed.deterministic = flag("deterministic");
  int64_t window = 0;
  auto windowed = std::find_if(args.begin(), args.end(),
                               [](const std::string &a) { return a.rfind("window=", 0) == 0; });
  if (windowed != args.end()) {
    if (std::sscanf(windowed->c_str() + 7, "%ld", &window) != 1)
      fail("'" + *windowed + "' is not window=W");
    args.erase(windowed);
  }
  if (args.size() < 2 || args.size() > 3)
    fail("usage: fsdp-attention-check B,H,HKV,T,D [causal] [window=W] [deterministic] [bshd] "
         "DIR [repeats]");
  int64_t b = 0, h = 0, hkv = 0, t = 0, d = 0;
  if (std::sscanf(args[0].c_str(), "%ld,%ld,%ld,%ld,%ld", &b, &h, &hkv, &t, &d) != 5)
    fail("the shape '" + args[0] + "' is not B,H,HKV,T,D");
  parsed.shape = fsdprt::attentionShape(b, h, hkv, t, d, causal, window,
                                        static_cast<float>(1.0 / std::sqrt(d)),
                                        bshd ? FSDPRT_ATTENTION_BSHD : FSDPRT_ATTENTION_BHSD);
  parsed.dir = args[1];
  parsed.repeats = args.size() == 3 ? std::atoi(args[2].c_str()) : 0;
  return parsed;
}

} // namespace

int main(int argc, char **argv) {
  Arguments arguments = parseArguments(std::vector<std::string>(argv + 1, argv + argc));
  const fsdprt::AttentionShape &shape = arguments.shape;
  bool deterministic = arguments.deterministic, bshd = shape.sequenceMajor(), causal = shape.causal;
  int64_t b = shape.batch, h = shape.heads, hkv = shape.kvHeads, t = shape.seq, d = shape.headDim,
          window = shape.window;
  int32_t layout = shape.layout;
  std::string dir = arguments.dir;
  int repeats = arguments.repeats;
  // The files' [B, H, T, D] as the calls take them, and back.
  auto toCall = [&](const std::vector<char> &data, int64_t heads) {
    return bshd ? swapMiddle(data, b, heads, t, d) : data;
  };
  auto fromCall = [&](const std::vector<char> &data, int64_t heads) {
    return bshd ? swapMiddle(data, b, t, heads, d) : data;
  };
  fsdprt::checkAttention("fsdp-attention-check", shape);
  size_t queryBytes = shape.queryElements() * 2, keyBytes = shape.keyElements() * 2,
         lseBytes = shape.rows() * 4;
  // As much workspace as the card lets cuDNN choose from: what the chosen
  // plans need is the figure the compiler's plan must reserve.
  constexpr int64_t kWorkspaceLimit = int64_t(8) << 30;
  std::string forwardEngine = "host loops", backwardEngine = "host loops";
  int64_t forwardWorkspace = 0, backwardWorkspace = 0;
#ifdef FSDP_ATTENTION_CHECK_CUDA
  fsdprt::openDevice();
  fsdprt::AttentionPlanInfo forward = fsdprt::attentionPlan(fsdprt::AttentionPass::Forward, shape,
                                                            false, kWorkspaceLimit);
  fsdprt::AttentionPlanInfo backward = fsdprt::attentionPlan(
      fsdprt::AttentionPass::Backward, shape, deterministic, kWorkspaceLimit);
  forwardEngine = forward.engine;
  backwardEngine = backward.engine;
  forwardWorkspace = forward.workspaceBytes;
  backwardWorkspace = backward.workspaceBytes;
#endif
  void *workspace = upload(nullptr, std::max<int64_t>({forwardWorkspace, backwardWorkspace, 1}));

  std::vector<char> q = toCall(readFile(dir + "/query.bin", queryBytes), h),
                    k = toCall(readFile(dir + "/key.bin", keyBytes), hkv),
                    v = toCall(readFile(dir + "/value.bin", keyBytes), hkv),
                    dO = toCall(readFile(dir + "/out_grad.bin", queryBytes), h);
  void *dq = upload(&q, queryBytes), *dk = upload(&k, keyBytes), *dv = upload(&v, keyBytes),
       *ddO = upload(&dO, queryBytes), *out = upload(nullptr, queryBytes),
       *lse = upload(nullptr, lseBytes), *gq = upload(nullptr, queryBytes),
       *gk = upload(nullptr, keyBytes), *gv = upload(nullptr, keyBytes);
  float scale = shape.scale;
  auto runForward = [&] {
    fsdprt_attention_bf16(b, h, hkv, t, d, causal, window, scale, layout, dq, dk, dv, out,
                          static_cast<float *>(lse), workspace, kWorkspaceLimit);
  };
  auto runBackward = [&] {
    fsdprt_attention_grad_bf16(b, h, hkv, t, d, causal, window, scale, layout, deterministic, dq,
                               dk, dv, out, static_cast<const float *>(lse), ddO, gq, gk, gv,
                               workspace, kWorkspaceLimit);
  };
  runForward();
  runBackward();
  synchronize();
  writeFile(dir + "/out.bin", fromCall(download(out, queryBytes), h));
  writeFile(dir + "/lse.bin", download(lse, lseBytes));
  std::vector<char> first[3] = {download(gq, queryBytes), download(gk, keyBytes),
                                download(gv, keyBytes)};
  writeFile(dir + "/query_grad.bin", fromCall(first[0], h));
  writeFile(dir + "/key_grad.bin", fromCall(first[1], hkv));
  writeFile(dir + "/value_grad.bin", fromCall(first[2], hkv));
  runBackward();
  synchronize();
  bool repeatable = download(gq, queryBytes) == first[0] && download(gk, keyBytes) == first[1] &&
                    download(gv, keyBytes) == first[2];
  double forwardMs = medianMs(repeats, runForward);
  double backwardMs = medianMs(repeats, runBackward);

  std::ostringstream json;
  json << "{\"forward_engine\": " << quoted(forwardEngine)
       << ", \"forward_workspace\": " << forwardWorkspace
       << ", \"backward_engine\": " << quoted(backwardEngine)
       << ", \"backward_workspace\": " << backwardWorkspace
       << ", \"forward_ms\": " << forwardMs << ", \"backward_ms\": " << backwardMs
       << ", \"backward_repeatable\": " << (repeatable ? "true" : "false") << "}";
  std::printf("%s\n", json.str().c_str());
  for (void *p : {dq, dk, dv, ddO, out, lse, gq, gk, gv, workspace})
    release(p);
#ifdef FSDP_ATTENTION_CHECK_CUDA
  fsdprt::closeDevice();
#endif
  return 0;
}
