// MLA's caches written through an opaque cache object (Hugging Face 5.x:
// `past_key_values.update(latent, rope_key, layer_idx)`): the write is the
// update call, offered like the attention's as a static cache written in
// place; the per-head keys assembled afterwards in a buffer the forward makes
// (`keys[..., :d].copy_(k_nope)`) are no cache write.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "plan/analyze.h"

namespace npufuse::plan {
namespace {

std::string data(const std::string& name) { return std::string(NPUFUSE_SOURCE_DIR) + "/tests/plan/data/mla_cache/" + name; }

bool covers_line(const Candidate& c, int line) {
  auto in = [&](const Location& l) { return l.start_line <= line && line <= l.end_line; };
  return in(c.location) || std::any_of(c.parts.begin(), c.parts.end(), in);
}

TEST(MlaCache, TheLatentWriteThroughACacheObjectIsAStaticCacheCandidate) {
  AnalyzeOptions o;
  o.paths = {data("latent_update.py")};
  o.config = data("config.json");
  Plan plan = analyze(o);
  const Candidate* write = nullptr;
  for (const Candidate& c : plan.candidates) {
    // latent_update.py:49-50 fill the per-head key buffer made by new_empty.
    EXPECT_FALSE(covers_line(c, 49) || covers_line(c, 50)) << c.id;
    if (c.rule == "kv_cache.static_cache_prerequisite") write = &c;
    EXPECT_EQ(c.id.rfind("mla.cache_write@", 0), std::string::npos) << c.id;
    EXPECT_EQ(c.id.rfind("mla.cache_read@", 0), std::string::npos) << c.id;
  }
  ASSERT_NE(write, nullptr);
  EXPECT_EQ(write->status, Status::CandidateWithPrerequisites);
  EXPECT_EQ(write->location.start_line, 69);  // the update call
  EXPECT_TRUE(std::any_of(write->evidence.begin(), write->evidence.end(), [](const std::string& e) {
    return e.find("latent cache and the rope-key cache") != std::string::npos;
  }));
}

}  // namespace
}  // namespace npufuse::plan
