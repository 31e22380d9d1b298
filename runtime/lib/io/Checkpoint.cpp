//===- Checkpoint.cpp - --save and --resume -------------------------------===//

#include "io/Checkpoint.h"

#include "abi/Error.h"
#include "io/InputFile.h"
#include "io/OutputFile.h"
#include "trainer/ParamShards.h"
#include "trainer/Philox.h"
#include "trainer/TensorBlocks.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace fsdprt {

using nlohmann::json;

static constexpr const char *kFormat = "fsdp-mlir checkpoint";
// Version 2 added the tensor ranks (plan.tensor_ranks, params' split_dim and
// split_parts, one set of shard files per tensor index); version 1 reads as
// one tensor rank.
static constexpr int64_t kVersion = 2;
static constexpr const char *kMetadata = "metadata.json";

//===----------------------------------------------------------------------===//
// Names and files
//===----------------------------------------------------------------------===//

static std::string stepName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08lld", static_cast<long long>(step));
  return name;
}

/// The step of a committed checkpoint's directory name, `step-<digits>`.
static std::optional<int64_t> stepOfName(const std::string &name) {
  if (name.size() <= 5 || name.compare(0, 5, "step-") != 0 || name.size() > 5 + 18)
    return std::nullopt;
  int64_t step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9')
      return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

/// The file of shard `shard` of `shards`, of the blocks of tensor index
/// `tensor` of `tensors` (one tensor rank: the name of version 1).
static std::string shardFileName(int64_t shard, int64_t shards, int64_t tensor, int64_t tensors) {
  char name[96];
  if (tensors == 1)
    std::snprintf(name, sizeof(name), "shard-%05lld-of-%05lld.bin", static_cast<long long>(shard),
                  static_cast<long long>(shards));
  else
    std::snprintf(name, sizeof(name), "tensor-%05lld-of-%05lld.shard-%05lld-of-%05lld.bin",
                  static_cast<long long>(tensor), static_cast<long long>(tensors),
                  static_cast<long long>(shard), static_cast<long long>(shards));
  return name;
}

namespace fs = std::filesystem;

[[noreturn]] static void saveFailed(const std::string &path, const std::string &what,
                                    const std::error_code &error) {
  fatal("--save '" + path + "': " + what + ": " + error.message());
}

/// fsync of a directory: what a rename in it changed is on the disk.
static void syncDirectory(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0)
    saveFailed(path, "cannot sync", std::error_code(errno, std::generic_category()));
  ::close(fd);
}

/// The entries of a directory, by name (none if it cannot be read).
static std::vector<std::string> listDirectory(const std::string &path) {
  std::vector<std::string> names;
  std::error_code error;
  for (const fs::directory_entry &entry : fs::directory_iterator(path, error))
    names.push_back(entry.path().filename().string());
  return names;
}

static void removeDirectory(const std::string &path) {
  std::error_code error;
  fs::remove_all(path, error);
  if (error)
    saveFailed(path, "cannot remove", error);
}

static void renameDirectory(const std::string &from, const std::string &to) {
  std::error_code error;
  fs::rename(from, to, error);
  if (error)
    saveFailed(from, "cannot rename to '" + to + "'", error);
}

/// Test hook (docs/Runtime.md, section 8): FSDPRT_CRASH_IN_SAVE=<phase> kills
/// rank 0 with SIGKILL at that phase of a save, as a crash would.
static void crashPoint(const char *phase) {
  static const char *wanted = std::getenv("FSDPRT_CRASH_IN_SAVE");
  if (wanted && std::strcmp(wanted, phase) == 0 && worldRank() == 0)
    std::raise(SIGKILL);
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

/// A unit's regions in a shard file, in order: its parameter shard, then
/// (trainable units) each optimizer slot's.
static std::vector<std::pair<std::string, int64_t>> unitRegions(const UnitSpec &unit) {
  std::vector<std::pair<std::string, int64_t>> regions = {{"param", unit.paramOffset}};
  if (unit.trainable)
    for (const SlotSpec &slot : unit.state)
      regions.push_back({slot.slot, slot.offset});
  return regions;
}

static const char *optimizerName(OptimizerKind kind) {
  return kind == OptimizerKind::AdamW ? "adamw" : "sgd";
}

/// What identifies the model a checkpoint belongs to: its parameters (name,
/// shape, trainable) and its optimizer's state slots.
static std::string fingerprint(const Manifest &manifest) {
  std::string text = optimizerName(manifest.optimizer.kind);
  for (const std::string &slot : optimizerSlots(manifest.optimizer))
    text += "," + slot;
  for (const ParamSpec &param : manifest.params)
    text += ";" + param.name + formatShape(param.wholeShape()) + (param.trainable ? "" : "frozen");
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a64(text)));
  return hex;
}

static json metadataOf(const Manifest &manifest, const TrainingPosition &position) {
  json units = json::array();
  int64_t fileOffset = 0;
  for (const UnitSpec &unit : manifest.units) {
    json regions = json::object();
    for (const auto &region : unitRegions(unit)) {
      regions[region.first] = fileOffset;
      fileOffset += unit.shardBytes();
    }
    units.push_back({{"name", unit.name},
                     {"dtype", dtypeName(unit.dtype)},
                     {"numel", unit.numel},
                     {"shard_numel", unit.shardNumel},
                     {"trainable", unit.trainable},
                     {"regions", regions}});
  }
  // Whole shapes: a split parameter's block is the split_dim's share of it.
  json params = json::array();
  for (const ParamSpec &param : manifest.params) {
    json saved = {{"name", param.name},
                  {"shape", param.wholeShape()},
                  {"dtype", dtypeName(param.dtype)},
                  {"trainable", param.trainable},
                  {"unit", param.unitIndex},
                  {"unit_offset", param.unitOffset}};
    if (param.splitDim && manifest.tensorRanks > 1) {
      saved["split_dim"] = *param.splitDim;
      if (!param.splitParts.empty())
        saved["split_parts"] = param.splitParts;
    }
    params.push_back(std::move(saved));
  }
  // Tensor index by tensor index, each its shard files in shard order.
  json files = json::array();
  for (int64_t t = 0; t < manifest.tensorRanks; ++t)
    for (int64_t k = 0; k < manifest.shardRanks; ++k)
      files.push_back(shardFileName(k, manifest.shardRanks, t, manifest.tensorRanks));
  const LrSchedule &schedule = position.schedule;
  return {{"format", kFormat},
          {"version", kVersion},
          {"step", position.step},
          {"samples_seen", position.samplesSeen},
          {"seed", position.seed},
          {"data", position.data},
          {"lr_schedule",
           {{"lr", schedule.peak},
            {"warmup_steps", schedule.warmupSteps},
            {"decay", lrDecayName(schedule.decay)},
            {"decay_steps", schedule.decaySteps},
            {"min_lr", schedule.floor}}},
          {"fingerprint", fingerprint(manifest)},
          {"optimizer",
           {{"kind", optimizerName(manifest.optimizer.kind)},
            {"slots", optimizerSlots(manifest.optimizer)}}},
          {"plan",
           {{"grid", manifest.grid},
            {"strategy", manifest.strategy},
            {"shard_ranks", manifest.shardRanks},
            {"tensor_ranks", manifest.tensorRanks},
            {"batch", manifest.batch}}},
          {"params", params},
          {"units", units},
          {"files", files},
          // Every shard file holds every unit's regions.
          {"file_bytes", fileOffset}};
}

//===----------------------------------------------------------------------===//
// Saving
//===----------------------------------------------------------------------===//

static void writeShardFile(const std::string &path, const Manifest &manifest,
                           const HostShards &shards) {
  OutputFile file("--save", path);
  for (const UnitSpec &unit : manifest.units)
    for (const auto &region : unitRegions(unit))
      file.write(shards.of(unit) + region.second, static_cast<size_t>(unit.shardBytes()));
  file.sync();
  file.close();
}

static void downloadShards(const Manifest &manifest, Arena &arena) {
  for (const UnitSpec &unit : manifest.units)
    if (!unit.offloaded)
      for (const auto &region : unitRegions(unit))
        arena.download(region.second, unit.shardBytes());
}

/// Removes the oldest committed checkpoints but `keep`.
static void prune(const std::string &dir, int64_t keep) {
  std::vector<int64_t> steps;
  for (const std::string &name : listDirectory(dir))
    if (std::optional<int64_t> step = stepOfName(name))
      steps.push_back(*step);
  std::sort(steps.begin(), steps.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < steps.size(); ++i)
    removeDirectory(dir + "/" + stepName(steps[i]));
}

void saveCheckpoint(const std::string &dir, const Manifest &manifest, const RankPlace &place,
                    Arena &arena, uint8_t *hostArena, const TrainingPosition &position,
                    int64_t keep) {
  std::string final = dir + "/" + stepName(position.step);
  std::string partial = dir + "/." + stepName(position.step) + ".partial";
  bool leader = place.rank == 0;
  if (leader) {
    std::error_code error;
    fs::create_directories(dir, error);
    if (error)
      saveFailed(dir, "cannot create the directory", error);
    // Partial directories are what crashed saves left.
    for (const std::string &name : listDirectory(dir))
      if (name.size() > 8 && name[0] == '.' && name.compare(name.size() - 8, 8, ".partial") == 0)
        removeDirectory(dir + "/" + name);
    if (!fs::create_directory(partial, error))
      saveFailed(partial, "cannot create the directory", error);
  }
  waitForEveryRank();

  if (place.replicaIndex == 0) {
    downloadShards(manifest, arena);
    writeShardFile(partial + "/" +
                       shardFileName(place.shardIndex, manifest.shardRanks, place.tensorIndex,
                                     manifest.tensorRanks),
                   manifest, HostShards(arena.host(), hostArena));
  }
  crashPoint("shards");
  waitForEveryRank();

  if (leader) {
    OutputFile metadata("--save", partial + "/" + kMetadata);
    metadata.write(metadataOf(manifest, position).dump(1) + "\n");
    metadata.sync();
    metadata.close();
    syncDirectory(partial);
    crashPoint("metadata");
    // The same step saved again (a new run in an old directory): the old
    // copy steps aside until the new one is committed.
    std::string old = dir + "/." + stepName(position.step) + ".old";
    std::error_code error;
    bool replacing = fs::exists(final, error);
    if (replacing)
      renameDirectory(final, old);
    renameDirectory(partial, final);
    syncDirectory(dir);
    crashPoint("commit");
    if (replacing)
      removeDirectory(old);
    if (keep > 0)
      prune(dir, keep);
  }
  waitForEveryRank();
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

namespace {
struct SavedParam {
  std::vector<int64_t> shape; // the whole parameter's
  std::optional<int64_t> splitDim;
  std::vector<int64_t> splitParts; // whole sizes; empty: none
  DType dtype = DType::F32;
  bool trainable = true;
  size_t unit = 0;
  int64_t unitOffset = 0;
  /// Where its blocks' elements lie in the whole (checkLayout sets it).
  BlockLayout layout;
};

struct SavedUnit {
  int64_t shardNumel = 0;
  int64_t elementSize = 0;
  std::map<std::string, int64_t> regions; // region name -> byte offset in each file
};

struct SavedCheckpoint {
  std::string path;
  TrainingPosition position;
  std::string optimizer;
  std::vector<std::string> slots;
  std::map<std::string, SavedParam> params;
  std::vector<std::string> paramOrder;
  std::vector<SavedUnit> units;
  /// Tensor index by tensor index, each its shard files in shard order.
  std::vector<std::string> files;
  int64_t fileBytes = 0;
  int64_t tensorRanks = 1;
  int64_t shardsPerBlock = 0; // files per tensor index
};
} // namespace

/// The checkpoint `dir` names: itself if it has metadata, else the newest
/// committed one under it.
static std::string findCheckpoint(const std::string &dir) {
  std::error_code error;
  if (fs::exists(dir + "/" + kMetadata, error))
    return dir;
  if (!fs::is_directory(dir, error))
    fatal("--resume '" + dir + "': no such directory");
  std::optional<int64_t> newest;
  for (const std::string &name : listDirectory(dir))
    if (std::optional<int64_t> step = stepOfName(name))
      if (!newest || *step > *newest)
        newest = step;
  if (!newest)
    fatal("--resume '" + dir + "': holds no committed checkpoint (a step-<k> directory)");
  return dir + "/" + stepName(*newest);
}

/// A saved parameter's split_parts, as the manifest's (docs/Runtime.md,
/// section 2): beside split_dim, at least 2 parts, each positive and cut
/// into plan.tensor_ranks equal blocks, together the whole dimension.
static void checkSavedParts(const InputFile &file, const std::string &name, const SavedParam &param,
                            int64_t tensorRanks) {
  const std::vector<int64_t> &parts = param.splitParts;
  std::string what = "parameter '" + name + "': split_parts " + formatShape(parts);
  if (!param.splitDim)
    file.fail(what + ": expected only with split_dim, got no split_dim");
  if (parts.size() < 2)
    file.fail(what + ": expected at least 2 parts, got " + std::to_string(parts.size()));
  int64_t whole = param.shape[static_cast<size_t>(*param.splitDim)], sum = 0;
  for (int64_t part : parts) {
    if (part < 1 || part % tensorRanks != 0)
      file.fail(what + ": expected positive multiples of plan.tensor_ranks " +
                std::to_string(tensorRanks) + ", got " + std::to_string(part));
    if (__builtin_add_overflow(sum, part, &sum))
      sum = -1;
  }
  if (sum != whole)
    file.fail(what + ": expected parts summing to " + std::to_string(whole) + " (split_dim " +
              std::to_string(*param.splitDim) + " of shape " + formatShape(param.shape) +
              "), got " + (sum < 0 ? "more than 2^63" : std::to_string(sum)));
}

/// A saved parameter's blocks: split_dim must be one of its dimensions, cut
/// into plan.tensor_ranks equal blocks (each of its split_parts, if any).
static BlockLayout savedLayout(const InputFile &file, const std::string &name,
                               const SavedParam &param, int64_t tensorRanks) {
  std::vector<int64_t> block = param.shape;
  if (!param.splitDim) {
    // split_parts without a split_dim: checkSavedParts says so.
    if (!param.splitParts.empty())
      checkSavedParts(file, name, param, tensorRanks);
    return BlockLayout::of(block, std::nullopt, 1);
  }
  int64_t dim = *param.splitDim;
  if (dim < 0 || dim >= static_cast<int64_t>(block.size()))
    file.fail("parameter '" + name + "': split_dim " + std::to_string(dim) +
              " is not a dimension of its shape " + formatShape(param.shape));
  if (block[static_cast<size_t>(dim)] % tensorRanks != 0)
    file.fail("parameter '" + name + "': split_dim " + std::to_string(dim) + " of shape " +
              formatShape(param.shape) + " does not cut into plan.tensor_ranks " +
              std::to_string(tensorRanks) + " equal blocks");
  if (!param.splitParts.empty())
    checkSavedParts(file, name, param, tensorRanks);
  block[static_cast<size_t>(dim)] /= tensorRanks;
  return BlockLayout::of(block, dim, tensorRanks, param.splitParts);
}

/// Every element of every parameter's block lies in some shard file of its
/// tensor index, inside its region, and every region inside the files.
static void checkLayout(const InputFile &file, SavedCheckpoint &saved) {
  int64_t files = static_cast<int64_t>(saved.files.size());
  if (files == 0 || files % saved.tensorRanks != 0)
    file.fail("files: " + std::to_string(files) + " shard files do not divide among " +
              "plan.tensor_ranks " + std::to_string(saved.tensorRanks));
  int64_t shards = saved.shardsPerBlock = files / saved.tensorRanks;
  for (size_t u = 0; u < saved.units.size(); ++u) {
    const SavedUnit &unit = saved.units[u];
    if (unit.shardNumel < 1 || unit.elementSize < 1 || !unit.regions.count("param"))
      file.fail("unit " + std::to_string(u) + " has no parameter shard");
    for (const auto &[name, offset] : unit.regions)
      if (offset < 0 || offset > saved.fileBytes ||
          unit.shardNumel > (saved.fileBytes - offset) / unit.elementSize)
        file.fail("unit " + std::to_string(u) + "'s " + name + " lies outside the " +
                  std::to_string(saved.fileBytes) + "-byte shard files");
  }
  for (auto &[name, param] : saved.params) {
    int64_t numel = 1;
    for (int64_t dim : param.shape)
      if (dim < 1 || __builtin_mul_overflow(numel, dim, &numel))
        file.fail("parameter '" + name + "' has a bad shape");
    param.layout = savedLayout(file, name, param, saved.tensorRanks);
    const SavedUnit &unit = saved.units[param.unit];
    if (param.unitOffset < 0 ||
        static_cast<__int128>(param.layout.blockElements) + param.unitOffset >
            static_cast<__int128>(unit.shardNumel) * shards ||
        dtypeSize(param.dtype) != static_cast<size_t>(unit.elementSize))
      file.fail("parameter '" + name + "' does not fit its unit's " + std::to_string(shards) +
                " shards of " + std::to_string(unit.shardNumel) + " elements");
  }
}

/// Where training stood: the step, the data's position, the seed, the
/// schedule.
static TrainingPosition readPosition(const InputFile &file, const json &doc) {
  TrainingPosition position;
  position.step = doc.at("step").get<int64_t>();
  position.samplesSeen = doc.at("samples_seen").get<int64_t>();
  position.seed = doc.at("seed").get<uint64_t>();
  position.data = doc.at("data").get<std::string>();
  const json &schedule = doc.at("lr_schedule");
  position.schedule.peak = schedule.at("lr").get<double>();
  position.schedule.warmupSteps = schedule.at("warmup_steps").get<int64_t>();
  std::optional<LrDecay> decay = parseLrDecay(schedule.at("decay").get<std::string>());
  if (!decay)
    file.fail("unknown lr_schedule.decay " + schedule.at("decay").dump());
  position.schedule.decay = *decay;
  position.schedule.decaySteps = schedule.at("decay_steps").get<int64_t>();
  position.schedule.floor = schedule.at("min_lr").get<double>();
  return position;
}

static void readSavedUnits(const json &doc, SavedCheckpoint &saved) {
  for (const json &unit : doc.at("units")) {
    SavedUnit savedUnit;
    savedUnit.shardNumel = unit.at("shard_numel").get<int64_t>();
    std::optional<DType> dtype = parseDType(unit.at("dtype").get<std::string>());
    savedUnit.elementSize = dtype ? static_cast<int64_t>(dtypeSize(*dtype)) : 0;
    savedUnit.regions = unit.at("regions").get<std::map<std::string, int64_t>>();
    saved.units.push_back(std::move(savedUnit));
  }
}

static void readSavedParams(const InputFile &file, const json &doc, SavedCheckpoint &saved) {
  for (const json &param : doc.at("params")) {
    SavedParam savedParam;
    savedParam.shape = param.at("shape").get<std::vector<int64_t>>();
    if (param.contains("split_dim"))
      savedParam.splitDim = param.at("split_dim").get<int64_t>();
    if (param.contains("split_parts"))
      savedParam.splitParts = param.at("split_parts").get<std::vector<int64_t>>();
    std::optional<DType> dtype = parseDType(param.at("dtype").get<std::string>());
    if (!dtype || !isFloatDType(*dtype))
      file.fail("parameter dtype " + param.at("dtype").dump() + " is not f32 or bf16");
    savedParam.dtype = *dtype;
    savedParam.trainable = param.at("trainable").get<bool>();
    savedParam.unit = param.at("unit").get<size_t>();
    savedParam.unitOffset = param.at("unit_offset").get<int64_t>();
    if (savedParam.unit >= saved.units.size())
      file.fail("parameter " + param.at("name").dump() + " names unit " +
                std::to_string(savedParam.unit) + " of " + std::to_string(saved.units.size()));
    std::string name = param.at("name").get<std::string>();
    saved.paramOrder.push_back(name);
    saved.params.emplace(std::move(name), std::move(savedParam));
  }
}

static SavedCheckpoint readMetadata(const std::string &path) {
  InputFile file("--resume", path + "/" + kMetadata);
  std::string text(static_cast<size_t>(file.size()), '\0');
  file.read(0, text.data(), file.size());
  SavedCheckpoint saved;
  saved.path = path;
  try {
    json doc = json::parse(text);
    if (doc.at("format").get<std::string>() != kFormat)
      file.fail("not an fsdp-mlir checkpoint");
    int64_t version = doc.at("version").get<int64_t>();
    if (version != 1 && version != kVersion)
      file.fail("checkpoint format version " + doc.at("version").dump() +
                " is not supported (this trainer reads versions 1 and " + std::to_string(kVersion) +
                ")");
    saved.position = readPosition(file, doc);
    saved.optimizer = doc.at("optimizer").at("kind").get<std::string>();
    saved.slots = doc.at("optimizer").at("slots").get<std::vector<std::string>>();
    if (version >= 2)
      saved.tensorRanks = doc.at("plan").at("tensor_ranks").get<int64_t>();
    if (saved.tensorRanks < 1)
      file.fail("plan.tensor_ranks must be positive, got " + std::to_string(saved.tensorRanks));
    readSavedUnits(doc, saved);
    readSavedParams(file, doc, saved);
    saved.files = doc.at("files").get<std::vector<std::string>>();
    saved.fileBytes = doc.at("file_bytes").get<int64_t>();
    checkLayout(file, saved);
  } catch (const json::exception &error) {
    std::string what = error.what();
    size_t prefix = what.find("] ");
    file.fail("malformed metadata: " + (prefix == std::string::npos ? what : what.substr(prefix + 2)));
  }
  return saved;
}

/// Whether a parameter split in both the checkpoint and the model is split
/// into the same parts (the same fused product): empty if so, or if either
/// keeps no split (a checkpoint of one tensor rank keeps none), else what
/// differs. The tensor ranks and split_dims may differ.
static std::string partsDifference(const SavedParam &saved, const ParamSpec &param) {
  if (!saved.splitDim || !param.splitDim || saved.splitParts == param.splitParts)
    return "";
  auto describe = [](const std::vector<int64_t> &parts) {
    return parts.empty() ? std::string("no split_parts") : "split_parts " + formatShape(parts);
  };
  return "parameter '" + param.name + "' has " + describe(saved.splitParts) +
         " in the checkpoint, " + describe(param.splitParts) + " in the model";
}

/// Everything that keeps `saved` from resuming this model.
static std::vector<std::string> differences(const SavedCheckpoint &saved,
                                            const Manifest &manifest) {
  std::vector<std::string> problems;
  std::string optimizer = optimizerName(manifest.optimizer.kind);
  std::vector<std::string> slots = optimizerSlots(manifest.optimizer);
  if (saved.optimizer != optimizer || saved.slots != slots) {
    auto describe = [](const std::string &kind, const std::vector<std::string> &names) {
      std::string text = kind + " (state:";
      for (const std::string &name : names)
        text += " " + name;
      return text + (names.empty() ? " none)" : ")");
    };
    problems.push_back("the optimizer is " + describe(saved.optimizer, saved.slots) +
                       " in the checkpoint, " + describe(optimizer, slots) + " in the model");
  }
  std::set<std::string> names;
  for (const ParamSpec &param : manifest.params) {
    names.insert(param.name);
    auto it = saved.params.find(param.name);
    // Whole shapes: the tensor ranks may differ.
    std::vector<int64_t> shape = param.wholeShape();
    if (it == saved.params.end()) {
      problems.push_back("parameter '" + param.name + "' " + formatShape(shape) +
                         " is not in the checkpoint");
      continue;
    }
    if (it->second.shape != shape)
      problems.push_back("parameter '" + param.name + "' is " + formatShape(it->second.shape) +
                         " in the checkpoint, " + formatShape(shape) + " in the model");
    if (std::string parts = partsDifference(it->second, param); !parts.empty())
      problems.push_back(parts);
    if (it->second.trainable != param.trainable)
      problems.push_back("parameter '" + param.name + "' is " +
                         (it->second.trainable ? "trainable" : "frozen") +
                         " in the checkpoint, " + (param.trainable ? "trainable" : "frozen") +
                         " in the model");
  }
  for (const std::string &name : saved.paramOrder)
    if (!names.count(name))
      problems.push_back("the checkpoint's parameter '" + name + "' " +
                         formatShape(saved.params.at(name).shape) + " is not in the model");
  return problems;
}

/// The old shard files, opened when first read and checked for their size.
class SavedShards {
public:
  explicit SavedShards(const SavedCheckpoint &saved)
      : saved(saved), files(saved.files.size()) {}

  /// Shard `k` < files.size() (checkLayout makes sure).
  const InputFile &file(size_t k) {
    if (!files[k]) {
      files[k] = std::make_unique<InputFile>("--resume", saved.path + "/" + saved.files[k]);
      if (files[k]->size() != saved.fileBytes)
        files[k]->fail("has " + std::to_string(files[k]->size()) + " bytes, but the metadata says " +
                       std::to_string(saved.fileBytes));
    }
    return *files[k];
  }

private:
  const SavedCheckpoint &saved;
  std::vector<std::unique_ptr<InputFile>> files;
};

/// Reads elements [begin, end) of block `block` of `old`'s region `region`
/// from the old shards of that tensor index, which may split them, into
/// `dst` as `dtype`.
static void readBlockRange(SavedShards &shards, const SavedCheckpoint &saved, const SavedParam &old,
                           const std::string &region, int64_t block, int64_t begin, int64_t end,
                           uint8_t *dst, DType dtype) {
  const SavedUnit &unit = saved.units[old.unit];
  auto regionOffset = unit.regions.find(region);
  if (regionOffset == unit.regions.end())
    fatal("--resume '" + saved.path + "': the checkpoint has no " + region + " for unit " +
          std::to_string(old.unit));
  size_t oldSize = dtypeSize(old.dtype), newSize = dtypeSize(dtype);
  for (int64_t element = begin; element < end;) {
    int64_t flat = old.unitOffset + element;
    int64_t shard = flat / unit.shardNumel;
    int64_t count = std::min(end - element, (shard + 1) * unit.shardNumel - flat);
    const InputFile &file = shards.file(static_cast<size_t>(block * saved.shardsPerBlock + shard));
    file.readReals(regionOffset->second + (flat - shard * unit.shardNumel) *
                                              static_cast<int64_t>(oldSize),
                   storedRealOf(old.dtype), count, dst + (element - begin) * newSize, dtype);
    element += count;
  }
}

/// Reads elements [begin, end) of `param`'s block `tensorIndex`, region
/// `region`, into `dst`: each run that is contiguous in both the model's
/// block and the checkpoint's (their split_dims and tensor ranks may differ)
/// from the old block that holds it.
static void readParamRange(SavedShards &shards, const SavedCheckpoint &saved, const SavedParam &old,
                           const ParamSpec &param, int64_t tensorIndex, const std::string &region,
                           int64_t begin, int64_t end, uint8_t *dst) {
  BlockLayout layout = BlockLayout::of(param);
  size_t size = dtypeSize(param.dtype);
  for (int64_t element = begin; element < end;) {
    BlockLayout::Place from = old.layout.locate(layout.wholeIndex(tensorIndex, element));
    int64_t count = std::min({end - element, layout.runLeft(element), from.runLeft});
    readBlockRange(shards, saved, old, region, from.block, from.element, from.element + count,
                   dst + (element - begin) * size, param.dtype);
    element += count;
  }
}

TrainingPosition loadCheckpoint(const std::string &dir, const Manifest &manifest,
                                const RankPlace &place, const HostShards &shards) {
  SavedCheckpoint saved;
  {
    SameErrorOnEveryRank same;
    saved = readMetadata(findCheckpoint(dir));
    std::vector<std::string> problems = differences(saved, manifest);
    if (!problems.empty()) {
      std::string message = "--resume '" + saved.path + "': the checkpoint is of another model: ";
      for (size_t i = 0; i < problems.size(); ++i)
        message += (i ? "; " : "") + problems[i];
      fatal(message);
    }
  }
  SavedShards files(saved);
  for (const ParamSpec &param : manifest.params) {
    const UnitSpec &unit = manifest.units[param.unitIndex];
    ShardRange part = ownedPart(param, ownedRange(unit, place.shardIndex));
    if (part.begin == part.end)
      continue;
    const SavedParam &old = saved.params.at(param.name);
    for (const auto &region : unitRegions(unit))
      readParamRange(files, saved, old, param, place.tensorIndex, region.first, part.begin,
                     part.end,
                     shards.of(unit) + shardPosition(manifest, param, place.shardIndex, part.begin,
                                                     region.second));
  }
  return saved.position;
}

} // namespace fsdprt
