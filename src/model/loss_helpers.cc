#include "model/loss_helpers.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

#include "model/ast_walk.h"

namespace npufuse::model {
namespace {

// Names are views of the parsed files, which outlive the collection.
struct CallSite {
  std::string_view caller;  // the module-level function it is in, "" inside a class
  bool loss_site = false;
};

bool names_training(const ast::expr* test) {
  bool found = false;
  walk(test, [&](const ast::Node* n) {
    if (auto* a = ast::as<ast::Attribute>(n); a && a->attr == "training") found = true;
    if (auto* nm = ast::as<ast::Name>(n); nm && (nm->id == "training" || nm->id == "is_training")) found = true;
    return !found;
  });
  return found;
}

// Whether "loss" appears in `text`, in any case.
bool mentions_loss(std::string_view text) {
  static constexpr std::string_view loss = "loss";
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  return std::search(text.begin(), text.end(), loss.begin(), loss.end(),
                     [&](char a, char b) { return lower(a) == b; }) != text.end();
}

class CallSiteCollector {
 public:
  CallSiteCollector(const ModelFile& file, std::string_view caller, std::map<std::string_view, std::vector<CallSite>>& out)
      : file_(file), caller_(caller), out_(out) {}

  void statements(const Span<ast::stmt*>& body, bool in_training) {
    for (const ast::stmt* s : body) statement(s, in_training);
  }

 private:
  void statement(const ast::stmt* s, bool in_training) {
    if (auto* i = ast::as<ast::If>(s)) {
      expressions(i->test, in_training, false);
      statements(i->body, in_training || names_training(i->test));
      statements(i->orelse, in_training);
    } else if (auto* f = ast::as<ast::For>(s)) {
      expressions(f->iter, in_training, false);
      statements(f->body, in_training);
      statements(f->orelse, in_training);
    } else if (auto* w = ast::as<ast::While>(s)) {
      expressions(w->test, in_training, false);
      statements(w->body, in_training);
      statements(w->orelse, in_training);
    } else if (auto* w = ast::as<ast::With>(s)) {
      statements(w->body, in_training);
    } else if (auto* t = ast::as<ast::Try>(s)) {
      statements(t->body, in_training);
      statements(t->orelse, in_training);
      statements(t->finalbody, in_training);
    } else if (ast::as<ast::FunctionDef>(s) || ast::as<ast::ClassDef>(s)) {
      // nested definitions: their calls are counted where they are called
    } else {
      bool into_loss = false;
      if (auto* a = ast::as<ast::Assign>(s))
        for (const ast::expr* t : a->targets) into_loss = into_loss || mentions_loss(file_.text_of(t));
      if (auto* a = ast::as<ast::AnnAssign>(s)) into_loss = mentions_loss(file_.text_of(a->target));
      if (auto* a = ast::as<ast::AugAssign>(s)) into_loss = mentions_loss(file_.text_of(a->target));
      expressions(s, in_training, into_loss);
    }
  }

  void expressions(const ast::Node* e, bool in_training, bool into_loss) {
    walk(e, [&](const ast::Node* n) {
      auto* c = ast::as<ast::Call>(n);
      if (!c) return true;
      if (auto* name = ast::as<ast::Name>(c->func))
        out_[std::string_view(name->id)].push_back(CallSite{caller_, in_training || into_loss});
      return true;
    });
  }

  const ModelFile& file_;
  std::string_view caller_;
  std::map<std::string_view, std::vector<CallSite>>& out_;
};

}  // namespace

std::set<std::string> training_only_helpers(const SourceSet& sources) {
  std::map<std::string_view, std::vector<CallSite>> sites;
  std::set<std::string_view> helpers;
  for (const auto& file : sources.files()) {
    for (const ast::stmt* s : file->parsed->module->body) {
      if (auto* fn = ast::as<ast::FunctionDef>(s)) {
        helpers.insert(fn->name);
        CallSiteCollector(*file, fn->name, sites).statements(fn->body, false);
      } else if (auto* cls = ast::as<ast::ClassDef>(s)) {
        for (const ast::stmt* m : cls->body)
          if (auto* method = ast::as<ast::FunctionDef>(m)) CallSiteCollector(*file, "", sites).statements(method->body, false);
      }
    }
  }
  // A helper called only from training-only helpers is training-only too:
  // iterate until nothing changes.
  std::set<std::string_view> found;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::string_view h : helpers) {
      if (found.count(h)) continue;
      auto it = sites.find(h);
      if (it == sites.end() || it->second.empty()) continue;
      bool all_loss = std::all_of(it->second.begin(), it->second.end(), [&](const CallSite& c) {
        return c.loss_site || (!c.caller.empty() && c.caller != h && found.count(c.caller));
      });
      if (all_loss) {
        found.insert(h);
        changed = true;
      }
    }
  }
  return std::set<std::string>(found.begin(), found.end());
}

const std::set<std::string>& SourceSet::training_only() const {
  if (!training_only_) training_only_ = training_only_helpers(*this);
  return *training_only_;
}

}  // namespace npufuse::model
