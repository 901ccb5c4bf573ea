// Ruling a pattern out of a function before walking it (pattern_needs.h) is
// only a shortcut: on every graph of every test model, the matches and the
// near-misses are the same with it and without it.
#include <gtest/gtest.h>

#include <filesystem>

#include "match/match_memo.h"
#include "match/pattern_needs.h"
#include "match/target_index.h"
#include "match_support.h"

namespace npufuse::match {
namespace {

std::string describe(const MatchResult& r) {
  std::string out;
  for (const Match& m : r.matches) {
    out += "match " + m.pattern->rule->id + "/" + m.pattern->alternative;
    for (int op : m.ops) out += " " + std::to_string(op);
    out += "\n";
  }
  for (const NearMissTrace& n : r.near_misses) {
    out += "near-miss " + (n.pattern->rule ? n.pattern->rule->id : n.pattern->alternative) + " at " +
           std::to_string(n.anchor_op) + " " + std::to_string(n.matched_steps) + "/" +
           std::to_string(n.pattern_steps) + ": " + n.reason + "\n";
    for (const std::string& step : n.trace) out += "  " + step + "\n";
  }
  return out;
}

TEST(PatternNeeds, RulingOutEarlyChangesNoMatchAndNoNearMiss) {
  namespace fs = std::filesystem;
  MatchOptions walk_all;
  walk_all.rule_out_early = false;
  int graphs = 0, ruled_out_somewhere = 0;
  for (const auto& entry : fs::directory_iterator(std::string(NPUFUSE_SOURCE_DIR) + "/tests/models")) {
    fs::path model = entry.path() / "model.py";
    if (!fs::exists(model)) continue;
    auto loaded = testing::load_graphs(model.string());
    for (const model::FunctionDataflow& g : loaded->graphs) {
      ++graphs;
      std::string fast = describe(match_patterns(testing::compiled_rules().patterns, g));
      std::string slow = describe(match_patterns(testing::compiled_rules().patterns, g, walk_all));
      EXPECT_EQ(fast, slow) << model << " " << g.function;
      TargetIndex index(g);
      std::vector<char> present;
      for (const Pattern& p : testing::compiled_rules().patterns) {
        ASSERT_TRUE(p.vocabulary) << p.rule->id;
        present = names_present(*p.vocabulary, index.by_name);
        if (!may_match_or_nearly(p.needs, present, p.near_miss_steps * 0.5)) {
          ++ruled_out_somewhere;
          break;
        }
      }
    }
  }
  EXPECT_GT(graphs, 50);
  // The comparison means something only if the shortcut is taken.
  EXPECT_GT(ruled_out_somewhere, 10);
}

TEST(PatternNeeds, AStepWithoutPartnerRulesOutAMatchButNotANearMiss) {
  std::vector<Pattern> rms = testing::patterns_of("norm.rms_norm");
  ASSERT_FALSE(rms.empty());
  const Pattern& p = rms.front();
  ASSERT_TRUE(p.needs_known);
  ASSERT_FALSE(p.needs.required.empty());
  std::unordered_map<std::string, std::vector<int>> all, none;
  for (const auto& names : p.needs.pairing_names) all[names.front()] = {0};
  EXPECT_TRUE(may_match_or_nearly(p.needs, all, -1));
  EXPECT_FALSE(may_match_or_nearly(p.needs, none, -1));
  EXPECT_FALSE(may_match_or_nearly(p.needs, none, 1));
  // One required name missing: no match, but every other step may still pair.
  auto one_short = all;
  one_short.erase(p.needs.pairing_names[p.needs.required.front()].front());
  for (const std::string& other : p.needs.pairing_names[p.needs.required.front()]) one_short.erase(other);
  EXPECT_FALSE(may_match_or_nearly(p.needs, one_short, -1));
  EXPECT_TRUE(may_match_or_nearly(p.needs, one_short, 1));
}

}  // namespace
}  // namespace npufuse::match

namespace npufuse::match {
namespace {

// The memo (match_memo.h): a graph matched again through the memo (only the
// walks that gave something the first time) has exactly the result of a
// full match, near-misses and their texts included, and the memo is used.
TEST(MatchMemo, ReplayedGraphsGiveTheFullResult) {
  namespace fs = std::filesystem;
  const std::vector<Pattern>& patterns = testing::compiled_rules().patterns;
  MatchMemo memo(patterns);
  MatchOptions with_memo;
  with_memo.memo = &memo;
  int graphs = 0;
  for (const auto& entry : fs::directory_iterator(std::string(NPUFUSE_SOURCE_DIR) + "/tests/models")) {
    fs::path model = entry.path() / "model.py";
    if (!fs::exists(model)) continue;
    auto loaded = testing::load_graphs(model.string());
    for (const model::FunctionDataflow& g : loaded->graphs) {
      ++graphs;
      std::string full = describe(match_patterns(patterns, g));
      std::string first = describe(match_patterns(patterns, g, with_memo));   // fills the memo
      std::string second = describe(match_patterns(patterns, g, with_memo));  // replays it
      EXPECT_EQ(first, full) << model << " " << g.function;
      EXPECT_EQ(second, full) << model << " " << g.function;
    }
  }
  EXPECT_GT(memo.size(), 50u);
  EXPECT_GE(memo.hits(), static_cast<size_t>(graphs));
}

TEST(MatchMemo, KeyIgnoresPlacesButNotComputation) {
  auto a = testing::load_graphs(std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/llama_like/model.py");
  ASSERT_FALSE(a->graphs.empty());
  model::FunctionDataflow moved = a->graphs.front();
  for (model::DataflowOp& op : moved.ops) op.line += 100;
  MatchOptions o;
  EXPECT_EQ(MatchMemo::key_of(moved, o), MatchMemo::key_of(a->graphs.front(), o));
  model::FunctionDataflow changed = a->graphs.front();
  ASSERT_FALSE(changed.ops.empty());
  changed.ops.back().name += "_other";
  EXPECT_NE(MatchMemo::key_of(changed, o), MatchMemo::key_of(a->graphs.front(), o));
}

}  // namespace
}  // namespace npufuse::match
