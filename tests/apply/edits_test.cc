#include <gtest/gtest.h>

#include "apply/edits.h"

namespace npufuse::apply {
namespace {

TEST(Edits, AppliedInPositionOrderWithBytesOutsideUntouched) {
  std::string text = "a = 1  # one\nb = 2\n";
  std::vector<Edit> edits = sorted_edits({Edit{"f.py", 17, 18, "3", "y"}, Edit{"f.py", 4, 5, "10", "x"}});
  ASSERT_EQ(edits.size(), 2u);
  EXPECT_EQ(edits[0].candidate, "x");
  EXPECT_EQ(apply_edits(text, edits), "a = 10  # one\nb = 3\n");
}

TEST(Edits, InsertionAtTheEndOfAnotherEditIsAllowed) {
  std::vector<Edit> edits = sorted_edits({Edit{"f.py", 0, 3, "xyz", "a"}, Edit{"f.py", 3, 3, "!", ""}});
  EXPECT_EQ(apply_edits("abcdef", edits), "xyz!def");
}

TEST(Edits, OverlappingEditsAreAConflictNamingBothCandidates) {
  try {
    sorted_edits({Edit{"f.py", 0, 5, "x", "rope.a@f.py:1"}, Edit{"f.py", 3, 8, "y", "rope.b@f.py:1"}});
    FAIL() << "expected EditConflict";
  } catch (const EditConflict& e) {
    EXPECT_NE(std::string(e.what()).find("rope.a@f.py:1"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("rope.b@f.py:1"), std::string::npos);
  }
  EXPECT_THROW(sorted_edits({Edit{"f.py", 2, 2, "x", "a"}, Edit{"f.py", 2, 2, "y", "b"}}), EditConflict);
}

}  // namespace
}  // namespace npufuse::apply
