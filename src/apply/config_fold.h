#pragma once
// Folding a configuration branch for a rewrite. A chain whose statements
// straddle an `if` whose test the loaded config decides (DeepSeek's
// `if self.attn_impl == "naive": ... else: ...`, a router's
// `if self.n_groups > 1:`) is rewritten with that if replaced by the arm the
// config takes: the arm's statements join the statement list in the if's
// place, the other arm and the test go. The patched code then runs only what
// this config ran; the rewrite says so in a comment and in apply's summary.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontend/ast.h"
#include "model/source_set.h"
#include "plan/plan.h"

namespace npufuse::apply {

struct FoldedIf {
  const frontend::ast::If* statement = nullptr;
  const plan::Candidate::ConfigArm* arm = nullptr;
  std::pair<uint32_t, uint32_t> untaken{0, 0};  // bytes of the arm that goes ([0, 0) when it has none)
};

struct ConfigFolds {
  std::vector<FoldedIf> ifs;  // in source order of their splicing
  // A statement spliced from a folded arm -> the statement of the original
  // list it stands in (the outermost folded if).
  std::map<const frontend::ast::stmt*, const frontend::ast::stmt*> top;
  std::string refusal;  // set when the chain lies in an arm the config does not take, or in a folded test

  // The statement of the original list `s` stands in (itself when not spliced).
  const frontend::ast::stmt* top_of(const frontend::ast::stmt* s) const;
  // Whether bytes [begin, end) lie in an arm that goes.
  bool dropped(uint32_t begin, uint32_t end) const;
};

// Replaces, in `list`, each `if` statement whose test is one of
// `candidate.apply_config_arms` and that holds some of `ops` (byte ranges)
// by its taken arm's statements, recursively (an elif, or a folded arm's own
// config ifs). `optional_ifs` are left alone (the rewrite takes them whole).
ConfigFolds fold_config_ifs(std::vector<const frontend::ast::stmt*>& list,
                            const std::vector<std::pair<uint32_t, uint32_t>>& ops, const plan::Candidate& candidate,
                            const model::ModelFile& file);

// "# config fold: `if self.n_groups > 1` -> then arm (n_group > 1 = True)".
std::string fold_comment(const FoldedIf& folded);

// `text` with each continuation line's `from` indentation changed to `to`.
std::string reindented(const std::string& text, const std::string& from, const std::string& to);

// `s` as written, moved to indentation `to`: the comment lines right above
// it and the statement, the first line without indentation (the caller
// writes it), every later line at `to`.
std::string moved_text(const model::ModelFile& file, const frontend::ast::stmt* s, const std::string& to);

}  // namespace npufuse::apply
