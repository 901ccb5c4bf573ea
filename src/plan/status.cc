#include "plan/plan.h"

namespace npufuse::plan {

const char* status_name(Status s) {
  switch (s) {
    case Status::Candidate: return "candidate";
    case Status::CandidateWithPrerequisites: return "candidate_with_prerequisites";
    case Status::NotApplicable: return "not_applicable";
    case Status::NoFusedOp: return "no_fused_op";
  }
  return "candidate";
}

}  // namespace npufuse::plan
