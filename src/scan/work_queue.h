#pragma once
// A fixed pool of threads taking numbered tasks from a shared counter: each
// worker claims the next index until none is left, so a slow model never
// holds up the models after it.
#include <cstddef>
#include <functional>

namespace npufuse::scan {

// The number of workers `--jobs 0` means: the hardware's cores (1 when unknown).
unsigned default_jobs();

// Calls `task(i)` once for every i in [0, count) on `jobs` threads (at most
// `count`; the calling thread waits). `task` must not throw: a scan turns
// every failure of one model into that model's result.
void run_parallel(size_t count, unsigned jobs, const std::function<void(size_t)>& task);

}  // namespace npufuse::scan
