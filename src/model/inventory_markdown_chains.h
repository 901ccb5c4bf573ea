#pragma once
// The sub-chains section of the inventory for people: per block, each
// module's steps with file:line spans, the attention-core layout, the steps
// not found and the intermediates that escape.
#include <string>
#include <vector>

#include "model/inventory_markdown.h"

namespace npufuse::model {

void render_chains(const std::vector<BlockChains>& blocks, Lang lang, std::string& out);

}  // namespace npufuse::model
