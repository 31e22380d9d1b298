//===- ManifestDoc.cpp - docs/Reference/Manifest.md from the schema -------===//
//
// fsdprt-manifest-doc: prints the reference of the trainer's manifest, one
// Markdown table per object, then its element types and strategies, from the
// rows of fsdprt/ManifestSchema.def (the table the compiler's writer and the
// runtime's reader take their keys from).
// The build writes it to <build>/docs/fsdp/Manifest.md, beside the dialect's
// references, and test/docs/references.test checks the committed copy.
//
//===----------------------------------------------------------------------===//

#include "fsdprt/ManifestSchema.h"

#include <cctype>
#include <cstdio>
#include <string>

namespace {

/// An object of the manifest, as its row spells it.
struct ObjectRow {
  const char *id;
  const char *path;
  const char *meaning;
};

/// A field of the manifest, TYPE and PRESENCE as the row's identifiers.
struct FieldRow {
  const char *object;
  const char *key;
  const char *type;
  const char *unit;
  const char *presence;
  const char *meaning;
};

const ObjectRow kObjects[] = {
#define FSDPRT_MANIFEST_OBJECT(ID, PATH, MEANING) {#ID, PATH, MEANING},
#include "fsdprt/ManifestSchema.def"
};

const FieldRow kFields[] = {
#define FSDPRT_MANIFEST_FIELD(ID, NAME, KEY, TYPE, UNIT, PRESENCE, MEANING)                       \
  {#ID, KEY, #TYPE, UNIT, #PRESENCE, MEANING},
#include "fsdprt/ManifestSchema.def"
};

/// shard_ranks under a strategy, in words.
constexpr const char *shardRanksText(fsdprt::manifest::ShardRanks shards) {
  switch (shards) {
  case fsdprt::manifest::ShardRanks::WholeGrid:
    return "every rank of the grid";
  case fsdprt::manifest::ShardRanks::OneRank:
    return "1";
  case fsdprt::manifest::ShardRanks::SecondDimension:
    return "the grid's second dimension";
  }
  return "";
}

/// An element type or a strategy: a value some fields take.
struct ValueRow {
  const char *value;
  const char *detail;
  const char *meaning;
};

const ValueRow kDTypes[] = {
#define FSDPRT_MANIFEST_DTYPE(NAME, VALUE, BYTES, FLOAT, MEANING) {VALUE, #BYTES, MEANING},
#include "fsdprt/ManifestSchema.def"
};

const ValueRow kStrategies[] = {
#define FSDPRT_MANIFEST_STRATEGY(NAME, VALUE, SHARDS, MEANING)                                     \
  {VALUE, shardRanksText(fsdprt::manifest::ShardRanks::SHARDS), MEANING},
#include "fsdprt/ManifestSchema.def"
};

/// `Integer` -> `integer`.
std::string lowerCase(const char *word) {
  std::string lower(word);
  for (char &c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

/// Text as Markdown prints it, in a table cell or not: `|` would end the cell,
/// `*` and `\` would mark it up.
std::string plainText(const char *text) {
  std::string escaped;
  for (const char *c = text; *c; ++c) {
    if (*c == '|' || *c == '*' || *c == '\\')
      escaped += '\\';
    escaped += *c;
  }
  return escaped;
}

/// The title, where the page comes from, and what each presence means.
void printIntroduction() {
  std::printf("# The trainer's manifest\n\n"
              "Generated from `runtime/include/fsdprt/ManifestSchema.def` by "
              "fsdprt-manifest-doc: do not edit; `cmake --build build --target fsdp-docs` "
              "refreshes it. docs/Runtime.md, section 2, explains the rules between fields.\n\n"
              "Presence: *required* fields are always there; *conditional* ones exactly when "
              "their meaning says; *optional* ones have a default, given in their meaning; "
              "*informational* ones are written for people and tools, and the runtime does not "
              "read them.\n");
}

/// The table of `object`'s fields, in the schema's order.
void printFields(const char *object) {
  std::printf("\n| Field | Type | Unit | Presence | Meaning |\n|---|---|---|---|---|\n");
  for (const FieldRow &field : kFields) {
    if (std::string(field.object) != object)
      continue;
    std::printf("| `%s` | %s | %s | %s | %s |\n", field.key, lowerCase(field.type).c_str(),
                plainText(field.unit).c_str(), lowerCase(field.presence).c_str(),
                plainText(field.meaning).c_str());
  }
}

/// One object: its path as the heading (the manifest itself has none), its
/// meaning, its fields.
void printObject(const ObjectRow &object) {
  if (*object.path)
    std::printf("\n## `%s`\n\n", object.path);
  else
    std::printf("\n## The manifest\n\n");
  std::printf("%s\n", plainText(object.meaning).c_str());
  printFields(object.id);
}

/// A table of the values a field takes, with a heading and a detail column.
template <size_t N>
void printValues(const char *heading, const char *detail, const ValueRow (&rows)[N]) {
  std::printf("\n## %s\n\n| Value | %s | Meaning |\n|---|---|---|\n", heading, detail);
  for (const ValueRow &row : rows)
    std::printf("| `%s` | %s | %s |\n", row.value, plainText(row.detail).c_str(),
                plainText(row.meaning).c_str());
}

/// Whether every field belongs to an object of the table (one that does not
/// would be left out of the reference).
bool everyFieldHasItsObject() {
  bool placed = true;
  for (const FieldRow &field : kFields) {
    bool found = false;
    for (const ObjectRow &object : kObjects)
      found = found || std::string(object.id) == field.object;
    if (!found)
      std::fprintf(stderr, "fsdprt-manifest-doc: field %s of no object %s\n", field.key,
                   field.object);
    placed = placed && found;
  }
  return placed;
}

} // namespace

int main() {
  if (!everyFieldHasItsObject())
    return 1;
  printIntroduction();
  for (const ObjectRow &object : kObjects)
    printObject(object);
  printValues("Element types (`dtype`)", "Bytes", kDTypes);
  printValues("Strategies (`strategy`)", "Ranks sharing one copy (`shard_ranks`)", kStrategies);
  return 0;
}
