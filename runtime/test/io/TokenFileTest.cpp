//===- TokenFileTest.cpp - Flat token files: windows, order, every error --===//

#include "io/TokenFile.h"
#include "support/DataFileWriter.h"
#include "support/TempPath.h"
#include "support/TestManifest.h"
#include "trainer/Philox.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sys/stat.h>

using namespace fsdprt;
using fsdprt::test::Bytes;
using fsdprt::test::TempPath;
using json = nlohmann::json;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

/// A language model's inputs on one rank of `localBatch` rows: tokens
/// [localBatch, T] (input 0) and classes [localBatch, T] (input 1), both
/// with bound `vocab`, at offsets 0 and 1024 of a 2048-byte arena.
json lmJson(int64_t T, int64_t vocab, int64_t localBatch = 4, const char *tokensDType = "i32",
            const char *classesDType = "i32") {
  auto bytes = [&](const char *dtype) {
    return localBatch * T * (std::string(dtype) == "i64" ? 8 : 4);
  };
  json m = test::classifierManifest();
  m["units"] = json::array();
  m["params"] = json::array();
  m["batch"] = localBatch;
  m["local_batch"] = localBatch;
  m["inputs"] = json::array(
      {{{"index", 0}, {"shape", {localBatch, T}}, {"dtype", tokensDType}, {"role", "tokens"},
        {"bound", vocab}, {"offset", 0}, {"bytes", bytes(tokensDType)}},
       {{"index", 1}, {"shape", {localBatch, T}}, {"dtype", classesDType}, {"role", "classes"},
        {"bound", vocab}, {"offset", 1024}, {"bytes", bytes(classesDType)}}});
  m["arena_bytes"] = 2048;
  m["persistent_bytes"] = 2048;
  return m;
}

Manifest lmManifest(int64_t T, int64_t vocab) { return parseManifest(lmJson(T, vocab).dump()); }

/// The same model on grid [2]: a global batch of 8, 4 rows per rank.
Manifest twoRankManifest(int64_t T, int64_t vocab) {
  json m = lmJson(T, vocab);
  m["grid"] = {2};
  m["shard_ranks"] = 2;
  m["batch"] = 8;
  return parseManifest(m.dump());
}

/// Tokens 0, 1, 2, ... `count` - 1 (so that a window's first token says
/// which window it is), headerless, in `T`.
template <typename T> Bytes countingTokens(int64_t count) {
  Bytes bytes;
  for (int64_t i = 0; i < count; ++i)
    bytes.put<T>(static_cast<T>(i));
  return bytes;
}

/// llm.c's 1024-byte header, then `count` tokens 0, 1, 2, ... of type T.
template <typename T> Bytes llmcFile(int32_t version, int32_t headerCount, int64_t count) {
  Bytes bytes;
  bytes.put<int32_t>(20240520).put<int32_t>(version).put<int32_t>(headerCount);
  for (int i = 3; i < 256; ++i)
    bytes.put<int32_t>(0);
  for (int64_t i = 0; i < count; ++i)
    bytes.put<T>(static_cast<T>(i));
  return bytes;
}

std::unique_ptr<TokenFile> openFile(const std::string &path, const Manifest &manifest,
                                    bool shuffle = false, uint64_t seed = 1, int64_t rank = 0,
                                    std::optional<TokenDType> dtype = std::nullopt) {
  return TokenFile::open("--data", path, dtype, manifest, rank, seed, shuffle);
}

/// Local row `b` of an integer input, as written in the arena.
std::vector<int64_t> rowOf(const std::vector<uint8_t> &arena, const InputSpec &input, int64_t b) {
  std::vector<int64_t> row;
  size_t size = dtypeSize(input.dtype);
  for (int64_t t = 0; t < input.shape[1]; ++t)
    row.push_back(loadInteger(input.dtype, arena.data() + input.offset +
                                               b * input.sampleBytes() + t * size));
  return row;
}

/// The windows (by their first token / T) of the rows of steps 1 .. `steps`,
/// checking on the way that each row's classes are its tokens shifted by one.
std::vector<int64_t> windowsOf(TokenFile &file, const Manifest &manifest, int64_t steps) {
  std::vector<int64_t> windows;
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  int64_t T = file.context();
  for (int64_t step = 1; step <= steps; ++step) {
    file.writeBatch(step, arena.data());
    for (int64_t b = 0; b < manifest.localBatch; ++b) {
      std::vector<int64_t> tokens = rowOf(arena, manifest.inputs[0], b);
      std::vector<int64_t> classes = rowOf(arena, manifest.inputs[1], b);
      for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(tokens[t], tokens[0] + t) << "step " << step << " row " << b;
        EXPECT_EQ(classes[t], tokens[t] + 1) << "step " << step << " row " << b;
      }
      EXPECT_EQ(tokens[0] % T, 0) << "step " << step << " row " << b;
      windows.push_back(tokens[0] / T);
    }
  }
  return windows;
}

TEST(TokenDType, Parse) {
  EXPECT_EQ(parseTokenDType("uint16"), TokenDType::U16);
  EXPECT_EQ(parseTokenDType("uint32"), TokenDType::U32);
  EXPECT_EQ(parseTokenDType("u16"), std::nullopt);
  EXPECT_EQ(parseTokenDType("int32"), std::nullopt);
  EXPECT_EQ(parseTokenDType(""), std::nullopt);
  EXPECT_STREQ(tokenDTypeName(TokenDType::U16), "uint16");
  EXPECT_STREQ(tokenDTypeName(TokenDType::U32), "uint32");
}

TEST(TokenFile, InputsAreAWindowAndTargetsItsShiftByOne) {
  // T = 3, 14 tokens: W = 13 / 3 = 4 windows, [0, 4), [3, 7), [6, 10),
  // [9, 13); token 13 is in none.
  Manifest manifest = lmManifest(3, 100);
  TempPath path;
  countingTokens<uint16_t>(14).writeTo(path);
  std::unique_ptr<TokenFile> file = openFile(path, manifest);
  EXPECT_EQ(file->numTokens(), 14);
  EXPECT_EQ(file->numWindows(), 4);
  EXPECT_EQ(file->context(), 3);

  std::vector<uint8_t> arena(manifest.arenaBytes, 0xAB);
  file->writeBatch(1, arena.data());
  for (int64_t b = 0; b < 4; ++b) {
    EXPECT_EQ(rowOf(arena, manifest.inputs[0], b),
              (std::vector<int64_t>{3 * b, 3 * b + 1, 3 * b + 2}))
        << "row " << b;
    EXPECT_EQ(rowOf(arena, manifest.inputs[1], b),
              (std::vector<int64_t>{3 * b + 1, 3 * b + 2, 3 * b + 3}))
        << "row " << b;
  }
  // Nothing outside the two inputs is written.
  for (size_t i = 48; i < 1024; ++i)
    ASSERT_EQ(arena[i], 0xAB) << "byte " << i;
  for (size_t i = 1024 + 48; i < arena.size(); ++i)
    ASSERT_EQ(arena[i], 0xAB) << "byte " << i;
}

TEST(TokenFile, TheLastWindowNeedsItsLastTarget) {
  // 12 tokens, T = 3: [9, 12) would have no next token for its last one.
  Manifest manifest = lmManifest(3, 100);
  TempPath path;
  countingTokens<uint16_t>(12).writeTo(path);
  std::unique_ptr<TokenFile> file = openFile(path, manifest);
  EXPECT_EQ(file->numWindows(), 3);
  EXPECT_EQ(windowsOf(*file, manifest, 1), (std::vector<int64_t>{0, 1, 2, 0}));
  countingTokens<uint16_t>(4).writeTo(path);
  EXPECT_EQ(openFile(path, manifest)->numWindows(), 1);
}

TEST(TokenFile, InputsOfEitherIntegerDType) {
  // Classes i64 listed first, then tokens i32.
  json m = lmJson(2, 70000, 4, "i64", "i32");
  std::swap(m["inputs"][0]["role"], m["inputs"][1]["role"]);
  std::swap(m["inputs"][0]["bound"], m["inputs"][1]["bound"]);
  Manifest manifest = parseManifest(m.dump());
  TempPath path;
  Bytes bytes;
  for (uint32_t token : {69999u, 65536u, 0u, 7u, 65535u, 1u, 2u, 3u, 4u})
    bytes.put<uint32_t>(token);
  bytes.writeTo(path);
  std::unique_ptr<TokenFile> file = openFile(path, manifest, false, 1, 0, TokenDType::U32);
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  file->writeBatch(1, arena.data());
  const InputSpec &classes = manifest.inputs[0];
  const InputSpec &tokens = manifest.inputs[1];
  ASSERT_EQ(tokens.role, InputRole::Tokens);
  EXPECT_EQ(rowOf(arena, tokens, 0), (std::vector<int64_t>{69999, 65536}));
  EXPECT_EQ(rowOf(arena, classes, 0), (std::vector<int64_t>{65536, 0}));
  EXPECT_EQ(rowOf(arena, tokens, 1), (std::vector<int64_t>{0, 7}));
  EXPECT_EQ(rowOf(arena, classes, 1), (std::vector<int64_t>{7, 65535}));
  EXPECT_EQ(rowOf(arena, tokens, 3), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(rowOf(arena, classes, 3), (std::vector<int64_t>{3, 4}));
}

TEST(TokenFile, WithoutShuffleWindowsComeInFileOrderAndWrap) {
  Manifest manifest = lmManifest(2, 100);
  TempPath path;
  countingTokens<uint16_t>(11).writeTo(path); // W = 5
  std::unique_ptr<TokenFile> file = openFile(path, manifest);
  EXPECT_EQ(windowsOf(*file, manifest, 3),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1}));
}

TEST(TokenFile, WithoutShuffleStepsBeyond64BitSampleIndices) {
  Manifest manifest = lmManifest(2, 100);
  TempPath path;
  countingTokens<uint16_t>(11).writeTo(path); // W = 5
  std::unique_ptr<TokenFile> file = openFile(path, manifest);
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  // (2^63 - 2) * 4 = 4 (mod 5): windows 4 0 1 2.
  file->writeBatch(INT64_MAX, arena.data());
  const int64_t expected[] = {4, 0, 1, 2};
  for (int b = 0; b < 4; ++b)
    EXPECT_EQ(rowOf(arena, manifest.inputs[0], b)[0], 2 * expected[b]);
}

TEST(TokenFile, OneRankHoldsTheRowsOfTwoRanks) {
  // Global batch 8: on one rank of 8 rows, and on two of 4.
  Manifest oneRank = parseManifest(lmJson(3, 1000, 8).dump());
  Manifest twoRanks = twoRankManifest(3, 1000);
  TempPath path;
  countingTokens<uint16_t>(3 * 13 + 1).writeTo(path); // W = 13
  for (bool shuffle : {false, true}) {
    std::unique_ptr<TokenFile> whole = openFile(path, oneRank, shuffle, 42);
    std::unique_ptr<TokenFile> rank0 = openFile(path, twoRanks, shuffle, 42, 0);
    std::unique_ptr<TokenFile> rank1 = openFile(path, twoRanks, shuffle, 42, 1);
    std::vector<int64_t> expected = windowsOf(*whole, oneRank, 7);
    std::vector<int64_t> first = windowsOf(*rank0, twoRanks, 7);
    std::vector<int64_t> second = windowsOf(*rank1, twoRanks, 7);
    std::vector<int64_t> joined;
    for (size_t step = 0; step < 7; ++step) {
      joined.insert(joined.end(), first.begin() + 4 * step, first.begin() + 4 * step + 4);
      joined.insert(joined.end(), second.begin() + 4 * step, second.begin() + 4 * step + 4);
    }
    EXPECT_EQ(joined, expected) << "shuffle " << shuffle;
  }
}

/// The windows of `epochs` epochs of a W-window file, with shuffle and `seed`.
std::vector<std::vector<int64_t>> shuffledEpochs(const std::string &path, uint64_t seed,
                                                 int64_t windows, int64_t epochs) {
  Manifest manifest = lmManifest(2, 1000);
  std::unique_ptr<TokenFile> file = openFile(path, manifest, true, seed);
  EXPECT_EQ(file->numWindows(), windows);
  int64_t steps = (windows * epochs + 3) / 4;
  std::vector<int64_t> all = windowsOf(*file, manifest, steps);
  std::vector<std::vector<int64_t>> result;
  for (int64_t e = 0; e < epochs; ++e)
    result.emplace_back(all.begin() + e * windows, all.begin() + (e + 1) * windows);
  return result;
}

TEST(TokenFile, ShuffleMakesEachEpochAPermutationOfAllWindows) {
  // W = 10 with 4 rows a step: epochs begin mid-step.
  TempPath path;
  countingTokens<uint16_t>(21).writeTo(path);
  std::vector<std::vector<int64_t>> epochs = shuffledEpochs(path, 7, 10, 6);
  std::vector<int64_t> all(10);
  std::iota(all.begin(), all.end(), 0);
  for (size_t e = 0; e < epochs.size(); ++e) {
    std::vector<int64_t> sorted = epochs[e];
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, all) << "epoch " << e;
    EXPECT_NE(epochs[e], all) << "epoch " << e << " is in file order";
    for (size_t f = 0; f < e; ++f)
      EXPECT_NE(epochs[e], epochs[f]) << "epochs " << f << " and " << e;
  }
}

TEST(TokenFile, ShuffleOrderIsTheSeeds) {
  TempPath path;
  countingTokens<uint16_t>(21).writeTo(path);
  std::vector<std::vector<int64_t>> first = shuffledEpochs(path, 7, 10, 3);
  EXPECT_EQ(shuffledEpochs(path, 7, 10, 3), first);
  std::vector<std::vector<int64_t>> other = shuffledEpochs(path, 8, 10, 3);
  for (size_t e = 0; e < 3; ++e)
    EXPECT_NE(other[e], first[e]) << "epoch " << e;
  // The key takes both halves of the seed.
  std::vector<std::vector<int64_t>> high = shuffledEpochs(path, 7 + (uint64_t(1) << 32), 10, 3);
  EXPECT_NE(high[0], first[0]);
}

TEST(TokenFile, ShuffleIsTheDocumentedFisherYates) {
  // Written from the header's description: for i = W - 1 .. 1, swap i with
  // j uniform in [0, i], from the block of counter (lo32(e), hi32(e), i, 0),
  // key (lo32(seed), hi32(seed) ^ 0x70CE75EE), by Lemire's method on w1:w0.
  const uint64_t seed = 0x1234567890ULL;
  const int64_t W = 37;
  TempPath path;
  countingTokens<uint16_t>(2 * W + 1).writeTo(path);
  std::vector<std::vector<int64_t>> epochs = shuffledEpochs(path, seed, W, 3);
  for (uint32_t e = 0; e < 3; ++e) {
    std::vector<int64_t> order(W);
    std::iota(order.begin(), order.end(), 0);
    for (uint32_t i = W - 1; i > 0; --i) {
      PhiloxBlock w = philox4x32_10({e, 0, i, 0}, {lo32(seed), hi32(seed) ^ 0x70CE75EEu});
      unsigned __int128 product =
          static_cast<unsigned __int128>(uint64_t(w[0]) | uint64_t(w[1]) << 32) * (i + 1);
      // A rejection (probability about 2^-59 here) would need the next words.
      ASSERT_GE(static_cast<uint64_t>(product), uint64_t(i + 1));
      std::swap(order[i], order[static_cast<size_t>(product >> 64)]);
    }
    EXPECT_EQ(epochs[e], order) << "epoch " << e;
  }
}

TEST(TokenFile, ResumedRunContinuesTheSameOrder) {
  Manifest manifest = lmManifest(2, 1000);
  TempPath path;
  countingTokens<uint16_t>(2 * 9 + 1).writeTo(path); // W = 9
  for (bool shuffle : {false, true}) {
    std::unique_ptr<TokenFile> uninterrupted = openFile(path, manifest, shuffle, 5);
    std::vector<int64_t> expected = windowsOf(*uninterrupted, manifest, 10);
    std::unique_ptr<TokenFile> resumed = openFile(path, manifest, shuffle, 5);
    resumed->resumeAfter(6, 6 * 4);
    std::vector<uint8_t> arena(manifest.arenaBytes, 0);
    for (int64_t step = 7; step <= 10; ++step) {
      resumed->writeBatch(step, arena.data());
      for (int64_t b = 0; b < 4; ++b)
        EXPECT_EQ(rowOf(arena, manifest.inputs[0], b)[0] / 2, expected[(step - 1) * 4 + b])
            << "shuffle " << shuffle << " step " << step << " row " << b;
    }
  }
}

TEST(TokenFile, Uint32AndLlmcHeadersReadTheSameTokens) {
  Manifest manifest = lmManifest(3, 1000);
  const int64_t count = 3 * 11 + 2;
  TempPath reference(".u16");
  countingTokens<uint16_t>(count).writeTo(reference);
  std::vector<int64_t> expected = windowsOf(*openFile(reference, manifest, true, 3), manifest, 9);

  struct Variant {
    const char *name;
    Bytes bytes;
    std::optional<TokenDType> dtype;
  };
  const Variant variants[] = {
      {"uint16, explicit", countingTokens<uint16_t>(count), TokenDType::U16},
      {"uint32", countingTokens<uint32_t>(count), TokenDType::U32},
      {"llm.c version 1", llmcFile<uint16_t>(1, count, count), std::nullopt},
      {"llm.c version 1, explicit", llmcFile<uint16_t>(1, count, count), TokenDType::U16},
      {"llm.c version 2", llmcFile<uint32_t>(2, count, count), std::nullopt},
      {"llm.c version 2, explicit", llmcFile<uint32_t>(2, count, count), TokenDType::U32},
  };
  for (const Variant &variant : variants) {
    TempPath path;
    variant.bytes.writeTo(path);
    std::unique_ptr<TokenFile> file = openFile(path, manifest, true, 3, 0, variant.dtype);
    EXPECT_EQ(file->numTokens(), count) << variant.name;
    EXPECT_EQ(file->numWindows(), 11) << variant.name;
    EXPECT_EQ(windowsOf(*file, manifest, 9), expected) << variant.name;
  }
}

/// Opening `bytes` (T = 3, vocabulary 100) fails with `message` after the
/// flag and file name.
void expectTokenError(const Bytes &bytes, const std::string &message,
                      std::optional<TokenDType> dtype = std::nullopt) {
  TempPath path;
  bytes.writeTo(path);
  Manifest manifest = lmManifest(3, 100);
  EXPECT_EXIT(TokenFile::open("--data", path, dtype, manifest, 0, 1, true), ExitedWithCode(1),
              HasSubstr("trainer: error: --data '" + std::string(path) + "': " + message));
}

TEST(TokenFileError, TooFewTokens) {
  expectTokenError(countingTokens<uint16_t>(3),
                   "has 3 tokens, but a window of the model's 3 tokens and their next tokens "
                   "needs at least 4");
  expectTokenError(llmcFile<uint32_t>(2, 1, 1), "has 1 tokens, but a window");
}

TEST(TokenFileError, EmptyFile) { expectTokenError(Bytes(), "has 0 tokens"); }

TEST(TokenFileError, OddSizeForUint16) {
  expectTokenError(countingTokens<uint16_t>(8).put<uint8_t>(0),
                   "file has 17 bytes, not a whole number of uint16 tokens (2 bytes each)");
}

TEST(TokenFileError, SizeNotAMultipleOfUint32) {
  expectTokenError(countingTokens<uint16_t>(9),
                   "file has 18 bytes, not a whole number of uint32 tokens (4 bytes each)",
                   TokenDType::U32);
}

TEST(TokenFileError, HeaderTokenCountDoesNotMatchTheSize) {
  expectTokenError(llmcFile<uint16_t>(1, 10, 9),
                   "the llm.c header says 10 uint16 tokens (20 bytes), but the file has 18 "
                   "bytes after the 1024-byte header");
  expectTokenError(llmcFile<uint32_t>(2, 8, 9),
                   "the llm.c header says 8 uint32 tokens (32 bytes), but the file has 36 "
                   "bytes after the 1024-byte header");
  expectTokenError(llmcFile<uint16_t>(1, -1, 9), "the llm.c header says -1 uint16 tokens");
}

TEST(TokenFileError, ShortHeader) {
  expectTokenError(llmcFile<uint16_t>(1, 0, 0).truncate(100),
                   "file is too short: it starts with the llm.c magic but has 100 bytes, less "
                   "than the 1024-byte header");
}

TEST(TokenFileError, BadHeaderVersion) {
  expectTokenError(llmcFile<uint16_t>(3, 9, 9),
                   "llm.c header version 3 is not supported (expected 1: uint16 tokens, or 2: "
                   "uint32 tokens)");
  expectTokenError(llmcFile<uint16_t>(0, 9, 9), "llm.c header version 0 is not supported");
}

TEST(TokenFileError, DTypeContradictsTheHeader) {
  expectTokenError(llmcFile<uint16_t>(1, 9, 9),
                   "the llm.c header says uint16 tokens (version 1), but uint32 was given",
                   TokenDType::U32);
  expectTokenError(llmcFile<uint32_t>(2, 9, 9),
                   "the llm.c header says uint32 tokens (version 2), but uint16 was given",
                   TokenDType::U16);
}

TEST(TokenFileError, TokenOutsideTheVocabulary) {
  Bytes bytes;
  for (uint16_t token : {99, 0, 5, 100, 101, 7, 8})
    bytes.put<uint16_t>(token);
  expectTokenError(bytes, "token 3 is 100, outside the model's vocabulary of 100 ids [0, 100)");
  // Past the last window, too: every token is checked.
  Bytes tail = countingTokens<uint32_t>(8).put<uint32_t>(70000);
  expectTokenError(tail, "token 8 is 70000, outside the model's vocabulary of 100 ids",
                   TokenDType::U32);
}

TEST(TokenFileError, TokenOutsideTheSmallerBound) {
  // Classes bound 50: a token id is also a target, and must fit it.
  json m = lmJson(3, 100);
  m["inputs"][1]["bound"] = 50;
  Manifest manifest = parseManifest(m.dump());
  TempPath path;
  countingTokens<uint16_t>(60).writeTo(path);
  EXPECT_EXIT(openFile(path, manifest), ExitedWithCode(1),
              HasSubstr("': token 50 is 50, outside the model's vocabulary of 50 ids [0, 50)"));
}

TEST(TokenFileError, ModelWithoutTokensAndClasses) {
  Manifest manifest = parseManifest(test::classifierManifest().dump());
  TempPath path;
  countingTokens<uint16_t>(20).writeTo(path);
  EXPECT_EXIT(openFile(path, manifest), ExitedWithCode(1),
              HasSubstr("trainer: error: --data '" + std::string(path) +
                        "': needs a model whose inputs are tokens [B, T] and their next-token "
                        "classes [B, T] (i32 or i64); this model's inputs are input 0 (features "
                        "[4, 3] f32), input 1 (classes [4] i32)"));
}

TEST(TokenFileError, ModelWithClassesOfAnotherShape) {
  json m = lmJson(3, 100);
  m["inputs"][1]["shape"] = {4, 2};
  m["inputs"][1]["bytes"] = 32;
  Manifest manifest = parseManifest(m.dump());
  TempPath path;
  countingTokens<uint16_t>(20).writeTo(path);
  EXPECT_EXIT(openFile(path, manifest), ExitedWithCode(1),
              HasSubstr("this model's inputs are input 0 (tokens [4, 3] i32), input 1 (classes "
                        "[4, 2] i32)"));
}

TEST(TokenFileError, ModelWithAThirdInput) {
  json m = lmJson(3, 100);
  m["inputs"].push_back({{"index", 2}, {"shape", {4, 1}}, {"dtype", "f32"},
                         {"role", "features"}, {"offset", 512}, {"bytes", 16}});
  Manifest manifest = parseManifest(m.dump());
  TempPath path;
  countingTokens<uint16_t>(20).writeTo(path);
  EXPECT_EXIT(openFile(path, manifest), ExitedWithCode(1),
              HasSubstr("input 2 (features [4, 1] f32)"));
}

TEST(TokenFileError, MissingFile) {
  Manifest manifest = lmManifest(3, 100);
  TempPath path(".missing");
  std::remove(path.c_str());
  EXPECT_EXIT(TokenFile::open("--eval-data", path, std::nullopt, manifest, 0, 1, false),
              ExitedWithCode(1),
              HasSubstr("trainer: error: --eval-data '" + std::string(path) +
                        "': cannot open: No such file or directory"));
}

TEST(TokenFileError, Directory) {
  Manifest manifest = lmManifest(3, 100);
  TempPath path(".dir");
  mkdir(path.c_str(), 0700);
  EXPECT_EXIT(openFile(path, manifest), ExitedWithCode(1),
              HasSubstr("--data '" + std::string(path) + "': not a regular file"));
}

} // namespace
