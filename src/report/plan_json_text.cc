// plan::Plan -> JSON text, written straight from the plan with RapidJSON's
// PrettyWriter (Debian rapidjson-dev) instead of building plan_to_json's
// document and dumping it. A tree scan writes a plan per model, and the
// document plus nlohmann's dump were about a seventh of its time.
//
// The text is byte for byte what plan_to_json(plan).dump(2) gives (a test
// compares the two on every test model): each object's keys are written in
// the order nlohmann's sorted objects keep them, optional parts are left out
// under the same conditions, floating-point numbers and strings holding a
// control character nlohmann spells its own way are spelled by nlohmann.
// SSE2 is part of every x86-64: RapidJSON then copies runs of characters that
// need no escape sixteen bytes at a time.
#if defined(__SSE2__) && !defined(RAPIDJSON_SSE2)
#define RAPIDJSON_SSE2
#endif
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "frontend/utf8.h"
#include "report/plan_json.h"
#include "report/plan_names.h"

namespace npufuse::report {

namespace {

using Buffer = rapidjson::StringBuffer;
using JsonWriter = rapidjson::PrettyWriter<Buffer>;

// Texts RapidJSON would spell otherwise than nlohmann: those with control
// characters other than \b \t \n \f \r (nlohmann writes \u00xx in lower
// case, RapidJSON in upper case). Such a text is handed to nlohmann. Bytes
// that are no UTF-8 are looked for once in the whole text (plan_json_text).
// Whether some byte of `s` is below 0x20, eight bytes at a time: a byte b
// below 0x20 is one where b - 0x20 borrows into its top bit while b's own
// top bit is clear.
bool has_control_byte(std::string_view s) {
  constexpr uint64_t ones = 0x0101010101010101ULL, tops = 0x8080808080808080ULL;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if ((w - 0x20 * ones) & ~w & tops) return true;
  }
  for (; i < s.size(); ++i)
    if (static_cast<unsigned char>(s[i]) < 0x20) return true;
  return false;
}

bool spelled_by_nlohmann(std::string_view s) {
  if (!has_control_byte(s)) return false;
  for (unsigned char c : s)
    if (c < 0x20 && c != '\b' && c != '\t' && c != '\n' && c != '\f' && c != '\r') return true;
  return false;
}

class PlanWriter {
 public:
  PlanWriter() : w_(buffer_) { w_.SetIndent(' ', 2); }

  std::string finish() { return std::string(buffer_.GetString(), buffer_.GetSize()) + "\n"; }

  void str(std::string_view s) {
    if (spelled_by_nlohmann(s)) {
      std::string spelled = nlohmann::json(std::string(s)).dump();  // throws on bytes that are no UTF-8
      w_.RawValue(spelled.data(), spelled.size(), rapidjson::kStringType);
      return;
    }
    w_.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  }
  // The plan's own field names.
  void key(std::string_view k) { w_.Key(k.data(), static_cast<rapidjson::SizeType>(k.size())); }
  // A fact's name, from the config or the code: an identifier, but checked.
  void name_key(std::string_view k) {
    if (spelled_by_nlohmann(k)) throw std::runtime_error("plan key cannot be written: " + std::string(k.substr(0, 80)));
    key(k);
  }
  void integer(int64_t v) { w_.Int64(v); }
  void boolean(bool v) { w_.Bool(v); }
  void number(double v) {
    std::string spelled = nlohmann::json(v).dump();
    w_.RawValue(spelled.data(), spelled.size(), rapidjson::kNumberType);
  }
  void null() { w_.Null(); }
  void strings(const std::vector<std::string>& list) {
    w_.StartArray();
    for (const std::string& s : list) str(s);
    w_.EndArray();
  }
  void begin_object() { w_.StartObject(); }
  void end_object() { w_.EndObject(); }
  void begin_array() { w_.StartArray(); }
  void end_array() { w_.EndArray(); }

  void field(std::string_view k, std::string_view v) { key(k), str(v); }
  void field(std::string_view k, const std::vector<std::string>& v) { key(k), strings(v); }
  void int_field(std::string_view k, int64_t v) { key(k), integer(v); }

  // {"en": ..., "zh": ...}
  void bilingual(std::string_view k, const std::string& en, const std::string& zh) {
    key(k);
    begin_object();
    field("en", en);
    field("zh", zh);
    end_object();
  }

  void value(const check::Value& v) {
    if (v.is_none()) return null();
    if (v.is_bool()) return boolean(v.as_bool());
    if (v.is_int()) return integer(v.as_int());
    if (v.is_float()) return number(std::get<double>(v.data));
    if (v.is_str()) return str(v.as_str());
    begin_array();
    for (const auto& e : v.as_list()) value(e);
    end_array();
  }

  void location(const plan::Location& l) {
    begin_object();
    int_field("end_line", l.end_line);
    field("file", l.file);
    int_field("start_line", l.start_line);
    end_object();
  }
  void locations(std::string_view k, const std::vector<plan::Location>& list) {
    key(k);
    begin_array();
    for (const auto& l : list) location(l);
    end_array();
  }

  void options(const plan::AnalyzeOptions& o) {
    begin_object();
    field("catalog_dir", o.catalog_dir);
    field("chip", o.chip);
    field("config", o.config);
    field("deploy", o.deploy);
    int_field("dp", o.dp);
    int_field("ep", o.ep);
    field("paths", o.paths);
    field("quant", o.quant);
    field("rules_dir", o.rules_dir);
    field("stage", o.stage);
    field("torch_npu_version", o.torch_npu_version);
    int_field("tp", o.tp);
    end_object();
  }

  void check(const plan::CheckResult& c) {
    begin_object();
    field("answer", check::answer_name(c.answer));
    field("api", c.api);
    field("constraint_id", c.constraint_id);
    field("doc", c.doc);
    field("evidence", c.evidence);
    bilingual("message", c.message_en, c.message_zh);
    if (!c.missing.empty()) field("missing", c.missing);
    field("severity", c.severity);
    if (!c.stage.empty()) field("stage", c.stage);
    end_object();
  }

  void prerequisite(const plan::PrerequisiteItem& p) {
    begin_object();
    field("en", p.en);
    field("id", p.id);
    if (!p.where.file.empty()) {
      key("location");
      location(p.where);
    }
    key("mechanical"), boolean(p.mechanical);
    field("zh", p.zh);
    end_object();
  }

  void requirement(const plan::NewOperatorRequirement& r) {
    begin_object();
    field("dtype", r.dtype);
    field("inputs", r.inputs);
    field("layout", r.layout);
    field("outputs", r.outputs);
    field("subgraph", r.subgraph);
    field("why_nothing_fits", r.why_nothing_fits);
    end_object();
  }

  void candidate(const plan::Candidate& c) {
    begin_object();
    if (!c.alternatives.empty()) {
      key("alternatives");
      begin_array();
      for (const auto& a : c.alternatives) candidate(a);
      end_array();
    }
    field("apis", c.apis);
    if (!c.blocking.empty()) field("blocking", c.blocking);
    key("checks");
    begin_array();
    for (const auto& ch : c.checks) check(ch);
    end_array();
    key("confidence"), number(c.confidence);
    if (!c.escapes.empty()) field("escapes", c.escapes);
    field("evidence", c.evidence);
    if (!c.extra_locations.empty()) locations("extra_locations", c.extra_locations);
    field("id", c.id);
    if (!c.instance.empty()) field("instance", c.instance);
    key("location"), location(c.location);
    if (!c.missing_facts.empty()) field("missing_facts", c.missing_facts);
    field("module", c.module);
    if (!c.near_miss_reasons.empty()) field("near_miss_reasons", c.near_miss_reasons);
    if (!c.parts.empty()) locations("parts", c.parts);
    key("prerequisites");
    begin_array();
    for (const auto& p : c.prerequisites) prerequisite(p);
    end_array();
    if (c.status == plan::Status::NoFusedOp) key("requirement"), requirement(c.requirement);
    field("rule", c.rule);
    field("stages", c.stages);
    field("status", status_word(c.status));
    field("title", c.title);
    if (!c.title_zh.empty()) field("title_zh", c.title_zh);
    if (!c.verification_cut.empty()) field("verification_cut", c.verification_cut);
    end_object();
  }

  void chain(const plan::ChainReport& c) {
    begin_object();
    field("id", c.id);
    field("source", c.source);
    field("stage", c.stage);
    key("steps");
    begin_array();
    for (const plan::ChainStepReport& s : c.steps) {
      begin_object();
      field("candidates", s.candidates);
      if (!s.detail.empty()) bilingual("detail", s.detail, s.detail_zh);
      field("name", s.name);
      field("status", s.status);
      bilingual("title", s.title_en, s.title_zh);
      end_object();
    }
    end_array();
    bilingual("title", c.title_en, c.title_zh);
    end_object();
  }

  void review(const plan::ReviewItem& r) {
    begin_object();
    field("failing", r.failing);
    field("id", r.id);
    key("passed"), boolean(r.passed);
    bilingual("title", r.title_en, r.title_zh);
    end_object();
  }

  void plan(const plan::Plan& p) {
    begin_object();
    if (!p.assumed_facts.empty()) field("assumed_facts", p.assumed_facts);
    key("candidates");
    begin_array();
    for (const auto& c : p.candidates) candidate(c);
    end_array();
    key("facts");
    begin_object();  // std::map: in the order nlohmann keeps keys
    for (const auto& [name, fact] : p.facts.all()) {
      name_key(name);
      begin_object();
      field("provenance", fact.provenance);
      key("value"), value(fact.value);
      end_object();
    }
    end_object();
    key("files");
    begin_array();
    for (const auto& f : p.files) {
      begin_object();
      field("path", f);
      if (auto it = p.file_hashes.find(f); it != p.file_hashes.end()) field("sha256", it->second);
      end_object();
    }
    end_array();
    field("notes", p.notes);
    key("options"), options(p.options);
    key("reference_chains");
    begin_array();
    for (const auto& c : p.reference_chains) chain(c);
    end_array();
    key("review");
    begin_array();
    for (const auto& r : p.review) review(r);
    end_array();
    int_field("schema_version", p.schema_version);
    field("tool_version", p.tool_version);
    field("unknown_facts", p.unknown_facts);
    end_object();
  }

 private:
  Buffer buffer_;
  JsonWriter w_;
};

}  // namespace

std::string plan_json_text(const plan::Plan& plan) {
  PlanWriter out;
  out.plan(plan);
  std::string text = out.finish();
  // A text holding bytes that are no UTF-8 (a file name can): nlohmann
  // refuses it, as it always did, where RapidJSON would copy the bytes.
  if (frontend::find_invalid_utf8(text) != frontend::kValidUtf8) return plan_to_json(plan).dump(2) + "\n";
  return text;
}

}  // namespace npufuse::report
