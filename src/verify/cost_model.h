#pragma once
// The performance estimate used when no NPU is at hand: kernel launches and
// activation bytes per token of a rule's eager chain and of its fused
// replacement (verify/cost_model.toml, embedded), turned into microseconds
// per token for prefill (one launch serves B*S tokens) and decode (one
// launch serves B tokens). It is an estimate and always labelled so.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace npufuse::verify {

// A cost model file that breaks its format: "file:line:col: message".
class CostModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RuleCost {
  std::string rule;
  // Numbers or expressions over the size names (docs/verify.md).
  std::string unfused_launches, fused_launches, unfused_bytes, fused_bytes;
};

struct StageEstimate {
  std::string stage;            // prefill | decode
  int64_t tokens_per_launch = 0;
  double unfused_launches = 0, fused_launches = 0;      // per call
  double unfused_bytes = 0, fused_bytes = 0;            // per token
  double unfused_us_per_token = 0, fused_us_per_token = 0;
  double saving_percent = 0;
};

struct Estimate {
  std::string rule;
  std::vector<StageEstimate> stages;
  std::string unavailable;  // why there is no estimate (no entry, a size the config does not give)
  nlohmann::ordered_json to_json() const;
};

class CostModel {
 public:
  static CostModel parse(const std::string& text, const std::string& file);
  static const CostModel& embedded();

  double launch_us() const { return launch_us_; }
  double hbm_gb_per_s() const { return hbm_gb_per_s_; }
  const RuleCost* find(const std::string& rule) const;
  const std::map<std::string, RuleCost>& rules() const { return rules_; }

  // sizes: H, I, D, N, KVN, E, K, C as known; B and S are the run's batch
  // and sequence length; dtype_bytes the activation element size; stages
  // the rule's (prefill, decode: the fused op runs only there), empty for both.
  Estimate estimate(const std::string& rule, const std::map<std::string, int64_t>& sizes, int64_t batch,
                    int64_t seq, int dtype_bytes, const std::vector<std::string>& stages = {}) const;

 private:
  double launch_us_ = 0, hbm_gb_per_s_ = 0;
  std::map<std::string, RuleCost> rules_;
};

}  // namespace npufuse::verify
