#pragma once
// The inventory as JSON; the schema is documented in docs/inspect-schema.md
// and versioned by its "schema" field.
#include <nlohmann/json.hpp>

#include "model/inventory.h"

namespace npufuse::model {

inline constexpr const char* kInspectSchema = "npufuse-inspect/1";

nlohmann::json inventory_to_json(const Inventory& inv);

}  // namespace npufuse::model
