// The arena's block pool and arenas that live in static storage.
#include <gtest/gtest.h>

#include "frontend/arena.h"

namespace npufuse::frontend {
namespace {

TEST(Arena, AllocationsAreAlignedAndDistinct) {
  Arena a;
  auto* p = static_cast<char*>(a.allocate(3, 1));
  auto* q = static_cast<char*>(a.allocate(8, 8));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 8, 0u);
  EXPECT_GE(q, p + 3);
  // A request larger than a block gets its own block.
  void* big = a.allocate(1 << 20, 16);
  EXPECT_NE(big, nullptr);
  EXPECT_GE(a.bytes_reserved(), size_t{2} * 256 * 1024);
}

TEST(Arena, BlocksAreReusedByTheNextArena) {
  void* first = nullptr;
  {
    Arena a;
    first = a.allocate(16, 8);
  }
  Arena b;
  EXPECT_EQ(b.allocate(16, 8), first);  // the pooled block comes back
}

// Static objects are destroyed after the thread's pool; releasing into a
// destroyed pool used to abort the process at exit, which fails this test.
TEST(Arena, ArenaInStaticStorageIsReleasedAtExit) {
  static Arena held;
  EXPECT_NE(held.allocate(64, 8), nullptr);
}

}  // namespace
}  // namespace npufuse::frontend
