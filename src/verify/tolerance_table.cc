#include "verify/tolerance_table.h"

namespace npufuse::verify {

const std::vector<Tolerance>& tolerance_table() {
  // float32: the fused kernels reorder sums (a mean over H, a softmax
  // denominator), which moves the last few of 24 mantissa bits.
  // bfloat16: 8 mantissa bits, so one rounding step is 2^-8 ~ 0.4% relative;
  // fused kernels round once where eager code rounds after every op, which
  // is a step or two apart: 2% relative, 1e-2 absolute near zero.
  // float16: 11 mantissa bits, one step ~ 0.05%: 1% relative, 1e-3 absolute.
  static const std::vector<Tolerance> table = {
      {"float32", 1e-5, 1e-4, 0.99999},
      {"bfloat16", 1e-2, 2e-2, 0.999},
      {"float16", 1e-3, 1e-2, 0.9995},
  };
  return table;
}

const Tolerance& tolerance_for(const std::string& dtype) {
  for (const Tolerance& t : tolerance_table())
    if (t.dtype == dtype) return t;
  return tolerance_table().front();
}

}  // namespace npufuse::verify
