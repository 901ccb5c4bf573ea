// Every catalog signature agrees with op_plugin_functions.yaml, or the entry
// records the difference in [[schema_drift]].
#include "catalog/schema_conformance.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "util/file_io.h"

namespace npufuse::catalog {
namespace {

const char* kSchemaPath = NPUFUSE_SHARED_DIR "/data/op-plugin-26.1.0/op_plugin_functions.yaml";

std::string lines(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

SchemaIndex load_schema() {
  std::vector<std::string> errors;
  SchemaIndex index = SchemaIndex::parse(read_file(kSchemaPath), &errors);
  EXPECT_TRUE(errors.empty()) << "unparsed func lines:\n" << lines(errors);
  return index;
}

void expect_conformance(const Catalog& catalog) {
  ConformanceReport report = check_schema_conformance(catalog.operators(), load_schema());
  if (!report.stale.empty()) std::printf("recorded drift with no difference (informational):\n%s", lines(report.stale).c_str());
  EXPECT_TRUE(report.unexplained.empty()) << report.unexplained.size()
                                          << " difference(s) not recorded in [[schema_drift]]:\n"
                                          << lines(report.unexplained);
}

TEST(SchemaConformanceTest, EmbeddedCatalogMatchesSchemaOrRecordsDrift) {
  if (!std::filesystem::exists(kSchemaPath)) GTEST_SKIP() << kSchemaPath << " not present";
  expect_conformance(Catalog::load(embedded_catalog_files(), "catalog"));
}

TEST(SchemaConformanceTest, FixtureCatalogMatchesSchemaOrRecordsDrift) {
  if (!std::filesystem::exists(kSchemaPath)) GTEST_SKIP() << kSchemaPath << " not present";
  expect_conformance(Catalog::load(directory_catalog_files(NPUFUSE_SOURCE_DIR "/tests/data/ops/catalog"), "fixture"));
}

TEST(SchemaConformanceTest, WholeSchemaParses) {
  if (!std::filesystem::exists(kSchemaPath)) GTEST_SKIP() << kSchemaPath << " not present";
  SchemaIndex index = load_schema();
  EXPECT_GT(index.size(), 1000u);
  const SchemaEntry* fia = index.find("npu_fused_infer_attention_score");
  ASSERT_NE(fia, nullptr);
  EXPECT_EQ(fia->signature.params.size(), 40u);
  EXPECT_TRUE(fia->signature.params[3].kw_only);
  EXPECT_FALSE(fia->signature.params[2].kw_only);
}

// The check itself: an unrecorded difference is reported, a recorded one is not.
TEST(SchemaConformanceTest, ReportsUnrecordedDifferences) {
  SchemaIndex schema = SchemaIndex::parse(
      "official:\n  - func: npu_x(Tensor self, float eps=1e-06, *, int? mode=None) -> Tensor\n", nullptr);
  Operator op;
  op.name = "npu_x";
  op.params = {{"self", "Tensor", std::nullopt, false, {}}, {"eps", "float", "1e-5", false, {}}};
  ConformanceReport r = check_schema_conformance({op}, schema);
  EXPECT_EQ(lines(r.unexplained),
            "npu_x: eps default_differs: doc 1e-5 vs schema 1e-06\n"
            "npu_x: mode extra_in_schema: doc absent vs schema None\n");
  op.schema_drift = {{"eps", DriftKind::DefaultDiffers, "doc says 1e-5"}, {"mode", DriftKind::ExtraInSchema, "new"}};
  EXPECT_TRUE(check_schema_conformance({op}, schema).unexplained.empty());
  op.name = "npu_y";
  r = check_schema_conformance({op}, schema);
  ASSERT_EQ(r.unexplained.size(), 1u);
  EXPECT_EQ(r.unexplained[0], "npu_y: - no_schema_entry: doc has the operator vs schema has no function 'npu_y'");
}

}  // namespace
}  // namespace npufuse::catalog
