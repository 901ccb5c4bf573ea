#pragma once
// Which function of a model file holds a place: every `def` of the file
// (methods, module-level functions, functions nested in either), with its
// qualified name, its lines and its body's bytes. The plan asks by line
// (which function a matched op or a near-miss sits in), `apply` by byte
// range (which function a rewrite edits); both answer with the innermost.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/source_set.h"

namespace npufuse::model {

struct FunctionRange {
  const ast::FunctionDef* fn = nullptr;  // null for an `async def`
  std::string qualified;                 // "Class.method", "function", "outer.<locals>.inner"
  bool is_method = false;                // defined directly in a class body
  int first_line = 0, last_line = 0;     // the whole definition, decorators excluded
  uint32_t body_begin = 0, end = 0;      // bytes of the body
};

// In source order; nested functions follow the function that holds them.
std::vector<FunctionRange> functions_of(const ModelFile& file);

// The innermost function whose lines hold `line`; null for module-level code.
const FunctionRange* function_at_line(const std::vector<FunctionRange>& functions, int line);

// The innermost function whose body holds bytes [begin, end); null when none does.
const FunctionRange* function_around(const std::vector<FunctionRange>& functions, uint32_t begin, uint32_t end);

// The functions of every file of a model, listed the first time a file is asked about.
class FunctionIndex {
 public:
  explicit FunctionIndex(const SourceSet& sources) : sources_(sources) {}
  // Null for module-level code and for a path the model does not have.
  const FunctionRange* at_line(const std::string& path, int line);
  // functions_of(file), listed once per file.
  const std::vector<FunctionRange>& of(const ModelFile& file);

 private:
  const SourceSet& sources_;
  std::map<std::string, std::vector<FunctionRange>, std::less<>> by_file_;
};

}  // namespace npufuse::model
