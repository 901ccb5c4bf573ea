// The matcher's shortcuts change no result. Ruling a pattern out of a
// function before walking it (pattern_needs.h) and replaying only the walks a
// memo kept for the same code (match_memo.h) must give, on every graph of
// every test model, the matches and near-misses of a full match.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "match/match_memo.h"
#include "match/pattern_needs.h"
#include "match/target_index.h"
#include "match/value_view.h"
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

// describe() with every text and number that names a place: spans, escape
// lines and texts, hints and confidence.
std::string describe_places(const MatchResult& r) {
  std::string out = describe(r);
  auto spans = [&](const std::vector<model::SourceSpan>& ss) {
    for (const model::SourceSpan& s : ss) out += " " + s.file + ":" + std::to_string(s.line) + "-" + std::to_string(s.end_line);
    out += "\n";
  };
  for (const Match& m : r.matches) {
    out += "match spans";
    spans(m.spans);
    for (const Escape& e : m.escapes) out += "  escape " + e.how + " line " + std::to_string(e.line) + "\n";
    for (const Binding& b : m.bindings) out += "  binds " + b.parameter + " = " + b.text + "\n";
    for (const std::string& h : m.hints) out += "  hint " + h + "\n";
    out += "  confidence " + std::to_string(m.confidence) + " condition " + m.condition + "\n";
  }
  for (const NearMissTrace& n : r.near_misses) {
    out += "near-miss " + n.finding + " spans";
    spans(n.spans);
  }
  return out;
}

// Calls `visit(model path, graph)` for every graph of every test model; the
// number of graphs visited.
int for_each_test_model_graph(const std::function<void(const std::string&, const model::FunctionDataflow&)>& visit) {
  namespace fs = std::filesystem;
  int graphs = 0;
  for (const auto& entry : fs::directory_iterator(std::string(NPUFUSE_SOURCE_DIR) + "/tests/models")) {
    fs::path model = entry.path() / "model.py";
    if (!fs::exists(model)) continue;
    auto loaded = testing::load_graphs(model.string());
    for (const model::FunctionDataflow& g : loaded->graphs) {
      ++graphs;
      visit(model.string(), g);
    }
  }
  return graphs;
}

const std::vector<Pattern>& patterns() { return testing::compiled_rules().patterns; }

// The options of a full match, with the near-misses' traces, which the
// comparisons below read too.
MatchOptions traced() {
  MatchOptions o;
  o.traces = true;
  return o;
}

TEST(PatternNeeds, RulingOutEarlyChangesNoMatchAndNoNearMiss) {
  MatchOptions walk_all = traced();
  walk_all.rule_out_early = false;
  int ruled_out_somewhere = 0;
  int graphs = for_each_test_model_graph([&](const std::string& model, const model::FunctionDataflow& g) {
    EXPECT_EQ(describe(match_patterns(patterns(), g, traced())), describe(match_patterns(patterns(), g, walk_all)))
        << model << " " << g.function;
    TargetIndex index(g);
    for (const Pattern& p : patterns()) {
      ASSERT_TRUE(p.vocabulary) << p.rule->id;
      if (!may_match_or_nearly(p.needs, names_present(*p.vocabulary, index.by_name), p.near_miss_steps * 0.5)) {
        ++ruled_out_somewhere;
        break;
      }
    }
  });
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
  for (const std::string& name : p.needs.pairing_names[p.needs.required.front()]) one_short.erase(name);
  EXPECT_FALSE(may_match_or_nearly(p.needs, one_short, -1));
  EXPECT_TRUE(may_match_or_nearly(p.needs, one_short, 1));
}

TEST(MatchMemo, ReplayedGraphsGiveTheFullResult) {
  MatchMemo memo(patterns());
  MatchOptions with_memo = traced();
  with_memo.memo = &memo;
  int graphs = for_each_test_model_graph([&](const std::string& model, const model::FunctionDataflow& g) {
    std::string full = describe(match_patterns(patterns(), g, traced()));
    std::string first = describe(match_patterns(patterns(), g, with_memo));   // fills the memo
    std::string second = describe(match_patterns(patterns(), g, with_memo));  // replays it
    EXPECT_EQ(first, full) << model << " " << g.function;
    EXPECT_EQ(second, full) << model << " " << g.function;
  });
  EXPECT_GT(memo.size(), 50u);
  EXPECT_GE(memo.hits(), static_cast<size_t>(graphs));
}

// A graph of the same code elsewhere (here: every line 100 further down)
// takes over the remembered results with its own places in them.
TEST(MatchMemo, AReplayNamesThePlacesOfTheGraphAtHand) {
  MatchMemo memo(patterns());
  MatchOptions with_memo = traced();
  with_memo.memo = &memo;
  int told_somewhere = 0;
  for_each_test_model_graph([&](const std::string& model, const model::FunctionDataflow& g) {
    model::FunctionDataflow moved = g;
    for (model::DataflowOp& op : moved.ops) {
      if (op.line > 0) op.line += 100;
      if (op.end_line > 0) op.end_line += 100;
    }
    std::string here = describe_places(match_patterns(patterns(), g, with_memo));  // fills the memo
    size_t hits = memo.hits();
    std::string replayed = describe_places(match_patterns(patterns(), moved, with_memo));
    EXPECT_EQ(memo.hits(), hits + 1) << model << " " << g.function;
    EXPECT_EQ(replayed, describe_places(match_patterns(patterns(), moved, traced()))) << model << " " << g.function;
    if (replayed != here) ++told_somewhere;
  });
  // The places differ wherever something is told, so the comparison can fail.
  EXPECT_GT(told_somewhere, 20);
}

TEST(MatchMemo, PlaceholdersResolvePerGraphAndOtherBytesStay) {
  auto loaded = testing::load_graphs(std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/llama_like/model.py");
  ASSERT_FALSE(loaded->graphs.empty());
  const model::FunctionDataflow& g = loaded->graphs.front();
  ASSERT_GT(g.ops.size(), 3u);
  std::string symbolic;
  {
    SymbolicPlaces scope(g);
    symbolic = "at " + where(g.ops[3]);
  }
  const std::string real = "at " + where(g.ops[3]);
  EXPECT_NE(symbolic, real);
  EXPECT_NE(real.find(".py:"), std::string::npos) << real;
  const std::string stray = " \x1fx\x1e \x1f12";  // a model literal could hold the byte
  EXPECT_EQ(resolve_places(symbolic + stray, g), real + stray);
  model::FunctionDataflow moved = g;
  for (model::DataflowOp& op : moved.ops) op.line += 100;
  EXPECT_EQ(resolve_places(symbolic, moved), "at " + where(moved.ops[3]));
}

TEST(MatchMemo, KeyIgnoresPlacesButNotComputation) {
  auto loaded = testing::load_graphs(std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/llama_like/model.py");
  ASSERT_FALSE(loaded->graphs.empty());
  const model::FunctionDataflow& original = loaded->graphs.front();
  ASSERT_FALSE(original.ops.empty());
  MatchOptions o;
  model::FunctionDataflow moved = original;
  for (model::DataflowOp& op : moved.ops) op.line += 100;
  EXPECT_EQ(MatchMemo::key_of(moved, o), MatchMemo::key_of(original, o));
  model::FunctionDataflow changed = original;
  changed.ops.back().name += "_other";
  EXPECT_NE(MatchMemo::key_of(changed, o), MatchMemo::key_of(original, o));
}

}  // namespace
}  // namespace npufuse::match
