#include "apply/source_functions.h"

#include <algorithm>
#include <vector>

#include "model/function_index.h"

namespace npufuse::apply {
namespace {

// The file's functions that apply can rewrite: an `async def` (no FunctionDef
// node) is never one.
std::vector<model::FunctionRange> rewritable_functions(const model::ModelFile& file) {
  std::vector<model::FunctionRange> out = model::functions_of(file);
  out.erase(std::remove_if(out.begin(), out.end(), [](const model::FunctionRange& f) { return f.fn == nullptr; }), out.end());
  return out;
}

FunctionAt at(const model::ModelFile& file, const model::FunctionRange& f) {
  return FunctionAt{&file, f.fn, f.qualified, f.is_method};
}

}  // namespace

const model::ModelFile* file_named(const model::SourceSet& sources, const std::string& path) {
  for (const auto& f : sources.files())
    if (f->path == path) return f.get();
  return nullptr;
}

std::optional<FunctionAt> function_around(const model::ModelFile& file, uint32_t begin, uint32_t end) {
  std::vector<model::FunctionRange> functions = rewritable_functions(file);
  const model::FunctionRange* f = model::function_around(functions, begin, end);
  if (!f) return std::nullopt;
  return at(file, *f);
}

std::optional<FunctionAt> function_named(const model::SourceSet& sources, const std::string& qualified) {
  for (const auto& file : sources.files())
    for (const model::FunctionRange& f : rewritable_functions(*file))
      if (f.qualified == qualified) return at(*file, f);
  return std::nullopt;
}

}  // namespace npufuse::apply
