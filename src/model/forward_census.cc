#include "model/forward_census.h"

#include <algorithm>
#include <map>

#include "model/ast_walk.h"
#include "model/op_names.h"

namespace npufuse::model {

namespace {

constexpr int kMaxHelperDepth = 6;

bool is_self(const ast::expr* e) {
  auto* n = ast::as<ast::Name>(e);
  return n && n->id == "self";
}

// `self.weight`, possibly cast (`self.weight.float()`).
bool is_self_weight(const ast::expr* e) {
  if (auto* c = ast::as<ast::Call>(e)) {
    if (auto* a = ast::as<ast::Attribute>(c->func)) return is_self_weight(a->value);
  }
  auto* a = ast::as<ast::Attribute>(e);
  return a && is_self(a->value) && a->attr == "weight";
}

bool is_one(const ast::expr* e) {
  auto* c = ast::as<ast::Constant>(e);
  return c && (c->value.kind == ast::ConstantKind::Int || c->value.kind == ast::ConstantKind::Float) &&
         (c->value.number == "1" || c->value.number == "1.0");
}

// The self.X lists a for-loop iterates: self.X, self.X[a:b], enumerate(self.X), zip(self.X, ...).
std::vector<std::string> iterated_self_attributes(const ast::expr* iter) {
  std::vector<std::string> out;
  if (auto* a = ast::as<ast::Attribute>(iter)) {
    if (is_self(a->value)) out.emplace_back(a->attr);
  } else if (auto* s = ast::as<ast::Subscript>(iter)) {
    return iterated_self_attributes(s->value);
  } else if (auto* c = ast::as<ast::Call>(iter)) {
    std::string f = dotted_name(c->func);
    if (f == "enumerate" || f == "zip" || f == "reversed" || f == "list" || f == "iter") {
      for (const ast::expr* arg : c->args) {
        auto inner = iterated_self_attributes(arg);
        out.insert(out.end(), inner.begin(), inner.end());
      }
    }
  }
  return out;
}

bool is_mean_call(const ast::expr* e) {
  auto* c = ast::as<ast::Call>(e);
  if (!c) return false;
  std::string n = dotted_name(c->func);
  return n.size() >= 4 && n.substr(n.size() - 4) == "mean";
}

class CensusBuilder {
 public:
  CensusBuilder(const SourceSet& sources, const ClassDecl& cls, ForwardCensus& out, const ConfigFieldReader& config)
      : sources_(sources), cls_(cls), out_(out), config_(config) {}

  void function(const ast::FunctionDef* fn, const ModelFile* file, int depth) {
    if (!fn || depth > kMaxHelperDepth) return;
    if (!visited_.insert(fn).second) return;
    // Locals that hold a function: `attn_fn = eager_attention_forward` or
    // `attn_fn = TABLE[key]`; calling them calls what they hold.
    walk(fn, [&](const ast::Node* n) {
      if (auto* a = ast::as<ast::Assign>(n)) {
        for (const ast::expr* t : a->targets)
          if (auto* name = ast::as<ast::Name>(t)) function_locals_[std::string(name->id)].push_back(a->value);
      }
      if (auto* a = ast::as<ast::AnnAssign>(n); a && a->value) {
        if (auto* name = ast::as<ast::Name>(a->target)) function_locals_[std::string(name->id)].push_back(a->value);
      }
      return true;
    });
    for (const ast::stmt* s : fn->body) {
      walk(s, [&](const ast::Node* n) { return visit(n, file, depth); });
    }
  }

  void finish() {
    std::stable_sort(child_positions_.begin(), child_positions_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [pos, name] : child_positions_) {
      if (std::find(out_.child_calls.begin(), out_.child_calls.end(), name) == out_.child_calls.end())
        out_.child_calls.push_back(name);
    }
  }

 private:
  bool visit(const ast::Node* n, const ModelFile* file, int depth) {
    if (ast::as<ast::FunctionDef>(n) || ast::as<ast::Lambda>(n)) return false;
    if (auto* b = ast::as<ast::BinOp>(n)) {
      out_.ops.insert(canonical_binop(b->op));
      if (b->op == ast::operator_::Add && ((is_one(b->left) && is_self_weight(b->right)) ||
                                           (is_one(b->right) && is_self_weight(b->left))))
        out_.weight_plus_one = true;
      if (b->op == ast::operator_::Sub && is_mean_call(b->right)) out_.subtracts_mean = true;
    } else if (auto* a = ast::as<ast::AugAssign>(n)) {
      out_.ops.insert(canonical_binop(a->op));
    } else if (auto* f = ast::as<ast::For>(n)) {
      // `for layer in self.layers:` (or enumerate/zip/a slice of it) calls every element.
      if (depth <= 1)
        for (const std::string& name : iterated_self_attributes(f->iter)) child_positions_.emplace_back(order(f, depth), name);
    } else if (auto* c = ast::as<ast::Call>(n)) {
      call(c, file, depth);
    }
    return true;
  }

  // Python finishes a call after its arguments (`attn(norm(x))` runs norm
  // first), so calls sort by where they end; calls made inside an own method
  // sort at the place the method is called.
  uint64_t order(const ast::Node* n, int depth) {
    if (depth == 0) site_ = ast::as<ast::For>(n) ? n->begin : n->end;
    return (static_cast<uint64_t>(site_) << 32) | (depth == 0 ? 0 : n->end);
  }

  void call(const ast::Call* c, const ModelFile* file, int depth) {
    const ast::expr* func = c->func;
    // self.X(...): a submodule or one of the class's own methods.
    if (auto* a = ast::as<ast::Attribute>(func); a && is_self(a->value)) {
      std::string name(a->attr);
      const ClassDecl* owner = nullptr;
      if (const ast::FunctionDef* m = find_method(sources_, cls_, name, &owner)) {
        if (depth == 0) site_ = c->end;
        function(m, owner->file, depth + 1);
      } else if (depth <= 1) {
        child_positions_.emplace_back(order(c, depth), name);
      }
      return;
    }
    // self.experts[i](x), self.layers[k](h)
    if (auto* s = ast::as<ast::Subscript>(func)) {
      if (auto* a = ast::as<ast::Attribute>(s->value); a && is_self(a->value)) {
        if (depth <= 1) child_positions_.emplace_back(order(c, depth), std::string(a->attr));
        return;
      }
      // TABLE[key](...): a dispatch table.
      if (auto* t = ast::as<ast::Name>(s->value)) {
        out_.dispatch_tables.insert(std::string(t->id));
        note_unresolved(*s, file);
      }
      return;
    }
    // Fn.apply(x): a local torch.autograd.Function runs its static forward.
    const ModelFile* fwd_file = nullptr;
    if (const ast::FunctionDef* fwd = autograd_forward(sources_, func, &fwd_file)) {
      function(fwd, fwd_file, depth + 1);
      return;
    }
    std::string qualified = sources_.qualified_name(*file, func);
    if (auto* n = ast::as<ast::Name>(func)) {
      if (const FunctionDecl* helper = sources_.find_function(n->id)) {
        out_.helpers.insert(std::string(n->id));
        function(helper->node, helper->file, depth + 1);
        return;
      }
      auto held = function_locals_.find(std::string(n->id));
      if (held != function_locals_.end()) {
        for (const ast::expr* v : held->second) callee_value(v, file, depth);
        return;
      }
    }
    if (auto* a = ast::as<ast::Attribute>(func); a && qualified.find('.') == std::string::npos) {
      // A Tensor method: x.pow(2), x.softmax(-1).
      CanonicalOp op = canonical_call(a->attr);
      out_.ops.insert(op.name);
      return;
    }
    if (auto* a = ast::as<ast::Attribute>(func)) {
      std::string head = qualified.substr(0, qualified.find('.'));
      if (head == "torch" || head == "math" || head == "F" || head == "nn") {
        out_.ops.insert(canonical_call(qualified).name);
      } else {
        // Method on a local value (x.view(...)) after alias resolution kept a dot.
        out_.ops.insert(canonical_call(a->attr).name);
      }
      return;
    }
    if (!qualified.empty()) out_.ops.insert(canonical_call(qualified).name);
  }

  // What a function-valued expression may call: a helper by name, or every
  // helper a module-level dispatch table maps to.
  void callee_value(const ast::expr* v, const ModelFile* file, int depth) {
    if (auto* n = ast::as<ast::Name>(v)) {
      if (const FunctionDecl* helper = sources_.find_function(n->id)) {
        out_.helpers.insert(std::string(n->id));
        function(helper->node, helper->file, depth + 1);
      }
      return;
    }
    // TABLE.get_interface(key, default) / TABLE.get(key, default): the
    // default helper, and a table whose other entries are not known here.
    if (auto* call = ast::as<ast::Call>(v)) {
      std::optional<TableGet> get = table_get(*call);
      auto* fallback = get ? ast::as<ast::Name>(get->fallback) : nullptr;
      if (fallback && sources_.find_function(fallback->id)) {
        out_.dispatch_tables.insert(std::string(get->table->id));
        callee_value(get->fallback, file, depth);
      }
      return;
    }
    auto* sub = ast::as<ast::Subscript>(v);
    auto* table = sub ? ast::as<ast::Name>(sub->value) : nullptr;
    if (!table) return;
    out_.dispatch_tables.insert(std::string(table->id));
    note_unresolved(*sub, file);
    const ConstantDecl* c = sources_.find_constant(table->id);
    auto* dict = c ? ast::as<ast::Dict>(c->value) : nullptr;
    if (!dict) return;
    for (const ast::expr* entry : dict->values) callee_value(entry, c->file, depth);
    (void)file;
  }

  // A table lookup whose target is not known: said, never guessed.
  void note_unresolved(const ast::Subscript& lookup, const ModelFile* file) {
    DispatchTarget t = resolve_dispatch(sources_, *file, lookup, config_);
    if (t.function) return;
    std::string note = std::string(file->text_of(&lookup)) + ": " + t.why_unresolved;
    if (std::find(out_.unresolved_dispatch.begin(), out_.unresolved_dispatch.end(), note) == out_.unresolved_dispatch.end())
      out_.unresolved_dispatch.push_back(std::move(note));
  }

  const SourceSet& sources_;
  const ClassDecl& cls_;
  ForwardCensus& out_;
  ConfigFieldReader config_;
  std::map<std::string, std::vector<const ast::expr*>> function_locals_;
  std::set<const ast::FunctionDef*> visited_;
  std::vector<std::pair<uint64_t, std::string>> child_positions_;
  uint32_t site_ = 0;
};

}  // namespace

const ast::FunctionDef* find_method(const SourceSet& sources, const ClassDecl& cls, std::string_view name,
                                    const ClassDecl** owner) {
  const ClassDecl* cur = &cls;
  for (int hops = 0; cur && hops < 16; ++hops) {
    for (const ast::stmt* s : cur->node->body) {
      if (auto* fn = ast::as<ast::FunctionDef>(s); fn && fn->name == name) {
        if (owner) *owner = cur;
        return fn;
      }
    }
    const ClassDecl* next = nullptr;
    for (const ast::expr* b : cur->node->bases) {
      std::string base = dotted_name(b);
      if (const ClassDecl* c = sources.find_class(base); c && c != cur) {
        next = c;
        break;
      }
    }
    cur = next;
  }
  return nullptr;
}

const ast::FunctionDef* autograd_forward(const SourceSet& sources, const ast::expr* func, const ModelFile** file) {
  auto* a = ast::as<ast::Attribute>(func);
  auto* n = a && a->attr == "apply" ? ast::as<ast::Name>(a->value) : nullptr;
  const ClassDecl* cls = n ? sources.find_class(n->id) : nullptr;
  if (!cls) return nullptr;
  bool function_base = false;
  int hops = 0;
  for (const ClassDecl* cur = cls; cur && !function_base && hops++ < 16;) {
    const ClassDecl* next = nullptr;
    for (const ast::expr* b : cur->node->bases) {
      std::string base = dotted_name(b);
      if (base == "Function" || (base.size() > 9 && base.compare(base.size() - 9, 9, ".Function") == 0)) function_base = true;
      if (const ClassDecl* c = sources.find_class(base); c && c != cur) next = c;
    }
    cur = next;
  }
  if (!function_base) return nullptr;
  const ClassDecl* owner = nullptr;
  const ast::FunctionDef* fwd = find_method(sources, *cls, "forward", &owner);
  if (fwd && file) *file = owner->file;
  return fwd;
}

ForwardCensus census_forward(const SourceSet& sources, const ClassDecl& cls, const ConfigFieldReader& config) {
  ForwardCensus out;
  const ClassDecl* owner = nullptr;
  out.forward = find_method(sources, cls, "forward", &owner);
  if (!out.forward) return out;
  out.has_forward = true;
  out.file = owner->file;
  CensusBuilder b(sources, cls, out, config);
  b.function(out.forward, owner->file, 0);
  b.finish();
  return out;
}

}  // namespace npufuse::model
