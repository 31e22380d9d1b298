//===- SafeTensors.cpp - --export and --init-from -------------------------===//

#include "io/SafeTensors.h"

#include "abi/Error.h"
#include "io/InputFile.h"
#include "io/OutputFile.h"
#include "trainer/ParamShards.h"
#include "trainer/TensorBlocks.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

namespace fsdprt {

using nlohmann::json;

static const char *kInitFlag = "--init-from";
/// The reference implementation refuses larger headers.
static constexpr uint64_t kMaxHeaderBytes = 100 << 20;

static const char *safetensorsDType(DType dtype) { return dtype == DType::BF16 ? "BF16" : "F32"; }

static std::optional<StoredReal> storedRealOf(const std::string &code) {
  if (code == "F64")
    return StoredReal::F64;
  if (code == "F32")
    return StoredReal::F32;
  if (code == "F16")
    return StoredReal::F16;
  if (code == "BF16")
    return StoredReal::BF16;
  return std::nullopt;
}

/// The element size of every dtype the format names, for checking byte
/// ranges of tensors this trainer does not load.
static std::optional<int64_t> elementSize(const std::string &code) {
  static const std::map<std::string, int64_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2},
      {"U16", 2},  {"F16", 2}, {"BF16", 2}, {"I32", 4},    {"U32", 4},     {"F32", 4},
      {"I64", 8},  {"U64", 8}, {"F64", 8}};
  auto it = sizes.find(code);
  if (it == sizes.end())
    return std::nullopt;
  return it->second;
}

std::string safetensorsHeader(const Manifest &manifest, DType dtype,
                              const std::map<std::string, std::string> &metadata) {
  // Insertion order: the tensors in manifest order, as their bytes follow.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  int64_t offset = 0;
  for (const ParamSpec &param : manifest.params) {
    int64_t bytes = param.wholeElements() * static_cast<int64_t>(dtypeSize(dtype));
    header[param.name] = {{"dtype", safetensorsDType(dtype)},
                          {"shape", param.wholeShape()},
                          {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t size = text.size();
  std::string bytes(sizeof(size), '\0');
  std::memcpy(bytes.data(), &size, sizeof(size));
  return bytes + text;
}

void exportSafetensors(const Manifest &manifest, const RankPlace &place, const HostShards &shards,
                       OutputFile *out, DType dtype,
                       const std::map<std::string, std::string> &metadata) {
  if (out)
    out->write(safetensorsHeader(manifest, dtype, metadata));
  std::vector<uint8_t> converted;
  gatherUnitRegion(
      manifest, place, shards, "--export", [](const UnitSpec &unit) { return unit.paramOffset; },
      [&](const ParamSpec &param, const uint8_t *data, size_t bytes) {
        if (param.dtype == dtype) {
          out->write(data, bytes);
          return;
        }
        size_t from = dtypeSize(param.dtype), to = dtypeSize(dtype);
        converted.resize(static_cast<size_t>(param.wholeElements()) * to);
        for (int64_t i = 0; i < param.wholeElements(); ++i)
          storeReal(loadReal(param.dtype, data + i * from), dtype, converted.data() + i * to);
        out->write(converted.data(), converted.size());
      });
}

/// A JSON value as text for a message: invalid UTF-8 in the file is replaced,
/// never an exception (the runtime is built without them).
static std::string excerpt(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {
/// A tensor of the file: where its bytes are, relative to the data.
struct StoredTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t begin = 0;
  int64_t end = 0;
};
} // namespace

/// The header's tensors, checked against the format: known dtypes, shapes of
/// non-negative sizes, byte ranges inside the data that hold exactly their
/// tensors.
static std::map<std::string, StoredTensor> readHeader(const InputFile &file, int64_t &dataStart) {
  uint64_t size = 0;
  if (file.size() < 8)
    file.fail("not a safetensors file: shorter than its 8-byte header size");
  file.read(0, &size, sizeof(size));
  if (size > kMaxHeaderBytes || size > static_cast<uint64_t>(file.size() - 8))
    file.fail("not a safetensors file: its header size " + std::to_string(size) +
              " does not fit in the file's " + std::to_string(file.size()) + " bytes");
  std::string text(size, '\0');
  file.read(8, text.data(), static_cast<int64_t>(size));
  dataStart = 8 + static_cast<int64_t>(size);
  int64_t dataBytes = file.size() - dataStart;

  json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object())
    file.fail("not a safetensors file: its header is not a JSON object");
  std::map<std::string, StoredTensor> tensors;
  for (auto &[name, entry] : header.items()) {
    if (name == "__metadata__")
      continue;
    auto bad = [&](const std::string &what) { file.fail("tensor '" + name + "': " + what); };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets") || !entry["dtype"].is_string() ||
        !entry["shape"].is_array() || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2)
      bad("needs a dtype, a shape and two data_offsets");
    StoredTensor tensor;
    tensor.dtype = entry["dtype"].get<std::string>();
    std::optional<int64_t> element = elementSize(tensor.dtype);
    if (!element)
      bad("unknown dtype '" + tensor.dtype + "'");
    unsigned __int128 numel = 1;
    for (const json &dim : entry["shape"]) {
      if (!dim.is_number_unsigned())
        bad("its shape " + excerpt(entry["shape"]) + " is not a list of sizes");
      numel *= dim.get<uint64_t>();
      if (numel > static_cast<uint64_t>(INT64_MAX))
        bad("its shape " + excerpt(entry["shape"]) + " is too large");
      tensor.shape.push_back(static_cast<int64_t>(dim.get<uint64_t>()));
    }
    const json &offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      bad("its data_offsets are not byte offsets");
    uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > static_cast<uint64_t>(dataBytes))
      bad("its data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
          "] are outside the file's " + std::to_string(dataBytes) + " bytes of data");
    if (numel * static_cast<uint64_t>(*element) != end - begin)
      bad("its data_offsets hold " + std::to_string(end - begin) + " bytes, but " +
          excerpt(entry["shape"]) + " " + tensor.dtype + " needs " +
          std::to_string(static_cast<uint64_t>(numel) * static_cast<uint64_t>(*element)));
    tensor.begin = static_cast<int64_t>(begin);
    tensor.end = static_cast<int64_t>(end);
    tensors.emplace(name, std::move(tensor));
  }
  return tensors;
}

/// Everything that keeps the file from being the model's parameters, one
/// line per problem.
static std::vector<std::string> mismatches(const Manifest &manifest,
                                           const std::map<std::string, StoredTensor> &tensors) {
  std::vector<std::string> problems;
  std::set<std::string> expected;
  for (const ParamSpec &param : manifest.params) {
    expected.insert(param.name);
    // The file holds whole tensors, whatever the tensor ranks.
    std::vector<int64_t> shape = param.wholeShape();
    auto it = tensors.find(param.name);
    if (it == tensors.end()) {
      problems.push_back("missing '" + param.name + "' " + formatShape(shape));
      continue;
    }
    if (it->second.shape != shape)
      problems.push_back("'" + param.name + "' is " + formatShape(it->second.shape) +
                         " in the file, " + formatShape(shape) + " in the model");
    if (!storedRealOf(it->second.dtype))
      problems.push_back("'" + param.name + "' is " + it->second.dtype +
                         " in the file (expected F64, F32, F16 or BF16)");
  }
  for (const auto &[name, tensor] : tensors)
    if (!expected.count(name))
      problems.push_back("unexpected '" + name + "' " + formatShape(tensor.shape) +
                         " (not a parameter of the model)");
  return problems;
}

/// Reads elements [begin, end) of `param`'s block `tensorIndex` from the
/// whole tensor at `offset`, a run of the block at a time (TensorBlocks.h),
/// into `dst` as the parameter's dtype.
static void readBlockRange(const InputFile &file, int64_t offset, StoredReal stored,
                           const ParamSpec &param, int64_t tensorIndex, int64_t begin, int64_t end,
                           uint8_t *dst) {
  BlockLayout layout = BlockLayout::of(param);
  int64_t storedSize = static_cast<int64_t>(storedRealSize(stored));
  int64_t size = static_cast<int64_t>(dtypeSize(param.dtype));
  for (int64_t element = begin; element < end;) {
    int64_t count = std::min(end - element, layout.runLeft(element));
    file.readReals(offset + layout.wholeIndex(tensorIndex, element) * storedSize, stored, count,
                   dst + (element - begin) * size, param.dtype);
    element += count;
  }
}

void initFromSafetensors(const Manifest &manifest, const std::string &path, const RankPlace &place,
                         const HostShards &shards) {
  int64_t shardIndex = place.shardIndex;
  InputFile file(kInitFlag, path);
  int64_t dataStart = 0;
  std::map<std::string, StoredTensor> tensors = readHeader(file, dataStart);
  std::vector<std::string> problems = mismatches(manifest, tensors);
  if (!problems.empty()) {
    std::string message = "does not hold the model's parameters: ";
    for (size_t i = 0; i < problems.size(); ++i)
      message += (i ? "; " : "") + problems[i];
    file.fail(message);
  }
  for (const ParamSpec &param : manifest.params) {
    const UnitSpec &unit = manifest.units[param.unitIndex];
    ShardRange part = ownedPart(param, ownedRange(unit, shardIndex));
    if (part.begin == part.end)
      continue;
    const StoredTensor &tensor = tensors.at(param.name);
    StoredReal stored = *storedRealOf(tensor.dtype);
    readBlockRange(
        file, dataStart + tensor.begin, stored, param, place.tensorIndex, part.begin, part.end,
        shards.of(unit) + shardPosition(manifest, param, shardIndex, part.begin, unit.paramOffset));
  }
}

} // namespace fsdprt
