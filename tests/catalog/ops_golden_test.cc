// Golden outputs of `npufuse ops` against the fixture catalog and docstring
// file (tests/data/ops/), in both languages. Each golden file holds the
// command, its stdout, its stderr and its exit status.
// NPUFUSE_UPDATE_GOLDENS=1 rewrites the golden files instead of comparing.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "../support/cli_golden.h"

namespace {

struct GoldenCase {
  const char* name;
  const char* args;  // after `npufuse ops`
};

// Test names in ctest show the case name, not the struct's bytes.
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

#define FIXTURE "--catalog tests/data/ops/catalog --docs-path tests/data/ops/_op_plugin_docs.py "

const GoldenCase kCases[] = {
    {"show_rms_norm_en", FIXTURE "show npu_rms_norm"},
    {"show_rms_norm_zh", FIXTURE "--lang zh show npu_rms_norm"},
    {"show_rotary_mul_en", FIXTURE "show npu_rotary_mul"},
    {"show_swiglu_disagrees_en", FIXTURE "show npu_swiglu"},
    {"show_swiglu_disagrees_zh", FIXTURE "--lang zh show npu_swiglu"},
    {"show_docstring_only_en", FIXTURE "show npu_fast_gelu"},
    {"show_docstring_only_zh", FIXTURE "--lang zh show npu_fast_gelu"},
    {"show_options_after_subcommand_zh", "show npu_apply_rotary_pos_emb " FIXTURE "--lang zh"},
    {"show_near_miss_en", FIXTURE "show npu_rotary_mull"},
    {"show_near_miss_zh", FIXTURE "--lang zh show rms_norm"},
    {"show_json", FIXTURE "--json show npu_rotary_mul"},
    {"search_rope_en", FIXTURE "search rope"},
    {"search_rope_zh", FIXTURE "--lang zh search rope"},
    {"search_chinese_keyword_zh", FIXTURE "--lang zh search 旋转位置编码"},
    {"search_max_en", FIXTURE "search npu --max 2"},
    {"search_no_match_en", FIXTURE "search flux_capacitor"},
    {"search_json", FIXTURE "--json search rotary"},
    {"list_en", FIXTURE "list"},
    {"list_prefix_zh", FIXTURE "--lang zh list --prefix npu_r"},
    {"list_no_match_en", FIXTURE "list --prefix zzz"},
    {"list_json", FIXTURE "--json list --prefix npu_s"},
    {"list_fallback_en", "--catalog tests/data/ops/catalog list"},
    {"list_fallback_zh", "--catalog tests/data/ops/catalog --lang zh list"},
    {"bad_docs_not_python", "--catalog tests/data/ops/catalog --docs-path tests/data/ops/not_python.sh list"},
    {"bad_docs_no_entries", "--catalog tests/data/ops/catalog --docs-path tests/data/ops/no_entries.py list"},
    {"bad_docs_missing", "--catalog tests/data/ops/catalog --docs-path tests/data/ops/absent.py list"},
    {"bad_catalog_syntax", "--catalog tests/data/ops/bad_catalog --docs-path tests/data/ops/_op_plugin_docs.py list"},
    {"usage_missing_name", FIXTURE "show"},
    {"usage_bad_lang", FIXTURE "--lang fr list"},
};

// Discovery answers "nothing found" (/bin/false prints no site-packages), so
// no installed torch_npu can change the output.
class OpsGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(OpsGoldenTest, MatchesGolden) {
  const GoldenCase& c = GetParam();
  std::string path = std::string(NPUFUSE_SOURCE_DIR) + "/tests/data/ops/golden/" + c.name + ".txt";
  npufuse::testing::expect_golden(path, npufuse::testing::run_cli_case("ops", c.args, "NPUFUSE_PYTHON=/bin/false ", c.name));
}

INSTANTIATE_TEST_SUITE_P(Ops, OpsGoldenTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return std::string(info.param.name); });

}  // namespace
