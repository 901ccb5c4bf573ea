#pragma once
// The files a plan names, found again by apply, verify and explain however
// the user spells their paths there: relative, absolute or through a
// symlink, from the folder analyze ran in or another one. Candidate ids
// embed a file as analyze was given it (`norm.rms_norm@model.py:52`); an id
// spelt with another path to the same file names the same candidate. Files
// are compared by what they are on disk (std::filesystem::equivalent), never
// by their spelling alone; ids keep the plan's spelling.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace npufuse::apply {

// Whether two paths name one file: spelt alike, or the same file on disk.
bool same_file(const std::string& a, const std::string& b);

// "<rule>@<file>:<line>" (any id the plan writes) in its parts; nullopt
// when `id` has no '@' or no ':<line>' after it.
struct CandidateIdParts {
  std::string head;  // the rule id, or "<module>.<step>"
  std::string file;
  std::string line;  // the digits, and any suffix ("158#2")
};
std::optional<CandidateIdParts> split_candidate_id(const std::string& id);

// The plan's files where they are read now. A recorded path is taken
// through the paths analyze was given and the ones given now, which name
// the same files or folders in the same order (`/abs/dir/m.py` given to
// analyze, `m.py` to apply): a file at or under a given folder, or beside a
// given file (a relative import), is looked for at the same place under
// its counterpart (unless nothing is there and the recorded path still
// names a file). Otherwise the recorded path itself is read. The plan's
// config, deployment file and rules and catalog folders are found so too.
class PlanFiles {
 public:
  // `given`: the paths apply or verify was given; empty: the plan's own.
  PlanFiles(const plan::Plan& recorded, std::vector<std::string> given);

  // Where the recorded file `file` is read now.
  std::string now(const std::string& file) const;
  // Whether `path` (as spelt now) is the recorded file `file`.
  bool is(const std::string& file, const std::string& path) const;
  // The recorded file that `path` (as spelt now) is; empty when none.
  std::string recorded_file(const std::string& path) const;

  // The plan's id for `id` spelt with any path to the same file (the id
  // itself when the plan has it); empty when the plan has no such id.
  std::string recorded_id(const std::string& id) const;

  // Throws ApplyError naming the first file whose bytes no longer hash to
  // what the plan recorded, that cannot be read, or that has no hash.
  void check_current(const std::string& plan_path) const;

  // A re-run of the analysis loads the same files (in any spelling), else
  // ApplyError. Then `fresh`'s candidate ids are spelt as the plan spells
  // them, so the plan's ids (and --only) find the re-run's candidates.
  void align(plan::Plan& fresh, const std::string& plan_path) const;

 private:
  const plan::Plan& recorded_;
  std::vector<std::string> given_;
};

}  // namespace npufuse::apply
