#include "model/kv_cache.h"

#include <algorithm>
#include <set>

#include "model/ast_walk.h"

namespace npufuse::model {

namespace {

using ast::as;

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// A name that stands for a cache object or cached tensor (`past_key_value`,
// `self.k_cache`, `kv_cache`, `layer_past`), not a flag or a position.
bool names_cache(std::string_view text) {
  if (contains(text, "use_cache") || contains(text, "cache_position")) return false;
  return contains(text, "cache") || contains(text, "past");
}

bool names_position(std::string_view text) {
  return contains(text, "start_pos") || contains(text, "end_pos") || contains(text, "kv_len") || contains(text, "cache_index") ||
         contains(text, "position") || contains(text, "offset") || contains(text, "seen") ||
         contains(text, "write_ind");
}

std::string first_line(std::string_view s) {
  size_t nl = s.find('\n');
  return std::string(nl == std::string_view::npos ? s : s.substr(0, nl));
}

class CacheFinder {
 public:
  explicit CacheFinder(CacheOrganisation& out) : out_(out) {}

  // Inside a cache class's own `update`, every store is a cache write,
  // whatever the receiver is called.
  void cache_method(const ModelFile& file, const ast::FunctionDef* fn, const std::string& name) {
    any_receiver_ = true;
    function(file, fn, name);
    any_receiver_ = false;
  }

  void function(const ModelFile& file, const ast::FunctionDef* fn, const std::string& name) {
    written_.clear();
    for (const ast::stmt* s : fn->body) {
      walk(s, [&](const ast::Node* n) {
        visit(file, name, n);
        return true;
      });
    }
    whole_reads(file, fn, name);
  }

  const std::set<std::string>& called() const { return called_; }

 private:
  void add(const ModelFile& file, const std::string& fn, const ast::Node* n, const char* mechanism, std::string index) {
    SourceSpan where = file.span_of(n);
    for (const CacheAccess& a : out_.accesses)
      if (a.where.file == where.file && a.where.line == where.line && a.mechanism == mechanism) return;
    out_.accesses.push_back(CacheAccess{fn, where, mechanism, first_line(file.text_of(n)), std::move(index)});
  }

  bool is_cache(std::string_view text) const { return any_receiver_ || names_cache(text); }

  // After a write by index_copy_ or into a slice, the written tensor read
  // as a whole (not as the base of a subscript or an attribute): the
  // function hands on every slot of the buffer. Reported once per function.
  // A read as the receiver of a method counts, except `.shape`-like queries
  // and the in-place writes.
  void whole_reads(const ModelFile& file, const ast::FunctionDef* fn, const std::string& name) {
    if (written_.empty()) return;
    std::set<const ast::Node*> based;  // the value of a subscript or an attribute
    const ast::Node* found = nullptr;
    for (const ast::stmt* s : fn->body)
      walk(s, [&](const ast::Node* n) {
        if (const auto* sub = as<ast::Subscript>(n)) based.insert(sub->value);
        // `.shape` and in-place writes do not hand the buffer on; any other
        // method (`.transpose(...)`, `.float()`) reads it whole.
        static const std::set<std::string_view> not_reads = {"shape", "size", "dtype", "device", "ndim", "dim",
                                                              "index_copy_", "index_put_", "copy_", "scatter_",
                                                              "zero_", "fill_"};
        if (const auto* at = as<ast::Attribute>(n); at && not_reads.count(at->attr)) based.insert(at->value);
        return true;
      });
    for (const ast::stmt* s : fn->body)
      walk(s, [&](const ast::Node* n) {
        if (found || !(as<ast::Name>(n) || as<ast::Attribute>(n) || as<ast::Subscript>(n)) || based.count(n)) return !found;
        if (const auto* nm = as<ast::Name>(n); nm && nm->ctx != ast::expr_context::Load) return true;
        if (const auto* sub = as<ast::Subscript>(n); sub && sub->ctx != ast::expr_context::Load) return true;
        std::string_view text = file.text_of(n);
        for (const auto& [base, after] : written_)
          if (n->begin >= after && text == base) found = n;
        return !found;
      });
    if (!found) return;
    SourceSpan where = file.span_of(found);
    out_.accesses.push_back(CacheAccess{name, where, "whole_read", first_line(file.text_of(found)), ""});
  }

  void visit(const ModelFile& file, const std::string& fn, const ast::Node* n) {
    if (const auto* nm = as<ast::Name>(n)) {
      if (nm->id == "slot_mapping" || nm->id == "slot_mappings") slot_seen_ = true;
    }
    if (const auto* c = as<ast::Call>(n)) {
      if (const auto* nm = as<ast::Name>(c->func)) called_.insert(std::string(nm->id));
      std::string callee = dotted_name(c->func);
      const auto* at = as<ast::Attribute>(c->func);
      std::string receiver = at ? std::string(file.text_of(at->value)) : "";
      std::string all_args;
      for (const ast::expr* a : c->args) all_args += std::string(file.text_of(a)) + " ";
      for (const ast::keyword* k : c->keywords) all_args += std::string(file.text_of(k->value)) + " ";
      if (at && at->attr == "update" && names_cache(receiver) && c->args.size >= 2) add(file, fn, n, "cache_update", "");
      if ((callee == "torch.cat" || callee == "torch.concat") && is_cache(all_args)) add(file, fn, n, "cat_growth", "");
      if (at && (at->attr == "index_copy_" || at->attr == "index_put_") && is_cache(receiver) && c->args.size >= 2) {
        add(file, fn, n, "index_copy", std::string(file.text_of(c->args[at->attr == "index_copy_" ? 1 : 0])));
        written_.emplace_back(receiver, n->end);
      }
      if (contains(all_args, "slot_mapping")) add(file, fn, n, "slot_mapping", "slot_mapping");
      if (contains(all_args, "block_table")) add(file, fn, n, "block_table", "");
    }
    const ast::expr* target = nullptr;
    if (const auto* a = as<ast::Assign>(n); a && a->targets.size == 1) {
      // `cache[layer] = torch.cat([cache[layer], k])` rebinds a list element;
      // the growth is the cat, reported on its own.
      const auto* call = as<ast::Call>(a->value);
      std::string callee = call ? dotted_name(call->func) : "";
      if (callee != "torch.cat" && callee != "torch.concat") target = a->targets[0];
    }
    if (const auto* sub = as<ast::Subscript>(target)) {
      std::string base(file.text_of(sub->value));
      std::string index(file.text_of(sub->slice));
      if (is_cache(base)) {
        if (contains(index, "slot_mapping")) {
          add(file, fn, n, "slot_mapping", index);
        } else {
          add(file, fn, n, "slice_write", index);
          written_.emplace_back(base, n->end);
        }
      }
    }
  }

  CacheOrganisation& out_;
  std::set<std::string> called_;
  bool slot_seen_ = false;
  bool any_receiver_ = false;
  // In the function being read: the tensors written by index_copy_ or into a
  // slice (as written), each with the byte after the write.
  std::vector<std::pair<std::string, uint32_t>> written_;
};

}  // namespace

const CacheAccess* CacheOrganisation::whole_read() const {
  for (const CacheAccess& a : accesses)
    if (a.mechanism == "whole_read") return &a;
  return nullptr;
}

CacheOrganisation find_kv_cache(const SourceSet& sources, const std::vector<const ClassDecl*>& module_classes) {
  CacheOrganisation out;
  CacheFinder finder(out);
  for (const ClassDecl* c : module_classes) {
    for (const ast::stmt* s : c->node->body) {
      const auto* fn = as<ast::FunctionDef>(s);
      if (!fn || fn->name == "__init__") continue;
      finder.function(*c->file, fn, std::string(c->node->name) + "." + std::string(fn->name));
    }
  }
  // Cache classes of the analysed files (not modules, with an `update`
  // method that the forward calls as `<cache>.update(k, v, ...)`).
  bool updates = std::any_of(out.accesses.begin(), out.accesses.end(), [](const CacheAccess& a) { return a.mechanism == "cache_update"; });
  for (const ClassDecl& c : sources.classes()) {
    if (!updates || std::find(module_classes.begin(), module_classes.end(), &c) != module_classes.end()) continue;
    for (const ast::stmt* s : c.node->body) {
      const auto* fn = as<ast::FunctionDef>(s);
      if (fn && fn->name == "update") finder.cache_method(*c.file, fn, std::string(c.node->name) + ".update");
    }
  }
  visit_reached_functions(
      sources, [&] { return finder.called(); },
      [&](const FunctionDecl& f, const std::string& name) { finder.function(*f.file, f.node, name); });
  std::stable_sort(out.accesses.begin(), out.accesses.end(), [](const CacheAccess& a, const CacheAccess& b) {
    return a.where.file != b.where.file ? a.where.file < b.where.file : a.where.line < b.where.line;
  });
  bool paged = false, position = false, append = false;
  for (const CacheAccess& a : out.accesses) {
    if (a.mechanism == "slot_mapping" || a.mechanism == "block_table") paged = true;
    if (a.mechanism == "cat_growth") append = true;
    if ((a.mechanism == "slice_write" || a.mechanism == "index_copy") && names_position(a.write_index)) position = true;
  }
  if (!out.accesses.empty()) out.organisation = paged ? "paged" : "contiguous";
  std::vector<std::string> kinds;
  if (paged) kinds.push_back("slot_mapping");
  if (position) kinds.push_back("position");
  if (append) kinds.push_back("append");
  // A Cache.update whose class is not in the analysed files says nothing
  // about how it indexes.
  if (kinds.empty() && !out.accesses.empty() && !paged) kinds.push_back("unknown");
  for (const std::string& k : kinds) out.write_index += (out.write_index.empty() ? "" : "+") + k;
  return out;
}

}  // namespace npufuse::model
