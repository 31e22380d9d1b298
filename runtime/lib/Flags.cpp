//===- Flags.cpp - The trainer's command line -----------------------------===//

#include "Flags.h"

#include "Error.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace fsdprt {

const char *usageText() {
  return "usage: trainer [--steps N] [--seed S] [--data FILE] [--lr X] [--log-every K]\n"
         "               [--log-json FILE] [--load-params FILE] [--dump-params FILE]\n"
         "               [--trace-state FILE] [--trace FILE] [--print-manifest] [--version]\n"
         "               [--help]\n"
         "\n"
         "Trains the model compiled into this trainer. A model compiled for N ranks runs\n"
         "as `mpirun -np N trainer ...`; rank 0 prints and writes the outputs.\n"
         "\n"
         "  --steps N          number of training steps (default 100)\n"
         "  --seed S           seed of the initial parameters and of synthetic data (default 0)\n"
         "  --data FILE        FSDPDATA training data (default: synthetic data from --seed)\n"
         "  --lr X             learning rate (default: the one in the model's plan)\n"
         "  --log-every K      print a progress line every K steps (default 10)\n"
         "  --log-json FILE    write one JSON object per step to FILE\n"
         "  --load-params FILE start from the parameters in FILE (--dump-params format)\n"
         "  --dump-params FILE after the last step, write every parameter's values to FILE\n"
         "  --trace-state FILE before the first step and after every step, append the\n"
         "                     parameters, gradients and optimizer state to FILE\n"
         "  --trace FILE       write rank 0's fastest step but the first as it ran\n"
         "                     (products, collectives, waits, generated loops) as a\n"
         "                     Chrome trace, the format of fsdpc --timeline, with the\n"
         "                     arena's high-water marks at step 1's unit boundaries\n"
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

static float parseLearningRate(std::string_view flag, const std::string &text) {
  auto bad = [&] {
    fatal(std::string(flag) + ": '" + text + "' is not a positive finite number");
  };
  if (text.empty())
    bad();
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(value) || !(value > 0.0))
    bad();
  // The step takes a float: the value must survive the conversion.
  float single = static_cast<float>(value);
  if (!std::isfinite(single) || !(single > 0.0f))
    fatal(std::string(flag) + ": '" + text + "' is out of range for a float learning rate");
  return single;
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
    auto path = [&] {
      std::string text = value();
      if (text.empty())
        fatal(std::string(flag) + " needs a file name");
      return text;
    };

    if (flag == "--steps") {
      options.steps = static_cast<int64_t>(
          parseUnsigned(flag, value(), 0, INT64_MAX, "a non-negative integer"));
    } else if (flag == "--seed") {
      options.seed = parseUnsigned(flag, value(), 0, UINT64_MAX, "an integer in [0, 2^64)");
    } else if (flag == "--data") {
      options.dataPath = path();
    } else if (flag == "--lr") {
      options.lr = parseLearningRate(flag, value());
    } else if (flag == "--log-every") {
      options.logEvery =
          static_cast<int64_t>(parseUnsigned(flag, value(), 1, INT64_MAX, "a positive integer"));
    } else if (flag == "--log-json") {
      options.logJsonPath = path();
    } else if (flag == "--load-params") {
      options.loadParamsPath = path();
    } else if (flag == "--dump-params") {
      options.dumpParamsPath = path();
    } else if (flag == "--trace-state") {
      options.traceStatePath = path();
    } else if (flag == "--trace") {
      options.tracePath = path();
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
