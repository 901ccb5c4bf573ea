#pragma once
// What is known about the model and the deployment: named values with the
// place each came from, so a report can say why it believes a fact.
#include <map>
#include <optional>
#include <string>

#include "check/value.h"

namespace npufuse::check {

struct Fact {
  Value value;
  std::string provenance;  // "config.json: num_key_value_heads", "--chip", ...
};

class FactSet {
 public:
  void set(const std::string& name, Value value, std::string provenance) {
    facts_[name] = Fact{std::move(value), std::move(provenance)};
  }
  void erase(const std::string& name) { facts_.erase(name); }
  const Fact* find(const std::string& name) const {
    auto it = facts_.find(name);
    return it == facts_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, Fact>& all() const { return facts_; }

 private:
  std::map<std::string, Fact> facts_;
};

}  // namespace npufuse::check
