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

TrainerOptions parseFlags(int argc, const char *const *argv) {
  TrainerOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-' || arg == "--")
      fatal("unexpected argument '" + std::string(arg) + "' (see --help)");
    if (arg[1] != '-')
      fatal("unknown flag '" + std::string(arg) + "' (see --help)");

    std::string_view flag = arg;
    std::optional<std::string> inlineValue;
    if (size_t equals = arg.find('='); equals != std::string_view::npos) {
      flag = arg.substr(0, equals);
      inlineValue = std::string(arg.substr(equals + 1));
    }
    auto value = [&]() -> std::string {
      if (inlineValue)
        return *inlineValue;
      if (i + 1 >= argc)
        fatal(std::string(flag) + " needs a value");
      return argv[++i];
    };
    auto noValue = [&] {
      if (inlineValue)
        fatal(std::string(flag) + " takes no value");
    };
    auto positive = [&] {
      return static_cast<int64_t>(
          parseUnsigned(flag, value(), 1, INT64_MAX, "a positive integer"));
    };
    auto nonNegative = [&] {
      return static_cast<int64_t>(
          parseUnsigned(flag, value(), 0, INT64_MAX, "a non-negative integer"));
    };
    auto path = [&] {
      std::string text = value();
      if (text.empty())
        fatal(std::string(flag) + " needs a file name");
      return text;
    };

    if (flag == "--steps") {
      options.steps = nonNegative();
    } else if (flag == "--seed") {
      options.seed = parseUnsigned(flag, value(), 0, UINT64_MAX, "an integer in [0, 2^64)");
    } else if (flag == "--warmup-steps") {
      options.schedule.warmupSteps = nonNegative();
    } else if (flag == "--lr-decay") {
      std::string text = value();
      options.schedule.decay = parseLrDecay(text);
      if (!options.schedule.decay)
        fatal(std::string(flag) + ": '" + text + "' is not none, cosine or linear");
    } else if (flag == "--decay-steps") {
      options.schedule.decaySteps = positive();
    } else if (flag == "--min-lr") {
      options.schedule.floor = parseNonNegative(flag, value());
    } else if (flag == "--data") {
      options.dataPath = path();
    } else if (flag == "--token-dtype") {
      std::string text = value();
      options.tokenDType = parseTokenDType(text);
      if (!options.tokenDType)
        fatal(std::string(flag) + ": '" + text + "' is not uint16 or uint32");
    } else if (flag == "--eval-data") {
      options.evalDataPath = path();
    } else if (flag == "--eval-every") {
      options.evalEvery = positive();
    } else if (flag == "--eval-batches") {
      options.evalBatches = positive();
    } else if (flag == "--lr") {
      options.lr = parseLearningRate(flag, value());
    } else if (flag == "--log-every") {
      options.logEvery = positive();
    } else if (flag == "--log-json") {
      options.logJsonPath = path();
    } else if (flag == "--init-from") {
      options.initFromPath = path();
    } else if (flag == "--export") {
      options.exportPath = path();
    } else if (flag == "--export-dtype") {
      std::string text = value();
      if (text == "f32")
        options.exportDType = DType::F32;
      else if (text == "bf16")
        options.exportDType = DType::BF16;
      else
        fatal(std::string(flag) + ": '" + text + "' is not f32 or bf16");
    } else if (flag == "--save") {
      options.saveDir = path();
    } else if (flag == "--save-every") {
      options.saveEvery = positive();
    } else if (flag == "--keep") {
      options.keep = positive();
    } else if (flag == "--resume") {
      options.resumeDir = path();
    } else if (flag == "--trace-state") {
      options.traceStatePath = path();
    } else if (flag == "--trace") {
      options.tracePath = path();
    } else if (flag == "--collective-timeout") {
      std::string text = value();
      std::optional<double> seconds = parseFinite(text);
      // At least a millisecond, at most a year: a limit that means something.
      if (!seconds || !(*seconds >= 0.001 && *seconds <= 365.0 * 24 * 3600))
        fatal(std::string(flag) + ": '" + text +
              "' is not a number of seconds in [0.001, 31536000]");
      options.collectiveTimeout = Milliseconds(static_cast<int64_t>(*seconds * 1000.0));
    } else if (flag == "--peak-tflops") {
      std::string text = value();
      std::optional<double> tflops = parseFinite(text);
      if (!tflops || !(*tflops > 0.0))
        fatal(std::string(flag) + ": '" + text + "' is not a positive number of TFLOP/s");
      options.peakTflops = *tflops;
    } else if (flag == "--debug-sync") {
      noValue();
      options.debugSync = true;
    } else if (flag == "--no-cuda-graph") {
      noValue();
      options.noCudaGraph = true;
    } else if (flag == "--print-manifest") {
      noValue();
      options.printManifest = true;
    } else if (flag == "--version") {
      noValue();
      options.version = true;
    } else if (flag == "--help") {
      noValue();
      options.help = true;
      return options;
    } else {
      fatal("unknown flag '" + std::string(flag) + "' (see --help)");
    }
  }
  return options;
}

} // namespace fsdprt
