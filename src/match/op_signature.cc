#include "match/op_signature.h"

#include <map>
#include <set>
#include <vector>

namespace npufuse::match {

namespace {

// Positional parameter names of the torch functions rules spell with
// keywords in one place and positionally in another. Receiver first, as the
// dataflow puts it for method calls.
const std::map<std::string, std::vector<std::string>, std::less<>>& signatures() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> table = {
      {"mean", {"input", "dim", "keepdim", "dtype"}},
      {"sum", {"input", "dim", "keepdim", "dtype"}},
      {"amax", {"input", "dim", "keepdim"}},
      {"amin", {"input", "dim", "keepdim"}},
      {"max", {"input", "dim", "keepdim"}},
      {"min", {"input", "dim", "keepdim"}},
      {"var", {"input", "dim", "unbiased", "keepdim"}},
      {"std", {"input", "dim", "unbiased", "keepdim"}},
      {"logsumexp", {"input", "dim", "keepdim"}},
      {"softmax", {"input", "dim", "dtype"}},
      {"log_softmax", {"input", "dim", "dtype"}},
      {"cat", {"tensors", "dim"}},
      {"stack", {"tensors", "dim"}},
      {"chunk", {"input", "chunks", "dim"}},
      {"split", {"input", "split_size_or_sections", "dim"}},
      {"narrow", {"input", "dim", "start", "length"}},
      {"transpose", {"input", "dim0", "dim1"}},
      {"unsqueeze", {"input", "dim"}},
      {"squeeze", {"input", "dim"}},
      {"flatten", {"input", "start_dim", "end_dim"}},
      {"gather", {"input", "dim", "index"}},
      {"index_select", {"input", "dim", "index"}},
      {"index_copy", {"input", "dim", "index", "source"}},
      {"scatter", {"input", "dim", "index", "src"}},
      {"topk", {"input", "k", "dim", "largest", "sorted"}},
      {"pow", {"input", "exponent"}},
      {"clamp", {"input", "min", "max"}},
      {"clip", {"input", "min", "max"}},
      {"where", {"condition", "input", "other"}},
      {"masked_fill", {"input", "mask", "value"}},
      {"linear", {"input", "weight", "bias"}},
      {"conv1d", {"input", "weight", "bias", "stride", "padding", "dilation", "groups"}},
      {"matmul", {"input", "other"}},
      {"bmm", {"input", "mat2"}},
      {"layer_norm", {"input", "normalized_shape", "weight", "bias", "eps"}},
      {"rms_norm", {"input", "normalized_shape", "weight", "eps"}},
      {"gelu", {"input", "approximate"}},
      {"repeat_interleave", {"input", "repeats", "dim"}},
      {"scaled_dot_product_attention", {"query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale"}},
      {"einsum", {"equation"}},
      {"arange", {"start", "end", "step"}},
      {"div", {"input", "other", "rounding_mode"}},
      {"add", {"input", "other", "alpha"}},
      {"sub", {"input", "other", "alpha"}},
  };
  return table;
}

}  // namespace

std::string positional_key(std::string_view op, size_t index) {
  const auto& table = signatures();
  if (auto it = table.find(op); it != table.end() && index < it->second.size()) return it->second[index];
  return "#" + std::to_string(index);
}

std::string keyword_key(std::string_view label) {
  if (!label.empty() && label.back() == '=') label.remove_suffix(1);
  return std::string(label);
}

bool is_commutative(std::string_view op) {
  static const std::set<std::string, std::less<>> ops = {"add", "mul", "maximum", "minimum", "eq", "ne",
                                                         "logical_and", "logical_or", "bitwise_and", "bitwise_or",
                                                         "and", "or"};
  return ops.count(op) > 0;
}

bool is_layout_view(std::string_view op) {
  // Asked at every step of every walk: plain comparisons, no set lookup.
  return op == "view" || op == "reshape" || op == "contiguous" || op == "view_as" || op == "flatten" ||
         op == "unflatten" || op == "clone" || op == "detach";
}

bool same_view_op(std::string_view a, std::string_view b) {
  auto reshaping = [](std::string_view op) { return op == "view" || op == "reshape"; };
  return a == b || (reshaping(a) && reshaping(b));
}

bool is_inference_identity(std::string_view op) {
  if (op.find("dropout") == std::string_view::npos) return false;  // the common answer, cheaply
  return op == "dropout" || op == "dropout1d" || op == "dropout2d" || op == "dropout3d" || op == "alpha_dropout" ||
         op == "feature_alpha_dropout";
}

bool is_ignorable_argument(std::string_view key) {
  // device/pin_memory/requires_grad say where a tensor lives, not what it holds.
  return key == "dtype" || key == "inplace" || key == "out" || key == "non_blocking" || key == "copy" || key == "device" ||
         key == "pin_memory" || key == "requires_grad";
}

}  // namespace npufuse::match
