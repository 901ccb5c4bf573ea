#pragma once
// Input an apply run cannot act on (a stale or malformed plan, an unknown
// candidate id, an output directory that would overwrite the inputs). The
// message names the file, and the line and column where there is one.
#include <stdexcept>

namespace npufuse::apply {

class ApplyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace npufuse::apply
