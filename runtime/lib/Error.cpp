//===- Error.cpp - The runtime's one error path ---------------------------===//

#include "Error.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace fsdprt {

void fatal(const std::string &message) {
  // Progress lines already printed should come before the error.
  std::fflush(stdout);
  // The contract is one line per error, whatever a message embeds (e.g. the
  // JSON parser's text).
  std::string line = message;
  for (char &c : line)
    if (c == '\n' || c == '\r')
      c = ' ';
  std::fprintf(stderr, "trainer: error: %s\n", line.c_str());
  std::exit(1);
}

std::string formatReal(double value) {
  char buffer[64];
  std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

} // namespace fsdprt
