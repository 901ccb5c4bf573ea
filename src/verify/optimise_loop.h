#pragma once
// The step-5 loop behind `npufuse apply --verify`: candidates are applied
// one at a time on top of the ones kept so far; each is checked by its
// harness and by the model-level check; one that fails either is rolled back
// with its evidence. The kept set is finally written under --out with one
// diff, and the report (md and json) says per candidate what happened.
#include "verify/verify_session.h"

namespace npufuse::verify {

VerifyReport optimise(const VerifyOptions& options);

}  // namespace npufuse::verify
