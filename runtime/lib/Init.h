//===- Init.h - Initial parameter values ------------------------*- C++ -*-===//
//
// docs/Runtime.md, section 3: a parameter element's initial value depends only
// on (seed, parameter name, element index). Filling any sub-range gives the
// same bytes as filling the whole tensor, which is what lets a rank initialise
// just its shard.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_INIT_H
#define FSDPRT_INIT_H

#include "Manifest.h"

#include <cstdint>
#include <vector>

namespace fsdprt {

/// The product of every dimension but the last.
double fanIn(const std::vector<int64_t> &shape);

/// The initial value (in double, before rounding to the parameter's dtype) of
/// the element with row-major index `index` of the parameter with id
/// `paramId` (the FNV-1a hash of its name).
double initialValue(const InitSpec &init, double fanIn, uint64_t seed, uint64_t paramId,
                    uint64_t index);

/// Writes the initial values of elements [begin, end) of `param`, rounded to
/// its dtype, to `dst` (which holds end - begin elements).
void initializeRange(const ParamSpec &param, uint64_t seed, int64_t begin, int64_t end,
                     void *dst);

/// Writes every parameter's initial values at its offset in `arena`.
void initializeParameters(const Manifest &manifest, uint64_t seed, uint8_t *arena);

} // namespace fsdprt

#endif // FSDPRT_INIT_H
