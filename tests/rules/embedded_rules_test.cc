// The rules embedded in the binary: they load, and everything they name
// (operators, constraints, fixtures, documentation sections) exists.
#include <gtest/gtest.h>

#include <set>

#include "catalog/catalog.h"
#include "rules/rule_docs.h"
#include "rules/ruleset.h"

namespace npufuse::rules {
namespace {

// Loaded once for the suite and released before exit: parsed files return
// their memory to a per-thread pool that no longer exists when static
// objects are destroyed.
class EmbeddedRules : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    rules_ = new RuleSet(RuleSet::load(embedded_rule_files(), "rules"));
    catalog_ = new catalog::Catalog(catalog::Catalog::load(catalog::embedded_catalog_files(), "catalog"));
  }
  static void TearDownTestSuite() {
    delete rules_;
    delete catalog_;
  }
  static const RuleSet* rules_;
  static const catalog::Catalog* catalog_;
};
const RuleSet* EmbeddedRules::rules_ = nullptr;
const catalog::Catalog* EmbeddedRules::catalog_ = nullptr;

TEST_F(EmbeddedRules, EveryRuleFileLoads) {
  std::set<std::string> rule_paths;
  for (const auto& f : embedded_rule_files())
    if (f.path.find("/fixtures/") == std::string::npos) rule_paths.insert("rules/" + f.path);
  ASSERT_FALSE(rule_paths.empty());
  std::set<std::string> loaded;
  for (const Rule& r : rules_->rules()) loaded.insert(r.path);
  EXPECT_EQ(loaded, rule_paths);
}

TEST_F(EmbeddedRules, SortedByIdAndFindable) {
  const auto& rules = rules_->rules();
  for (size_t i = 1; i < rules.size(); ++i) EXPECT_LT(rules[i - 1].id, rules[i].id);
  for (const Rule& r : rules) EXPECT_EQ(rules_->find(r.id), &r);
  EXPECT_EQ(rules_->find("norm.no_such_rule"), nullptr);
}

TEST_F(EmbeddedRules, IdsFollowFamilyAndStem) {
  for (const Rule& r : rules_->rules()) {
    std::string stem = r.path.substr(r.path.rfind('/') + 1);
    stem = stem.substr(0, stem.size() - 3);
    EXPECT_EQ(r.id, r.family + "." + stem);
    EXPECT_EQ(r.path, "rules/" + r.family + "/" + stem + ".py");
  }
}

TEST_F(EmbeddedRules, EveryEmittedApiIsCatalogued) {
  // A prerequisite-only rule (a mechanical refactor) may emit no operator.
  for (const Rule& r : rules_->rules()) {
    for (const auto& api : r.apis) EXPECT_NE(catalog_->find(api), nullptr) << r.id << " emits " << api;
    for (const auto& reject : r.rejects)
      EXPECT_NE(catalog_->find(reject.api), nullptr) << r.id << " rejects " << reject.api;
  }
}

TEST_F(EmbeddedRules, EveryCheckNamesARealApiAndConstraint) {
  for (const Rule& r : rules_->rules())
    for (const auto& check : r.checks) {
      std::string api = check.substr(0, check.find(':'));
      std::string constraint = check.substr(check.find(':') + 1);
      const catalog::Operator* op = catalog_->find(api);
      ASSERT_NE(op, nullptr) << r.id << ": " << check;
      if (constraint == "*") continue;
      bool found = false;
      for (const auto& c : op->constraints) found = found || c.id == constraint;
      EXPECT_TRUE(found) << r.id << ": " << api << " has no constraint " << constraint;
    }
}

TEST_F(EmbeddedRules, EveryNearMissFileIsEmbedded) {
  std::set<std::string> paths;
  for (const auto& f : embedded_rule_files()) paths.insert(f.path);
  for (const Rule& r : rules_->rules())
    for (const auto& nm : r.near_misses) {
      EXPECT_TRUE(paths.count(r.family + "/" + nm.file)) << r.id << ": " << nm.file;
      EXPECT_FALSE(nm.reason.empty()) << r.id << ": " << nm.file;
    }
}

TEST_F(EmbeddedRules, DocumentationHasEverySectionInBothLanguages) {
  for (const Rule& r : rules_->rules()) {
    ASSERT_EQ(r.doc_en.size(), doc_headings_en().size()) << r.id;
    ASSERT_EQ(r.doc_zh.size(), doc_headings_zh().size()) << r.id;
    for (size_t i = 0; i < r.doc_en.size(); ++i) {
      EXPECT_EQ(r.doc_en[i].heading, doc_headings_en()[i]) << r.id;
      EXPECT_FALSE(r.doc_en[i].body.empty()) << r.id << ": " << r.doc_en[i].heading;
      EXPECT_EQ(r.doc_zh[i].heading, doc_headings_zh()[i]) << r.id;
      EXPECT_FALSE(r.doc_zh[i].body.empty()) << r.id << ": " << r.doc_zh[i].heading;
    }
    EXPECT_FALSE(r.summary_en.empty()) << r.id;
    EXPECT_FALSE(r.summary_zh.empty()) << r.id;
  }
}

TEST_F(EmbeddedRules, FunctionsPointIntoTheRuleFile) {
  for (const Rule& r : rules_->rules()) {
    ASSERT_NE(r.file, nullptr) << r.id;
    ASSERT_NE(r.replace, nullptr) << r.id;
    EXPECT_FALSE(r.searches.empty()) << r.id;
    EXPECT_EQ(r.file->text_of(r.replace).substr(0, 12), "def replace(") << r.id;
    for (const auto* s : r.searches) EXPECT_EQ(s->name.substr(0, 6), "search") << r.id;
    for (const auto* n : r.naives) EXPECT_EQ(n->name.substr(0, 5), "naive") << r.id;
    for (const auto* l : r.lookalikes) EXPECT_EQ(l->name.substr(0, 9), "lookalike") << r.id;
  }
}

TEST_F(EmbeddedRules, RmsNormMetadataAsWritten) {
  const Rule* r = rules_->find("norm.rms_norm");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->module, "norm");
  EXPECT_EQ(r->safety, "safe");
  EXPECT_EQ(r->apis, std::vector<std::string>{"npu_rms_norm"});
  EXPECT_EQ(r->stages, (std::vector<std::string>{"prefill", "decode"}));
  EXPECT_EQ(r->doc_en[0].heading, "What it does");
  EXPECT_EQ(r->literal["sizes"]["H"], 64);
  // inputs keep their source order: it is the parameter order.
  std::vector<std::string> inputs;
  for (const auto& [name, _] : r->literal["inputs"].items()) inputs.push_back(name);
  EXPECT_EQ(inputs, (std::vector<std::string>{"hidden_states", "weight", "eps"}));
}

}  // namespace
}  // namespace npufuse::rules
