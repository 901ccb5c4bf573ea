#include "util/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace npufuse::util {
namespace {

TEST(RunParallel, EveryIndexRunsExactlyOnce) {
  for (unsigned jobs : {0u, 1u, 3u, 8u}) {
    std::vector<std::atomic<int>> seen(1000);
    run_parallel(seen.size(), jobs, [&](size_t i) { seen[i]++; });
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "index " << i << " jobs " << jobs;
  }
}

TEST(RunParallel, UsesSeveralThreadsWhenAsked) {
  std::mutex m;
  std::set<std::thread::id> threads;
  std::atomic<int> waiting{0};
  run_parallel(4, 4, [&](size_t) {
    {
      std::lock_guard lock(m);
      threads.insert(std::this_thread::get_id());
    }
    // Hold each task until all four started: only possible on four threads.
    waiting++;
    while (waiting.load() < 4) std::this_thread::yield();
  });
  EXPECT_EQ(threads.size(), 4u);
}

TEST(RunParallel, NothingToDoIsFine) {
  bool called = false;
  run_parallel(0, 4, [&](size_t) { called = true; });
  EXPECT_FALSE(called);
  EXPECT_GE(default_jobs(), 1u);
}

}  // namespace
}  // namespace npufuse::util
