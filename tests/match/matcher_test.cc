// Matcher behaviours on small hand-written models, one behaviour per test.
#include <gtest/gtest.h>


#include "match_support.h"

namespace npufuse::match {
namespace {

// A rule built from a search function's text, without RULE metadata.
struct TextRule {
  model::SourceSet sources;
  rules::Rule rule;
};

std::unique_ptr<TextRule> text_rule(const std::string& id, const std::string& text, nlohmann::json match = nlohmann::json::object()) {
  auto r = std::make_unique<TextRule>(TextRule{model::SourceSet::from_texts({{"rule.py", "import torch\n" + text}}), {}});
  r->rule.id = id;
  r->rule.path = "rule.py";
  r->rule.match = std::move(match);
  r->rule.sources = &r->sources;
  r->rule.file = r->sources.files().front().get();
  for (const frontend::ast::stmt* s : r->rule.file->parsed->module->body)
    if (auto* fn = frontend::ast::as<frontend::ast::FunctionDef>(s); fn && std::string(fn->name).rfind("search", 0) == 0)
      r->rule.searches.push_back(fn);
    else if (fn && std::string(fn->name).rfind("lookalike", 0) == 0)
      r->rule.lookalikes.push_back(fn);
  return r;
}

struct Target {
  model::SourceSet sources;
  model::FunctionDataflow graph;
};

std::unique_ptr<Target> function_graph(const std::string& text) {
  auto t = std::make_unique<Target>(Target{model::SourceSet::from_texts({{"model.py", "import torch\n" + text}}), {}});
  const model::ModelFile& f = *t->sources.files().front();
  for (const frontend::ast::stmt* s : f.parsed->module->body)
    if (auto* fn = frontend::ast::as<frontend::ast::FunctionDef>(s)) t->graph = model::build_dataflow(t->sources, f, *fn);
  return t;
}

const char* kNorm =
    "def search(x, w, eps):\n"
    "    h = x.float()\n"
    "    return w * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)\n";

TEST(Matcher, KeywordAndPositionalArgumentsAndOperandOrderAgree) {
  auto rule = text_rule("t.norm", kNorm);
  std::vector<Pattern> ps = compile_rule(rule->rule);
  auto t = function_graph(
      "def f(a, g):\n"
      "    v = a.to(torch.float32)\n"
      "    v = torch.rsqrt(1e-6 + torch.mean(v * v, dim=-1, keepdim=True)) * v\n"
      "    return v.type_as(a) * g\n");
  MatchResult r = match_patterns(ps, t->graph);
  ASSERT_EQ(r.matches.size(), 1u) << t->graph.dump();
  const Match& m = r.matches[0];
  EXPECT_EQ(m.bindings[0].text, "a");
  EXPECT_EQ(m.bindings[1].text, "g");
  EXPECT_EQ(m.bindings[2].text, "1e-6");
  EXPECT_TRUE(m.escapes.empty());
  ASSERT_EQ(m.spans.size(), 1u);
  EXPECT_EQ(m.spans[0].line, 3);
  EXPECT_EQ(m.spans[0].end_line, 5);
}

TEST(Matcher, AClassAgreeingWithSeveralHintNamesIsOneHint) {
  auto rule = text_rule("t.norm", kNorm);
  rule->rule.hint_class_names = {"Norm", "LlamaNorm"};
  std::vector<Pattern> ps = compile_rule(rule->rule);
  auto t = function_graph(
      "def f(x, w):\n"
      "    h = x.float()\n"
      "    return w * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)\n");
  t->graph.function = "LlamaNorm.forward";
  MatchResult r = match_patterns(ps, t->graph);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].hints, std::vector<std::string>{"class LlamaNorm"});
}

TEST(Matcher, IntermediateReadOutsideTheMatchEscapes) {
  auto rule = text_rule("t.norm", kNorm);
  std::vector<Pattern> ps = compile_rule(rule->rule);
  auto t = function_graph(
      "def f(a, g, eps):\n"
      "    h = a.float()\n"
      "    r = torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)\n"
      "    return g * (h * r).to(a.dtype), r\n");
  MatchResult r = match_patterns(ps, t->graph);
  ASSERT_EQ(r.matches.size(), 1u);
  ASSERT_EQ(r.matches[0].escapes.size(), 1u);
  EXPECT_EQ(r.matches[0].escapes[0].how, "returned");
}

// A value the fused operator also returns (RULE["match"]["also_outputs"])
// still escapes, named by the search's name for it; others stay unnamed.
// A cast that reads a value only for its dtype (`type_as(x)`) is no read.
TEST(Matcher, AnEscapeTheOperatorAlsoReturnsIsNamed) {
  const char* search =
      "def search(x, w, eps):\n"
      "    h = x.float()\n"
      "    r = torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)\n"
      "    n = w * (h * r).to(x.dtype)\n"
      "    return torch.exp(n)\n";
  auto rule = text_rule("t.norm_exp", search, {{"also_outputs", {{"n", {{"en", "its second output"}, {"zh", "第二个输出"}}}}}});
  std::vector<Pattern> ps = compile_rule(rule->rule);
  auto t = function_graph(
      "def f(a, g, eps):\n"
      "    h = a.float()\n"
      "    r = torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)\n"
      "    normed = g * (h * r).type_as(a)\n"
      "    return torch.exp(normed), normed.sum(), r\n");
  MatchResult m = match_patterns(ps, t->graph);
  ASSERT_EQ(m.matches.size(), 1u) << t->graph.dump();
  ASSERT_EQ(m.matches[0].escapes.size(), 2u);
  std::map<std::string, std::string> named;
  for (const Escape& e : m.matches[0].escapes) named[t->graph.values[static_cast<size_t>(e.value)].name] = e.also_output;
  EXPECT_EQ(named.at("normed"), "n");
  EXPECT_EQ(named.at("r"), "");
  auto dtype_only = function_graph(
      "def f(a, g, eps):\n"
      "    h = a.float()\n"
      "    r = torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)\n"
      "    return torch.exp(g * (h * r).type_as(a)), torch.zeros(2).type_as(r)\n");
  MatchResult d = match_patterns(ps, dtype_only->graph);
  ASSERT_EQ(d.matches.size(), 1u) << dtype_only->graph.dump();
  EXPECT_TRUE(d.matches[0].escapes.empty()) << d.matches[0].escapes[0].how;
  // a malformed entry is the rule file's error
  auto bad = text_rule("t.norm_exp", search, {{"also_outputs", {{"n", "its second output"}}}});
  EXPECT_THROW(compile_rule(bad->rule), rules::RuleError);
}

// A read that only steers control flow (`if r.numel() == 0`) goes with the
// chain; a value computed from the chain and fed back into it on one branch
// (a mask) is a real use the fused call would lose.
TEST(Matcher, ControlReadsAreNoEscapeButAFedBackBranchIs) {
  auto rule = text_rule("t.norm", kNorm);
  std::vector<Pattern> ps = compile_rule(rule->rule);
  auto steering = function_graph(
      "def f(a, g, eps):\n"
      "    h = a.float()\n"
      "    r = torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)\n"
      "    if r.numel() == 0:\n"
      "        print('empty')\n"
      "    return g * (h * r).to(a.dtype)\n");
  MatchResult quiet = match_patterns(ps, steering->graph);
  ASSERT_EQ(quiet.matches.size(), 1u) << steering->graph.dump();
  EXPECT_TRUE(quiet.matches[0].escapes.empty()) << quiet.matches[0].escapes[0].how;
  auto fed_back = function_graph(
      "def f(a, g, eps, clip):\n"
      "    h = a.float()\n"
      "    r = torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)\n"
      "    if clip:\n"
      "        r = r.clamp(max=1.0)\n"
      "    return g * (h * r).to(a.dtype)\n");
  MatchResult loud = match_patterns(ps, fed_back->graph);
  ASSERT_EQ(loud.matches.size(), 1u) << fed_back->graph.dump();
  ASSERT_EQ(loud.matches[0].escapes.size(), 1u);
  EXPECT_NE(loud.matches[0].escapes[0].how.find("clamp"), std::string::npos) << loud.matches[0].escapes[0].how;
}

// The match holds on its arm of an `if`; the other arm reading the same
// intermediate never runs with it, so that read is no escape.
TEST(Matcher, ReadOnTheOtherArmIsNoEscape) {
  auto rule = text_rule("t.gate", "def search(x):\n    return torch.exp(torch.sigmoid(x))\n");
  std::vector<Pattern> ps = compile_rule(rule->rule);
  auto t = function_graph(
      "def f(a, flag):\n"
      "    s = torch.sigmoid(a)\n"
      "    if flag:\n"
      "        out = torch.exp(s)\n"
      "    else:\n"
      "        out = s * 2\n"
      "    return out\n");
  MatchResult r = match_patterns(ps, t->graph);
  ASSERT_EQ(r.matches.size(), 1u) << t->graph.dump();
  EXPECT_EQ(r.matches[0].condition, "flag");
  EXPECT_TRUE(r.matches[0].escapes.empty()) << r.matches[0].escapes[0].how;
}

// A chain's index bookkeeping (`stop = start + s`, read by later slices) stays
// in the model, and a size read of an intermediate that only shapes the
// chain's own view is metadata: neither is an intermediate the fusion loses.
// A real read of an intermediate still is.
TEST(Matcher, IndexArithmeticAndSizeReadsAreNoEscapes) {
  auto rule = text_rule("t.write",
                        "def search(x, cache, start):\n"
                        "    b, s, _ = x.shape\n"
                        "    y = torch.exp(x)\n"
                        "    z = y.view(b, y.size(1), -1)\n"
                        "    cache[:b, start:start + s] = z\n"
                        "    return cache\n");
  std::vector<Pattern> ps = compile_rule(rule->rule);
  auto quiet = function_graph(
      "def f(x, cache, start):\n"
      "    b, s = x.shape[0], x.shape[1]\n"
      "    stop = start + s\n"
      "    y = torch.exp(x)\n"
      "    cache[:b, start:stop] = y.view(b, y.size(1), -1)\n"
      "    return cache[:b, :stop]\n");
  MatchResult r = match_patterns(ps, quiet->graph);
  ASSERT_EQ(r.matches.size(), 1u) << quiet->graph.dump();
  EXPECT_TRUE(r.matches[0].escapes.empty()) << r.matches[0].escapes[0].how;
  ASSERT_EQ(r.matches[0].spans.size(), 1u);
  // line 1 is function_graph's import: exp is on line 5, the bookkeeping on 4
  EXPECT_EQ(r.matches[0].spans[0].line, 5) << "the bookkeeping line does not place the chain";
  auto loud = function_graph(
      "def f(x, cache, start):\n"
      "    b, s = x.shape[0], x.shape[1]\n"
      "    y = torch.exp(x)\n"
      "    cache[:b, start:start + s] = y.view(b, y.size(1), -1)\n"
      "    return cache, y.sum()\n");
  MatchResult l = match_patterns(ps, loud->graph);
  ASSERT_EQ(l.matches.size(), 1u) << loud->graph.dump();
  ASSERT_EQ(l.matches[0].escapes.size(), 1u);
  EXPECT_NE(l.matches[0].escapes[0].how.find("sum"), std::string::npos) << l.matches[0].escapes[0].how;
}

TEST(Matcher, WrongReductionIsANearMissNamingBothOps) {
  auto rule = text_rule("t.norm", kNorm);
  std::vector<Pattern> ps = compile_rule(rule->rule);
  auto t = function_graph(
      "def f(a, g, eps):\n"
      "    h = a.float()\n"
      "    return g * (h * torch.rsqrt(h.pow(2).sum(-1, keepdim=True) + eps)).to(a.dtype)\n");
  MatchOptions with_traces;
  with_traces.traces = true;
  MatchResult r = match_patterns(ps, t->graph, with_traces);
  EXPECT_TRUE(r.matches.empty());
  ASSERT_EQ(r.near_misses.size(), 1u);
  EXPECT_EQ(r.near_misses[0].reason, "expected mean(...), found sum(...) at model.py:4");
  EXPECT_FALSE(r.near_misses[0].trace.empty());
  EXPECT_TRUE(match_patterns(ps, t->graph).near_misses.at(0).trace.empty());  // traces only when asked for
}

// A walk failing at its second step is below the default share of the
// pattern; a rule that sets its own lower share has it told.
TEST(Matcher, RuleNearMissShareTellsAnEarlyMismatch) {
  const char* model =
      "def f(a, g, eps):\n"
      "    h = a.float()\n"
      "    return g * (h * torch.sigmoid(h.pow(2).mean(-1, keepdim=True) + eps)).to(a.dtype)\n";
  auto t = function_graph(model);
  auto plain = text_rule("t.norm", kNorm);
  EXPECT_TRUE(match_patterns(compile_rule(plain->rule), t->graph).near_misses.empty());
  auto low = text_rule("t.norm", kNorm, {{"near_miss_share", 0.1}});
  std::vector<Pattern> ps = compile_rule(low->rule);
  MatchResult r = match_patterns(ps, t->graph);
  EXPECT_TRUE(r.matches.empty());
  EXPECT_TRUE(std::any_of(r.near_misses.begin(), r.near_misses.end(),
                          [](const NearMissTrace& n) { return n.reason.find("found sigmoid") != std::string::npos; }));
}

TEST(Matcher, NearMissShareOutsideZeroToOneIsAnError) {
  for (double share : {0.0, 1.5}) {
    auto rule = text_rule("t.a", "def search(x):\n    return x + 1\n", {{"near_miss_share", share}});
    EXPECT_THROW(compile_rule(rule->rule), rules::RuleError) << share;
  }
}

// A finding RULE["match"]["quiet"] names is not told; any other still is.
TEST(Matcher, QuietFindingsAreNotTold) {
  auto t = function_graph(
      "def f(a, g, eps):\n"
      "    h = a.float()\n"
      "    return g * (h * torch.rsqrt(h.pow(2).sum(-1, keepdim=True) + eps)).to(a.dtype)\n");
  auto quiet = text_rule("t.norm", kNorm, {{"quiet", {{{"when", "found sum("}, {"why", "a sum is another norm"}}}}});
  MatchResult r = match_patterns(compile_rule(quiet->rule), t->graph);
  EXPECT_TRUE(r.matches.empty());
  EXPECT_TRUE(r.near_misses.empty()) << r.near_misses[0].reason;
  auto other = text_rule("t.norm", kNorm, {{"quiet", {{{"when", "found max("}, {"why", "a max is no norm"}}}}});
  MatchResult told = match_patterns(compile_rule(other->rule), t->graph);
  ASSERT_EQ(told.near_misses.size(), 1u);
  EXPECT_EQ(told.near_misses[0].reason, "expected mean(...), found sum(...) at model.py:4");
}

TEST(Matcher, QuietEntriesNeedAWhenAndAWhy) {
  for (nlohmann::json entry : {nlohmann::json{{"when", "x"}}, nlohmann::json{{"when", ""}, {"why", "y"}},
                               nlohmann::json{{"when", "x"}, {"why", "y"}, {"near_miss", "z"}}, nlohmann::json("x")}) {
    auto rule = text_rule("t.a", "def search(x):\n    return x + 1\n", {{"quiet", nlohmann::json::array({entry})}});
    EXPECT_THROW(compile_rule(rule->rule), rules::RuleError) << entry.dump();
  }
}

// A look-alike is a form that must not match: where the model spells it,
// the rule's near-miss is told with the reason of the fixture it names.
const char* kGate =
    "def search(x):\n    return x * torch.sigmoid(x)\n"
    "def lookalike_tanh(x):\n    return x * torch.tanh(x)\n";

std::unique_ptr<TextRule> gate_rule(nlohmann::json match) {
  auto r = text_rule("t.gate", kGate, std::move(match));
  r->rule.near_misses.push_back({"fixtures/gate_nomatch_tanh.py", "a tanh gate is not SiLU"});
  return r;
}

TEST(Matcher, LookalikeIsToldAsTheRulesNearMiss) {
  auto rule = gate_rule({{"lookalikes", {{"lookalike_tanh", "fixtures/gate_nomatch_tanh.py"}}}});
  std::vector<Pattern> ps = compile_rule(rule->rule);
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_TRUE(ps[0].lookalike_reason.empty());
  EXPECT_EQ(ps[1].lookalike_reason, "a tanh gate is not SiLU");
  MatchResult tanh = match_patterns(ps, function_graph("def f(a):\n    h = a + 1\n    return h * torch.tanh(h)\n")->graph);
  EXPECT_TRUE(tanh.matches.empty());
  ASSERT_EQ(tanh.near_misses.size(), 1u);
  EXPECT_EQ(tanh.near_misses[0].pattern->rule->id, "t.gate");
  EXPECT_EQ(tanh.near_misses[0].reason.rfind("a tanh gate is not SiLU (matches its look-alike lookalike_tanh, lines 4-4)", 0), 0u)
      << tanh.near_misses[0].reason;
  // The chain itself matches and tells nothing about its look-alike.
  MatchResult silu = match_patterns(ps, function_graph("def f(a):\n    return a * torch.sigmoid(a)\n")->graph);
  EXPECT_EQ(silu.matches.size(), 1u);
  EXPECT_TRUE(silu.near_misses.empty());
}

TEST(Matcher, LookalikeMustNameAListedNearMiss) {
  EXPECT_THROW(compile_rule(gate_rule(nlohmann::json::object())->rule), rules::RuleError);  // not listed
  EXPECT_THROW(compile_rule(gate_rule({{"lookalikes", {{"lookalike_tanh", "fixtures/other.py"}}}})->rule), rules::RuleError);
  EXPECT_THROW(compile_rule(gate_rule({{"lookalikes", {{"lookalike_tanh", "fixtures/gate_nomatch_tanh.py"},
                                                        {"lookalike_relu", "fixtures/gate_nomatch_tanh.py"}}}})->rule),
               rules::RuleError);  // no such function
}

TEST(Matcher, ParameterUsedTwiceMustBeOneValue) {
  auto rule = text_rule("t.sq", "def search(x):\n    return x * torch.sigmoid(x)\n");
  std::vector<Pattern> ps = compile_rule(rule->rule);
  EXPECT_EQ(match_patterns(ps, function_graph("def f(a):\n    return torch.sigmoid(a.float()) * a\n")->graph).matches.size(), 1u);
  EXPECT_TRUE(match_patterns(ps, function_graph("def f(a, b):\n    return a * torch.sigmoid(b)\n")->graph).matches.empty());
}

TEST(Matcher, OptionalStepMayBeAbsent) {
  const char* text = "def search(q, k):\n    return torch.matmul(q, torch.repeat_interleave(k, dim=1, repeats=2))\n";
  auto strict = text_rule("t.a", text);
  auto loose = text_rule("t.a", text, {{"optional", {"repeat_interleave"}}});
  auto t = function_graph("def f(q, k):\n    return q @ k\n");
  EXPECT_TRUE(match_patterns(compile_rule(strict->rule), t->graph).matches.empty());
  std::vector<Pattern> ps = compile_rule(loose->rule);
  MatchResult r = match_patterns(ps, t->graph);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_LT(r.matches[0].confidence, 1.0);
}

// In a forward whose layer loop is unrolled, the ops of the loop's copies
// are walked from only by rules whose chains may run across layers.
TEST(Matcher, OnlyAcrossLayerRulesStartInsideAnUnrolledCopy) {
  const char* text = "def search(x):\n    return x * torch.sigmoid(x)\n";
  auto own = text_rule("t.silu", text);
  auto across = text_rule("t.silu", text, {{"across_layers", true}});
  auto t = function_graph("def f(a):\n    return a * torch.sigmoid(a)\n");
  EXPECT_EQ(match_patterns(compile_rule(own->rule), t->graph).matches.size(), 1u);
  for (model::DataflowOp& op : t->graph.ops) op.unrolled = 1;
  EXPECT_TRUE(match_patterns(compile_rule(own->rule), t->graph).matches.empty());
  EXPECT_EQ(match_patterns(compile_rule(across->rule), t->graph).matches.size(), 1u);
  auto wrong = text_rule("t.silu", text, {{"across_layers", "yes"}});
  EXPECT_THROW(compile_rule(wrong->rule), rules::RuleError);
}

// RULE["match"]["optional_inputs"]: the step adding an optional input (a
// shared expert's output) may be missing; present, it is matched as written.
TEST(Matcher, AnOptionalInputsStepMayBeMissing) {
  const char* text = "def search(x, y, extra):\n    return torch.sigmoid(x) * (y + extra)\n";
  auto strict = text_rule("t.gate", text);
  auto loose = text_rule("t.gate", text, {{"optional_inputs", {"extra"}}});
  auto without = function_graph("def f(a, b):\n    return torch.sigmoid(a) * b\n");
  EXPECT_TRUE(match_patterns(compile_rule(strict->rule), without->graph).matches.empty());
  MatchResult r = match_patterns(compile_rule(loose->rule), without->graph);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_LT(r.matches[0].confidence, 1.0);
  auto with = function_graph("def f(a, b, c):\n    return torch.sigmoid(a) * (b + c)\n");
  MatchResult both = match_patterns(compile_rule(loose->rule), with->graph);
  ASSERT_EQ(both.matches.size(), 1u);
  EXPECT_EQ(both.matches[0].confidence, 1.0);
  bool bound = false;
  for (const Binding& b : both.matches[0].bindings) bound |= b.parameter == "extra" && b.text == "c";
  EXPECT_TRUE(bound);
  // A name that is no parameter, or one read by more than one step, is an error.
  EXPECT_THROW(compile_rule(text_rule("t.gate", text, {{"optional_inputs", {"nothing"}}})->rule), rules::RuleError);
  auto twice = text_rule("t.gate", "def search(x, extra):\n    return (x + extra) * extra\n", {{"optional_inputs", {"extra"}}});
  EXPECT_THROW(compile_rule(twice->rule), rules::RuleError);
}

// The optional step may make the returned value itself (`return routed +
// shared`): a model returning the other value is met by the pattern that
// returns it, and one with the step keeps only the wider match.
TEST(Matcher, AnOptionalInputsStepAtTheReturnedValueMayBeMissing) {
  const char* text = "def search(x, y, extra):\n    return torch.sigmoid(x) * y + extra\n";
  auto loose = text_rule("t.gate", text, {{"optional_inputs", {"extra"}}});
  auto without = function_graph("def f(a, b):\n    return torch.sigmoid(a) * b\n");
  MatchResult r = match_patterns(compile_rule(loose->rule), without->graph);
  ASSERT_EQ(r.matches.size(), 1u);
  for (const Binding& b : r.matches[0].bindings) EXPECT_TRUE(b.parameter != "extra" || b.value < 0) << b.text;
  auto with = function_graph("def f(a, b, c):\n    return torch.sigmoid(a) * b + c\n");
  MatchResult both = match_patterns(compile_rule(loose->rule), with->graph);
  ASSERT_EQ(both.matches.size(), 1u);
  bool bound = false;
  for (const Binding& b : both.matches[0].bindings) bound |= b.parameter == "extra" && b.text == "c";
  EXPECT_TRUE(bound);
  auto strict = text_rule("t.gate", text);
  EXPECT_TRUE(match_patterns(compile_rule(strict->rule), without->graph).matches.empty());
}

TEST(Matcher, UnknownMatchKeyIsAnErrorNamingTheRuleFile) {
  auto rule = text_rule("t.a", "def search(x):\n    return x + 1\n", {{"optionals", {"add"}}});
  try {
    compile_rule(rule->rule);
    FAIL() << "no error";
  } catch (const rules::RuleError& e) {
    EXPECT_NE(std::string(e.what()).find("rule.py: RULE[\"match\"]: unknown key \"optionals\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace npufuse::match
