#pragma once
// The inventory for people, in English or Chinese.
#include <string>

#include "model/inventory.h"

namespace npufuse::model {

enum class Lang { En, Zh };

std::string inventory_to_markdown(const Inventory& inv, Lang lang);

}  // namespace npufuse::model
