#pragma once
// Proving from the source that the boolean buffer a chain selects with
// (`torch.where(self.bias[:, :, kl - ql : kl, :kl], scores, min)`: GPT-2,
// GPT-J, GPT-Neo, CodeGen) is the causal lower triangle aligned to the last
// query, which is what FIA's compressed mask with sparse_mode 3 computes.
// The prerequisite bool_buffer_is_causal asks the engineer to confirm it;
// where the code shows it, apply says so and goes on:
// - the class's __init__ registers the buffer once as
//   torch.tril(torch.ones((n, n), dtype=torch.bool or torch.uint8)), maybe
//   viewed to (1, 1, n, n), and nothing else in the class writes it;
// - the chain reads it as self.<buffer>[:, :, K - Q : K, :K], where K and Q
//   are assigned the sequence length (`.size(-2)` / `.shape[-2]`) of the
//   function parameters the chain's key and query are bound to.
#include <string>

#include "model/source_set.h"
#include "plan/plan.h"

namespace npufuse::apply {

struct CausalBuffer {
  bool met = false;
  std::string where;  // file:line: the registration when met, else the place the reason is about
  std::string why;    // met: the evidence; otherwise what is not shown
};

// For the binding of `parameter` (the rule's mask parameter) of `c`.
CausalBuffer causal_buffer(const plan::Candidate& c, const std::string& parameter, const model::SourceSet& sources);

}  // namespace npufuse::apply
