// Replays fuzz inputs without libFuzzer: runs LLVMFuzzerTestOneInput on
// every file under the directories (or files) given. Built with the normal
// compiler so that ctest replays the seed corpus and past crashes always.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "util/file_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int a = 1; a < argc; ++a) {
    fs::path p = argv[a];
    if (fs::is_directory(p)) {
      for (const auto& entry : fs::recursive_directory_iterator(p)) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
    } else if (fs::exists(p)) {
      inputs.push_back(p);
    }
  }
  for (const fs::path& p : inputs) {
    std::string data = npufuse::read_file(p.string());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
