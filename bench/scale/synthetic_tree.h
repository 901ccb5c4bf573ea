#pragma once
// Synthetic model trees for bench/scale: N model folders, each a copy of one
// of the test models with its classes renamed and a varying amount of
// padding (comment blocks and small module-level helpers, which the scan
// parses and matches like any other code), so that names and sizes differ
// from folder to folder as in a real checkout.
#include <cstddef>
#include <string>

namespace npufuse::bench {

struct TreeStats {
  size_t files = 0;  // model files written
  size_t bytes = 0;  // their total size
};

// Writes `count` folders under `root` (created; must be empty or absent),
// taking the models of `models_dir` (each <name>/model.py + config.json) in turn.
TreeStats build_synthetic_tree(const std::string& models_dir, const std::string& root, size_t count);

}  // namespace npufuse::bench
