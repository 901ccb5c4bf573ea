#include "plan/candidate_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "check/evaluate.h"
#include "check/expr_parser.h"
#include "match/value_view.h"
#include "model/config_arms.h"
#include "plan/apply_site.h"
#include "plan/candidate_checks.h"
#include "plan/chain_facts.h"
#include "plan/chain_parts.h"
#include "plan/fact_literal.h"
#include "plan/rule_gate.h"
#include "plan/stage_split.h"
#include "util/identifier.h"

namespace npufuse::plan {
namespace {

Location location_of(const model::SourceSpan& s) { return Location{s.file, s.line, s.end_line > 0 ? s.end_line : s.line}; }

// What makes two matches of one rule one chain: the source of the ops that
// compute. A helper matched on its own and again inlined into its caller
// covers the same expressions; the caller's match may add plumbing of its
// own (the merges of an if-block around the call) that computes nothing and
// must not make it a second chain. Matches with no computing op fall back on
// their line spans.
std::string chain_key(const match::Match& m) {
  std::set<std::tuple<std::string, uint32_t, uint32_t>> computed;
  for (int id : m.ops) {
    const model::DataflowOp& op = m.target->ops[static_cast<size_t>(id)];
    if (computes(op) && op.file) computed.emplace(op.file->path, op.begin, op.end);
  }
  std::string key;
  for (const auto& [file, begin, end] : computed) key += fmt::format("{}:{}-{};", file, begin, end);
  if (!key.empty()) return key;
  for (const model::SourceSpan& s : m.spans) key += fmt::format("{}:{}-{};", s.file, s.line, s.end_line);
  return key;
}

const std::string* doc_section(const rules::Rule& rule, const std::string& heading) {
  for (const rules::DocSection& d : rule.doc_en)
    if (d.heading == heading) return &d.body;
  return nullptr;
}

std::string first_paragraph(const std::string& text) {
  std::string out = text.substr(0, text.find("\n\n"));
  std::replace(out.begin(), out.end(), '\n', ' ');
  std::string squeezed;
  for (char c : out)
    if (!(c == ' ' && !squeezed.empty() && squeezed.back() == ' ')) squeezed += c;
  return squeezed;
}

// The instance the chain was matched for: the module whose code produced the
// chain's output in the inlined forward ("self.input_layernorm" inside
// LlamaDecoderLayer), or else the attribute paths its parameters read.
std::string instance_of(const MatchSite& site) {
  if (site.owner_class.empty()) return "";
  const model::FunctionDataflow& g = *site.match.target;
  for (int anchor : site.match.anchors) {
    if (anchor < 0 || static_cast<size_t>(anchor) >= g.values.size()) continue;
    int producer = g.values[static_cast<size_t>(anchor)].producer;
    if (producer < 0) continue;
    const std::string& scope = g.ops[static_cast<size_t>(producer)].scope;
    if (scope.rfind("self.", 0) == 0) return site.owner_class + scope.substr(4);
  }
  std::set<std::string> paths;
  for (const match::Binding& b : site.match.bindings) {
    if (b.text.rfind("self.", 0) != 0) continue;
    std::string path = b.text.substr(5);
    size_t last = path.rfind('.');
    if (last == std::string::npos) continue;  // the class's own attribute
    paths.insert(site.owner_class + "." + path.substr(0, last));
  }
  std::string out;
  for (const std::string& p : paths) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// A value as users find it in their file: its name where the model gives it
// one (the op may sit in an inlined helper, far from where the name is
// bound), else the op computing it, with its place.
std::string value_text(const model::FunctionDataflow& g, int v) {
  if (v < 0 || static_cast<size_t>(v) >= g.values.size()) return fmt::format("v{}", v);
  const model::DataflowValue& value = g.values[static_cast<size_t>(v)];
  if (!value.name.empty()) return value.name;
  if (value.producer < 0) return fmt::format("v{}", v);
  const model::DataflowOp& op = g.ops[static_cast<size_t>(value.producer)];
  return fmt::format("{} at {}", match::describe_op(op), match::where(op));
}

// The id of the prerequisite that keeps an intermediate: named after the
// value as the file names it (`keep_intermediate_e`), or after the line of
// the op computing it where it has no name, so the id stays the same when
// unrelated code changes; a second escape of the same name in one candidate
// gets a suffix.
std::string keep_intermediate_id(const model::FunctionDataflow& g, int v, const std::vector<PrerequisiteItem>& taken) {
  std::string stem = "v" + std::to_string(v);
  if (v >= 0 && static_cast<size_t>(v) < g.values.size()) {
    const model::DataflowValue& value = g.values[static_cast<size_t>(v)];
    if (is_identifier(value.name)) stem = value.name;
    else if (value.producer >= 0) stem = "line" + std::to_string(g.ops[static_cast<size_t>(value.producer)].line);
  }
  std::string id = "keep_intermediate_" + stem;
  auto used = [&](const std::string& candidate) {
    return std::any_of(taken.begin(), taken.end(), [&](const PrerequisiteItem& p) { return p.id == candidate; });
  };
  for (int n = 2; used(id); ++n) id = fmt::format("keep_intermediate_{}_{}", stem, n);
  return id;
}

std::string verification_cut(const MatchSite& site, const Location& where) {
  const match::Match& m = site.match;
  std::string inputs, outputs;
  for (const match::Binding& b : m.bindings)
    inputs += (inputs.empty() ? "" : ", ") + b.parameter + " = " +
              (!b.text.empty() ? b.text : b.value < 0 ? std::string("not bound") : value_text(*m.target, b.value));
  for (int a : m.anchors) outputs += (outputs.empty() ? "" : ", ") + value_text(*m.target, a);
  return fmt::format("{} lines {}-{} of {}; inputs: {}; outputs: {}", site.function, where.start_line, where.end_line,
                     where.file, inputs.empty() ? "none" : inputs, outputs.empty() ? "none" : outputs);
}

// A match's computing ops (not inputs, constants or ops without a line)
// listed per copy of an unrolled layer loop: [0] around the loop (or no
// loop), [1] and [2] the two copies.
struct OpsByCopy {
  std::string ops[3];
};

OpsByCopy ops_by_copy(const match::Match& m) {
  OpsByCopy out;
  for (int id : m.ops) {
    const model::DataflowOp& op = m.target->ops[static_cast<size_t>(id)];
    if (op.cls == model::OpClass::Input || op.cls == model::OpClass::Constant || op.line <= 0) continue;
    std::string& list = out.ops[std::clamp(op.unrolled, 0, 2)];
    list += (list.empty() ? "" : ", ") + fmt::format("{}@{}", op.name, op.line);
  }
  return out;
}

// Where a chain lies relative to an unrolled layer loop (the names
// RULE prerequisites use in `seam`): "into_next_layer" (ops in both copies:
// one layer's add into the next layer's norm), "into_final_norm" (ops in a
// copy and around the loop: the last layer into the norm after it) or
// "within_layer".
std::string seam_of(const OpsByCopy& by) {
  if (!by.ops[1].empty() && !by.ops[2].empty()) return "into_next_layer";
  if ((!by.ops[1].empty() || !by.ops[2].empty()) && !by.ops[0].empty()) return "into_final_norm";
  return "within_layer";
}

std::vector<std::string> match_evidence(const MatchSite& site) {
  const match::Match& m = site.match;
  std::vector<std::string> out;
  std::string ops;
  for (int id : m.ops) {
    const model::DataflowOp& op = m.target->ops[static_cast<size_t>(id)];
    if (op.cls == model::OpClass::Input || op.cls == model::OpClass::Constant) continue;
    ops += (ops.empty() ? "" : ", ") + fmt::format("{}@{}", op.name, op.line);
  }
  out.push_back(fmt::format("dataflow of {} matches {}.{}: {}", site.function, m.pattern->rule->id,
                            m.pattern->alternative, ops));
  // A match in a forward whose layer loop was unrolled (model_matches.h):
  // which ops are whose.
  const OpsByCopy by = ops_by_copy(m);
  const std::string seam = seam_of(by);
  if (seam == "into_next_layer")
    out.push_back(fmt::format("across two layers of the unrolled layer loop: {} in one layer, {} in the next",
                              by.ops[1], by.ops[2]));
  else if (seam == "into_final_norm")
    out.push_back(fmt::format("across the layer loop: {} in a layer, {} around the loop",
                              by.ops[1].empty() ? by.ops[2] : by.ops[1], by.ops[0]));
  for (const match::Binding& b : m.bindings)
    if (!b.text.empty()) out.push_back(fmt::format("{} = {}", b.parameter, b.text));
  for (const std::string& h : m.hints) out.push_back("agrees: " + h);
  if (m.confidence < 1.0) out.push_back(fmt::format("confidence {:.2f} (optional steps absent)", m.confidence));
  return out;
}

// The matched ops whose branch conditions decide the candidate's stages: not
// an optional step (RULE["match"]["optional"]) nor the ops that only feed one
// (`mask[:, None, :]` of the mask add): the chain is the same fused call with
// or without that step, so a causal-mask add that only prefill builds the
// mask for does not make the chain prefill-only.
std::vector<int> stage_narrowing_ops(const match::Match& m) {
  const model::FunctionDataflow& g = *m.target;
  static const std::set<std::string> none;
  const std::set<std::string>& optional = m.pattern ? m.pattern->options.optional : none;
  std::set<int> skipped;
  for (int id : m.ops)
    if (id >= 0 && static_cast<size_t>(id) < g.ops.size() && optional.count(g.ops[static_cast<size_t>(id)].name))
      skipped.insert(id);
  for (bool grew = !skipped.empty(); grew;) {
    grew = false;
    for (int id : m.ops) {
      if (skipped.count(id) || id < 0 || static_cast<size_t>(id) >= g.ops.size()) continue;
      const model::DataflowOp& op = g.ops[static_cast<size_t>(id)];
      bool only_feeds_skipped = !op.outputs.empty();
      for (int v : op.outputs)
        for (int reader : g.consumers(v))
          if (!skipped.count(reader)) only_feeds_skipped = false;
      if (only_feeds_skipped) grew = skipped.insert(id).second || grew;
    }
  }
  std::vector<int> out;
  for (int id : m.ops)
    if (!skipped.count(id)) out.push_back(id);
  return out;
}

// RULE["operand_facts"]: where the operator sees other sizes than the model
// names (FIA over MLA's absorbed latent: D is kv_lora_rank, one KV head), the
// checks read the operator's. Every expression is worked out on the model's
// facts before any is replaced; one that cannot be worked out removes the
// model's value, so no check answers with a size the operator never sees.
void apply_operand_facts(const rules::Rule& rule, check::FactSet& facts, std::vector<std::string>& evidence) {
  std::vector<std::pair<std::string, check::Partial>> values;
  for (const auto& [name, text] : rule.operand_facts) {
    check::ExprPtr expr = check::parse_constraint_expression(text);  // the loader has parsed it once already
    values.emplace_back(name, check::evaluate(*expr, facts));
  }
  for (auto& [name, value] : values) {
    const std::string& text = rule.operand_facts.at(name);
    if (value.known()) {
      std::string why = fmt::format("rule {}: the operator's {} is {} = {}", rule.id, name, text, value.value->repr());
      if (std::find(evidence.begin(), evidence.end(), why) == evidence.end()) evidence.push_back(why);
      facts.set(name, *value.value, why);
    } else {
      facts.erase(name);
      std::string why = fmt::format("rule {}: the operator's {} is {}, not known here (needs {})", rule.id, name, text,
                                    fmt::join(value.missing, ", "));
      if (std::find(evidence.begin(), evidence.end(), why) == evidence.end()) evidence.push_back(why);
    }
  }
}

// The facts of one stage: the deployment's, the rule's bindings, the layout
// read at the attention core, the stage itself.
check::FactSet stage_facts(const rules::Rule& rule, const CandidateContext& ctx, const ChainFacts& chain,
                           const std::string& stage, std::vector<std::string>& evidence) {
  check::FactSet facts = ctx.facts ? *ctx.facts : check::FactSet();
  for (const auto& [name, fact] : chain.facts.all()) facts.set(name, fact.value, fact.provenance);
  for (const auto& [name, literal] : rule.facts) {
    if (std::optional<check::Value> v = parse_fact_literal(literal))
      facts.set(name, *v, fmt::format("rule {} binds {} = {}", rule.id, name, literal));
  }
  apply_operand_facts(rule, facts, evidence);
  bool attention = rule.module == "attention" || rule.module == "kv_cache";
  if (attention && !rule.facts.count("layout") && ctx.attention_layout.layout != "unknown" &&
      !ctx.attention_layout.layout.empty()) {
    facts.set("layout", ctx.attention_layout.layout, "layout at the attention core: " + ctx.attention_layout.evidence);
    evidence.push_back("layout " + ctx.attention_layout.layout + " read at the attention core: " +
                       ctx.attention_layout.evidence);
  }
  facts.set("stage", stage, "candidate stage");
  if (stage == "decode") facts.set("q_seq_len", int64_t{1}, "decode: one new token per request");
  return facts;
}

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// A loop of the match over a slice of the ids, `range(start, end)` (one
// rank's experts, the other ranks' partial sums meeting in an all-reduce),
// where the rule's loop covers them all: the matcher accepts it, and the
// rewrite has to carry the slice. Empty: no such loop.
std::optional<PrerequisiteItem> id_slice_prerequisite(const rules::Rule& rule, const MatchSite& site, const Location& at) {
  const model::FunctionDataflow& g = *site.match.target;
  for (int id : site.match.ops) {
    const model::DataflowOp& op = g.ops[static_cast<size_t>(id)];
    // `for e in ids.unique()`: only the ids present; the replacement needs the id count.
    if (op.name == "unique" && op.cls == model::OpClass::Compute && rule.module == "moe_experts") {
      std::string ids = op.inputs.empty() ? std::string("ids") : match::value_spelling(g, op.inputs[0]);
      return PrerequisiteItem{
          "expert_count",
          fmt::format("The loop (line {}) visits the expert ids present in {}.unique(); the replacement needs the "
                      "number of experts as num_experts (expert_num of npu_moe_init_routing_v2): pass the count the "
                      "experts' ModuleList or the config holds (experts without a token add nothing either way).",
                      op.line, ids),
          fmt::format("第{}行的循环只遍历{}.unique()中出现的专家编号；替换写法需要专家总数作为num_experts"
                      "（npu_moe_init_routing_v2的expert_num）：传入专家ModuleList或配置中的专家数（没有token的专家本来就不贡献结果）。",
                      op.line, ids),
          false, Location{at.file, op.line, op.line}};
    }
    if (op.name != "range" || op.cls != model::OpClass::Compute || op.inputs.size() != 2) continue;
    std::string start = match::value_spelling(g, op.inputs[0]), end = match::value_spelling(g, op.inputs[1]);
    if (rule.module != "moe_experts")
      return PrerequisiteItem{
          "loop_id_slice",
          fmt::format("The loop (line {}) visits only range({}, {}) while the rule's loop covers every id: restrict "
                      "the replacement to that slice first.",
                      op.line, start, end),
          fmt::format("第{}行的循环只遍历range({}, {})，而规则的循环覆盖全部编号：需先把替换限制在这一段。", op.line, start,
                      end),
          false, Location{at.file, op.line, op.line}};
    return PrerequisiteItem{
        "expert_id_slice",
        fmt::format("The loop (line {}) visits only the experts range({}, {}), the slice one rank owns when the "
                    "experts are sharded (the ranks' partial sums then meet in an all-reduce); the replacement as "
                    "written covers every expert. Pass expert_num = all "
                    "experts and active_expert_range = [{}, {}) to npu_moe_init_routing_v2, stack only these experts' "
                    "weights and keep the all-reduce; with the MC2 dispatch/combine the exchange takes the "
                    "all-reduce's place (ep_rank_id picks the slice), so remove it.",
                    op.line, start, end, start, end),
        fmt::format("第{}行的循环只遍历专家range({}, {})，即专家分片时本rank拥有的一段（各rank的部分和随后由all-reduce相加）；"
                    "替换写法按全部专家编写。需向npu_moe_init_routing_v2传入expert_num = 全部专家数、"
                    "active_expert_range = [{}, {})，只堆叠这些专家的权重并保留all-reduce；"
                    "使用MC2 dispatch/combine时由其通信取代all-reduce（ep_rank_id决定这一段），需去掉all-reduce。",
                    op.line, start, end, start, end),
        false, Location{at.file, op.line, op.line}};
  }
  return std::nullopt;
}

bool needed_at(const rules::Prerequisite& p, const std::string& seam) {
  if (p.seam.empty() || p.seam == seam) return true;
  return p.seam == "across_layers" && seam != "within_layer";
}

// Whether `op` of the match's graph runs only in a stage the candidate does
// not cover (a prefill-only masked_fill reading the scores a decode chain
// computes): such a read never meets the fused call.
bool only_in_other_stages(const MatchSite& site, int op, const Candidate& c,
                          const std::vector<model::BranchCondition>* branches) {
  if (!branches || op < 0 || !site.match.target) return false;
  std::string stage = branch_stage(*site.match.target, {op}, *branches, nullptr);
  return !stage.empty() && !c.stages.empty() && std::find(c.stages.begin(), c.stages.end(), stage) == c.stages.end();
}

// Where an op is in the source ("" when nowhere), the same in every graph
// that inlines its code.
std::string place_of(const model::DataflowOp& op) {
  return op.file ? fmt::format("{}:{}-{}", op.file->path, op.begin, op.end) : std::string();
}

std::string producer_place(const model::FunctionDataflow& g, int v) { return place_of(g.producer_of(v)); }

// Where each computing op of a match is in the source.
std::set<std::string> op_places(const MatchSite& site) {
  std::set<std::string> out;
  for (int id : site.match.ops) {
    const model::DataflowOp& op = site.match.target->ops[static_cast<size_t>(id)];
    if (op.file && computes(op)) out.insert(place_of(op));
  }
  return out;
}

// The values `site`'s function returns that its callers all drop: the same
// rule matched the same ops seen inlined in larger functions (the attention
// that calls the eager function, the decoder layer that calls the
// attention), and in none of them does the value escape (HF's attention
// returns its probabilities on, the layer unpacks them into `_`). Keyed by
// producer_place.
std::set<std::string> dropped_by_callers(const MatchSite& site, const std::vector<MatchSite>& matches) {
  std::set<std::string> out;
  const model::FunctionDataflow& g = *site.match.target;
  if (std::none_of(site.match.escapes.begin(), site.match.escapes.end(),
                   [](const match::Escape& e) { return e.consumer_op < 0 && e.how == "returned"; }))
    return out;
  const std::set<std::string> places = op_places(site);
  std::vector<const MatchSite*> callers;
  for (const MatchSite& s : matches) {
    if (&s == &site || s.match.pattern != site.match.pattern || s.function == site.function ||
        s.match.target->ops.size() <= g.ops.size())
      continue;
    std::set<std::string> theirs = op_places(s);
    if (std::includes(theirs.begin(), theirs.end(), places.begin(), places.end())) callers.push_back(&s);
  }
  if (callers.empty()) return out;
  const MatchSite* largest = *std::max_element(callers.begin(), callers.end(), [](const MatchSite* a, const MatchSite* b) {
    return a->match.target->ops.size() < b->match.target->ops.size();
  });
  for (const match::Escape& e : site.match.escapes) {
    if (e.consumer_op >= 0 || e.how != "returned") continue;
    std::string place = producer_place(g, e.value);
    if (place.empty()) continue;
    // No caller reads it, and the largest one (the layer, or the model) does
    // not return it either: a caller between them may pass it on (HF's
    // attention returns the weights its layer drops).
    auto escapes_in = [&](const MatchSite* s, bool count_returns) {
      return std::any_of(s->match.escapes.begin(), s->match.escapes.end(), [&](const match::Escape& x) {
        return producer_place(*s->match.target, x.value) == place && (count_returns || x.consumer_op >= 0);
      });
    };
    bool read = std::any_of(callers.begin(), callers.end(), [&](const MatchSite* s) { return escapes_in(s, false); });
    if (!read && !escapes_in(largest, true)) out.insert(place);
  }
  return out;
}

// A branch merge (phi) the match passes through by a side the loaded config
// does not take: the value from before `if self.n_groups > 1:` when the config
// runs that arm (the merge then gives the arm's value). For each phi among
// the match's ops, the side the match followed is the input made by one of
// its ops; another input made under a clause the followed side lacks, a
// clause the config makes true, means the merge never gives the followed side.
const model::BranchCondition* merge_side_ruled_out(const std::vector<model::BranchCondition>& branches,
                                                   const model::FunctionDataflow& g, const std::vector<int>& ops) {
  std::set<int> in(ops.begin(), ops.end());
  for (int id : ops) {
    if (id < 0 || static_cast<size_t>(id) >= g.ops.size()) continue;
    const model::DataflowOp& phi = g.ops[static_cast<size_t>(id)];
    if (phi.name != "phi" || phi.inputs.size() < 2) continue;
    std::vector<std::string> base = model::condition_clauses(phi.condition);
    auto made = [&](int v) { return v >= 0 && static_cast<size_t>(v) < g.values.size() && g.values[static_cast<size_t>(v)].producer >= 0; };
    auto own = [&](int v) {
      std::vector<std::string> out;
      if (!made(v)) return out;
      for (std::string& cl : model::condition_clauses(g.producer_of(v).condition))
        if (std::find(base.begin(), base.end(), cl) == base.end()) out.push_back(std::move(cl));
      return out;
    };
    const std::string file = phi.file ? phi.file->path : "";
    for (int followed : phi.inputs) {
      if (!made(followed) || !in.count(g.producer_of(followed).id)) continue;
      std::vector<std::string> mine = own(followed);
      for (int other : phi.inputs) {
        if (other == followed || (made(other) && in.count(g.producer_of(other).id))) continue;  // the match takes that side too
        for (const std::string& cl : own(other)) {
          if (std::find(mine.begin(), mine.end(), cl) != mine.end()) continue;
          bool negated = cl.rfind("not (", 0) == 0 && cl.size() > 6 && cl.back() == ')';
          // `cl` true: its test false when it is a negation, else the negation of the test ruled out
          std::string ruled_out_when_true = negated ? cl.substr(5, cl.size() - 6) : "not (" + cl + ")";
          if (const model::BranchCondition* b = model::config_ruled_out(branches, ruled_out_when_true, file)) return b;
        }
      }
    }
  }
  return nullptr;
}

void decide_status(const rules::Rule& rule, const MatchSite& site, Candidate& c,
                   const std::vector<model::BranchCondition>* branches, const std::set<std::string>& dropped) {
  for (const CheckResult& r : c.checks) {
    if (r.answer == check::Answer::Violated && r.severity == "error") add_unique(c.blocking, blocking_text(r));
    if (r.answer == check::Answer::Violated && r.severity != "error")
      c.evidence.push_back("warning: " + blocking_text(r));
    for (const std::string& m : r.missing) add_unique(c.missing_facts, m);
  }
  std::sort(c.missing_facts.begin(), c.missing_facts.end());
  if (rule.safety == "display_only") {
    const std::string* why = doc_section(rule, "Why");
    const std::string* instead = doc_section(rule, "Use instead");
    std::string text = fmt::format("{} is display only: {}", rule.id, why ? first_paragraph(*why) : rule.summary_en);
    if (instead) text += " Use instead: " + first_paragraph(*instead);
    c.blocking.insert(c.blocking.begin(), text);
  }
  const std::string seam = site.match.target ? seam_of(ops_by_copy(site.match)) : "within_layer";
  for (const rules::Prerequisite& p : rule.prerequisites)
    if (needed_at(p, seam)) c.prerequisites.push_back(PrerequisiteItem{p.id, p.en, p.zh, p.mechanical, c.location});
  if (std::optional<PrerequisiteItem> slice = id_slice_prerequisite(rule, site, c.location)) c.prerequisites.push_back(*slice);
  // A value the chain computes that something else also reads: the fused
  // operator will not produce it, so that use must change first.
  for (const match::Escape& e : site.match.escapes) {
    if (only_in_other_stages(site, e.consumer_op, c, branches)) continue;
    std::string value = value_text(*site.match.target, e.value);
    if (e.consumer_op < 0 && dropped.count(producer_place(*site.match.target, e.value))) {
      c.evidence.push_back(fmt::format("{} (made at line {}) is returned by {}, and every caller seen drops it: the "
                                       "rewrite returns None in its place",
                                       value, e.line, site.function));
      c.apply_dropped_returns.push_back(value);
      continue;
    }
    Location where{c.location.file, e.line > 0 ? e.line : c.location.start_line, e.line > 0 ? e.line : c.location.end_line};
    // "read by add(...) at model.py:130" names its place; a return does not.
    const std::string use = e.consumer_op < 0 && e.line > 0 ? fmt::format("{} at line {}", e.how, e.line) : e.how;
    if (!e.also_output.empty() && site.match.pattern) {
      c.escapes.push_back(fmt::format("{} is {}; the fused operator returns it too (take_output_{})", value, use, e.also_output));
      // The operator returns it too: that use reads the operator's output.
      const match::AlsoOutput& how = site.match.pattern->options.also_outputs.at(e.also_output);
      c.prerequisites.push_back(PrerequisiteItem{
          fmt::format("take_output_{}", e.also_output),
          fmt::format("{} is computed inside the chain and also {}; the fused operator returns it too: {}", value, use,
                      how.en),
          fmt::format("{}在链路内部计算，且另有用途（{}）；融合算子也会输出该值：{}", value, use, how.zh),
          false, where});
      continue;
    }
    c.escapes.push_back(fmt::format("{} is {}", value, use));
    c.prerequisites.push_back(PrerequisiteItem{
        keep_intermediate_id(*site.match.target, e.value, c.prerequisites),
        fmt::format("{} is computed inside the chain and also {}; the fused operator does not produce it: "
                    "recompute it outside or remove that use first",
                    value, use),
        fmt::format("{}在链路内部计算，且另有用途（{}）；融合算子不会输出该值：需先在链路外重新计算或去掉该用途", value, use),
        false, where});
  }
  // A match through code the loaded config does not run (a renormalisation
  // under `if self.norm_topk_prob:` with norm_topk_prob = False), or through
  // the side of a branch merge the config does not take (the scores that skip
  // `if self.n_groups > 1:`'s group masking when n_group is 8): the operator
  // would compute a chain this configuration does not.
  if (branches && site.match.target) {
    std::string file;
    for (int id : site.match.ops)
      if (file.empty() && id >= 0 && static_cast<size_t>(id) < site.match.target->ops.size() &&
          site.match.target->ops[static_cast<size_t>(id)].file)
        file = site.match.target->ops[static_cast<size_t>(id)].file->path;
    if (const model::BranchCondition* b = model::config_ruled_out(*branches, site.match.condition, file))
      add_unique(c.blocking, fmt::format("the match holds only where `{}` is {}, and this config takes the other arm ({}): "
                                         "the model computes another chain",
                                         b->condition, b->config_arm == "then" ? "false" : "true", b->config_value));
    if (const model::BranchCondition* b = merge_side_ruled_out(*branches, *site.match.target, site.match.ops))
      add_unique(c.blocking, fmt::format("the match takes the value that skips `if {}:`, and this config runs that arm "
                                         "({}): the model computes another chain",
                                         b->condition, b->config_value));
    for (int id : site.match.ops) {
      if (id < 0 || static_cast<size_t>(id) >= site.match.target->ops.size()) continue;
      const model::DataflowOp& o = site.match.target->ops[static_cast<size_t>(id)];
      const model::BranchCondition* b = model::config_ruled_out(*branches, o.condition, o.file ? o.file->path : "");
      if (!b) continue;
      add_unique(c.blocking, fmt::format("the matched code at line {} runs only in the {} arm of `{}`, which this config "
                                         "does not take ({}): the model computes the chain without it",
                                         o.line, b->config_arm == "then" ? "else" : "then", b->condition,
                                         b->config_value));
      break;
    }
  }
  if (!c.blocking.empty()) c.status = Status::NotApplicable;
  else if (!c.prerequisites.empty()) c.status = Status::CandidateWithPrerequisites;
  else c.status = Status::Candidate;
}

struct Group {
  std::vector<const MatchSite*> sites;
};

const MatchSite& primary_site(const Group& g) {
  // The smallest function that holds the chain is the cut to verify.
  return **std::min_element(g.sites.begin(), g.sites.end(), [](const MatchSite* a, const MatchSite* b) {
    return a->match.target->ops.size() < b->match.target->ops.size();
  });
}

// A rule's RULE["rejects"] says which operators its chain must never be
// mapped to (Gemma's (1 + w) norm is not npu_rms_norm). Where it matched,
// another rule's candidate on the same lines calling such an operator is
// refused with that reason, so the plan never offers a silent numeric change.
void refuse_rejected(std::vector<Candidate>& candidates, const std::vector<const rules::Rule*>& rule_of) {
  for (size_t i = 0; i < candidates.size(); ++i) {
    for (const rules::Reject& reject : rule_of[i]->rejects) {
      for (size_t j = 0; j < candidates.size(); ++j) {
        Candidate& other = candidates[j];
        // Where the other chain's replacement goes, or any of its lines: an
        // add+norm placed at the layer's residual add still runs this norm.
        bool meets = overlaps(candidates[i].location, other.location) ||
                     std::any_of(other.parts.begin(), other.parts.end(),
                                 [&](const Location& part) { return overlaps(candidates[i].location, part); });
        if (j == i || !meets) continue;
        if (std::find(other.apis.begin(), other.apis.end(), reject.api) == other.apis.end()) continue;
        if (std::find(reject.spares.begin(), reject.spares.end(), rule_of[j]->id) != reject.spares.end()) continue;
        add_unique(other.blocking, fmt::format("{} found this chain at {}:{}: {} Needs: {}", rule_of[i]->id,
                                               candidates[i].location.file, candidates[i].location.start_line,
                                               reject.en, reject.needs));
        other.status = Status::NotApplicable;
      }
    }
  }
}

}  // namespace

std::vector<CheckResult> rule_checks(const rules::Rule& rule, const CandidateContext& ctx,
                                     const std::vector<std::string>& stages, std::vector<std::string>& evidence) {
  if (!ctx.catalog) return {};
  ChainFacts none;
  std::vector<StageFacts> per_stage;
  for (const std::string& stage : stages) per_stage.push_back(StageFacts{stage, stage_facts(rule, ctx, none, stage, evidence)});
  return evaluate_checks(rule, *ctx.catalog, per_stage);
}

int module_rank(const std::string& module) {
  static const std::vector<std::string> order = {"attention",   "kv_cache",    "rope", "norm",    "ffn",
                                                 "moe_gate",    "moe_routing", "moe_experts", "mla", "indexer",
                                                 "quant",       "other"};
  auto it = std::find(order.begin(), order.end(), module);
  return static_cast<int>(it - order.begin());
}

bool overlaps(const Location& a, const Location& b) {
  return a.file == b.file && a.start_line <= b.end_line && b.start_line <= a.end_line;
}

bool overlaps(const Location& a, const model::SourceSpan& b) {
  return a.file == b.file && a.start_line <= (b.end_line > 0 ? b.end_line : b.line) && b.line <= a.end_line;
}

CandidateSet build_candidates(const std::vector<MatchSite>& matches, const CandidateContext& ctx) {
  CandidateSet out;
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (const MatchSite& site : matches) {
    if (!site.match.pattern || !site.match.pattern->rule || site.match.spans.empty()) continue;
    std::string key = site.match.pattern->rule->id + "@" + chain_key(site.match);
    if (!groups.count(key)) order.push_back(key);
    groups[key].sites.push_back(&site);
  }
  std::map<std::string, int> ids_seen;
  // rule id -> where it matched, for rules whose `when` the deployment fails.
  std::map<std::string, std::vector<std::string>> withheld_at;
  std::map<std::string, std::string> withheld_why;
  check::FactSet no_facts;
  std::vector<const rules::Rule*> rule_of;  // parallel to out.candidates
  for (const std::string& key : order) {
    const Group& group = groups[key];
    const MatchSite& site = primary_site(group);
    const rules::Rule& rule = *site.match.pattern->rule;
    ChainParts where = chain_parts(site, ctx.functions);
    if (where.parts.empty()) {  // no op has a line: fall back on the matcher's span
      where.primary = location_of(site.match.spans.front());
      where.parts = {where.primary};
    }
    if (!withheld_why.count(rule.id))
      if (std::optional<std::string> why = rule_withheld(rule, ctx.facts ? *ctx.facts : no_facts)) {
        withheld_why[rule.id] = *why;
        std::vector<std::string> unknowns = rule_gate_unknowns(rule, ctx.facts ? *ctx.facts : no_facts);
        if (!unknowns.empty()) out.rules_awaiting_facts[rule.id] = std::move(unknowns);
      }
    if (withheld_why.count(rule.id)) {
      withheld_at[rule.id].push_back(fmt::format("{}:{}", where.primary.file, where.primary.start_line));
      continue;
    }
    Candidate c;
    c.rule = rule.id;
    c.module = rule.module;
    c.title = rule.title;
    c.title_zh = rule.summary_zh;
    c.apis = rule.apis;
    c.parts = std::move(where.parts);
    c.op_lines = std::move(where.op_lines);
    c.op_scopes = std::move(where.op_scopes);
    c.location = where.primary;
    c.id = fmt::format("{}@{}:{}", rule.id, c.location.file, c.location.start_line);
    if (int n = ++ids_seen[c.id]; n > 1) c.id += fmt::format("#{}", n);
    c.confidence = site.match.confidence;

    std::string why_stage;
    // An optional step (RULE["match"]["optional"]) found under a condition
    // does not narrow the stages: the chain is the same fused call with or
    // without it (a causal-mask add only prefill builds the mask for).
    std::vector<int> narrowing = stage_narrowing_ops(site.match);
    std::string branch = ctx.branches ? branch_stage(*site.match.target, narrowing, *ctx.branches, &why_stage) : "";
    c.stages = split_stages(rule.stages, branch, ctx.requested_stage);
    if (c.stages.empty()) {
      out.notes.push_back(fmt::format("{}: matched, but it applies to {} only{} and the plan is for {}", c.id,
                                      fmt::join(rule.stages, "/"), branch.empty() ? "" : " in the " + branch + " branch",
                                      ctx.requested_stage == "both" ? "the " + branch + " branch" : ctx.requested_stage));
      continue;
    }
    c.evidence = match_evidence(site);
    if (!branch.empty()) c.evidence.push_back(fmt::format("runs only in {}: {}", branch, why_stage));
    std::set<std::string> instances;
    for (const MatchSite* s : group.sites) {
      std::string inst = instance_of(*s);
      if (!inst.empty()) instances.insert(inst);
      if (s->function != site.function) add_unique(c.evidence, "also seen inlined in " + s->function);
    }
    for (const std::string& i : instances) c.instance += (c.instance.empty() ? "" : "; ") + i;

    ChainFacts chain = derive_chain_facts(rule, group.sites, ctx.structure);
    for (const std::string& n : chain.notes) c.evidence.push_back(n);
    std::vector<StageFacts> per_stage;
    for (const std::string& stage : c.stages)
      per_stage.push_back(StageFacts{stage, stage_facts(rule, ctx, chain, stage, c.evidence)});
    if (ctx.catalog) c.checks = evaluate_checks(rule, *ctx.catalog, per_stage);
    c.verification_cut = verification_cut(site, c.location);
    fill_apply_site(site, c);
    if (ctx.branches) note_config_arms(*ctx.branches, c);
    decide_status(rule, site, c, ctx.branches, dropped_by_callers(site, matches));
    out.candidates.push_back(std::move(c));
    rule_of.push_back(&rule);
  }
  refuse_rejected(out.candidates, rule_of);
  for (const auto& [rule, places] : withheld_at)
    out.notes.push_back(fmt::format("{} matched at {} but is not offered: {}", rule, fmt::join(places, ", "),
                                    withheld_why[rule]));
  std::stable_sort(out.candidates.begin(), out.candidates.end(), [](const Candidate& a, const Candidate& b) {
    int ra = module_rank(a.module), rb = module_rank(b.module);
    if (ra != rb) return ra < rb;
    if (a.location.file != b.location.file) return a.location.file < b.location.file;
    return a.location.start_line < b.location.start_line;
  });
  return out;
}

bool near_miss_in_function(const NearMissSite& n, const Location& where, model::FunctionIndex* functions) {
  if (!functions || n.trace.spans.empty()) return true;
  const model::SourceSpan& at = n.trace.spans.front();
  return at.file == where.file &&
         functions->at_line(at.file, at.line) == functions->at_line(where.file, where.start_line);
}

void attach_near_misses(const std::vector<NearMissSite>& near_misses, std::vector<Candidate>& candidates,
                        std::vector<std::string>& notes, model::FunctionIndex* functions) {
  std::set<std::string> told;
  for (const NearMissSite& n : near_misses) {
    if (!n.trace.pattern || !n.trace.pattern->rule || n.trace.spans.empty()) continue;
    const std::string& rule = n.trace.pattern->rule->id;
    Location where = location_of(n.trace.spans.front());
    // One reason per rule and place: the same chain inlined for several
    // instances fails the same way with other binding names.
    if (!told.insert(fmt::format("{}@{}:{}", rule, where.file, where.start_line)).second) continue;
    bool same_rule_matched = false;
    std::vector<Candidate*> others;
    for (Candidate& c : candidates) {
      bool touches = std::any_of(c.parts.begin(), c.parts.end(), [&](const Location& p) {
        return std::any_of(n.trace.spans.begin(), n.trace.spans.end(),
                           [&](const model::SourceSpan& s) { return overlaps(p, s); }) &&
               near_miss_in_function(n, p, functions);
      });
      if (!touches) continue;
      if (c.rule == rule) same_rule_matched = true;
      else others.push_back(&c);
    }
    if (same_rule_matched) continue;
    // Where an applicable fusion matched, a sibling rule's failure tells the
    // user nothing; it explains a candidate only when that one is refused.
    bool applicable_there = std::any_of(others.begin(), others.end(), [](const Candidate* c) {
      return c->status == Status::Candidate || c->status == Status::CandidateWithPrerequisites;
    });
    std::erase_if(others, [](const Candidate* c) { return c->status != Status::NotApplicable; });
    if (others.empty() && applicable_there) continue;
    std::string extent = n.trace.pattern->lookalike_reason.empty()
                             ? fmt::format("{} of {} steps", n.trace.matched_steps, n.trace.pattern_steps)
                             : "a look-alike form";
    std::string text = fmt::format("{} did not match at {}:{} ({}): {}", rule, where.file, where.start_line, extent,
                                   n.trace.reason);
    if (others.empty()) {
      notes.push_back("near-miss: " + text);
      continue;
    }
    for (Candidate* c : others) add_unique(c->near_miss_reasons, text);
  }
}

}  // namespace npufuse::plan
