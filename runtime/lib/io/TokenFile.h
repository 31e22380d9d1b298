//===- TokenFile.h - Language-model data from a flat token file -*- C++ -*-===//
//
// The layout language-model data sets already come in: one long stream of
// token ids, as nanoGPT's prepare.py (train.bin, val.bin) and llm.c's
// dev/data scripts write it, and as scripts/tokenize_text.py writes it from text.
// A sample is a window of T + 1 consecutive tokens: the model's tokens input
// is its first T tokens, its classes input the last T (the next tokens).
//
// The file, little-endian, is either
//   - headerless: nothing but the token ids, uint16 (nanoGPT) or uint32; or
//   - llm.c's: a 1024-byte header of 256 int32, [0] = magic 20240520,
//     [1] = version (1: uint16 tokens, 2: uint32 tokens), [2] = number of
//     tokens N, then the N tokens.
// Like a DataFile it is mapped, not read, and validated completely (layout,
// size, every token id against the vocabulary) before the first step.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_IO_TOKENFILE_H
#define FSDPRT_IO_TOKENFILE_H

#include "abi/Manifest.h"
#include "trainer/BatchSource.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fsdprt {

class MappedFile;

/// The element type of the token ids in the file.
enum class TokenDType { U16, U32 };

/// Parses "uint16" / "uint32" (the trainer's --token-dtype); nullopt otherwise.
std::optional<TokenDType> parseTokenDType(std::string_view text);
/// "uint16" or "uint32".
const char *tokenDTypeName(TokenDType dtype);

class TokenFile final : public BatchSource {
public:
  /// Opens `path` and checks it against the model, which must have exactly
  /// two inputs: tokens [B, T] and classes [B, T]. `flag` names the file in
  /// messages ("--data"): every error is fatal, as `<flag> '<path>': <what>`.
  /// `dtype` is the element type of a headerless file (nullopt: uint16, the
  /// nanoGPT default); a file with the llm.c header says its own, which an
  /// explicit `dtype` must not contradict. `shuffle` chooses the order of the
  /// windows: a seeded permutation per epoch (training) or file order
  /// (evaluation). `dataIndex` chooses the rows written (RankRows).
  static std::unique_ptr<TokenFile> open(const std::string &flag, const std::string &path,
                                         std::optional<TokenDType> dtype, const Manifest &manifest,
                                         int64_t dataIndex, uint64_t seed, bool shuffle);

  ~TokenFile() override;
  TokenFile(const TokenFile &) = delete;
  TokenFile &operator=(const TokenFile &) = delete;

  int64_t numTokens() const { return tokenCount; }
  /// W = (numTokens - 1) / T: window w is tokens [w * T, w * T + T + 1).
  int64_t numWindows() const { return windowCount; }
  /// A sample is a window.
  int64_t numSamples() const override { return windowCount; }
  /// T, the model's sequence length.
  int64_t context() const { return contextLength; }

  /// Local row b of step `step` holds window order(n), n = the row's
  /// RankRows::globalSample: without shuffle n mod W; with it, position
  /// n mod W of epoch n / W's permutation.
  void writeBatch(int64_t step, uint8_t *arena) override;

private:
  TokenFile(std::string flag, std::string path, const Manifest &manifest, int64_t dataIndex,
            uint64_t seed, bool shuffle);
  void checkInputs(const Manifest &manifest);
  void mapFile();
  void readLayout(std::optional<TokenDType> dtype);
  void readHeader(std::optional<TokenDType> dtype);
  void countWindows();
  void checkVocabulary() const;
  int64_t windowOf(unsigned __int128 n);
  void drawPermutation(uint64_t epoch);
  int64_t tokenAt(int64_t i) const;
  [[noreturn]] void fail(const std::string &what) const;

  std::string flag;
  std::string path;
  InputSpec tokensInput;
  InputSpec classesInput;
  int64_t contextLength = 0;
  uint64_t seed;
  bool shuffle;

  std::unique_ptr<MappedFile> mapped;
  const uint8_t *mapping = nullptr;
  size_t mappingBytes = 0;
  const uint8_t *tokens = nullptr;
  TokenDType tokenDType = TokenDType::U16;
  int64_t tokenCount = 0;
  int64_t windowCount = 0;

  /// The permutation of the epoch last drawn (shuffle only): consecutive
  /// steps stay in one epoch, so it is drawn once per epoch.
  std::vector<int64_t> permutation;
  std::optional<uint64_t> permutationEpoch;
};

} // namespace fsdprt

#endif // FSDPRT_IO_TOKENFILE_H
