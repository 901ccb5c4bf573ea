// Golden inventories of the test models: the whole `inspect --format json`
// output per model with its config.json, compared with
// tests/model/golden/<model>.json. Paths are stored relative to the source
// tree. NPUFUSE_UPDATE_GOLDENS=1 rewrites the files instead (review them
// before committing: a golden must be right, not only stable).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/inventory_json.h"
#include "model_test_support.h"

namespace npufuse::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The inventory JSON with the source directory taken out of every path.
json golden_view(const Inventory& inv) {
  std::string text = inventory_to_json(inv).dump();
  std::string prefix = std::string(NPUFUSE_SOURCE_DIR) + "/";
  for (size_t at = 0; (at = text.find(prefix, at)) != std::string::npos;) text.erase(at, prefix.size());
  return json::parse(text);
}

std::vector<std::string> models_with_config() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(std::string(NPUFUSE_SOURCE_DIR) + "/tests/models"))
    if (e.is_directory() && fs::exists(e.path() / "config.json") && fs::exists(e.path() / "model.py"))
      names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Goldens, EveryTestModelMatchesItsGolden) {
  bool update = std::getenv("NPUFUSE_UPDATE_GOLDENS") && std::string(std::getenv("NPUFUSE_UPDATE_GOLDENS")) == "1";
  std::vector<std::string> names = models_with_config();
  ASSERT_GE(names.size(), 8u);
  for (const std::string& name : names) {
    auto m = testing::load_model(name, true);
    json got = golden_view(m->inv);
    fs::path path = fs::path(NPUFUSE_SOURCE_DIR) / "tests/model/golden" / (name + ".json");
    if (update) {
      fs::create_directories(path.parent_path());
      std::ofstream(path) << got.dump(1) << "\n";
      continue;
    }
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path << " missing; run with NPUFUSE_UPDATE_GOLDENS=1";
    std::stringstream text;
    text << in.rdbuf();
    json want = json::parse(text.str());
    EXPECT_EQ(got, want) << name << ": differs from " << path << "\ngot:\n" << got.dump(1);
  }
}

}  // namespace
}  // namespace npufuse::model
