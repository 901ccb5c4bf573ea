#pragma once
// Wall time per analysis stage, appended to StageTimes when one is asked for.
#include <chrono>
#include <string>

#include "plan/analyze.h"

namespace npufuse::plan {

class StageTimer {
 public:
  explicit StageTimer(StageTimes* times) : times_(times), start_(std::chrono::steady_clock::now()) {}

  // Records the time since the previous lap (or construction) under `stage`.
  void lap(const std::string& stage) {
    auto now = std::chrono::steady_clock::now();
    if (times_) times_->ms.emplace_back(stage, std::chrono::duration<double, std::milli>(now - start_).count());
    start_ = now;
  }

 private:
  StageTimes* times_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace npufuse::plan
