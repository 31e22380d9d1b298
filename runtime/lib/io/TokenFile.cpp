//===- TokenFile.cpp - Language-model data from a flat token file ---------===//

#include "io/TokenFile.h"

#include "abi/DType.h"
#include "abi/Error.h"
#include "io/MappedFile.h"
#include "trainer/Philox.h"

#include <algorithm>
#include <cstring>
#include <numeric>

// Token ids are read from the mapping as they are.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the runtime assumes a little-endian host");

namespace fsdprt {

/// llm.c's header: 256 int32, of which [0] magic, [1] version, [2] tokens.
static constexpr int32_t kHeaderMagic = 20240520;
static constexpr size_t kHeaderBytes = 256 * sizeof(int32_t);

std::optional<TokenDType> parseTokenDType(std::string_view text) {
  if (text == "uint16")
    return TokenDType::U16;
  if (text == "uint32")
    return TokenDType::U32;
  return std::nullopt;
}

const char *tokenDTypeName(TokenDType dtype) {
  return dtype == TokenDType::U16 ? "uint16" : "uint32";
}

static size_t tokenSize(TokenDType dtype) { return dtype == TokenDType::U16 ? 2 : 4; }

TokenFile::TokenFile(std::string flag, std::string path, const Manifest &manifest,
                     int64_t dataIndex, uint64_t seed, bool shuffle)
    : BatchSource(RankRows(manifest, dataIndex)), flag(std::move(flag)), path(std::move(path)),
      seed(seed), shuffle(shuffle) {}

TokenFile::~TokenFile() = default;

void TokenFile::fail(const std::string &what) const { fatal(flag + " '" + path + "': " + what); }

std::unique_ptr<TokenFile> TokenFile::open(const std::string &flag, const std::string &path,
                                           std::optional<TokenDType> dtype,
                                           const Manifest &manifest, int64_t dataIndex,
                                           uint64_t seed, bool shuffle) {
  std::unique_ptr<TokenFile> file(new TokenFile(flag, path, manifest, dataIndex, seed, shuffle));
  file->checkInputs(manifest);
  file->mapFile();
  file->readLayout(dtype);
  file->countWindows();
  file->checkVocabulary();
  return file;
}

static std::string describeInputs(const Manifest &manifest) {
  if (manifest.inputs.empty())
    return "none";
  std::string text;
  for (const InputSpec &input : manifest.inputs)
    text += std::string(text.empty() ? "" : ", ") + "input " + std::to_string(input.index) +
            " (" + inputRoleName(input.role) + " " + formatShape(input.shape) + " " +
            dtypeName(input.dtype) + ")";
  return text;
}

void TokenFile::checkInputs(const Manifest &manifest) {
  const InputSpec *tokensSpec = nullptr;
  const InputSpec *classesSpec = nullptr;
  for (const InputSpec &input : manifest.inputs) {
    if (input.role == InputRole::Tokens)
      tokensSpec = &input;
    if (input.role == InputRole::Classes)
      classesSpec = &input;
  }
  bool fits = manifest.inputs.size() == 2 && tokensSpec && classesSpec &&
              tokensSpec->shape.size() == 2 && tokensSpec->shape == classesSpec->shape &&
              !isFloatDType(tokensSpec->dtype) && !isFloatDType(classesSpec->dtype);
  if (!fits)
    fail("needs a model whose inputs are tokens [B, T] and their next-token classes [B, T] "
         "(i32 or i64); this model's inputs are " +
         describeInputs(manifest));
  tokensInput = *tokensSpec;
  classesInput = *classesSpec;
  contextLength = tokensInput.shape[1];
}

void TokenFile::mapFile() {
  // An empty file has no tokens, which countWindows() reports.
  mapped = std::make_unique<MappedFile>(path, [this](const std::string &what) { fail(what); });
  mapping = mapped->data();
  mappingBytes = mapped->size();
}

void TokenFile::readLayout(std::optional<TokenDType> dtype) {
  // A headerless uint16 file whose first two tokens are 0x9148 and 0x0135
  // (the magic's halves) would be taken for an llm.c file, and then almost
  // surely rejected by the header's checks rather than misread.
  int32_t magic = 0;
  if (mappingBytes >= sizeof(magic))
    std::memcpy(&magic, mapping, sizeof(magic));
  if (magic == kHeaderMagic) {
    readHeader(dtype);
    return;
  }
  tokenDType = dtype.value_or(TokenDType::U16);
  size_t size = tokenSize(tokenDType);
  if (mappingBytes % size != 0)
    fail("file has " + std::to_string(mappingBytes) + " bytes, not a whole number of " +
         tokenDTypeName(tokenDType) + " tokens (" + std::to_string(size) + " bytes each)");
  tokens = mapping;
  tokenCount = static_cast<int64_t>(mappingBytes / size);
}

void TokenFile::readHeader(std::optional<TokenDType> dtype) {
  if (mappingBytes < kHeaderBytes)
    fail("file is too short: it starts with the llm.c magic but has " +
         std::to_string(mappingBytes) + " bytes, less than the 1024-byte header");
  int32_t header[3];
  std::memcpy(header, mapping, sizeof(header));
  int32_t version = header[1];
  if (version != 1 && version != 2)
    fail("llm.c header version " + std::to_string(version) +
         " is not supported (expected 1: uint16 tokens, or 2: uint32 tokens)");
  tokenDType = version == 1 ? TokenDType::U16 : TokenDType::U32;
  if (dtype && *dtype != tokenDType)
    fail(std::string("the llm.c header says ") + tokenDTypeName(tokenDType) +
         " tokens (version " + std::to_string(version) + "), but " + tokenDTypeName(*dtype) +
         " was given");
  int64_t count = header[2];
  int64_t size = static_cast<int64_t>(tokenSize(tokenDType));
  uint64_t dataBytes = mappingBytes - kHeaderBytes;
  if (count < 0 || static_cast<uint64_t>(count * size) != dataBytes)
    fail("the llm.c header says " + std::to_string(count) + " " + tokenDTypeName(tokenDType) +
         " tokens (" + std::to_string(count * size) + " bytes), but the file has " +
         std::to_string(dataBytes) + " bytes after the 1024-byte header");
  tokens = mapping + kHeaderBytes;
  tokenCount = count;
}

void TokenFile::countWindows() {
  if (tokenCount < contextLength + 1)
    fail("has " + std::to_string(tokenCount) + " tokens, but a window of the model's " +
         std::to_string(contextLength) + " tokens and their next tokens needs at least " +
         std::to_string(contextLength + 1));
  windowCount = (tokenCount - 1) / contextLength;
}

/// The index of the first of `count` tokens of type T at `data` that is
/// `bound` or more; -1 if none is.
template <typename T>
static int64_t firstOutside(const uint8_t *data, int64_t count, int64_t bound) {
  for (int64_t i = 0; i < count; ++i) {
    T token;
    std::memcpy(&token, data + i * sizeof(T), sizeof(T));
    if (static_cast<int64_t>(token) >= bound)
      return i;
  }
  return -1;
}

void TokenFile::checkVocabulary() const {
  // A token id is both an input and (one position earlier) a target: it must
  // fit the smaller of the two bounds.
  int64_t vocabulary = std::min(tokensInput.bound, classesInput.bound);
  int64_t index = tokenDType == TokenDType::U16
                      ? firstOutside<uint16_t>(tokens, tokenCount, vocabulary)
                      : firstOutside<uint32_t>(tokens, tokenCount, vocabulary);
  if (index >= 0)
    fail("token " + std::to_string(index) + " is " + std::to_string(tokenAt(index)) +
         ", outside the model's vocabulary of " + std::to_string(vocabulary) + " ids [0, " +
         std::to_string(vocabulary) + ")");
}

int64_t TokenFile::tokenAt(int64_t i) const {
  if (tokenDType == TokenDType::U16) {
    uint16_t token;
    std::memcpy(&token, tokens + i * 2, 2);
    return token;
  }
  uint32_t token;
  std::memcpy(&token, tokens + i * 4, 4);
  return token;
}

/// An exact uniform draw from [0, s), s >= 1, for the Philox counter
/// `counter`: Lemire's multiply-and-reject (x * s / 2^64 for a 64-bit x,
/// rejecting the 2^64 mod s values of x that would favour some results).
/// The candidates are the block's words w1:w0, then w3:w2; should both be
/// rejected (probability below (s / 2^64)^2), Philox of the block gives the
/// next block, and so on.
static uint64_t uniformBelow(uint64_t s, PhiloxCounter counter, PhiloxKey key) {
  PhiloxBlock block = philox4x32_10(counter, key);
  for (;;) {
    for (int k = 0; k < 4; k += 2) {
      uint64_t x = static_cast<uint64_t>(block[k]) | static_cast<uint64_t>(block[k + 1]) << 32;
      unsigned __int128 product = static_cast<unsigned __int128>(x) * s;
      uint64_t low = static_cast<uint64_t>(product);
      // 2^64 mod s < s: the division is needed only when low is that small.
      if (low >= s || low >= (0 - s) % s)
        return static_cast<uint64_t>(product >> 64);
    }
    block = philox4x32_10(block, key);
  }
}

void TokenFile::drawPermutation(uint64_t epoch) {
  // Fisher-Yates from the last position down, so that the draw for position
  // i depends only on (seed, epoch, i): every rank draws the same order.
  PhiloxKey key{lo32(seed), hi32(seed) ^ 0x70CE75EEu};
  permutation.resize(static_cast<size_t>(windowCount));
  std::iota(permutation.begin(), permutation.end(), int64_t(0));
  for (int64_t i = windowCount - 1; i > 0; --i) {
    uint64_t u = static_cast<uint64_t>(i);
    uint64_t j = uniformBelow(u + 1, {lo32(epoch), hi32(epoch), lo32(u), hi32(u)}, key);
    std::swap(permutation[static_cast<size_t>(i)], permutation[j]);
  }
  permutationEpoch = epoch;
}

int64_t TokenFile::windowOf(unsigned __int128 n) {
  uint64_t windows = static_cast<uint64_t>(windowCount);
  int64_t position = static_cast<int64_t>(n % windows);
  if (!shuffle)
    return position;
  // Epochs past 2^64 (steps beyond any real run) reuse the orders of the
  // first ones: the counter holds 64 bits of the epoch.
  uint64_t epoch = static_cast<uint64_t>(n / windows);
  if (permutationEpoch != epoch)
    drawPermutation(epoch);
  return permutation[static_cast<size_t>(position)];
}

void TokenFile::writeBatch(int64_t step, uint8_t *arena) {
  size_t tokensSize = dtypeSize(tokensInput.dtype);
  size_t classesSize = dtypeSize(classesInput.dtype);
  for (int64_t b = 0; b < rows.localBatch; ++b) {
    int64_t first = windowOf(rows.globalSample(step, b)) * contextLength;
    uint8_t *tokensRow = arena + tokensInput.offset + b * tokensInput.sampleBytes();
    uint8_t *classesRow = arena + classesInput.offset + b * classesInput.sampleBytes();
    for (int64_t t = 0; t < contextLength; ++t) {
      storeInteger(tokenAt(first + t), tokensInput.dtype, tokensRow + t * tokensSize);
      storeInteger(tokenAt(first + t + 1), classesInput.dtype, classesRow + t * classesSize);
    }
  }
}

} // namespace fsdprt
