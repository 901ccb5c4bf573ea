#pragma once
// How a user gives a fact the plan asks for: the analyze flag that sets it,
// or sets the deployment value it is derived from (`num_heads` per rank from
// `--tp`), else a `NAME = value` line of a --deploy file, which takes every
// fact of catalog/facts.toml.
#include <string>

namespace npufuse::plan {

struct FactFlag {
  std::string flag;     // "--ep"; empty: only a --deploy line gives it
  std::string usage;    // "--ep N": the flag with what it takes
  std::string example;  // "--ep 8"
};

FactFlag fact_flag(const std::string& fact);

}  // namespace npufuse::plan
