#pragma once
// One model folder analysed as `npufuse analyze FOLDER` would, with the
// rules and catalog the whole scan shares. Never throws: a model that cannot
// be read, parsed or analysed comes back as a failed result naming the place.
#include "scan/model_folders.h"
#include "scan/model_result.h"
#include "scan/scan_options.h"
#include "scan/shared_inputs.h"

namespace npufuse::scan {

ModelResult analyze_model(const ModelFolder& folder, const ScanOptions& options, const SharedInputs& shared);

}  // namespace npufuse::scan
