#pragma once
// Data files (catalog, rules) compiled into the binary by cmake/Embed.cmake.
#include <cstddef>

namespace npufuse {

struct EmbeddedFile {
  const char* path;  // relative to the embedded directory, '/'-separated
  const char* data;  // NUL-terminated copy of the bytes
  size_t size;       // size without the terminating NUL
};

}  // namespace npufuse
