//===- Trainer.cpp - The trainer: flags, set-up and the step loop ---------===//

#include "Trainer.h"

#include "Arena.h"
#include "DataFile.h"
#include "Error.h"
#include "Flags.h"
#include "HeapUsage.h"
#include "Init.h"
#include "Manifest.h"
#include "SyntheticData.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

namespace fsdprt {

/// Reads every parameter, in manifest order, from a --dump-params file.
static void loadParameters(const Manifest &manifest, const std::string &path,
                           uint8_t *arena) {
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    fatal("--load-params: cannot open '" + path + "': " + std::strerror(errno));
  int64_t expected = 0;
  for (const ParamSpec &param : manifest.params) {
    expected += param.bytes;
    if (std::fread(arena + param.offset, 1, static_cast<size_t>(param.bytes), file) !=
        static_cast<size_t>(param.bytes)) {
      std::fclose(file);
      fatal("--load-params: '" + path + "' is shorter than the model's " +
            std::to_string(manifest.params.size()) + " parameters need");
    }
  }
  bool longer = std::fgetc(file) != EOF;
  std::fclose(file);
  if (longer)
    fatal("--load-params: '" + path + "' is longer than the " + std::to_string(expected) +
          " bytes of the model's parameters");
}

namespace {

/// A file the trainer writes (--log-json, --dump-params). It is opened before
/// the first step, so that a bad path fails at once rather than after the
/// run; any write error is fatal and names the flag and the file.
class OutputFile {
public:
  OutputFile(const char *flag, std::string path) : flag(flag), path(std::move(path)) {
    stream = std::fopen(this->path.c_str(), "wb");
    if (!stream)
      fail("cannot open");
  }
  ~OutputFile() {
    if (stream)
      std::fclose(stream);
  }
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  void write(const void *data, size_t bytes) {
    if (bytes != 0 && std::fwrite(data, 1, bytes, stream) != bytes)
      fail("cannot write");
  }
  void write(const std::string &text) { write(text.data(), text.size()); }

  void flush() {
    if (std::fflush(stream) != 0)
      fail("cannot write");
  }

  void close() {
    FILE *closing = stream;
    stream = nullptr;
    if (std::fclose(closing) != 0)
      fail("cannot write");
  }

private:
  [[noreturn]] void fail(const char *what) {
    fatal(std::string(flag) + " '" + path + "': " + what + ": " + std::strerror(errno));
  }

  const char *flag;
  std::string path;
  FILE *stream = nullptr;
};

} // namespace

/// The shortest decimal that reads back as the same float: the JSON log keeps
/// the exact loss the step returned.
static std::string formatLoss(float loss) {
  char buffer[32];
  std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), loss);
  return std::string(buffer, result.ptr);
}

static double secondsBetween(std::chrono::steady_clock::time_point start,
                             std::chrono::steady_clock::time_point end) {
  // A clock tick of zero would make the rate infinite, which JSON cannot hold.
  return std::max(std::chrono::duration<double>(end - start).count(), 1e-9);
}

static std::unique_ptr<BatchSource> openBatchSource(const TrainerOptions &options,
                                                    const Manifest &manifest) {
  if (!options.dataPath.empty())
    return DataFile::open(options.dataPath, manifest);
  return std::make_unique<SyntheticData>(manifest, options.seed);
}

int runTrainer(int argc, const char *const *argv, const char *manifestText,
               TrainStepFn trainStep) {
  TrainerOptions options = parseFlags(argc, argv);
  if (options.help) {
    std::fputs(usageText(), stdout);
    return 0;
  }
  if (options.printManifest) {
    // As embedded, without parsing: this is how a broken manifest gets looked at.
    std::fputs(manifestText, stdout);
    size_t length = std::strlen(manifestText);
    if (length == 0 || manifestText[length - 1] != '\n')
      std::fputc('\n', stdout);
    return 0;
  }

  Manifest manifest = parseManifest(manifestText);
  // Rank 0 of 1 until the runtime has MPI: a plan for more ranks has collectives
  // that nothing here could run.
  if (manifest.worldSize() != 1)
    fatal("the model was compiled for grid " + formatShape(manifest.grid) + " (" +
          std::to_string(manifest.worldSize()) +
          " ranks), but this runtime runs a single rank (no MPI support yet)");

  std::unique_ptr<BatchSource> batches = openBatchSource(options, manifest);
  std::unique_ptr<OutputFile> logJson;
  if (!options.logJsonPath.empty())
    logJson = std::make_unique<OutputFile>("--log-json", options.logJsonPath);
  std::unique_ptr<OutputFile> dump;
  if (!options.dumpParamsPath.empty())
    dump = std::make_unique<OutputFile>("--dump-params", options.dumpParamsPath);
  float lr = options.lr.value_or(static_cast<float>(manifest.optimizer.lr));

  keepFreedMemoryForReuse();
  Arena arena(static_cast<size_t>(manifest.arenaBytes));
  if (options.loadParamsPath.empty())
    initializeParameters(manifest, options.seed, arena.data());
  else
    loadParameters(manifest, options.loadParamsPath, arena.data());

  using Clock = std::chrono::steady_clock;
  Clock::time_point intervalStart = Clock::now();
  int64_t intervalSteps = 0;
  for (int64_t step = 1; step <= options.steps; ++step) {
    Clock::time_point stepStart = Clock::now();
    batches->writeBatch(step, arena.data());
    float loss = trainStep(arena.data(), step, lr);
    Clock::time_point stepEnd = Clock::now();
    if (!std::isfinite(loss))
      fatal("step " + std::to_string(step) + ": the loss is " +
            (std::isnan(loss) ? "NaN" : "infinite") + " (training diverged)");
    ++intervalSteps;
    uint64_t heapBytes = heapBytesInUse();

    if (logJson) {
      char line[256];
      std::snprintf(line, sizeof(line),
                    "{\"step\": %" PRId64 ", \"loss\": %s, \"samples_per_sec\": %.1f, "
                    "\"bytes_in_use\": %" PRIu64 "}\n",
                    step, formatLoss(loss).c_str(),
                    static_cast<double>(manifest.batch) / secondsBetween(stepStart, stepEnd),
                    heapBytes);
      logJson->write(std::string(line));
      logJson->flush();
    }

    if (step % options.logEvery == 0) {
      double samplesPerSec = static_cast<double>(manifest.batch * intervalSteps) /
                             secondsBetween(intervalStart, stepEnd);
      std::printf("step %" PRId64 " | loss %.6f | %.1f samples/s | mem %.1f MiB\n", step,
                  static_cast<double>(loss), samplesPerSec,
                  static_cast<double>(heapBytes) / (1024.0 * 1024.0));
      std::fflush(stdout);
      intervalStart = Clock::now();
      intervalSteps = 0;
    }
  }

  if (dump) {
    for (const ParamSpec &param : manifest.params)
      dump->write(arena.data() + param.offset, static_cast<size_t>(param.bytes));
    dump->close();
  }
  if (logJson)
    logJson->close();
  return 0;
}

} // namespace fsdprt
