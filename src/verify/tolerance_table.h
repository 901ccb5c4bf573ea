#pragma once
// The precision bar a replacement must meet, per activation dtype. An element
// passes when |replacement - original| <= atol + rtol * |original|; a tensor
// passes when every element does and the cosine similarity of the two is at
// least `cosine`. docs/verify.md gives the reasons for each number.
#include <string>
#include <vector>

namespace npufuse::verify {

struct Tolerance {
  std::string dtype;  // float32 | bfloat16 | float16
  double atol = 0;
  double rtol = 0;
  double cosine = 1;
};

// The table, in a fixed order (float32, bfloat16, float16).
const std::vector<Tolerance>& tolerance_table();

// The entry for a dtype name; float32's for anything the table lacks
// (integer outputs are compared exactly by the harness's own rules).
const Tolerance& tolerance_for(const std::string& dtype);

}  // namespace npufuse::verify
