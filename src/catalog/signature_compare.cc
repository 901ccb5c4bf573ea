#include "catalog/signature_compare.h"

#include <algorithm>
#include <map>

namespace npufuse::catalog {
namespace {

const SigParam* find_param(const std::vector<SigParam>& v, const std::string& name) {
  for (const auto& p : v)
    if (p.name == name) return &p;
  return nullptr;
}

std::string default_text(const SigParam& p) { return p.default_value ? *p.default_value : "(required)"; }

// Names that are not part of the longest common subsequence of the two orders:
// the parameters that moved.
std::vector<std::string> moved_names(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<std::string> kept;
  for (size_t i = 0, j = 0; i < n && j < m;) {
    if (a[i] == b[j]) {
      kept.push_back(a[i]);
      ++i;
      ++j;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      ++i;
    } else {
      ++j;
    }
  }
  std::vector<std::string> moved;
  for (const auto& name : a)
    if (std::find(kept.begin(), kept.end(), name) == kept.end()) moved.push_back(name);
  return moved;
}

}  // namespace

std::vector<SigParam> to_sig_params(const std::vector<Param>& params) {
  std::vector<SigParam> out;
  for (const auto& p : params) out.push_back({p.name, p.type, p.default_value, p.kw_only});
  return out;
}

std::vector<SignatureDiff> compare_signatures(const std::vector<SigParam>& mine, const std::vector<SigParam>& theirs) {
  std::vector<SignatureDiff> diffs;
  // catalog name -> other-side name, for parameters renamed in place.
  std::map<std::string, std::string> renamed;
  for (size_t i = 0; i < std::min(mine.size(), theirs.size()); ++i) {
    const auto& a = mine[i];
    const auto& b = theirs[i];
    if (a.name != b.name && !find_param(theirs, a.name) && !find_param(mine, b.name)) {
      renamed[a.name] = b.name;
      diffs.push_back({a.name, DriftKind::NameDiffers, a.name, b.name});
    }
  }
  auto other_name = [&](const std::string& n) {
    auto it = renamed.find(n);
    return it == renamed.end() ? n : it->second;
  };

  std::vector<std::string> my_order, their_order;
  for (const auto& a : mine) {
    const SigParam* b = find_param(theirs, other_name(a.name));
    if (!b) {
      diffs.push_back({a.name, DriftKind::MissingInSchema, default_text(a), "absent"});
      continue;
    }
    my_order.push_back(a.name);
    bool a_has = a.default_value.has_value(), b_has = b->default_value.has_value();
    if (a_has != b_has || (a_has && normalize_default(*a.default_value) != normalize_default(*b->default_value)))
      diffs.push_back({a.name, DriftKind::DefaultDiffers, default_text(a), default_text(*b)});
    if (a.kw_only != b->kw_only)
      diffs.push_back({a.name, DriftKind::KwOnlyDiffers, a.kw_only ? "keyword-only" : "positional",
                       b->kw_only ? "keyword-only" : "positional"});
  }
  for (const auto& b : theirs) {
    bool matched = false;
    for (const auto& a : mine)
      if (other_name(a.name) == b.name) matched = true;
    if (matched) their_order.push_back(b.name);
    else diffs.push_back({b.name, DriftKind::ExtraInSchema, "absent", default_text(b)});
  }
  // Compare orders in catalog names.
  std::map<std::string, std::string> back;
  for (const auto& [mine_name, their_name] : renamed) back[their_name] = mine_name;
  for (auto& n : their_order)
    if (back.count(n)) n = back[n];
  for (const auto& name : moved_names(my_order, their_order)) {
    size_t my_pos = std::find(my_order.begin(), my_order.end(), name) - my_order.begin();
    size_t their_pos = std::find(their_order.begin(), their_order.end(), name) - their_order.begin();
    diffs.push_back({name, DriftKind::OrderDiffers, "position " + std::to_string(my_pos + 1),
                     "position " + std::to_string(their_pos + 1)});
  }
  return diffs;
}

}  // namespace npufuse::catalog
