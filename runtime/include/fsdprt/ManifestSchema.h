//===- ManifestSchema.h - the manifest's fields, named once -----*- C++ -*-===//
//
// One constant per row of ManifestSchema.def, in the namespace of its object:
// `fsdprt::manifest::root::kArenaBytes.key` is "arena_bytes". The compiler's
// writer (llvm::json) and the runtime's reader (nlohmann::json) spell every
// key through these constants, so a misspelt field does not compile.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_MANIFESTSCHEMA_H
#define FSDPRT_MANIFESTSCHEMA_H

namespace fsdprt::manifest {

/// The format this table describes: the manifest's `version`.
inline constexpr int kFormatVersion = 2;

enum class FieldType { Integer, Number, String, Boolean, Object, Array };

/// Required: always present. Conditional: present exactly when its meaning
/// says. Optional: the runtime has a default. Informational: for people and
/// tools; the runtime does not read it.
enum class Presence { Required, Conditional, Optional, Informational };

/// A field of one object of the manifest.
struct Field {
  const char *key;
  FieldType type;
  const char *unit; // "" when it counts nothing
  Presence presence;
  const char *meaning;
};

/// An object of the manifest and where it lies (`units[]`: each element of
/// `units`; "" for the manifest itself).
struct Object {
  const char *id;
  const char *path;
  const char *meaning;
};

#define FSDPRT_MANIFEST_OBJECT(ID, PATH, MEANING) namespace ID {}
#define FSDPRT_MANIFEST_FIELD(ID, NAME, KEY, TYPE, UNIT, PRESENCE, MEANING)                       \
  namespace ID {                                                                                   \
  inline constexpr Field k##NAME{KEY, FieldType::TYPE, UNIT, Presence::PRESENCE, MEANING};         \
  }
#include "fsdprt/ManifestSchema.def"

} // namespace fsdprt::manifest

#endif // FSDPRT_MANIFESTSCHEMA_H
