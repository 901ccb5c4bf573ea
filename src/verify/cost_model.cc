#include "verify/cost_model.h"

#include <fmt/format.h>

#include <algorithm>

#include <toml++/toml.h>

#include "check/evaluate.h"
#include "check/expr_parser.h"
#include "util/embedded.h"

namespace npufuse {
const EmbeddedFile* verify_data_files(size_t* count);  // cmake/Embed.cmake
}

namespace npufuse::verify {
namespace {

std::string where(const std::string& file, const toml::node& n) {
  return fmt::format("{}:{}:{}", file, n.source().begin.line, n.source().begin.column);
}

std::string count_text(const toml::table& t, const std::string& key, const std::string& file) {
  const toml::node* n = t.get(key);
  if (!n) throw CostModelError(fmt::format("{}: missing {}", where(file, t), key));
  if (auto i = n->value<int64_t>()) return std::to_string(*i);
  if (auto s = n->value<std::string>()) {
    try {
      check::parse_constraint_expression(*s);
    } catch (const check::ExprSyntaxError& e) {
      throw CostModelError(fmt::format("{}: {}: {}", where(file, *n), key, e.what()));
    }
    return *s;
  }
  throw CostModelError(fmt::format("{}: {} must be an integer or an expression string", where(file, *n), key));
}

// The value of one count with the sizes as facts; nullopt names the missing size.
std::optional<double> value_of(const std::string& text, const check::FactSet& sizes, std::string& missing) {
  check::Partial p = check::evaluate(*check::parse_constraint_expression(text), sizes);
  if (!p.known()) {
    missing = fmt::format("{}", fmt::join(p.missing, ", "));
    return std::nullopt;
  }
  return p.value->as_number();
}

}  // namespace

nlohmann::ordered_json Estimate::to_json() const {
  nlohmann::ordered_json j;
  j["kind"] = "estimate";
  j["rule"] = rule;
  if (!unavailable.empty()) {
    j["unavailable"] = unavailable;
    return j;
  }
  j["stages"] = nlohmann::ordered_json::array();
  for (const StageEstimate& s : stages)
    j["stages"].push_back({{"stage", s.stage},
                           {"tokens_per_launch", s.tokens_per_launch},
                           {"unfused_launches", s.unfused_launches},
                           {"fused_launches", s.fused_launches},
                           {"unfused_bytes_per_token", s.unfused_bytes},
                           {"fused_bytes_per_token", s.fused_bytes},
                           {"unfused_us_per_token", s.unfused_us_per_token},
                           {"fused_us_per_token", s.fused_us_per_token},
                           {"saving_percent", s.saving_percent}});
  return j;
}

CostModel CostModel::parse(const std::string& text, const std::string& file) {
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw CostModelError(fmt::format("{}:{}:{}: {}", file, e.source().begin.line, e.source().begin.column,
                                     e.description()));
  }
  CostModel m;
  const toml::table* device = root["device"].as_table();
  if (!device) throw CostModelError(file + ":1:1: missing [device]");
  m.launch_us_ = (*device)["launch_us"].value<double>().value_or(0);
  m.hbm_gb_per_s_ = (*device)["hbm_gb_per_s"].value<double>().value_or(0);
  if (m.launch_us_ <= 0 || m.hbm_gb_per_s_ <= 0)
    throw CostModelError(fmt::format("{}: [device] needs positive launch_us and hbm_gb_per_s", where(file, *device)));
  const toml::table* rules = root["rules"].as_table();
  if (!rules) throw CostModelError(file + ":1:1: missing [rules.\"<rule id>\"] tables");
  for (const auto& [key, node] : *rules) {
    const toml::table* t = node.as_table();
    if (!t) throw CostModelError(fmt::format("{}: rules.{} must be a table", where(file, node), key.str()));
    RuleCost c;
    c.rule = std::string(key.str());
    c.unfused_launches = count_text(*t, "unfused_launches", file);
    c.fused_launches = count_text(*t, "fused_launches", file);
    c.unfused_bytes = count_text(*t, "unfused_bytes", file);
    c.fused_bytes = count_text(*t, "fused_bytes", file);
    m.rules_[c.rule] = c;
  }
  return m;
}

const CostModel& CostModel::embedded() {
  static const CostModel model = [] {
    size_t count = 0;
    const EmbeddedFile* files = verify_data_files(&count);
    for (size_t i = 0; i < count; ++i)
      if (std::string(files[i].path) == "cost_model.toml")
        return parse(std::string(files[i].data, files[i].size), "verify/cost_model.toml");
    throw CostModelError("verify/cost_model.toml is not embedded in this build");
  }();
  return model;
}

const RuleCost* CostModel::find(const std::string& rule) const {
  auto it = rules_.find(rule);
  return it == rules_.end() ? nullptr : &it->second;
}

Estimate CostModel::estimate(const std::string& rule, const std::map<std::string, int64_t>& sizes, int64_t batch,
                             int64_t seq, int dtype_bytes, const std::vector<std::string>& stages) const {
  Estimate e;
  e.rule = rule;
  const RuleCost* c = find(rule);
  if (!c) {
    e.unavailable = "verify/cost_model.toml has no entry for " + rule;
    return e;
  }
  check::FactSet facts;
  for (const auto& [name, v] : sizes) facts.set(name, check::Value(v), "size");
  facts.set("B", check::Value(batch), "--batch");
  facts.set("S", check::Value(seq), "--seq");
  facts.set("T", check::Value(batch * seq), "B * S");
  facts.set("bytes", check::Value(static_cast<int64_t>(dtype_bytes)), "dtype");
  std::string missing;
  auto ul = value_of(c->unfused_launches, facts, missing);
  auto fl = ul ? value_of(c->fused_launches, facts, missing) : std::nullopt;
  auto ub = fl ? value_of(c->unfused_bytes, facts, missing) : std::nullopt;
  auto fb = ub ? value_of(c->fused_bytes, facts, missing) : std::nullopt;
  if (!fb) {
    e.unavailable = fmt::format("the cost of {} needs {}, which the config does not give", rule, missing);
    return e;
  }
  // bytes / (GB/s) in microseconds: bytes / (g * 1e9) * 1e6.
  auto us = [&](double launches, double bytes, int64_t tokens) {
    return launches * launch_us_ / static_cast<double>(tokens) + bytes / (hbm_gb_per_s_ * 1e3);
  };
  for (auto [stage, tokens] : {std::pair<const char*, int64_t>{"prefill", batch * seq}, {"decode", batch}}) {
    if (!stages.empty() && std::find(stages.begin(), stages.end(), stage) == stages.end()) continue;
    StageEstimate s;
    s.stage = stage;
    s.tokens_per_launch = tokens;
    s.unfused_launches = *ul, s.fused_launches = *fl;
    s.unfused_bytes = *ub, s.fused_bytes = *fb;
    s.unfused_us_per_token = us(*ul, *ub, tokens);
    s.fused_us_per_token = us(*fl, *fb, tokens);
    s.saving_percent = s.unfused_us_per_token > 0 ? 100.0 * (1.0 - s.fused_us_per_token / s.unfused_us_per_token) : 0;
    e.stages.push_back(s);
  }
  return e;
}

}  // namespace npufuse::verify
