//===- CandidateErrors.h - a plan candidate's errors, kept as its reason -*- C++ -*-===//
//
// The plan searches (FitSearch.cpp, FastestPlan.cpp) compile candidates that
// may not compile; their errors are reasons, not output.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_PLANNING_CANDIDATEERRORS_H
#define FSDP_PLANNING_CANDIDATEERRORS_H

#include "mlir/IR/Diagnostics.h"

#include <string>

namespace mlir::fsdp {

/// A candidate's errors are its reason for not being a fix: the first one is
/// kept (and reported for single changes) instead of being printed. Each
/// thread compiling a candidate collects into that candidate's string.
class CandidateErrors {
public:
  explicit CandidateErrors(std::string &first) : previous(current) { current = &first; }
  ~CandidateErrors() { current = previous; }

  /// Routes the context's errors to the current thread's candidate while the
  /// search runs.
  struct Capture : ScopedDiagnosticHandler {
    explicit Capture(MLIRContext *context)
        : ScopedDiagnosticHandler(context, [](Diagnostic &diagnostic) {
            if (current && current->empty() &&
                diagnostic.getSeverity() == DiagnosticSeverity::Error)
              *current = diagnostic.str();
            return success();
          }) {}
  };

private:
  static inline thread_local std::string *current = nullptr;
  std::string *previous;
};

} // namespace mlir::fsdp

#endif // FSDP_PLANNING_CANDIDATEERRORS_H
