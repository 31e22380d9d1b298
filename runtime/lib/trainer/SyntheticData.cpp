//===- SyntheticData.cpp - The seeded synthetic training task -------------===//

#include "trainer/SyntheticData.h"

#include "abi/DType.h"
#include "abi/Error.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fsdprt {

/// The teacher's matrix is built once; beyond this many entries synthetic
/// data would cost more memory than a model worth training with it.
static constexpr int64_t kMaxTeacherEntries = int64_t(1) << 26;

static std::string describe(const InputSpec &input) {
  return "input " + std::to_string(input.index) + " (" + inputRoleName(input.role) + " " +
         formatShape(input.shape) + ")";
}

SyntheticData::SyntheticData(const Manifest &manifest, uint64_t seed, int64_t dataIndex)
    : BatchSource(RankRows(manifest, dataIndex)),
      seed(seed), dataKey{lo32(seed), hi32(seed) ^ 0x5EED5EEDu} {
  for (size_t i = 0; i < manifest.inputs.size(); ++i)
    if (manifest.inputs[i].role == InputRole::Features) {
      features = manifest.inputs[i];
      featuresPlan = i;
      break;
    }
  for (const InputSpec &input : manifest.inputs) {
    recordOffsets.push_back(recordBytes);
    recordBytes += input.sampleBytes();
  }

  for (const InputSpec &input : manifest.inputs) {
    InputPlan plan;
    plan.input = input;
    switch (input.role) {
    case InputRole::Features:
      plan.source = Source::StandardNormal;
      break;
    case InputRole::Tokens:
      plan.source = Source::StrideTokens;
      break;
    case InputRole::Classes: {
      const InputSpec *tokens = nullptr;
      for (const InputSpec &other : manifest.inputs)
        if (other.role == InputRole::Tokens && other.shape == input.shape) {
          tokens = &other;
          break;
        }
      if (tokens) {
        // Next tokens lie in [0, V) of the tokens input; the classes must hold them.
        if (input.bound < tokens->bound)
          fatal("synthetic data: " + describe(input) + " has bound " +
                std::to_string(input.bound) + ", but its next-token targets come from " +
                describe(*tokens) + " with bound " + std::to_string(tokens->bound) +
                "; use --data");
        plan.source = Source::NextToken;
        plan.tokensInput = static_cast<size_t>(tokens->index);
        break;
      }
      if (!features)
        fatal("synthetic data: cannot produce " + describe(input) +
              ": there is no tokens input of the same shape and no features input; use --data");
      if (input.sampleElements() != 1)
        fatal("synthetic data: cannot produce " + describe(input) +
              ": the features teacher gives one class per sample, and there is no tokens "
              "input of the same shape; use --data");
      plan.source = Source::TeacherArgmax;
      plan.teacher = makeTeacher(input, input.bound);
      break;
    }
    case InputRole::RegressionTarget:
      if (!features)
        fatal("synthetic data: cannot produce " + describe(input) +
              ": the teacher needs a features input; use --data");
      plan.source = Source::TeacherSum;
      plan.teacher = makeTeacher(input, input.sampleElements());
      break;
    }
    plans.push_back(std::move(plan));
  }
}

SyntheticData::Teacher SyntheticData::makeTeacher(const InputSpec &input, int64_t outputs) const {
  int64_t inputsPerSample = features->sampleElements();
  int64_t entries;
  if (__builtin_mul_overflow(inputsPerSample, outputs, &entries) || entries > kMaxTeacherEntries)
    fatal("synthetic data: the teacher of " + describe(input) + " would need " +
          std::to_string(inputsPerSample) + " x " + std::to_string(outputs) +
          " weights (at most 2^26); use --data");
  Teacher teacher;
  teacher.outputs = outputs;
  teacher.weights.resize(static_cast<size_t>(entries));
  PhiloxKey teacherKey{lo32(seed), hi32(seed) ^ 0x7EAC7EACu};
  for (int64_t j = 0; j < inputsPerSample; ++j)
    for (int64_t c = 0; c < outputs; ++c) {
      uint64_t entry = static_cast<uint64_t>(j * outputs + c);
      teacher.weights[entry] =
          standardNormal(philox4x32_10({lo32(entry), hi32(entry), 0, 0}, teacherKey));
    }
  return teacher;
}

void SyntheticData::writeGenerated(const InputPlan &plan, uint64_t n, uint8_t *record) const {
  const InputSpec &input = plan.input;
  size_t elementSize = dtypeSize(input.dtype);
  uint8_t *out = record + recordOffsets[static_cast<size_t>(input.index)];
  auto block = [&](uint64_t j) {
    return philox4x32_10({lo32(j), hi32(j), lo32(n), static_cast<uint32_t>(input.index)},
                         dataKey);
  };
  int64_t elements = input.sampleElements();
  if (plan.source == Source::StandardNormal) {
    for (int64_t j = 0; j < elements; ++j)
      storeReal(standardNormal(block(static_cast<uint64_t>(j))), input.dtype,
                out + j * elementSize);
    return;
  }
  // StrideTokens. u1 can be exactly 1.0 (see uniformFromWords), and u1 * V
  // can round up to V: either would give x_0 = V, which is clamped to V - 1.
  // (Comparing in double also keeps the conversion below in range.)
  uint64_t bound = static_cast<uint64_t>(input.bound);
  double scaled = std::floor(uniform1(block(0)) * static_cast<double>(input.bound));
  uint64_t token = scaled >= static_cast<double>(input.bound) ? bound - 1
                                                              : static_cast<uint64_t>(scaled);
  for (int64_t t = 0; t < elements; ++t) {
    storeInteger(static_cast<int64_t>(token), input.dtype, out + t * elementSize);
    token = (token + 7) % bound;
  }
}

void SyntheticData::writeDerived(const InputPlan &plan, uint8_t *record) const {
  const InputSpec &input = plan.input;
  size_t elementSize = dtypeSize(input.dtype);
  uint8_t *out = record + recordOffsets[static_cast<size_t>(input.index)];
  int64_t elements = input.sampleElements();

  if (plan.source == Source::NextToken) {
    const InputSpec &tokens = plans[plan.tokensInput].input;
    const uint8_t *in = record + recordOffsets[plan.tokensInput];
    size_t tokenSize = dtypeSize(tokens.dtype);
    uint64_t bound = static_cast<uint64_t>(tokens.bound);
    for (int64_t t = 0; t < elements; ++t) {
      uint64_t token = static_cast<uint64_t>(loadInteger(tokens.dtype, in + t * tokenSize));
      storeInteger(static_cast<int64_t>((token + 7) % bound), input.dtype, out + t * elementSize);
    }
    return;
  }

  // The teacher sees the features as the model does: as stored, after
  // rounding to their dtype. Each output sums over j in increasing order.
  const Teacher &teacher = plan.teacher;
  const uint8_t *in = record + recordOffsets[featuresPlan];
  size_t featureSize = dtypeSize(features->dtype);
  std::vector<double> sums(static_cast<size_t>(teacher.outputs), 0.0);
  for (int64_t j = 0, e = features->sampleElements(); j < e; ++j) {
    double x = loadReal(features->dtype, in + j * featureSize);
    const double *weights = &teacher.weights[static_cast<size_t>(j * teacher.outputs)];
    for (int64_t c = 0; c < teacher.outputs; ++c)
      sums[c] += x * weights[c];
  }
  if (plan.source == Source::TeacherSum) {
    for (int64_t c = 0; c < elements; ++c)
      storeReal(sums[c], input.dtype, out + c * elementSize);
    return;
  }
  // TeacherArgmax: the first of equal maxima, as numpy.argmax.
  int64_t best = 0;
  for (int64_t c = 1; c < teacher.outputs; ++c)
    if (sums[c] > sums[best])
      best = c;
  storeInteger(best, input.dtype, out);
}

void SyntheticData::writeSample(uint64_t n, uint8_t *record) const {
  // Generated inputs first: the derived ones read them back from the record.
  for (const InputPlan &plan : plans)
    if (plan.source == Source::StandardNormal || plan.source == Source::StrideTokens)
      writeGenerated(plan, n, record);
  for (const InputPlan &plan : plans)
    if (plan.source != Source::StandardNormal && plan.source != Source::StrideTokens)
      writeDerived(plan, record);
}

int64_t SyntheticData::numSamples() const {
  // Whole global batches: at least kSamples samples, one batch at least.
  return std::max<int64_t>(1, (kSamples + rows.batch - 1) / rows.batch) * rows.batch;
}

void SyntheticData::generateDataSet() {
  int64_t count = numSamples();
  records.resize(static_cast<size_t>(count * recordBytes));
  for (int64_t n = 0; n < count; ++n)
    writeSample(static_cast<uint64_t>(n), records.data() + n * recordBytes);
}

void SyntheticData::writeBatch(int64_t step, uint8_t *arena) {
  if (records.empty() && recordBytes > 0)
    generateDataSet();
  int64_t count = numSamples();
  for (int64_t b = 0; b < rows.localBatch; ++b) {
    const uint8_t *record = records.data() + rows.sampleOf(step, b, count) * recordBytes;
    for (const InputPlan &plan : plans) {
      int64_t bytes = plan.input.sampleBytes();
      std::memcpy(arena + plan.input.offset + b * bytes,
                  record + recordOffsets[static_cast<size_t>(plan.input.index)],
                  static_cast<size_t>(bytes));
    }
  }
}

} // namespace fsdprt
