//===- Error.h - The runtime's one error path -------------------*- C++ -*-===//
//
// Every error the trainer can hit (bad flag, bad manifest, bad data, a
// non-finite loss) ends the same way: one line `trainer: error: <message>` on
// stderr and exit status 1. There is no recovery to do in a trainer, so the
// components report where they detect the problem, with the context they have.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ERROR_H
#define FSDPRT_ERROR_H

#include <string>

namespace fsdprt {

/// Prints `trainer: error: <message>` (on one line) to stderr and exits with
/// status 1.
[[noreturn]] void fatal(const std::string &message);

/// Formats a real number for a message: shortest form that reads back exactly.
std::string formatReal(double value);

} // namespace fsdprt

#endif // FSDPRT_ERROR_H
