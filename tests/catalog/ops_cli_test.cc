// `npufuse ops` end to end where goldens do not fit: discovery of an
// installed torch_npu through a Python interpreter, and the whole built-in
// catalog through `list` and `show`.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

#include "catalog/catalog.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  std::string out;
  int status;
};

Result run(const std::string& env_and_args) {
  std::string command = std::string("cd '") + NPUFUSE_SOURCE_DIR + "' && " + env_and_args + " 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  Result r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string binary() { return std::string("'") + NPUFUSE_BINARY + "'"; }

// A fake interpreter that reports a site-packages directory holding
// torch_npu/_op_plugin_docs.py and version.py: discovery must find the file
// and the version without running any torch_npu code.
TEST(OpsCliTest, DiscoversInstalledTorchNpuThroughPython) {
  fs::path root = fs::temp_directory_path() / "npufuse_discovery_test";
  fs::remove_all(root);
  fs::create_directories(root / "site" / "torch_npu");
  fs::copy_file(fs::path(NPUFUSE_SOURCE_DIR) / "tests/data/ops/_op_plugin_docs.py",
                root / "site" / "torch_npu" / "_op_plugin_docs.py");
  std::ofstream(root / "site" / "torch_npu" / "version.py") << "__version__ = '9.8.7'\ngit_version = 'abc'\n";
  fs::path python = root / "fake-python";
  std::ofstream(python) << "#!/bin/sh\necho /nonexistent/dir\necho '" << (root / "site").string() << "'\n";
  fs::permissions(python, fs::perms::owner_all);

  Result r = run("NPUFUSE_PYTHON=/bin/false:" + python.string() + " " + binary() +
                 " ops --catalog tests/data/ops/catalog show npu_rms_norm");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("docstrings of torch_npu 9.8.7 (" + (root / "site/torch_npu/_op_plugin_docs.py").string() + ")"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("no installed torch_npu found"), std::string::npos) << r.out;
  fs::remove_all(root);
}

TEST(OpsCliTest, ListShowsTheWholeBuiltInCatalog) {
  auto catalog = npufuse::catalog::Catalog::load(npufuse::catalog::embedded_catalog_files(), "catalog");
  Result r = run("NPUFUSE_PYTHON=/bin/false " + binary() + " ops list");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const auto& op : catalog.operators()) EXPECT_NE(r.out.find(op.name + "\n"), std::string::npos) << op.name;
  EXPECT_NE(r.out.find(std::to_string(catalog.operators().size()) + " operators"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no installed torch_npu found"), std::string::npos) << r.out;
}

// Every built-in operator shows its signature, each constraint and its doc reference.
TEST(OpsCliTest, ShowWorksForEveryBuiltInOperator) {
  auto catalog = npufuse::catalog::Catalog::load(npufuse::catalog::embedded_catalog_files(), "catalog");
  for (const auto& op : catalog.operators()) {
    Result r = run("NPUFUSE_PYTHON=/bin/false " + binary() + " ops show " + op.name);
    ASSERT_EQ(r.status, 0) << op.name << "\n" << r.out;
    EXPECT_NE(r.out.find("torch_npu." + op.name + "("), std::string::npos) << op.name;
    for (const auto& c : op.constraints) {
      EXPECT_NE(r.out.find("] " + c.id + ": "), std::string::npos) << op.name << " " << c.id;
      EXPECT_NE(r.out.find("doc: " + c.doc), std::string::npos) << op.name << " " << c.id;
    }
  }
}

}  // namespace
