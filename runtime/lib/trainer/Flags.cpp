//===- Flags.cpp - The trainer's command line -----------------------------===//

#include "trainer/Flags.h"

#include "abi/Error.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace fsdprt {

const char *usageText() {
  return "usage: trainer [--steps N] [--seed S] [--data FILE] [--token-dtype T] [--lr X]\n"
         "               [--eval-data FILE] [--eval-every K] [--eval-batches N]\n"
         "               [--warmup-steps N]"
         " [--lr-decay none|cosine|linear] [--decay-steps N]\n"
         "               [--min-lr X]"
         " [--log-every K] [--log-json FILE] [--init-from FILE]\n"
         "               [--export FILE] [--export-dtype f32|bf16]\n"
         "               [--save DIR] [--save-every K] [--keep N] [--resume DIR]\n"
         "               [--trace-state FILE] [--trace FILE] [--no-cuda-graph]\n"
         "               [--collective-timeout SECONDS] [--debug-sync]\n"
         "               [--peak-tflops X]\n"
         "               [--print-manifest] [--version] [--help]\n"
         "\n"
         "Trains the model compiled into this trainer. A model compiled for N ranks runs\n"
         "as `mpirun -np N trainer ...`; rank 0 prints and writes the outputs.\n"
         "\n"
         "  --steps N          the last step to run (default 100); a resumed run goes on\n"
         "                     from its checkpoint's step up to N\n"
         "  --seed S           seed of the initial parameters and of the data's order and\n"
         "                     synthetic data (default 0; a resumed run keeps its own)\n"
         "  --data FILE        training data: an FSDPDATA file, or a token file (uint16 or\n"
         "                     uint32 ids, headerless or with llm.c's header) for a model\n"
         "                     of tokens and next-token classes (default: synthetic data)\n"
         "  --token-dtype T    uint16 (default) or uint32: the ids of a headerless token file\n"
         "  --eval-data FILE   held-out data (the --data formats), whose loss the forward\n"
         "                     pass alone computes after the last step\n"
         "  --eval-every K     also evaluate after every K-th step\n"
         "  --eval-batches N   evaluate on the first N batches of it (default: all of it,\n"
         "                     in whole batches)\n"
         "  --lr X             peak learning rate (default: the one in the model's plan)\n"
         "  --warmup-steps N   raise the rate linearly from 0 over the first N steps\n"
         "  --lr-decay KIND    after the warmup, none (default), cosine or linear decay\n"
         "  --decay-steps N    the step at which the decay reaches --min-lr (default --steps)\n"
         "  --min-lr X         the floor the decay ends at and keeps (default 0)\n"
         "  --log-every K      print a progress line every K steps (default 10): loss,\n"
         "                     learning rate, tokens/s (samples/s for a model without\n"
         "                     tokens), each rank's TFLOP/s and MFU, memory\n"
         "  --log-json FILE    write one JSON object per step to FILE\n"
         "  --init-from FILE   start from the parameters of a safetensors FILE (every\n"
         "                     parameter by name and shape; f32, bf16, f16 or f64)\n"
         "  --export FILE      after the last step, write the parameters to a safetensors\n"
         "                     FILE, gathered one parameter at a time\n"
         "  --export-dtype T   f32 (default) or bf16: the dtype of the exported tensors\n"
         "  --save DIR         write checkpoints under DIR (each rank its shards), after the\n"
         "                     last step and every --save-every steps\n"
         "  --save-every K     also save after every K-th step\n"
         "  --keep N           keep only the N newest checkpoints (default: all)\n"
         "  --resume DIR       continue from the newest checkpoint under DIR (or from the\n"
         "                     checkpoint DIR), at any number of ranks\n"
         "  --trace-state FILE before the first step and after every step, append the\n"
         "                     parameters, gradients and optimizer state to FILE\n"
         "  --trace FILE       write rank 0's fastest step but the first as it ran\n"
         "                     (products, collectives, waits, generated loops) as a\n"
         "                     Chrome trace, the format of fsdpc --timeline, with the\n"
         "                     arena's high-water marks at the first step's unit\n"
         "                     boundaries\n"
         "  --no-cuda-graph    CUDA: call the step for every step instead of replaying\n"
         "                     the second step's work as a CUDA graph (the CPU always\n"
         "                     calls it)\n"
         "  --collective-timeout SECONDS\n"
         "                     how long a rank waits for a step's collective (and, on a\n"
         "                     GPU, for the step's work) before it reports what it\n"
         "                     waited for and stops every rank (default 600; twice that\n"
         "                     in the run's first step)\n"
         "  --debug-sync       CUDA: wait for each kernel and runtime call and check it, so\n"
         "                     that a device error names the kernel or call, its step and\n"
         "                     the last collective started (slow; every step runs as\n"
         "                     called)\n"
         "  --peak-tflops X    the peak MFU divides by, in TFLOP/s of one rank (default:\n"
         "                     the GPU's datasheet figure, dense, at the step's precision;\n"
         "                     on the CPU, fsdpc's device profile); the run's first line\n"
         "                     names it\n"
         "  --print-manifest   print the embedded manifest and exit\n"
         "  --version          print the backend and its libraries (BLAS kernels, CUDA,\n"
         "                     NCCL) and exit\n"
         "  --help             print this help and exit\n";
}

static bool isDecimal(std::string_view text) {
  if (text.empty())
    return false;
  for (char c : text)
    if (c < '0' || c > '9')
      return false;
  return true;
}

/// An unsigned decimal integer in [min, max], or a fatal error naming `flag`.
static uint64_t parseUnsigned(std::string_view flag, const std::string &text, uint64_t min,
                              uint64_t max, const char *what) {
  auto bad = [&] { fatal(std::string(flag) + ": '" + text + "' is not " + what); };
  // strtoull would accept a sign, blanks and hexadecimal: digits only.
  if (!isDecimal(text))
    bad();
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value < min || value > max)
    bad();
  return value;
}

/// A finite decimal number, or nothing.
static std::optional<double> parseFinite(const std::string &text) {
  if (text.empty())
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(value))
    return std::nullopt;
  return value;
}

static float parseLearningRate(std::string_view flag, const std::string &text) {
  std::optional<double> value = parseFinite(text);
  if (!value || !(*value > 0.0))
    fatal(std::string(flag) + ": '" + text + "' is not a positive finite number");
  // The step takes a float: the value must survive the conversion.
  float single = static_cast<float>(*value);
  if (!std::isfinite(single) || !(single > 0.0f))
    fatal(std::string(flag) + ": '" + text + "' is out of range for a float learning rate");
  return single;
}

/// A finite number >= 0, or a fatal error naming `flag`.
static double parseNonNegative(std::string_view flag, const std::string &text) {
  std::optional<double> value = parseFinite(text);
  if (!value || *value < 0.0)
    fatal(std::string(flag) + ": '" + text + "' is not a non-negative finite number");
  return *value;
}

namespace {

/// A flag of the command line, with its value given after `=` or as the next
/// argument; a value missing or wrong is a fatal error naming the flag.
class FlagArgument {
public:
  /// The flag at argv[i]: taking the next argument as its value moves `i` on.
  FlagArgument(std::string_view arg, int argc, const char *const *argv, int &i)
      : flag(arg), argc(argc), argv(argv), i(i) {
    if (size_t equals = arg.find('='); equals != std::string_view::npos) {
      flag = arg.substr(0, equals);
      inlineValue = std::string(arg.substr(equals + 1));
    }
  }

  std::string_view name() const { return flag; }

  std::string value() {
    if (inlineValue)
      return *inlineValue;
    if (i + 1 >= argc)
      fatal(std::string(flag) + " needs a value");
    return argv[++i];
  }

  void noValue() const {
    if (inlineValue)
      fatal(std::string(flag) + " takes no value");
  }

  int64_t positive() {
    return static_cast<int64_t>(parseUnsigned(flag, value(), 1, INT64_MAX, "a positive integer"));
  }

  int64_t nonNegative() {
    return static_cast<int64_t>(
        parseUnsigned(flag, value(), 0, INT64_MAX, "a non-negative integer"));
  }

  std::string path() {
    std::string text = value();
    if (text.empty())
      fatal(std::string(flag) + " needs a file name");
    return text;
  }

private:
  std::string_view flag;
  std::optional<std::string> inlineValue;
  int argc;
  const char *const *argv;
  int &i;
};

} // namespace

/// The run's length, its seed and the learning rate's schedule.
static bool parseScheduleFlag(FlagArgument &flag, TrainerOptions &options) {
  std::string_view name = flag.name();
  if (name == "--steps") {
    options.steps = flag.nonNegative();
  } else if (name == "--seed") {
    options.seed = parseUnsigned(name, flag.value(), 0, UINT64_MAX, "an integer in [0, 2^64)");
  } else if (name == "--warmup-steps") {
    options.schedule.warmupSteps = flag.nonNegative();
  } else if (name == "--lr-decay") {
    std::string text = flag.value();
    options.schedule.decay = parseLrDecay(text);
    if (!options.schedule.decay)
      fatal(std::string(name) + ": '" + text + "' is not none, cosine or linear");
  } else if (name == "--decay-steps") {
    options.schedule.decaySteps = flag.positive();
  } else if (name == "--min-lr") {
    options.schedule.floor = parseNonNegative(name, flag.value());
  } else if (name == "--lr") {
    options.lr = parseLearningRate(name, flag.value());
  } else {
    return false;
  }
  return true;
}

/// The training data and the held-out data.
static bool parseDataFlag(FlagArgument &flag, TrainerOptions &options) {
  std::string_view name = flag.name();
  if (name == "--data") {
    options.dataPath = flag.path();
  } else if (name == "--token-dtype") {
    std::string text = flag.value();
    options.tokenDType = parseTokenDType(text);
    if (!options.tokenDType)
      fatal(std::string(name) + ": '" + text + "' is not uint16 or uint32");
  } else if (name == "--eval-data") {
    options.evalDataPath = flag.path();
  } else if (name == "--eval-every") {
    options.evalEvery = flag.positive();
  } else if (name == "--eval-batches") {
    options.evalBatches = flag.positive();
  } else {
    return false;
  }
  return true;
}

/// The run's log, and the parameters it starts from and exports.
static bool parseOutputFlag(FlagArgument &flag, TrainerOptions &options) {
  std::string_view name = flag.name();
  if (name == "--log-every") {
    options.logEvery = flag.positive();
  } else if (name == "--log-json") {
    options.logJsonPath = flag.path();
  } else if (name == "--init-from") {
    options.initFromPath = flag.path();
  } else if (name == "--export") {
    options.exportPath = flag.path();
  } else if (name == "--export-dtype") {
    std::string text = flag.value();
    if (text == "f32")
      options.exportDType = DType::F32;
    else if (text == "bf16")
      options.exportDType = DType::BF16;
    else
      fatal(std::string(name) + ": '" + text + "' is not f32 or bf16");
  } else {
    return false;
  }
  return true;
}

/// Checkpoints: where and how often they are saved, and the one resumed.
static bool parseCheckpointFlag(FlagArgument &flag, TrainerOptions &options) {
  std::string_view name = flag.name();
  if (name == "--save") {
    options.saveDir = flag.path();
  } else if (name == "--save-every") {
    options.saveEvery = flag.positive();
  } else if (name == "--keep") {
    options.keep = flag.positive();
  } else if (name == "--resume") {
    options.resumeDir = flag.path();
  } else {
    return false;
  }
  return true;
}

/// Tracing, the collectives' timeout, MFU's peak and the CUDA debugging flags.
static bool parseDebugFlag(FlagArgument &flag, TrainerOptions &options) {
  std::string_view name = flag.name();
  if (name == "--trace-state") {
    options.traceStatePath = flag.path();
  } else if (name == "--trace") {
    options.tracePath = flag.path();
  } else if (name == "--collective-timeout") {
    std::string text = flag.value();
    std::optional<double> seconds = parseFinite(text);
    // At least a millisecond, at most a year: a limit that means something.
    if (!seconds || !(*seconds >= 0.001 && *seconds <= 365.0 * 24 * 3600))
      fatal(std::string(name) + ": '" + text + "' is not a number of seconds in [0.001, 31536000]");
    options.collectiveTimeout = Milliseconds(static_cast<int64_t>(*seconds * 1000.0));
  } else if (name == "--peak-tflops") {
    std::string text = flag.value();
    std::optional<double> tflops = parseFinite(text);
    if (!tflops || !(*tflops > 0.0))
      fatal(std::string(name) + ": '" + text + "' is not a positive number of TFLOP/s");
    options.peakTflops = *tflops;
  } else if (name == "--debug-sync") {
    flag.noValue();
    options.debugSync = true;
  } else if (name == "--no-cuda-graph") {
    flag.noValue();
    options.noCudaGraph = true;
  } else {
    return false;
  }
  return true;
}

/// The flags that print something and exit instead of training.
static bool parseInfoFlag(FlagArgument &flag, TrainerOptions &options) {
  std::string_view name = flag.name();
  if (name == "--print-manifest") {
    flag.noValue();
    options.printManifest = true;
  } else if (name == "--version") {
    flag.noValue();
    options.version = true;
  } else if (name == "--help") {
    flag.noValue();
    options.help = true;
  } else {
    return false;
  }
  return true;
}

TrainerOptions parseFlags(int argc, const char *const *argv) {
  TrainerOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-' || arg == "--")
      fatal("unexpected argument '" + std::string(arg) + "' (see --help)");
    if (arg[1] != '-')
      fatal("unknown flag '" + std::string(arg) + "' (see --help)");

    FlagArgument flag(arg, argc, argv, i);
    if (!parseScheduleFlag(flag, options) && !parseDataFlag(flag, options) &&
        !parseOutputFlag(flag, options) && !parseCheckpointFlag(flag, options) &&
        !parseDebugFlag(flag, options) && !parseInfoFlag(flag, options))
      fatal("unknown flag '" + std::string(flag.name()) + "' (see --help)");
    // --help stops parsing: the rest is not looked at.
    if (options.help)
      return options;
  }
  return options;
}

} // namespace fsdprt
