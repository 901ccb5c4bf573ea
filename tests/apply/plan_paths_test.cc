// The plan's files and candidate ids found again under another spelling of
// the same paths (apply/plan_paths.h); the CLI's side is
// tests/apply/check_plan_paths.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "apply/apply_error.h"
#include "apply/patch_plan.h"
#include "apply/plan_file.h"
#include "apply/plan_paths.h"
#include "apply_test_support.h"

namespace npufuse::apply {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

// Runs the test body from `dir`, and goes back.
class InFolder {
 public:
  explicit InFolder(const fs::path& dir) : before_(fs::current_path()) { fs::current_path(dir); }
  ~InFolder() { fs::current_path(before_); }

 private:
  fs::path before_;
};

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(PlanPaths, SplitsCandidateIds) {
  auto parts = split_candidate_id("norm.rms_norm@/abs/dir/model.py:52");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->head, "norm.rms_norm");
  EXPECT_EQ(parts->file, "/abs/dir/model.py");
  EXPECT_EQ(parts->line, "52");
  auto numbered = split_candidate_id("ffn.swiglu@a:b/model.py:158#2");  // a ':' in the path; a second match
  ASSERT_TRUE(numbered);
  EXPECT_EQ(numbered->file, "a:b/model.py");
  EXPECT_EQ(numbered->line, "158#2");
  EXPECT_FALSE(split_candidate_id("norm.rms_norm"));
  EXPECT_FALSE(split_candidate_id("norm.rms_norm@model.py"));
  EXPECT_FALSE(split_candidate_id("norm.rms_norm@model.py:x"));
}

TEST(PlanPaths, RecordedFilesAreFoundUnderTheCounterpartOfTheGivenPaths) {
  plan::Plan p;
  p.options.paths = {"models/m/model.py"};
  p.files = {"models/m/model.py", "models/m/layers/attn.py", "other/x.py"};
  PlanFiles same(p, {});
  EXPECT_EQ(same.now("models/m/layers/attn.py"), "models/m/layers/attn.py");
  PlanFiles inside(p, {"model.py"});  // apply run inside models/m
  EXPECT_EQ(inside.now("models/m/model.py"), "model.py");
  EXPECT_EQ(inside.now("models/m/layers/attn.py"), "layers/attn.py");  // a relative import beside it
  EXPECT_EQ(inside.now("other/x.py"), "other/x.py");                     // elsewhere: read as recorded
  PlanFiles absolute(p, {"/srv/m/model.py"});
  EXPECT_EQ(absolute.now("models/m/layers/attn.py"), "/srv/m/layers/attn.py");
  // A count that differs says nothing about which is which.
  PlanFiles two(p, {"model.py", "extra.py"});
  EXPECT_EQ(two.now("models/m/model.py"), "models/m/model.py");
}

TEST(PlanPaths, IdsAndFilesMatchAbsoluteRelativeAndSymlinkedSpellings) {
  ScratchDir dir("plan_paths_ids");
  fs::create_directories(dir.path() / "m");
  write_file_atomic((dir.path() / "m" / "model.py").string(), "x = 1\n");
  fs::create_directory_symlink(dir.path() / "m", dir.path() / "link");
  const std::string absolute = (dir.path() / "m" / "model.py").string();
  plan::Plan p;
  p.options.paths = {absolute};
  p.files = {absolute};
  plan::Candidate c;
  c.id = "norm.rms_norm@" + absolute + ":1";
  plan::Candidate alt;
  alt.id = "norm.other@" + absolute + ":1";
  c.alternatives.push_back(alt);
  p.candidates.push_back(c);
  InFolder here(dir.path() / "m");
  PlanFiles files(p, {"model.py"});
  EXPECT_TRUE(same_file("model.py", absolute));
  EXPECT_TRUE(same_file("../link/model.py", absolute));
  EXPECT_FALSE(same_file("model.py", "missing.py"));
  EXPECT_EQ(files.recorded_file("model.py"), absolute);
  EXPECT_EQ(files.recorded_file("../link/model.py"), absolute);
  EXPECT_EQ(files.recorded_id("norm.rms_norm@model.py:1"), c.id);
  EXPECT_EQ(files.recorded_id("norm.rms_norm@../link/model.py:1"), c.id);
  EXPECT_EQ(files.recorded_id("norm.other@./model.py:1"), alt.id);
  EXPECT_EQ(files.recorded_id(c.id), c.id);
  EXPECT_EQ(files.recorded_id("norm.rms_norm@model.py:2"), "");  // another line
  EXPECT_EQ(files.recorded_id("norm.layer_norm@model.py:1"), "");  // another rule

  // A re-run over the relative spelling: its ids become the plan's.
  plan::Plan fresh;
  fresh.files = {"model.py"};
  plan::Candidate again;
  again.id = "norm.rms_norm@model.py:1";
  again.alternatives.push_back(plan::Candidate{});
  again.alternatives[0].id = "norm.other@model.py:1";
  fresh.candidates.push_back(again);
  files.align(fresh, "plan.json");
  EXPECT_EQ(fresh.candidates[0].id, c.id);
  EXPECT_EQ(fresh.candidates[0].alternatives[0].id, alt.id);
  // Another file loaded: refused, naming both sets.
  plan::Plan other;
  other.files = {"model.py", "extra.py"};
  try {
    files.align(other, "plan.json");
    ADD_FAILURE() << "a re-run loading other files was accepted";
  } catch (const ApplyError& e) {
    EXPECT_NE(std::string(e.what()).find("extra.py"), std::string::npos) << e.what();
  }
}

// The whole path on llama_like: a plan made with an absolute path, applied
// with a relative one from the model's folder, applies what the same
// spelling does, under the plan's ids; --only takes either spelling.
TEST(PlanPaths, AbsolutePlanAppliedWithARelativePath) {
  ScratchDir dir("plan_paths_apply");
  std::string plan = testing::plan_for_model_copy(dir, "llama_like");
  PatchRequest same{plan, {dir.file("model.py")}, {}};
  PatchSet want = make_patches(same);
  ASSERT_FALSE(want.applied.empty());
  InFolder here(dir.path());
  PatchSet relative = make_patches(PatchRequest{plan, {"model.py"}, {}});
  EXPECT_EQ(sorted(relative.applied), sorted(want.applied));
  for (const ManualStep& m : relative.manual) EXPECT_NE(m.where.rfind("model.py:", 0), std::string::npos) << m.where;
  std::string norm = *std::find_if(want.applied.begin(), want.applied.end(),
                                   [](const std::string& id) { return id.rfind("norm.rms_norm@", 0) == 0; });
  std::string spelt_here = "norm.rms_norm@model.py" + norm.substr(norm.rfind(':'));
  PatchSet one = make_patches(PatchRequest{plan, {"model.py"}, {spelt_here}});
  EXPECT_EQ(one.applied, std::vector<std::string>{norm});
}

// A file changed since analyze: refused naming it, in the spelling given now too.
TEST(PlanPaths, ChangedFileRefusedWhateverTheSpelling) {
  ScratchDir dir("plan_paths_stale");
  std::string plan = testing::plan_for_model_copy(dir, "llama_like");
  write_file_atomic(dir.file("model.py"), read_file(dir.file("model.py")) + "\n# edited\n");
  InFolder here(dir.path());
  try {
    make_patches(PatchRequest{plan, {"model.py"}, {}});
    ADD_FAILURE() << "a changed file was patched";
  } catch (const ApplyError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("model.py"), std::string::npos) << what;
    EXPECT_NE(what.find("changed since"), std::string::npos) << what;
    EXPECT_NE(what.find("(read as model.py)"), std::string::npos) << what;
  }
}

// A plan file listing a file without its hash cannot tell its changes.
TEST(PlanPaths, AFileWithoutAHashIsRefused) {
  ScratchDir dir("plan_paths_nohash");
  std::string plan_path = testing::plan_for_model_copy(dir, "llama_like");
  plan::Plan p = read_plan_file(plan_path);
  p.files.push_back(dir.file("other.py"));
  try {
    check_plan_is_current(p, plan_path);
    ADD_FAILURE() << "a file without a hash was accepted";
  } catch (const ApplyError& e) {
    EXPECT_NE(std::string(e.what()).find("other.py"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace npufuse::apply
