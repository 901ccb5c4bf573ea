#include "apply/causal_buffer.h"

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <vector>

#include "apply/source_functions.h"
#include "model/ast_walk.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;
using Origin = plan::Candidate::BindingOrigin;

std::string line_of(const model::ModelFile& file, const ast::Node* n) {
  return fmt::format("{}:{}", file.path, file.parsed->source.line_col(n->begin).line);
}

const ast::Slice* plain_slice(const ast::expr* e) {
  auto* s = ast::as<ast::Slice>(e);
  return s && !s->step ? s : nullptr;
}

// The parameter whose sequence length `e` is: `x.size(-2)` or `x.shape[-2]`.
std::string sequence_length_of(const model::ModelFile& file, const ast::expr* e) {
  if (auto* call = ast::as<ast::Call>(e); call && call->args.size == 1 && call->keywords.size == 0)
    if (auto* f = ast::as<ast::Attribute>(call->func); f && f->attr == "size" && text_of(file, call->args[0]) == "-2")
      if (auto* x = ast::as<ast::Name>(f->value)) return std::string(x->id);
  if (auto* sub = ast::as<ast::Subscript>(e); sub && text_of(file, sub->slice) == "-2")
    if (auto* f = ast::as<ast::Attribute>(sub->value); f && f->attr == "shape")
      if (auto* x = ast::as<ast::Name>(f->value)) return std::string(x->id);
  return {};
}

// Every value `fn` assigns to the name `id`, with its statement.
std::vector<std::pair<const ast::stmt*, const ast::expr*>> assignments_of(const ast::FunctionDef& fn, std::string_view id) {
  std::vector<std::pair<const ast::stmt*, const ast::expr*>> out;
  model::walk(&fn, [&](const ast::Node* n) {
    auto* a = ast::as<ast::Assign>(n);
    if (!a) return true;
    for (const ast::expr* t : a->targets) {
      if (is_name(t, id)) out.emplace_back(a, a->value);
      auto* tt = ast::as<ast::Tuple>(t);
      auto* vt = ast::as<ast::Tuple>(a->value);
      if (!tt) continue;
      for (size_t i = 0; i < tt->elts.size; ++i)
        if (is_name(tt->elts[i], id)) out.emplace_back(a, vt && vt->elts.size == tt->elts.size ? vt->elts[i] : nullptr);
    }
    return true;
  });
  // Other stores (a for target, an augmented assignment) count as unknown values.
  model::walk(&fn, [&](const ast::Node* n) {
    if (auto* aug = ast::as<ast::AugAssign>(n); aug && is_name(aug->target, id)) out.emplace_back(aug, nullptr);
    if (auto* f = ast::as<ast::For>(n))
      for (const std::string& s : names_in(f->target, ast::expr_context::Store))
        if (s == id) out.emplace_back(f, nullptr);
    return true;
  });
  return out;
}

// The key or query binding: the parameter name it is bound to, when its
// origin is that parameter of the function.
std::string bound_parameter(const plan::Candidate& c, const std::string& parameter) {
  for (size_t i = 0; i < c.apply_bindings.size(); ++i)
    if (c.apply_bindings[i].first == parameter && i < c.apply_binding_origins.size() &&
        c.apply_binding_origins[i].kind == Origin::Kind::Parameter)
      return c.apply_bindings[i].second;
  return {};
}

// `torch.tril(torch.ones(<n, n>, dtype=bool|uint8))`, maybe `.view(1, 1, n, n)`
// (or reshape): the reason it is not, empty when it is.
// `resolve` gives the value a name holds (or null when not known).
std::string not_lower_triangle(const model::ModelFile& file, const ast::expr* e,
                               const std::function<const ast::expr*(const ast::expr*)>& resolve) {
  std::vector<std::string> viewed;
  e = resolve(e);
  if (!e) return "the buffer's value is not assigned once before it is registered";
  if (auto* call = ast::as<ast::Call>(e))
    if (auto* f = ast::as<ast::Attribute>(call->func); f && (f->attr == "view" || f->attr == "reshape") &&
                                                      call->keywords.size == 0) {
      for (const ast::expr* a : call->args) viewed.push_back(text_of(file, a));
      e = resolve(f->value);
      if (!e) return "the viewed value is not assigned once before the buffer is registered";
    }
  auto* tril = ast::as<ast::Call>(e);
  if (!tril || text_of(file, tril->func) != "torch.tril" || tril->args.size != 1)
    return fmt::format("`{}` is not torch.tril(torch.ones(...)) with the main diagonal", text_of(file, e));
  for (const ast::keyword* k : tril->keywords)
    if (k->arg != "diagonal" || text_of(file, k->value) != "0")
      return fmt::format("torch.tril at {} is given {}", line_of(file, tril), text_of(file, k));
  auto* ones = ast::as<ast::Call>(tril->args[0]);
  if (!ones || text_of(file, ones->func) != "torch.ones")
    return fmt::format("the triangle at {} is not cut from torch.ones(...)", line_of(file, tril));
  std::vector<std::string> shape;
  if (ones->args.size == 1 && ast::as<ast::Tuple>(ones->args[0]))
    for (const ast::expr* a : ast::as<ast::Tuple>(ones->args[0])->elts) shape.push_back(text_of(file, a));
  else
    for (const ast::expr* a : ones->args) shape.push_back(text_of(file, a));
  std::string dtype;
  for (const ast::keyword* k : ones->keywords)
    if (k->arg == "dtype") dtype = text_of(file, k->value);
  if (dtype != "torch.bool" && dtype != "torch.uint8")
    return fmt::format("torch.ones at {} is not given dtype=torch.bool", line_of(file, ones));
  if (shape.size() < 2 || shape[shape.size() - 1] != shape[shape.size() - 2])
    return fmt::format("torch.ones at {} is not square in its last two axes", line_of(file, ones));
  if (!viewed.empty()) {
    bool kept = viewed.size() >= 2 && viewed[viewed.size() - 1] == shape.back() && viewed[viewed.size() - 2] == shape.back();
    for (size_t i = 0; kept && i + 2 < viewed.size(); ++i) kept = viewed[i] == "1";
    if (!kept) return fmt::format("the view of the triangle at {} does not keep it as its last two axes", line_of(file, tril));
  }
  return {};
}

}  // namespace

CausalBuffer causal_buffer(const plan::Candidate& c, const std::string& parameter, const model::SourceSet& sources) {
  CausalBuffer out;
  auto refuse = [&](std::string where, std::string why) {
    out.where = std::move(where);
    out.why = std::move(why);
    return out;
  };
  size_t i = 0;
  while (i < c.apply_bindings.size() && c.apply_bindings[i].first != parameter) ++i;
  if (i >= c.apply_bindings.size() || i >= c.apply_binding_origins.size())
    return refuse(c.location.file, fmt::format("the chain binds nothing to '{}'", parameter));
  const Origin& origin = c.apply_binding_origins[i];
  const model::ModelFile* file = file_named(sources, origin.range.file);
  if (origin.kind != Origin::Kind::Expression || !file)
    return refuse(c.location.file, fmt::format("'{}' = {} is not an expression of the model's code", parameter,
                                               c.apply_bindings[i].second));
  std::optional<FunctionAt> fn = function_around(*file, origin.range.begin, origin.range.end);
  if (!fn || !fn->is_method) return refuse(c.location.file, "the mask is not read in a method of a class");
  // The slice, or its `.bool()` / `.to(torch.bool)` (GPT-Neo keeps a uint8 triangle).
  const ast::Subscript* read = nullptr;
  model::walk(fn->fn, [&](const ast::Node* n) {
    if (n->begin != origin.range.begin || n->end != origin.range.end) return true;
    read = ast::as<ast::Subscript>(n);
    if (auto* call = ast::as<ast::Call>(n); call && call->keywords.size == 0)
      if (auto* f = ast::as<ast::Attribute>(call->func);
          f && ((f->attr == "bool" && call->args.size == 0) ||
                (f->attr == "to" && call->args.size == 1 && text_of(*file, call->args[0]) == "torch.bool")))
        read = ast::as<ast::Subscript>(f->value);
    return !read;
  });
  const std::string at = read ? line_of(*file, read) : fn->qualified;
  const std::string self = first_param(*fn->fn);
  auto* held = read ? ast::as<ast::Attribute>(read->value) : nullptr;
  std::string buffer = held && is_name(held->value, self) ? std::string(held->attr) : std::string();
  auto* axes = read ? ast::as<ast::Tuple>(read->slice) : nullptr;
  const ast::Slice* rows = axes && axes->elts.size == 4 ? plain_slice(axes->elts[2]) : nullptr;
  const ast::Slice* cols = axes && axes->elts.size == 4 ? plain_slice(axes->elts[3]) : nullptr;
  auto* start = rows ? ast::as<ast::BinOp>(rows->lower) : nullptr;
  bool form = !buffer.empty() && rows && cols && start && start->op == ast::operator_::Sub && rows->upper && cols->upper &&
              !cols->lower;
  for (size_t a = 0; form && a < 2; ++a) {
    const ast::Slice* whole = plain_slice(axes->elts[a]);
    form = whole && !whole->lower && !whole->upper;
  }
  const auto* key_len = form ? ast::as<ast::Name>(start->left) : nullptr;
  const auto* query_len = form ? ast::as<ast::Name>(start->right) : nullptr;
  if (!key_len || !query_len || !is_name(rows->upper, key_len->id) || !is_name(cols->upper, key_len->id))
    return refuse(at, fmt::format("the mask is `{}`, not self.<buffer>[:, :, K - Q : K, :K]",
                                  read ? text_of(*file, read) : c.apply_bindings[i].second));

  // K and Q: the key's and the query's sequence lengths, taken from the
  // parameters the chain's key and query are.
  for (const auto& [length, side] : {std::pair{key_len, "key"}, std::pair{query_len, "query"}}) {
    std::string bound = bound_parameter(c, side);
    auto values = assignments_of(*fn->fn, length->id);
    std::string of = values.size() == 1 && values[0].second ? sequence_length_of(*file, values[0].second) : std::string();
    if (bound.empty() || of != bound || values[0].first->begin > read->begin)
      return refuse(at, fmt::format("'{}' is not shown to be the {}'s sequence length ({}.size(-2) of the {} the chain reads)",
                                    length->id, side, bound.empty() ? side : bound, side));
    if (!parameter_names(*fn->fn).count(bound))
      return refuse(at, fmt::format("'{}' is not a parameter of {}", bound, fn->qualified));
    for (const auto& [s, v] : assignments_of(*fn->fn, bound))
      if (s->begin < values[0].first->begin)
        return refuse(line_of(*file, s), fmt::format("'{}' is assigned before its length is taken", bound));
  }

  // The buffer: registered once in __init__ as the lower triangle, written nowhere else.
  std::string cls_name = fn->qualified.substr(0, fn->qualified.find('.'));
  const ast::ClassDef* cls = class_named(*file, cls_name);
  const ast::FunctionDef* init = cls ? method_named(*cls, "__init__") : nullptr;
  if (!init) return refuse(at, fmt::format("{} has no __init__ in {}", cls_name, file->path));
  const ast::Call* registered = nullptr;
  int registrations = 0;
  for (const ast::stmt* st : cls->body)
    if (auto* method = ast::as<ast::FunctionDef>(st))
      model::walk(method, [&](const ast::Node* n) {
        if (const ast::Call* call = registration(n, first_param(*method), buffer)) {
          ++registrations;
          registered = call;
        }
        return true;
      });
  if (registrations != 1 || registered->begin < init->begin || registered->end > init->end || registered->args.size < 2)
    return refuse(at, fmt::format("self.{} is not registered exactly once, in {}.__init__", buffer, cls_name));
  // A name __init__ assigns once, before the registration, stands for its value.
  auto resolve = [&](const ast::expr* e) -> const ast::expr* {
    auto* name = ast::as<ast::Name>(e);
    if (!name) return e;
    auto values = assignments_of(*init, name->id);
    if (values.size() != 1 || values[0].first->begin > registered->begin) return nullptr;
    return values[0].second;
  };
  if (std::string why = not_lower_triangle(*file, registered->args[1], resolve); !why.empty())
    return refuse(line_of(*file, registered), why);
  for (const ast::stmt* st : cls->body)
    if (auto* method = ast::as<ast::FunctionDef>(st))
      if (int line = changes_attribute(*method, buffer, registered))
        return refuse(fmt::format("{}:{}", file->path, line), fmt::format("self.{} is written again here", buffer));
  out.met = true;
  out.where = line_of(*file, registered);
  out.why = fmt::format(
      "self.{} is the lower triangle of ones (torch.tril, registered once, written nowhere else), read at {} from row "
      "{} - {}: causal and aligned to the last query, as sparse_mode 3 is",
      buffer, at, key_len->id, query_len->id);
  return out;
}

}  // namespace npufuse::apply
