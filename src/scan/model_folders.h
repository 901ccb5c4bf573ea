#pragma once
// Finding the models in a tree. A "model folder" is a directory that holds a
// model file directly: `model.py`, or a `modeling_<name>.py` written for
// PyTorch (the `modeling_tf_*` / `modeling_flax_*` siblings of transformers
// are other frameworks and do not count). Its model files are analysed
// together as one model, with the sibling files they import, and a
// `config.json` beside them binds the model's sizes.
//
// `analyze DIR` is a tree scan when DIR is not itself a model folder and at
// least one model folder lies below it; a file, or a directory that is one
// model, keeps the single-model behaviour.
#include <string>
#include <vector>

namespace npufuse::scan {

struct ModelFolder {
  std::string name;                      // path relative to the root, '/'-separated ("llama", "org/llama")
  std::string dir;                       // the folder as a path usable for opening files
  std::vector<std::string> model_files;  // its model files, sorted
  std::vector<std::string> python_files; // every *.py directly in it, sorted (the cache key covers them all)
  std::string config;                    // config.json beside the model files, or empty
};

// True for `model.py` and PyTorch `modeling_*.py` file names.
bool is_model_file_name(const std::string& file_name);

// The model files directly in `dir` (not below it), sorted; empty when
// `dir` is not a model folder.
std::vector<std::string> model_files_in(const std::string& dir);

// Every model folder at or below `root`, sorted by name. Hidden directories,
// `__pycache__` and the folders in `skip` (the scan's own output and cache)
// are not entered; symbolic links to directories are not followed, so a
// link cycle cannot loop. A folder is a model folder whether or not it has
// model folders below it. Throws FileError when `root` is not a directory.
std::vector<ModelFolder> find_model_folders(const std::string& root, const std::vector<std::string>& skip = {});

// The config.json of the one model folder `paths` names: `analyze DIR` and
// `inspect DIR` on a model folder read it, as a tree scan does for each
// folder, when no --config is given. Empty when `paths` is not exactly one
// model folder or the folder has no config.json.
std::string folder_config(const std::vector<std::string>& paths);

// Whether `analyze PATHS` means a tree scan: exactly one path, a directory
// that is not itself a model folder, with a model folder somewhere below.
bool is_tree(const std::vector<std::string>& paths);

}  // namespace npufuse::scan
