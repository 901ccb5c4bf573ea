#include "util/work_queue.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace npufuse::util {

unsigned default_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

void run_parallel(size_t count, unsigned jobs, const std::function<void(size_t)>& task) {
  if (count == 0) return;
  size_t workers = std::clamp<size_t>(jobs == 0 ? default_jobs() : jobs, 1, count);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) task(i);
  };
  if (workers == 1) {
    work();
    return;
  }
  std::vector<std::jthread> pool;
  pool.reserve(workers);
  for (size_t w = 0; w < workers; ++w) pool.emplace_back(work);
}  // the jthreads join here

}  // namespace npufuse::util
