#include "verify/verify_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "apply/chain_rewrite.h"
#include "apply/patch_output.h"
#include "apply/plan_file.h"
#include "apply/source_functions.h"
#include "util/file_io.h"
#include "verify/cost_model.h"
#include "verify/harness_writer.h"
#include "verify/path_identity.h"
#include "verify/python_dir.h"
#include "verify/python_runner.h"

namespace npufuse::verify {

bool applicable_status(plan::Status s) {
  return s == plan::Status::Candidate || s == plan::Status::CandidateWithPrerequisites;
}

namespace {

namespace fs = std::filesystem;

void make_parent(const fs::path& file) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) throw FileError(fmt::format("{}: cannot create directory: {}", file.parent_path().string(), ec.message()));
}

int dtype_bytes(const std::string& dtype) { return dtype == "float32" ? 4 : 2; }

}  // namespace

std::string file_stem_for(const std::string& candidate_id) {
  std::string out;
  for (char ch : candidate_id) {
    bool keep = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
    out += keep ? ch : '_';
  }
  return out;
}

VerifySession::VerifySession(VerifyOptions options)
    : options_(std::move(options)),
      recorded_(apply::read_plan_file(options_.plan_path)),
      analysis_(apply::reanalyse_plan(recorded_, options_.plan_path, options_.paths)),
      python_dir_(find_python_dir(options_.python_dir)) {}

std::string VerifySession::dtype() const {
  if (!options_.dtype.empty()) return options_.dtype;
  if (const check::Fact* f = analysis_.plan.facts.find("dtype"); f && f->value.is_str()) {
    const std::string& d = f->value.as_str();
    if (d == "float32" || d == "bfloat16" || d == "float16") return d;
  }
  return "float32";
}

std::vector<const plan::Candidate*> VerifySession::applicable() const {
  std::vector<const plan::Candidate*> out;
  auto chosen = [&](const plan::Candidate& c) {
    return options_.only.empty() || std::count(options_.only.begin(), options_.only.end(), c.id);
  };
  for (const plan::Candidate& c : recorded_.candidates) {
    if (applicable_status(c.status) && !c.rule.empty() && chosen(c)) {
      out.push_back(&c);
      continue;
    }
    // --only may name an alternative (as apply's --only does): it is tried in
    // its preferred candidate's place.
    if (options_.only.empty()) continue;
    for (const plan::Candidate& alt : c.alternatives)
      if (applicable_status(alt.status) && !alt.rule.empty() && chosen(alt)) out.push_back(&alt);
  }
  return out;
}

const plan::Candidate* VerifySession::located(const std::string& id) const {
  for (const plan::Candidate& c : analysis_.plan.candidates) {
    if (c.id == id) return &c;
    for (const plan::Candidate& alt : c.alternatives)
      if (alt.id == id) return &alt;
  }
  return nullptr;
}

std::string VerifySession::rule_copy(const rules::Rule& rule) const {
  fs::path target = fs::path(options_.out_dir) / "rules" / rule.family / fs::path(rule.path).filename();
  make_parent(target);
  write_file_atomic(target.string(), std::string(rule.file->parsed->source.text()));
  return absolute_path(target.string());
}

HarnessSpec VerifySession::spec_for(const plan::Candidate& c, const std::map<std::string, std::string>& patched) const {
  HarnessSpec spec;
  spec.candidate = c.id;
  spec.rule = c.rule;
  spec.dtype = dtype();
  spec.device = options_.device;
  const rules::Rule* rule = analysis_.rules.find(c.rule);
  if (!rule || !rule->file) throw std::runtime_error(fmt::format("{}: rule {} is not loaded", c.id, c.rule));
  spec.rule_file = rule_copy(*rule);

  bool declares_r = rule->literal.contains("sizes") && rule->literal["sizes"].is_object() && rule->literal["sizes"].contains("R");
  std::map<std::string, int64_t> configured = configured_sizes(analysis_.plan.facts, rule->module, declares_r);
  ChosenSizes chosen = choose_sizes(rule->literal, configured, options_.batch, options_.seq, options_.max_elements);
  spec.sizes = chosen.sizes;
  spec.sizes_note = chosen.note;
  std::map<std::string, int64_t> model_sizes = chosen.sizes;  // the estimate uses the model's sizes, never reduced ones
  for (const auto& [k, v] : configured) model_sizes[k] = v;
  spec.estimate = CostModel::embedded()
                      .estimate(c.rule, model_sizes, options_.batch, options_.seq, dtype_bytes(spec.dtype), rule->stages)
                      .to_json();

  if (patched.empty()) {
    spec.cut_note = "apply made no edit for this candidate: the rule's search is checked against its replace";
    return spec;
  }
  if (c.apply_outputs.empty()) {
    spec.cut_note = "the chain's results were not located in the source";
    return spec;
  }
  const plan::Candidate::SourceRange& out = c.apply_outputs.front();
  const model::ModelFile* file = apply::file_named(analysis_.sources, out.file);
  auto copy = patched.find(out.file);
  std::optional<apply::FunctionAt> fn = file ? apply::function_around(*file, out.begin, out.end) : std::nullopt;
  if (!file || copy == patched.end() || !fn) {
    spec.cut_note = "the function holding the chain was not found";
    return spec;
  }
  std::string missing;
  std::map<std::string, std::string> arguments = apply::arguments_in(*fn, c, analysis_.sources, missing);
  if (!missing.empty()) {
    spec.cut_note = "function cut not used: " + missing;
    return spec;
  }
  // The harness hands a value to the function's parameter of the bound name.
  // A binding to a view the function makes of that parameter (DeepSeek-V3's
  // `cos = cos.unsqueeze(1)` before the rotation) has another shape than
  // what a caller passes: the function cut cannot be used.
  {
    std::set<std::string> params = apply::parameter_names(*fn->fn);
    for (size_t i = 0; i < c.apply_bindings.size() && i < c.apply_binding_origins.size(); ++i) {
      const std::string& param = c.apply_bindings[i].first;
      auto spelt = arguments.find(param);
      if (spelt == arguments.end() || !params.count(spelt->second)) continue;
      const plan::Candidate::BindingOrigin& origin = c.apply_binding_origins[i];
      bool made_inside = origin.kind == plan::Candidate::BindingOrigin::Kind::Expression &&
                         origin.range.file == out.file && fn->fn->body[0]->begin <= origin.range.begin &&
                         origin.range.end <= fn->fn->end;
      // Only a view that changes the parameter's shape matters: the harness
      // builds the bound value's shape, and a cast or a merge after an
      // optional add keeps it (vLLM's norm casts `x` and may add a residual:
      // its own code still runs on what it is passed, as in the model).
      bool inside = false;
      if (made_inside) {
        std::string_view made = file->parsed->source.text().substr(origin.range.begin, origin.range.end - origin.range.begin);
        static const std::vector<std::string> views = {".unsqueeze(", ".view(", ".reshape(", ".transpose(", ".permute(",
                                                       ".squeeze(", ".expand(", ".flatten(", ".unflatten(", "["};
        for (const std::string& view : views)
          inside = inside || made.rfind(spelt->second + view, 0) == 0;
      }
      if (inside) {
        spec.cut_note = fmt::format(
            "function cut not used: {} is bound to the value {} makes at {}:{}, not to its parameter {}", param,
            fn->qualified, out.file, file->parsed->source.line_col(origin.range.begin).line, spelt->second);
        return spec;
      }
    }
  }
  spec.cut = FunctionCut{absolute_path(out.file), absolute_path(copy->second), fn->qualified, arguments};
  return spec;
}

CheckResult VerifySession::run_harness(const HarnessSpec& spec, const std::string& harness_path) const {
  make_parent(harness_path);
  write_file_atomic(harness_path, harness_text(spec, python_dir_));
  ProcessResult run = run_process({interpreter(), harness_path}, options_.timeout_seconds);
  return read_result(run, harness_path);
}

std::string VerifySession::interpreter() const {
  return options_.python.empty() ? python_interpreter() : options_.python;
}

CheckResult VerifySession::run_model_check(const std::string& original, const std::string& patched) const {
  if (recorded_.options.config.empty()) {
    CheckResult r;
    r.data = {{"skipped", "the plan was made without --config, so the model cannot be built"}};
    return r;
  }
  if (!model_check_unavailable_.empty()) {
    CheckResult r;
    r.data = {{"skipped", model_check_unavailable_}};
    return r;
  }
  std::string script = (fs::path(python_dir_) / "npufuse_verify" / "model_check.py").string();
  std::string device = options_.device;
  std::vector<std::string> argv = {interpreter(), script, "--original", absolute_path(original), "--patched",
                                   absolute_path(patched), "--config", absolute_path(recorded_.options.config),
                                   "--device", device};
  if (!options_.entry.empty()) argv.insert(argv.end(), {"--entry", options_.entry});
  // A deployment that never pads (the plan's padded_batches is false) is not
  // judged on a padded batch; unknown or true, it is.
  if (const check::Fact* padded = recorded_.facts.find("padded_batches");
      padded && std::holds_alternative<bool>(padded->value.data) && !std::get<bool>(padded->value.data))
    argv.insert(argv.end(), {"--padded", "no"});
  ProcessResult run = run_process(argv, options_.timeout_seconds);
  // Killed or out of time: the model the config describes is too large to
  // build and run here. Not a verdict on the patch; the harness still is.
  if (run.timed_out || run.signal != 0) {
    std::string how = run.timed_out ? fmt::format("took longer than {} s (--timeout)", options_.timeout_seconds)
                                    : fmt::format("was killed by signal {}{}", run.signal,
                                                  run.signal == 9 ? ", most likely out of memory" : "");
    model_check_unavailable_ = fmt::format(
        "building and running the whole model from {} {}: too large for this machine; put a config with the same "
        "structure and small sizes next to it as config.tiny.json (docs/verify.md)",
        recorded_.options.config, how);
    CheckResult r;
    r.data = {{"skipped", model_check_unavailable_}};
    return r;
  }
  CheckResult r = read_result(run, "model check of " + patched);
  return r;
}

apply::PatchSet VerifySession::patches_for(const std::vector<std::string>& ids) const {
  apply::PatchRequest request;
  request.plan_path = options_.plan_path;
  request.paths = options_.paths;
  request.only = ids;
  return apply::make_patches(request);
}

std::map<std::string, std::string> VerifySession::write_copies(const apply::PatchSet& set, const std::string& dir) const {
  apply::OutputRequest request;
  request.out_dir = dir;
  apply::Written written = apply::write_patches(set, request);
  std::vector<std::string> shown = apply::shown_paths(set.files);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < set.files.size(); ++i) out[set.files[i].path] = (fs::path(dir) / shown[i]).string();
  return out;
}

CandidateVerdict VerifySession::start_verdict(const plan::Candidate& recorded) const {
  CandidateVerdict v;
  v.id = recorded.id;
  v.rule = recorded.rule;
  v.plan_status = plan::status_name(recorded.status);
  v.apis = recorded.apis;
  for (const plan::Candidate& alt : recorded.alternatives)
    v.alternatives.push_back({alt.id, plan::status_name(alt.status),
                              applicable_status(alt.status) ? "not tried: the preferred candidate was kept"
                                                            : "not tried: the plan does not offer it"});
  return v;
}

}  // namespace npufuse::verify
