#pragma once
// A patch is a set of byte-range edits on the files' original bytes. Bytes
// outside the edits are never touched, so comments and formatting survive.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace npufuse::apply {

struct Edit {
  std::string file;      // path as the analysis loaded it
  uint32_t begin = 0;    // [begin, end) in the source text (a UTF-8 BOM is not counted; the writer keeps it)
  uint32_t end = 0;
  std::string text;      // what replaces them
  std::string candidate; // the plan candidate the edit belongs to ("" for an import)
};

// Two edits of one patch that touch the same bytes: the plan chose two
// candidates for one chain.
class EditConflict : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The edits of one file sorted by position. Throws EditConflict when two of
// them overlap (an insertion at the end of another edit is allowed).
std::vector<Edit> sorted_edits(std::vector<Edit> edits);

// `original` with the (sorted, non-overlapping) edits applied. In a file
// whose lines mostly end in CRLF, the new lines of the edits do too.
std::string apply_edits(const std::string& original, const std::vector<Edit>& sorted);

}  // namespace npufuse::apply
