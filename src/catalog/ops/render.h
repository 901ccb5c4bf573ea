#pragma once
// The output of `npufuse ops`: text for people (English or Chinese
// headings and texts) and JSON for tools.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "catalog/ops/ops_index.h"

namespace npufuse::catalog {

// `torch_npu.name(Tensor x, *, int k=1) -> (Tensor y, Tensor z)`
std::string render_signature(const Operator& op);
// `chip == 'inference'` and `last_dim * dtype_bytes >= 32` as one readable line.
std::string render_constraint_rule(const Constraint& c, Lang lang);

std::string render_show_text(const OpsEntry& e, const OpsProvenance& from, Lang lang);
std::string render_search_text(const std::vector<SearchHit>& hits, size_t max, Lang lang);

nlohmann::ordered_json show_json(const OpsEntry& e, const OpsProvenance& from, Lang lang);
nlohmann::ordered_json search_json(const std::string& keyword, const std::vector<SearchHit>& hits, size_t max,
                                   Lang lang);
nlohmann::ordered_json list_json(const std::vector<const OpsEntry*>& entries, const OpsProvenance& from);

// The first non-empty line of a docstring, cut to about `limit` bytes at a
// UTF-8 boundary.
std::string first_line(const std::string& text, size_t limit);

}  // namespace npufuse::catalog
