#pragma once
// `npufuse verify`: every applicable candidate of a plan checked on its own
// (a harness per candidate), then the model with all of apply's edits
// checked against the original. Nothing is kept or rolled back here: that
// is the `apply --verify` loop (optimise_loop.h).
#include "verify/verify_session.h"

namespace npufuse::verify {

VerifyReport verify_plan(const VerifyOptions& options);

}  // namespace npufuse::verify
