// The rule fixtures are the matcher's specification: every
// `# expect-match: <id>` file must match that rule somewhere, every
// `<rule>_nomatch_*` file must not match <rule>, and for those a near-miss of
// the rule must tell the user why; a `<rule>_quiet_*` file (`# expect-silence:`)
// gives neither a match nor a near-miss of <rule> (RULE["match"]["quiet"]).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "match_support.h"

namespace npufuse::match {
namespace {

namespace fs = std::filesystem;

struct FixtureOutcome {
  std::string file;        // relative to rules/
  std::string expect;      // "match", "no-match" or "silence"
  std::string rule;        // the rule the expectation is about
  std::string reason;      // no-match: the reason users must be told (the first line's text)
  std::set<std::string> matched;
  std::map<std::string, std::vector<std::string>> near;  // rule -> near-miss reasons
};

std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

std::vector<fs::path> fixture_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(std::string(NPUFUSE_SOURCE_DIR) + "/rules"))
    if (e.is_regular_file() && e.path().extension() == ".py" && e.path().parent_path().filename() == "fixtures") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

FixtureOutcome run_fixture(const fs::path& path) {
  FixtureOutcome o;
  o.file = fs::relative(path, std::string(NPUFUSE_SOURCE_DIR) + "/rules").string();
  std::string head = first_line(path);
  std::string family = path.parent_path().parent_path().filename().string();
  std::string stem = path.stem().string();
  if (head.rfind("# expect-match:", 0) == 0) {
    o.expect = "match";
    o.rule = head.substr(head.find(':') + 1);
    o.rule.erase(0, o.rule.find_first_not_of(' '));
  } else if (head.rfind("# expect-silence:", 0) == 0) {
    o.expect = "silence";
    o.rule = family + "." + stem.substr(0, stem.find("_quiet_"));
  } else {
    o.expect = "no-match";
    o.reason = head.substr(head.find(':') + 1);
    o.reason.erase(0, o.reason.find_first_not_of(' '));
    o.rule = family + "." + stem.substr(0, stem.find("_nomatch_"));
  }
  auto graphs = testing::load_graphs(path.string());
  for (const model::FunctionDataflow& g : graphs->graphs) {
    MatchResult r = match_patterns(testing::compiled_rules().patterns, g);
    for (const Match& m : r.matches) o.matched.insert(m.pattern->rule->id);
    for (const NearMissTrace& n : r.near_misses) o.near[n.pattern->rule->id].push_back(n.reason);
  }
  return o;
}

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& x : s) out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "-" : out;
}

// pending_fixtures.txt: fixtures not met yet, each with what is missing.
std::map<std::string, std::string> pending_fixtures() {
  std::map<std::string, std::string> out;
  std::ifstream in(std::string(NPUFUSE_SOURCE_DIR) + "/tests/match/pending_fixtures.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto gap = line.find("  ");
    out[line.substr(0, gap)] = gap == std::string::npos ? "" : line.substr(gap + 2);
  }
  return out;
}

TEST(Fixtures, EveryFixtureMeetsItsExpectation) {
  std::vector<FixtureOutcome> all;
  for (const fs::path& p : fixture_files()) all.push_back(run_fixture(p));
  ASSERT_GT(all.size(), 100u);
  std::map<std::string, std::string> pending = pending_fixtures();
  std::string wrong_list, fixed_list;
  int wrong = 0, fixed = 0, met = 0;
  for (const FixtureOutcome& o : all) {
    bool ok;
    std::string detail;
    if (o.expect == "match") {
      ok = o.matched.count(o.rule) > 0;
      if (!ok && o.near.count(o.rule)) detail = " near-miss: " + o.near.at(o.rule).front();
    } else if (o.expect == "silence") {
      ok = !o.matched.count(o.rule) && !o.near.count(o.rule);
      if (o.near.count(o.rule)) detail = " near-miss: " + o.near.at(o.rule).front();
    } else {
      // The near-miss must tell the fixture's reason: the rule's explanation
      // (RULE["match"]["explain"]) comes first in what users read.
      const std::vector<std::string>& reasons = o.near.count(o.rule) ? o.near.at(o.rule) : std::vector<std::string>{};
      bool told = std::any_of(reasons.begin(), reasons.end(), [&](const std::string& r) { return r.rfind(o.reason, 0) == 0; });
      ok = !o.matched.count(o.rule) && told;
      detail = reasons.empty() ? " (no near-miss)" : (told ? " near-miss: " : " reason not told; near-miss: ") + reasons.front();
    }
    bool listed = pending.count(o.file) > 0;
    // NPUFUSE_FIXTURE_REPORT=1 prints every fixture's outcome, for working on the matcher.
    if (std::getenv("NPUFUSE_FIXTURE_REPORT"))
      std::printf("%s %s  matched: %s%s\n", ok ? "met " : "MISS", o.file.c_str(), join(o.matched).c_str(), detail.c_str());
    if (ok) ++met;
    if (ok && listed) {
      ++fixed;
      fixed_list += "  " + o.file + "\n";
    }
    if (ok || listed) continue;
    ++wrong;
    wrong_list += "  " + o.file + "  expect " + o.expect + " " + o.rule + "  matched: " + join(o.matched) + detail + "\n";
  }
  EXPECT_EQ(wrong, 0) << wrong << " fixtures not met (met: " << met << " of " << all.size() << "):\n" << wrong_list;
  EXPECT_EQ(fixed, 0) << "now met, remove from tests/match/pending_fixtures.txt:\n" << fixed_list;
}

// What a rule's fixtures must prove, counting only the fixtures met: at
// least three coding styles matched and one near-miss told with its reason.
TEST(Fixtures, EveryRuleHasThreeMetStylesAndAToldNearMiss) {
  std::map<std::string, int> styles, told;
  for (const rules::Rule& r : testing::compiled_rules().set.rules()) styles[r.id] = told[r.id] = 0;
  for (const fs::path& p : fixture_files()) {
    FixtureOutcome o = run_fixture(p);
    if (o.expect == "match" && o.matched.count(o.rule)) ++styles[o.rule];
    if (o.expect == "no-match" && !o.matched.count(o.rule) && o.near.count(o.rule) &&
        std::any_of(o.near.at(o.rule).begin(), o.near.at(o.rule).end(),
                    [&](const std::string& r) { return r.rfind(o.reason, 0) == 0; }))
      ++told[o.rule];
  }
  for (const auto& [rule, n] : styles) {
    EXPECT_GE(n, 3) << rule << ": match fixtures met";
    EXPECT_GE(told.at(rule), 1) << rule << ": near-misses told with their reason";
  }
}

// A no-match fixture must never match its own rule, pending or not, except
// where the pending list says the rule still lacks the constraint.
TEST(Fixtures, NoMatchFixturesNeverMatchTheirRule) {
  std::map<std::string, std::string> pending = pending_fixtures();
  for (const fs::path& p : fixture_files()) {
    if (p.stem().string().find("_nomatch_") == std::string::npos) continue;
    FixtureOutcome o = run_fixture(p);
    auto it = pending.find(o.file);
    if (it != pending.end() && it->second.rfind("wrongly matched", 0) == 0) continue;
    EXPECT_EQ(o.matched.count(o.rule), 0u) << o.file << " matched " << o.rule;
  }
}

// Each RULE["match"]["quiet"] case is shown by a silence fixture of its rule.
TEST(Fixtures, EveryQuietCaseHasASilenceFixture) {
  std::map<std::string, size_t> quiet, silent;
  for (const Pattern& p : testing::compiled_rules().patterns)
    if (p.rule) quiet[p.rule->id] = std::max(quiet[p.rule->id], p.options.quiet.size());
  for (const fs::path& p : fixture_files()) {
    if (p.stem().string().find("_quiet_") == std::string::npos) continue;
    FixtureOutcome o = run_fixture(p);
    EXPECT_EQ(o.expect, "silence") << o.file << ": a _quiet_ fixture starts with # expect-silence:";
    ++silent[o.rule];
  }
  size_t cases = 0;
  for (const auto& [rule, n] : quiet) {
    cases += n;
    EXPECT_GE(silent[rule], n) << rule << ": quiet cases without a silence fixture";
  }
  EXPECT_GT(cases, 0u);
}

}  // namespace
}  // namespace npufuse::match
