#include "report/plan_names.h"

namespace npufuse::report {

// Kept here rather than calling plan::status_name so that the writer and the
// reader share one table and cannot drift apart.
namespace {
struct StatusWord {
  plan::Status status;
  const char* word;
};
constexpr StatusWord kStatusWords[] = {
    {plan::Status::Candidate, "candidate"},
    {plan::Status::CandidateWithPrerequisites, "candidate_with_prerequisites"},
    {plan::Status::NotApplicable, "not_applicable"},
    {plan::Status::NoFusedOp, "no_fused_op"},
};
constexpr check::Answer kAnswers[] = {check::Answer::Holds, check::Answer::Violated, check::Answer::Unknown,
                                      check::Answer::NotApplicable};
}  // namespace

const char* status_word(plan::Status s) {
  for (const auto& sw : kStatusWords)
    if (sw.status == s) return sw.word;
  return "candidate";
}

std::optional<plan::Status> status_from_word(std::string_view word) {
  for (const auto& sw : kStatusWords)
    if (word == sw.word) return sw.status;
  return std::nullopt;
}

std::optional<check::Answer> answer_from_word(std::string_view word) {
  for (check::Answer a : kAnswers)
    if (word == check::answer_name(a)) return a;
  return std::nullopt;
}

std::string status_label(plan::Status s, Lang lang) {
  if (lang == Lang::En) return status_word(s);
  switch (s) {
    case plan::Status::Candidate: return "候选";
    case plan::Status::CandidateWithPrerequisites: return "候选（需前置改造）";
    case plan::Status::NotApplicable: return "不适配";
    case plan::Status::NoFusedOp: return "无现成融合算子";
  }
  return status_word(s);
}

std::string answer_label(check::Answer a, Lang lang) {
  if (lang == Lang::En) return check::answer_name(a);
  switch (a) {
    case check::Answer::Holds: return "满足";
    case check::Answer::Violated: return "违反";
    case check::Answer::Unknown: return "未知";
    case check::Answer::NotApplicable: return "不涉及";
  }
  return check::answer_name(a);
}

std::string stage_label(const std::string& stage, Lang lang) {
  if (lang == Lang::En) return stage;
  if (stage == "prefill") return "Prefill";
  if (stage == "decode") return "Decode";
  if (stage == "both") return "Prefill + Decode";
  return stage;
}

}  // namespace npufuse::report
