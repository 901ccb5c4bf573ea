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

}  // namespace npufuse::report
