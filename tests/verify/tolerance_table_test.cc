#include "verify/tolerance_table.h"

#include <gtest/gtest.h>

namespace npufuse::verify {
namespace {

TEST(ToleranceTable, HasTheThreeFloatDtypesInOrder) {
  const auto& t = tolerance_table();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].dtype, "float32");
  EXPECT_EQ(t[1].dtype, "bfloat16");
  EXPECT_EQ(t[2].dtype, "float16");
}

TEST(ToleranceTable, FewerMantissaBitsMeanLooserBounds) {
  // float32 has 24 mantissa bits, float16 11, bfloat16 8.
  const Tolerance& f32 = tolerance_for("float32");
  const Tolerance& f16 = tolerance_for("float16");
  const Tolerance& bf16 = tolerance_for("bfloat16");
  EXPECT_LT(f32.rtol, f16.rtol);
  EXPECT_LT(f16.rtol, bf16.rtol);
  EXPECT_LT(f32.atol, f16.atol);
  EXPECT_LT(f16.atol, bf16.atol);
  EXPECT_GT(f32.cosine, f16.cosine);
  EXPECT_GT(f16.cosine, bf16.cosine);
  // One bf16 rounding step (2^-8 relative) must pass, or every fused norm would fail.
  EXPECT_GT(bf16.rtol, 1.0 / 256);
}

TEST(ToleranceTable, UnknownDtypeGetsTheStrictestEntry) {
  EXPECT_EQ(tolerance_for("int8").dtype, "float32");
  EXPECT_DOUBLE_EQ(tolerance_for("float32").atol, 1e-5);
  EXPECT_DOUBLE_EQ(tolerance_for("bfloat16").rtol, 2e-2);
}

}  // namespace
}  // namespace npufuse::verify
