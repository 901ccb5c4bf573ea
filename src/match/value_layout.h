#pragma once
// The axis order of a 4-D attention tensor as the model's code shows it:
// the head split upstream of the value (`x.view(b, s, n, d)`: BSND), then
// each transpose of the sequence and head axes between it and the value.
// Used by RULE["match"]["layouts"] (a cache appended along axis 1 is the
// sequence axis only in BSND).
#include <string>

#include "model/dataflow.h"

namespace npufuse::match {

struct ValueLayout {
  std::string layout;    // "BSND", "BNSD", or "" when the code does not show it
  std::string evidence;  // the split and the transposes, or why it is not known
};

ValueLayout layout_of(const model::FunctionDataflow& g, int value);

}  // namespace npufuse::match
