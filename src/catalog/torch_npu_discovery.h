#pragma once
// Finds an installed torch_npu without importing it: asks the local Python
// interpreters for their site-packages directories and looks there for
// torch_npu/_op_plugin_docs.py. The version is read from torch_npu's
// version.py or its dist-info METADATA, as text.
#include <optional>
#include <string>
#include <vector>

namespace npufuse::catalog {

struct TorchNpuInstall {
  std::string docs_path;    // .../site-packages/torch_npu/_op_plugin_docs.py
  std::string version;      // "" when neither version.py nor METADATA says
  std::string interpreter;  // which interpreter reported the directory
};

// The interpreters asked, in order: $NPUFUSE_PYTHON (':'-separated) when
// set, else python3, /usr/bin/python3 and python.
std::vector<std::string> python_interpreters();

// `asked` (optional) receives the interpreters that answered or were tried.
std::optional<TorchNpuInstall> discover_torch_npu(std::vector<std::string>* asked);

// torch_npu's version for a given _op_plugin_docs.py path, "" when unknown.
std::string torch_npu_version_near(const std::string& docs_path);

}  // namespace npufuse::catalog
