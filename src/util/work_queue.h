#pragma once
// A fixed pool of threads taking numbered tasks from a shared counter: each
// worker claims the next index until none is left, so a slow task (a large
// model in a tree scan, a long file in `npufuse parse`) never holds up the
// tasks after it.
#include <cstddef>
#include <functional>

namespace npufuse::util {

// The number of workers `--jobs 0` means: the hardware's cores (1 when unknown).
unsigned default_jobs();

// Calls `task(i)` once for every i in [0, count) on `jobs` threads (0: one
// per core; at most `count`; the calling thread waits). `task` must not
// throw: each caller turns the failure of one task into that task's result.
void run_parallel(size_t count, unsigned jobs, const std::function<void(size_t)>& task);

}  // namespace npufuse::util
