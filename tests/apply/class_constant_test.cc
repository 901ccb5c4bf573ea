// class_constant: an expression of one method that another method of the
// same class may spell as written, because it reads only attributes that no
// method but __init__ sets.
#include <gtest/gtest.h>

#include "apply/source_functions.h"

namespace npufuse::apply {
namespace {

constexpr const char* kMoe = R"(import torch
from torch import nn


class Moe(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])
        self.top_k = 2
        self.calls = 0

    def route(self, ids):
        self.calls = self.calls + 1
        mask = torch.nn.functional.one_hot(ids, num_classes=len(self.experts))
        wide = torch.zeros(ids.shape[0], max(self.top_k, 1) * 2)
        return mask, self.calls * 2, wide, ids.shape[0] + self.top_k

    def forward(self, x, ids):
        return self.route(ids)


def helper(self):
    return len(self.experts)
)";

struct Fixture {
  model::SourceSet set = model::SourceSet::from_texts({{"m.py", kMoe}});
  const model::ModelFile& file = *set.files().front();
  std::string text = kMoe;
  FunctionAt forward = *function_named(set, "Moe.forward");

  std::string constant(const std::string& expression) const {
    size_t at = text.find(expression);
    EXPECT_NE(at, std::string::npos) << expression;
    return class_constant(forward, static_cast<uint32_t>(at), static_cast<uint32_t>(at + expression.size()));
  }
};

TEST(ClassConstant, BuiltinsOverAttributesOnlyInitSetsAreTheSameInAnotherMethod) {
  Fixture f;
  EXPECT_EQ(f.constant("len(self.experts)"), "len(self.experts)");
  EXPECT_EQ(f.constant("max(self.top_k, 1) * 2"), "max(self.top_k, 1) * 2");
}

TEST(ClassConstant, AnAttributeAnotherMethodChangesOrALocalIsNot) {
  Fixture f;
  EXPECT_EQ(f.constant("self.calls * 2"), "");         // route() changes self.calls
  EXPECT_EQ(f.constant("ids.shape[0] + self.top_k"), "");  // reads a local
}

TEST(ClassConstant, OnlyInTheSameClass) {
  Fixture f;
  // helper() is a module-level function, not a method of Moe.
  size_t at = f.text.rfind("len(self.experts)");
  EXPECT_EQ(class_constant(f.forward, static_cast<uint32_t>(at), static_cast<uint32_t>(at + 17)), "");
}

}  // namespace
}  // namespace npufuse::apply
