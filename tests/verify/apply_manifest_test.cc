#include "verify/apply_manifest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "util/file_io.h"

namespace npufuse::verify {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const char* name) {
  fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(ApplyManifest, RoundTripsThePathsAsGivenWithTheFolderApplyRanIn) {
  fs::path dir = scratch("npufuse_manifest_roundtrip");
  write_apply_manifest(dir.string(), {"plan.json", {"m/model.py"}, {"norm.rms_norm@m/model.py:3"}, ""});
  ApplyManifest m = read_apply_manifest(dir.string());
  EXPECT_TRUE(fs::path(m.plan).is_absolute());
  EXPECT_EQ(fs::path(m.plan).filename(), "plan.json");
  // the candidate ids spell the file as apply was given it: so do the paths
  EXPECT_EQ(m.paths, std::vector<std::string>{"m/model.py"});
  EXPECT_EQ(m.applied, std::vector<std::string>{"norm.rms_norm@m/model.py:3"});
  EXPECT_TRUE(fs::equivalent(m.cwd, fs::current_path())) << m.cwd;
  fs::remove_all(dir);
}

TEST(ApplyManifest, MissingOrBrokenManifestIsAnInputError) {
  fs::path dir = scratch("npufuse_manifest_broken");
  EXPECT_THROW(read_apply_manifest(dir.string()), FileError);
  std::ofstream(dir / kApplyManifestName) << "{\n  \"plan\": \"p.json\",\n  \"applied\": [\n";
  try {
    read_apply_manifest(dir.string());
    FAIL() << "a truncated manifest was read";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("npufuse-apply.json:"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace npufuse::verify
