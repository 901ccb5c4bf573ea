#include "apply/thread_residual.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "apply/source_functions.h"
#include "model/ast_walk.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;
using Range = plan::Candidate::SourceRange;

constexpr const char* kResidual = "npu_residual";  // the pending residual, in and out of the layer
constexpr const char* kNormed = "npu_normed";      // the fused norm's output, computed ahead of the norm call

struct Refusal {
  std::string why, where;
};

std::string place(const model::ModelFile& f, const ast::Node* n) { return fmt::format("{}:{}", f.path, n->lineno); }

bool nested_scope(const ast::Node* n) {
  return ast::as<ast::FunctionDef>(n) || ast::as<ast::AsyncFunctionDef>(n) || ast::as<ast::Lambda>(n) ||
         ast::as<ast::ClassDef>(n);
}

// Walks `root`'s own code: nested functions, lambdas and classes are not entered.
void walk_own(const ast::Node* root, const std::function<bool(const ast::Node*)>& visit) {
  model::walk(root, [&](const ast::Node* n) {
    if (n != root && nested_scope(n)) return false;
    return visit(n);
  });
}

bool mentions(const ast::Node* n, std::string_view name, std::optional<ast::expr_context> ctx = std::nullopt) {
  bool found = false;
  walk_own(n, [&](const ast::Node* x) {
    if (auto* id = ast::as<ast::Name>(x); id && id->id == name && (!ctx || id->ctx == *ctx)) found = true;
    return !found;
  });
  return found;
}

// Names the function already uses, so the refactor's names cannot clash.
bool uses_name(const ast::FunctionDef& fn, std::string_view name) {
  bool found = false;
  model::walk(&fn, [&](const ast::Node* x) {
    if (auto* id = ast::as<ast::Name>(x); id && id->id == name) found = true;
    if (auto* a = ast::as<ast::arg>(x); a && a->arg == name) found = true;
    return !found;
  });
  return found;
}

// The statement of `body` (directly) that holds bytes [begin, end).
const ast::stmt* statement_holding(const frontend::Span<ast::stmt*>& body, uint32_t begin, uint32_t end) {
  for (const ast::stmt* s : body)
    if (s->begin <= begin && end <= s->end) return s;
  return nullptr;
}

size_t index_of(const frontend::Span<ast::stmt*>& body, const ast::stmt* s) {
  for (size_t i = 0; i < body.size; ++i)
    if (body[i] == s) return i;
  return body.size;
}

uint32_t line_begin(const model::ModelFile& f, const ast::Node* s) { return f.parsed->source.line_start(s->lineno); }

// The byte after the line `s` ends on.
uint32_t after_line(const model::ModelFile& f, const ast::Node* s) {
  const frontend::SourceFile& src = f.parsed->source;
  return s->end_lineno + 1 <= src.line_count() ? src.line_start(s->end_lineno + 1) : static_cast<uint32_t>(src.text().size());
}

// "self.layers[].input_layernorm.weight" -> {"input_layernorm", "weight"};
// "self.norm.weight" -> {"norm", "weight"}: the submodule a norm parameter
// belongs to, relative to the module that calls it.
std::optional<std::pair<std::string, std::string>> norm_attribute(const std::string& text) {
  std::string rest;
  if (size_t bracket = text.rfind("]."); bracket != std::string::npos)
    rest = text.substr(bracket + 2);
  else if (text.rfind("self.", 0) == 0)
    rest = text.substr(5);
  else
    return std::nullopt;
  size_t dot = rest.find('.');
  if (dot == std::string::npos || rest.find('.', dot + 1) != std::string::npos) return std::nullopt;
  return std::make_pair(rest.substr(0, dot), rest.substr(dot + 1));
}

// The fused norm's weight and eps as the caller of the norm module spells
// them (`self.<attr>.weight`), and the norm attribute; or why not.
struct NormSpelling {
  std::string attribute, weight, eps;
};

std::optional<NormSpelling> norm_spelling(const plan::Candidate& c, std::string& why) {
  auto weight = norm_attribute(c.binding("weight"));
  if (!weight) {
    why = fmt::format("the norm's weight ({}) is not a norm submodule's parameter", c.binding("weight"));
    return std::nullopt;
  }
  NormSpelling out{weight->first, fmt::format("self.{}.{}", weight->first, weight->second), ""};
  std::string eps = c.binding("eps");
  if (auto e = norm_attribute(eps)) {
    if (e->first != weight->first) {
      why = fmt::format("the norm's weight and eps belong to different modules ({} and {})", c.binding("weight"), eps);
      return std::nullopt;
    }
    out.eps = fmt::format("self.{}.{}", e->first, e->second);
  } else if (!eps.empty() && eps.find_first_not_of("0123456789.eE-+") == std::string::npos) {
    out.eps = eps;  // a literal
  } else {
    why = fmt::format("the norm's eps ({}) is neither a literal nor the norm module's attribute", eps);
    return std::nullopt;
  }
  return out;
}

// The first call `self.<attribute>(<name>)` in `stmts[from..]`, with the
// statement of `stmts` that holds it.
struct NormCall {
  const ast::Call* call = nullptr;
  const ast::stmt* statement = nullptr;
  std::string argument;
};

std::optional<NormCall> first_norm_call(const frontend::Span<ast::stmt*>& stmts, size_t from, const std::string& attribute) {
  for (size_t i = from; i < stmts.size; ++i) {
    const ast::Call* found = nullptr;
    walk_own(stmts[i], [&](const ast::Node* x) {
      if (found) return false;
      auto* call = ast::as<ast::Call>(x);
      auto* attr = call ? ast::as<ast::Attribute>(call->func) : nullptr;
      auto* base = attr ? ast::as<ast::Name>(attr->value) : nullptr;
      if (base && base->id == "self" && attr->attr == attribute) found = call;
      return !found;
    });
    if (!found) continue;
    auto* arg = found->args.size == 1 && found->keywords.size == 0 ? ast::as<ast::Name>(found->args[0]) : nullptr;
    return NormCall{found, stmts[i], arg ? std::string(arg->id) : std::string()};
  }
  return std::nullopt;
}

// `name` is assigned somewhere in stmts[from, to).
bool assigned_in(const frontend::Span<ast::stmt*>& stmts, size_t from, size_t to, std::string_view name) {
  for (size_t i = from; i < to && i < stmts.size; ++i)
    if (mentions(stmts[i], name, ast::expr_context::Store)) return true;
  return false;
}

// `item` (a parameter or argument text such as "npu_residual=None") added
// after `last`, the last one of a list: on a line of its own when the list
// has one item per line with a trailing comma, else after `, `.
std::pair<uint32_t, std::string> append_item(const model::ModelFile& f, const ast::Node* last, uint32_t last_end,
                                             const std::string& item) {
  std::string_view text = f.parsed->source.text();
  size_t next = text.find_first_not_of(" \t", last_end);
  std::optional<std::string> indent = own_line_indent(f, last);
  if (indent && next != std::string_view::npos && text[next] == ',') {
    size_t after = text.find_first_not_of(" \t", next + 1);
    if (after != std::string_view::npos && (text[after] == '\n' || text[after] == '\r' || text[after] == '#'))
      return {static_cast<uint32_t>(next + 1), fmt::format("\n{}{},", *indent, item)};
  }
  return {last_end, ", " + item};
}

// Where `npu_residual=None` goes in a def: after every parameter and
// default, or before `**kwargs`.
std::optional<std::pair<uint32_t, std::string>> parameter_insertion(const model::ModelFile& f, const ast::FunctionDef& fn) {
  const ast::arguments& a = *fn.args;
  std::string_view text = f.parsed->source.text();
  const std::string item = fmt::format("{}=None", kResidual);
  if (a.kwarg) {
    size_t stars = text.rfind("**", a.kwarg->begin);
    if (stars == std::string_view::npos || stars < fn.begin) return std::nullopt;
    // `**kwargs` on a line of its own gets the new parameter on the line before it.
    const frontend::SourceFile& src = f.parsed->source;
    uint32_t start = src.line_start(src.line_col(static_cast<uint32_t>(stars)).line);
    std::string lead(text.substr(start, stars - start));
    if (lead.find_first_not_of(" \t") == std::string::npos)
      return std::make_pair(start, fmt::format("{}{},\n", lead, item));
    return std::make_pair(static_cast<uint32_t>(stars), item + ", ");
  }
  const ast::Node* last = nullptr;
  uint32_t end = 0;
  auto take = [&](const ast::Node* n) {
    if (n && n->end >= end) end = n->end, last = n;
  };
  for (const ast::arg* x : a.posonlyargs) take(x);
  for (const ast::arg* x : a.args) take(x);
  take(a.vararg);
  for (const ast::arg* x : a.kwonlyargs) take(x);
  for (const ast::expr* d : a.defaults) take(d);
  for (const ast::expr* d : a.kw_defaults) take(d);
  if (!last) return std::nullopt;
  // A positional-only marker after the last parameter (`def f(self, x, /)`) comes before the new one.
  size_t close = text.find_first_not_of(" \t\r\n", end);
  if (close != std::string_view::npos && text[close] == ',') {
    size_t next = text.find_first_not_of(" \t\r\n", close + 1);
    if (next != std::string_view::npos && text[next] == '/') return std::make_pair(static_cast<uint32_t>(next + 1), ", " + item);
  }
  return append_item(f, last, end, item);
}

// Where `npu_residual=npu_residual` goes in a call: after its last argument.
std::pair<uint32_t, std::string> argument_insertion(const model::ModelFile& f, const ast::Call& call) {
  const ast::Node* last = call.func;
  auto take = [&](const ast::Node* n) {
    if (n->end >= last->end) last = n;
  };
  for (const ast::expr* e : call.args) take(e);
  for (const ast::keyword* k : call.keywords) take(k);
  return append_item(f, last, last->end, fmt::format("{0}={0}", kResidual));
}

// Calls of `name` (a class being instantiated) anywhere in the sources.
std::vector<std::pair<const model::ModelFile*, const ast::Call*>> calls_of(const model::SourceSet& sources,
                                                                           std::string_view name) {
  std::vector<std::pair<const model::ModelFile*, const ast::Call*>> out;
  for (const auto& file : sources.files())
    model::walk(file->parsed->module, [&](const ast::Node* x) {
      if (auto* call = ast::as<ast::Call>(x)) {
        auto* id = ast::as<ast::Name>(call->func);
        auto* attr = ast::as<ast::Attribute>(call->func);
        if ((id && id->id == name) || (attr && attr->attr == name)) out.emplace_back(file.get(), call);
      }
      return true;
    });
  return out;
}

// One layer's seam candidates and what they were matched from.
struct Seams {
  const plan::Candidate* into_next = nullptr;   // the last add into the next layer's input norm
  const plan::Candidate* into_final = nullptr;  // the last layer's add into the final norm
  // One candidate may stand for both chains: the same ops' source (the norm
  // module's forward serves the layer's input norm and the final norm) is one
  // candidate with both instances ("Transformer.layers[].attn_norm;
  // Transformer.norm"). Then this is the final norm's attribute.
  std::string final_from_instance;
  Range add;                                    // the layer's last residual add
};

struct LayerLoop {
  const ast::For* loop = nullptr;
  const ast::Assign* call_statement = nullptr;  // `h = layer(h, ...)` directly in the loop body
  const ast::Call* call = nullptr;
  std::string hidden;                           // h
  size_t arity = 1;                             // the names the call's result is unpacked into
};

// The loop over the layer module list in the backbone's forward.
std::variant<LayerLoop, Refusal> layer_loop(const FunctionAt& model_forward) {
  const model::ModelFile& f = *model_forward.file;
  std::vector<LayerLoop> found;
  walk_own(model_forward.fn, [&](const ast::Node* x) {
    auto* loop = ast::as<ast::For>(x);
    if (!loop) return true;
    std::set<std::string> targets;
    model::walk(loop->target, [&](const ast::Node* t) {
      if (auto* id = ast::as<ast::Name>(t)) targets.insert(std::string(id->id));
      return true;
    });
    for (const ast::stmt* s : loop->body) {
      auto* assign = ast::as<ast::Assign>(s);
      auto* call = assign ? ast::as<ast::Call>(assign->value) : nullptr;
      auto* callee = call ? ast::as<ast::Name>(call->func) : nullptr;
      if (!callee || !targets.count(std::string(callee->id)) || assign->targets.size != 1) continue;
      LayerLoop l{loop, assign, call, "", 1};
      const ast::expr* target = assign->targets[0];
      if (auto* tuple = ast::as<ast::Tuple>(target)) {
        l.arity = tuple->elts.size;
        target = tuple->elts.size ? tuple->elts[0] : nullptr;
      }
      if (auto* id = target ? ast::as<ast::Name>(target) : nullptr) l.hidden = std::string(id->id);
      found.push_back(l);
    }
    return true;
  });
  if (found.empty())
    return Refusal{fmt::format("{} has no loop whose body assigns `h = layer(h, ...)` directly", model_forward.qualified),
                   place(f, model_forward.fn)};
  if (found.size() > 1)
    return Refusal{fmt::format("{} calls the layers in more than one loop", model_forward.qualified),
                   place(f, found[1].loop)};
  LayerLoop l = found.front();
  auto* first = l.call->args.size ? ast::as<ast::Name>(l.call->args[0]) : nullptr;
  if (l.hidden.empty() || !first || first->id != l.hidden)
    return Refusal{"the layer call does not read and rebind the same hidden-state name (`h = layer(h, ...)`)",
                   place(f, l.call_statement)};
  for (const ast::stmt* s : l.loop->body)
    if (s != l.call_statement && mentions(s, l.hidden))
      return Refusal{fmt::format("the loop body also uses {} besides the layer call; it would see the layer's "
                                 "output before its last residual add",
                                 l.hidden),
                     place(f, s)};
  for (const ast::Node* t : l.call_statement->targets)
    if (auto* tuple = ast::as<ast::Tuple>(t))
      for (const ast::expr* e : tuple->elts)
        if (!ast::as<ast::Name>(e)) return Refusal{"the layer's result is unpacked into something other than names", place(f, l.call_statement)};
  return l;
}

// The layer's last residual add and how its forward returns the sum.
struct LayerReturn {
  const ast::Return* ret = nullptr;
  const ast::BinOp* add = nullptr;
  const ast::stmt* add_statement = nullptr;
  const ast::Tuple* tuple = nullptr;  // the returned tuple, when the layer returns several values
  bool add_is_returned = false;       // `return A + B` (or its first element); else `NAME = A + B ... return NAME`
};

std::variant<LayerReturn, Refusal> layer_return(const FunctionAt& layer, const Range& add) {
  const model::ModelFile& f = *layer.file;
  const ast::FunctionDef& fn = *layer.fn;
  std::vector<const ast::Return*> returns;
  walk_own(&fn, [&](const ast::Node* x) {
    if (auto* r = ast::as<ast::Return>(x)) returns.push_back(r);
    return true;
  });
  if (returns.size() != 1 || fn.body.size == 0 || fn.body[fn.body.size - 1] != returns.front())
    return Refusal{fmt::format("{} does not end in its one return statement", layer.qualified), place(f, &fn)};
  LayerReturn out;
  out.ret = returns.front();
  model::walk(&fn, [&](const ast::Node* x) {
    if (auto* b = ast::as<ast::BinOp>(x); b && b->begin == add.begin && b->end == add.end && b->op == ast::operator_::Add)
      out.add = b;
    return !out.add;
  });
  if (!out.add) return Refusal{"the layer's last residual add is not a `+` expression", place(f, out.ret)};
  out.add_statement = statement_holding(fn.body, add.begin, add.end);
  if (!out.add_statement || ast::as<ast::If>(out.add_statement) || ast::as<ast::For>(out.add_statement) ||
      ast::as<ast::While>(out.add_statement) || ast::as<ast::With>(out.add_statement) || ast::as<ast::Try>(out.add_statement))
    return Refusal{"the layer's last residual add is not a statement of the forward's own body", place(f, out.add)};
  if (!out.ret->value) return Refusal{"the layer returns nothing", place(f, out.ret)};
  const ast::expr* value = out.ret->value;
  if (auto* tuple = ast::as<ast::Tuple>(value)) {
    out.tuple = tuple;
    if (tuple->elts.size == 0) return Refusal{"the layer returns an empty tuple", place(f, out.ret)};
    value = tuple->elts[0];
  }
  if (value == out.add) {
    out.add_is_returned = true;
    return out;
  }
  // `NAME = A + B`, then `return NAME` with NAME untouched in between.
  auto* returned = ast::as<ast::Name>(value);
  auto* assign = ast::as<ast::Assign>(out.add_statement);
  auto* bound = assign && assign->targets.size == 1 && assign->value == out.add ? ast::as<ast::Name>(assign->targets[0]) : nullptr;
  if (!returned || !bound || bound->id != returned->id)
    return Refusal{"the layer does not return its last residual sum as the first value it returns", place(f, out.ret)};
  size_t from = index_of(fn.body, out.add_statement) + 1, to = fn.body.size - 1;
  for (size_t i = from; i < to; ++i)
    if (mentions(fn.body[i], returned->id))
      return Refusal{fmt::format("{} is used between the layer's last residual add and its return", returned->id),
                     place(f, fn.body[i])};
  return out;
}

std::variant<std::vector<Edit>, Refusal> edits_for(const Seams& seams, const model::SourceSet& sources) {
  const plan::Candidate& any = seams.into_next ? *seams.into_next : *seams.into_final;
  const std::string id = any.id;
  const model::ModelFile* add_file = file_named(sources, seams.add.file);
  std::optional<FunctionAt> layer = add_file ? function_around(*add_file, seams.add.begin, seams.add.end) : std::nullopt;
  std::optional<FunctionAt> backbone = function_named(sources, any.apply_function);
  std::string here = fmt::format("{}:{}", any.location.file, any.location.start_line);
  if (!layer || !layer->is_method || !layer->qualified.ends_with(".forward"))
    return Refusal{"the layer's last residual add is not in a module's forward", here};
  if (!backbone || !backbone->is_method) return Refusal{"the layer loop is not in a module's method", here};
  const model::ModelFile& lf = *layer->file;
  const model::ModelFile& mf = *backbone->file;
  const ast::FunctionDef& lfn = *layer->fn;
  const ast::FunctionDef& mfn = *backbone->fn;
  const std::string layer_class = layer->qualified.substr(0, layer->qualified.rfind('.'));
  const std::string model_class = backbone->qualified.substr(0, backbone->qualified.rfind('.'));
  for (const char* name : {kResidual, kNormed}) {
    if (uses_name(lfn, name)) return Refusal{fmt::format("{} already uses the name {}", layer->qualified, name), place(lf, &lfn)};
    if (uses_name(mfn, name)) return Refusal{fmt::format("{} already uses the name {}", backbone->qualified, name), place(mf, &mfn)};
  }

  // The layer class is made in one place, the backbone's list of layers: no
  // other caller sees its return change.
  auto made = calls_of(sources, layer_class);
  const ast::ClassDef* model_cls = class_named(mf, model_class);
  auto inside = [](const ast::Node* outer, const ast::Node* n) { return outer->begin <= n->begin && n->end <= outer->end; };
  if (made.size() != 1 || !model_cls || made.front().first != &mf || !inside(model_cls, made.front().second))
    return Refusal{fmt::format("{} is made {} times, not once by {}: other callers would see its return change",
                               layer_class, made.size(), model_class),
                   here};

  auto loop_or = layer_loop(*backbone);
  if (auto* r = std::get_if<Refusal>(&loop_or)) return *r;
  const LayerLoop& loop = std::get<LayerLoop>(loop_or);
  auto ret_or = layer_return(*layer, seams.add);
  if (auto* r = std::get_if<Refusal>(&ret_or)) return *r;
  const LayerReturn& ret = std::get<LayerReturn>(ret_or);
  size_t returned = ret.tuple ? ret.tuple->elts.size : 1;
  if ((ret.tuple != nullptr) != (loop.arity > 1 || ast::as<ast::Tuple>(loop.call_statement->targets[0])) ||
      returned != loop.arity)
    return Refusal{fmt::format("the loop unpacks the layer's result into {} name(s), the layer returns {} value(s)",
                               loop.arity, returned),
                   place(mf, loop.call_statement)};

  // The layer's input: its first parameter after self.
  const ast::arguments& params = *lfn.args;
  std::vector<const ast::arg*> positional(params.posonlyargs.begin(), params.posonlyargs.end());
  positional.insert(positional.end(), params.args.begin(), params.args.end());
  if (positional.size() < 2) return Refusal{fmt::format("{} takes no hidden-state parameter", layer->qualified), place(lf, &lfn)};
  const std::string input(positional[1]->arg);
  size_t first = 0;
  while (first < lfn.body.size && is_docstring(lfn.body[first])) ++first;
  if (first == lfn.body.size || lfn.body[first]->lineno == lfn.lineno)
    return Refusal{fmt::format("{}'s body does not start on a line of its own", layer->qualified), place(lf, &lfn)};
  std::optional<std::string> body_indent = own_line_indent(lf, lfn.body[first]);
  std::optional<std::string> loop_indent = own_line_indent(mf, loop.loop);
  std::optional<std::string> add_indent = own_line_indent(lf, ret.add_statement);
  if (!body_indent || !loop_indent || !add_indent)
    return Refusal{"a statement the refactor puts code before shares its line with other code", here};

  std::vector<Edit> edits;
  auto edit = [&](const model::ModelFile& f, uint32_t b, uint32_t e, std::string text) {
    edits.push_back(Edit{f.path, b, e, std::move(text), id});
  };
  // The final norm's fusion is the into-final chain's own edit: verify asks
  // whether that candidate's lines ran (verify/exercised.h).
  auto final_edit = [&](const model::ModelFile& f, uint32_t b, uint32_t e, std::string text) {
    edits.push_back(Edit{f.path, b, e, std::move(text), seams.into_final ? seams.into_final->id : id});
  };

  // 1. The layer takes the pending residual.
  auto param = parameter_insertion(lf, lfn);
  if (!param) return Refusal{fmt::format("{}'s parameter list has no place for one more", layer->qualified), place(lf, &lfn)};
  edit(lf, param->first, param->first, param->second);

  // 2. It adds it first: fused with its input norm when that candidate is
  //    chosen, plain otherwise. The first layer gets None and keeps its norm.
  const std::string& ind = *body_indent;
  if (seams.into_next) {
    std::string why;
    std::optional<NormSpelling> norm = norm_spelling(*seams.into_next, why);
    if (!norm) return Refusal{why, here};
    std::optional<NormCall> call = first_norm_call(lfn.body, first, norm->attribute);
    if (!call || call->argument != input)
      return Refusal{fmt::format("{} does not call self.{}({}) on its input", layer->qualified, norm->attribute, input),
                     place(lf, &lfn)};
    size_t at = index_of(lfn.body, call->statement);
    if (assigned_in(lfn.body, first, at, input))
      return Refusal{fmt::format("{} is assigned before the layer's input norm reads it", input), place(lf, call->statement)};
    edit(lf, line_begin(lf, lfn.body[first]), line_begin(lf, lfn.body[first]),
         fmt::format("{0}{1} = None\n"
                     "{0}if {2} is not None:\n"
                     "{0}    # The previous layer's last residual add, fused with this layer's input norm.\n"
                     "{0}    {1}, _, {3} = torch_npu.npu_add_rms_norm({2}, {3}, {4}, {5})\n",
                     ind, kNormed, kResidual, input, norm->weight, norm->eps));
    std::string norm_call = text_of(lf, call->call);
    edit(lf, call->call->begin, call->call->end, fmt::format("({} if {} is None else {})", norm_call, kNormed, kNormed));
  } else {
    edit(lf, line_begin(lf, lfn.body[first]), line_begin(lf, lfn.body[first]),
         fmt::format("{0}if {1} is not None:\n"
                     "{0}    # The previous layer's last residual add.\n"
                     "{0}    {2} = {1} + {2}\n",
                     ind, kResidual, input));
  }

  // 3. Its last add is left to the caller: the sum's two terms go out.
  const std::string lhs = text_of(lf, ret.add->left), rhs = text_of(lf, ret.add->right);
  auto* bound = ast::as<ast::Assign>(ret.add_statement);
  auto* bound_name = bound && !ret.add_is_returned ? ast::as<ast::Name>(bound->targets[0]) : nullptr;
  const std::string hand_on = fmt::format("{}# The next layer (or the final norm) does this residual add.\n{}{} = {}\n",
                                          *add_indent, *add_indent, kResidual, lhs);
  if (bound_name && bound_name->id == rhs) {
    // `h = r + h`: h already holds the second term.
    edit(lf, line_begin(lf, ret.add_statement), after_line(lf, ret.add_statement), hand_on);
  } else {
    edit(lf, line_begin(lf, ret.add_statement), line_begin(lf, ret.add_statement), hand_on);
    edit(lf, ret.add->begin, ret.add->end, rhs);
  }
  const ast::expr* last = ret.tuple ? ret.tuple->elts[ret.tuple->elts.size - 1] : ret.ret->value;
  edit(lf, last->end, last->end, fmt::format(", {}", kResidual));

  // 4. The loop threads it from layer to layer.
  const std::string& lind = *loop_indent;
  edit(mf, line_begin(mf, loop.loop), line_begin(mf, loop.loop),
       fmt::format("{}{} = None  # the residual add each layer leaves to the next\n", lind, kResidual));
  const ast::expr* target = loop.call_statement->targets[0];
  const ast::expr* last_target = ast::as<ast::Tuple>(target) ? ast::as<ast::Tuple>(target)->elts[loop.arity - 1] : target;
  edit(mf, last_target->end, last_target->end, fmt::format(", {}", kResidual));
  auto [arg_at, arg_text] = argument_insertion(mf, *loop.call);
  edit(mf, arg_at, arg_at, arg_text);

  // 5. After the loop, the last layer's add: fused with the final norm, or plain.
  uint32_t after_loop = after_line(mf, loop.loop);
  std::optional<NormSpelling> final_norm;
  if (seams.into_final) {
    std::string why;
    final_norm = norm_spelling(*seams.into_final, why);
    if (!final_norm)
      return Refusal{why, fmt::format("{}:{}", seams.into_final->location.file, seams.into_final->location.start_line)};
  } else if (!seams.final_from_instance.empty() && seams.into_next) {
    // The same norm class after the loop: its parameters have the input norm's field names.
    std::string why;
    if (std::optional<NormSpelling> in = norm_spelling(*seams.into_next, why)) {
      auto field = [&](const std::string& spelt) {
        std::string prefix = "self." + in->attribute + ".";
        return spelt.rfind(prefix, 0) == 0 ? "self." + seams.final_from_instance + "." + spelt.substr(prefix.size()) : spelt;
      };
      final_norm = NormSpelling{seams.final_from_instance, field(in->weight), field(in->eps)};
    }
  }
  // The final norm: the first self.<norm>(h) after the loop, in the loop's own statement list.
  bool fused_final = false;
  if (final_norm) {
    const frontend::Span<ast::stmt*>* list = nullptr;
    walk_own(&mfn, [&](const ast::Node* x) {
      auto try_list = [&](const frontend::Span<ast::stmt*>& l) {
        for (const ast::stmt* s : l)
          if (s == loop.loop) list = &l;
      };
      if (x == &mfn) try_list(mfn.body);
      if (auto* s = ast::as<ast::If>(x)) try_list(s->body), try_list(s->orelse);
      if (auto* s = ast::as<ast::With>(x)) try_list(s->body);
      if (auto* s = ast::as<ast::For>(x)) try_list(s->body);
      return list == nullptr;
    });
    std::optional<Refusal> problem;
    std::optional<NormCall> call;
    if (!list) {
      problem = Refusal{"the layer loop's statement list is not found", place(mf, loop.loop)};
    } else {
      size_t at = index_of(*list, loop.loop) + 1;
      call = first_norm_call(*list, at, final_norm->attribute);
      if (!call || call->argument != loop.hidden)
        problem = Refusal{fmt::format("no self.{}({}) follows the layer loop in its block", final_norm->attribute, loop.hidden),
                          place(mf, loop.loop)};
      else if (assigned_in(*list, at, index_of(*list, call->statement), loop.hidden))
        problem = Refusal{fmt::format("{} is assigned between the layer loop and the final norm", loop.hidden),
                          place(mf, call->statement)};
    }
    // The chain into the final norm chosen on its own must be done; one
    // known only as an instance of the next-layer chain falls back to the plain add.
    if (problem && seams.into_final) return *problem;
    if (!problem) {
      final_edit(mf, after_loop, after_loop,
           fmt::format("{0}{1} = None\n"
                       "{0}if {2} is not None:\n"
                       "{0}    # The last layer's residual add, fused with the final norm.\n"
                       "{0}    {1}, _, {3} = torch_npu.npu_add_rms_norm({2}, {3}, {4}, {5})\n",
                       lind, kNormed, kResidual, loop.hidden, final_norm->weight, final_norm->eps));
      final_edit(mf, call->call->begin, call->call->end,
                 fmt::format("({} if {} is None else {})", text_of(mf, call->call), kNormed, kNormed));
      fused_final = true;
    }
  }
  if (!fused_final) {
    edit(mf, after_loop, after_loop,
         fmt::format("{0}if {1} is not None:\n"
                     "{0}    # The last layer's residual add.\n"
                     "{0}    {2} = {1} + {2}\n",
                     lind, kResidual, loop.hidden));
  }
  return edits;
}

// Whether `r` is a `+` expression of the sources.
bool is_add(const model::SourceSet& sources, const Range& r) {
  const model::ModelFile* f = file_named(sources, r.file);
  if (!f) return false;
  bool found = false;
  for (const ast::stmt* s : f->parsed->module->body)
    model::walk(s, [&](const ast::Node* x) {
      if (found || x->end <= r.begin || x->begin >= r.end) return false;
      if (auto* b = ast::as<ast::BinOp>(x); b && b->begin == r.begin && b->end == r.end && b->op == ast::operator_::Add)
        found = true;
      return !found;
    });
  return found;
}

// The final norm among a seam candidate's instances: the entry naming a
// submodule of the backbone itself ("Transformer.norm", next to
// "Transformer.layers[].attn_norm"), when the backbone's forward is the
// function matched.
std::string final_norm_instance(const plan::Candidate& c) {
  const std::string owner = c.apply_function.substr(0, c.apply_function.rfind('.'));
  size_t at = 0;
  while (at <= c.instance.size()) {
    size_t end = c.instance.find("; ", at);
    std::string entry = c.instance.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (entry.rfind(owner + ".", 0) == 0) {
      std::string attribute = entry.substr(owner.size() + 1);
      if (!attribute.empty() && attribute.find_first_of(".[") == std::string::npos) return attribute;
    }
    if (end == std::string::npos) break;
    at = end + 2;
  }
  return "";
}

}  // namespace

bool threads_residual(const plan::Candidate& c) { return c.apply_across_layers && c.rule == "norm.add_rms_norm"; }

std::vector<ThreadedResidual> thread_residual(const std::vector<const plan::Candidate*>& seams,
                                              const model::SourceSet& sources) {
  // Group by the layer add each seam starts from: the op of the earliest copy.
  std::map<std::tuple<std::string, uint32_t, uint32_t>, Seams> groups;
  std::vector<ThreadedResidual> out;
  for (const plan::Candidate* c : seams) {
    bool final_norm = std::find(c->apply_op_copies.begin(), c->apply_op_copies.end(), 0) != c->apply_op_copies.end();
    // The layer's side: copy 1 into the next layer, the last copy into the
    // final norm. Of its ops (views the match saw through come too), the add.
    std::vector<Range> adds;
    for (size_t i = 0; i < c->apply_ops.size() && i < c->apply_op_copies.size(); ++i) {
      bool layer_side = final_norm ? c->apply_op_copies[i] != 0 : c->apply_op_copies[i] == 1;
      if (layer_side && is_add(sources, c->apply_ops[i])) adds.push_back(c->apply_ops[i]);
    }
    if (adds.size() != 1) {
      out.push_back(ThreadedResidual{{}, {}, "the layer's side of the chain is not one `+` expression",
                                     fmt::format("{}:{}", c->location.file, c->location.start_line)});
      out.back().candidates.push_back(c->id);
      continue;
    }
    Seams& g = groups[{adds.front().file, adds.front().begin, adds.front().end}];
    g.add = adds.front();
    (final_norm ? g.into_final : g.into_next) = c;
    if (!final_norm) g.final_from_instance = final_norm_instance(*c);
  }
  for (const auto& [key, g] : groups) {
    ThreadedResidual r;
    if (g.into_next) r.candidates.push_back(g.into_next->id);
    if (g.into_final) r.candidates.push_back(g.into_final->id);
    auto edits = edits_for(g, sources);
    if (auto* refused = std::get_if<Refusal>(&edits)) {
      r.refusal = refused->why;
      r.where = refused->where;
    } else {
      r.edits = std::move(std::get<std::vector<Edit>>(edits));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace npufuse::apply
