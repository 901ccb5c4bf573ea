// apply builds the rotary cos/sin tables once (rope.rope_cos_sin_precompute,
// RULE["apply"]["built_once"]), and refuses, saying why, where a table built
// at __init__ could go stale.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "apply/patch_plan.h"
#include "apply_test_support.h"

namespace npufuse::apply {
namespace {

using testing::plan_for_model_copy;
using testing::replaced;
using testing::ScratchDir;

const char* const kRule = "rope.rope_cos_sin_precompute@";

bool applied(const PatchSet& set) {
  return std::any_of(set.applied.begin(), set.applied.end(), [](const std::string& id) { return id.rfind(kRule, 0) == 0; });
}

// The manual step apply gives the candidate, or "".
std::string manual_step(const PatchSet& set) {
  for (const ManualStep& m : set.manual)
    if (m.candidate.rfind(kRule, 0) == 0) return m.what;
  return "";
}

TEST(RopeTables, BuiltAtTheEndOfInitAndSelectedPerCall) {
  ScratchDir dir("rope_tables");
  PatchSet set = make_patches(PatchRequest{plan_for_model_copy(dir, "llama_like"), {}, {}});
  ASSERT_TRUE(applied(set)) << manual_step(set);
  const std::string& patched = set.files.at(0).patched;
  // config.max_position_embeddings is the config dataclass's field; the
  // temporaries stay locals of __init__, the tables are buffers.
  EXPECT_NE(patched.find("        self.register_buffer(\"inv_freq\", inv_freq, persistent=False)\n"
                         "        t = torch.arange(config.max_position_embeddings, dtype=torch.float32)\n"
                         "        freqs = torch.outer(t, self.inv_freq)\n"
                         "        emb = torch.cat((freqs, freqs), dim=-1)\n"
                         "        self.register_buffer(\"cos_cached\", emb.cos(), persistent=False)\n"
                         "        self.register_buffer(\"sin_cached\", emb.sin(), persistent=False)\n"),
            std::string::npos)
      << patched;
  EXPECT_NE(patched.find("        cos = torch.index_select(self.cos_cached, 0, position_ids.reshape(-1)).view(*position_ids.shape, -1)\n"),
            std::string::npos);
  // Nothing of the per-call computation is left in the forward.
  EXPECT_EQ(patched.find("torch.outer(t, self.inv_freq)\n        emb = torch.cat((freqs, freqs), dim=-1)\n        cos ="),
            std::string::npos);
  EXPECT_EQ(patched.find("angles = position_ids.float()"), std::string::npos);
}

TEST(RopeTables, NamesTakenInInitAndTheClassAreAvoided) {
  ScratchDir dir("rope_tables_names");
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "llama_like",
                          [](std::string text) {
                            return replaced(text, "        self.register_buffer(\"inv_freq\", inv_freq, persistent=False)\n",
                                            "        self.register_buffer(\"inv_freq\", inv_freq, persistent=False)\n"
                                            "        t = dim\n        self.cos_cached = None\n");
                          }),
      {}, {}});
  ASSERT_TRUE(applied(set)) << manual_step(set);
  const std::string& patched = set.files.at(0).patched;
  EXPECT_NE(patched.find("        npu_t = torch.arange(config.max_position_embeddings, dtype=torch.float32)\n"
                         "        freqs = torch.outer(npu_t, self.inv_freq)\n"),
            std::string::npos)
      << patched;
  EXPECT_NE(patched.find("self.register_buffer(\"npu_cos_cached\", emb.cos(), persistent=False)"), std::string::npos);
  EXPECT_NE(patched.find("torch.index_select(self.npu_cos_cached, 0,"), std::string::npos);
}

// llama_like's rotary forward with its tables computed under autocast turned
// off, as HF's LlamaRotaryEmbedding does; `inside` is the with's body.
std::string autocast_forward(std::string text, const std::string& header, const std::string& inside,
                             const std::string& after = "") {
  return replaced(text,
                  "        table = torch.cat([angles, angles], dim=-1)\n"
                  "        return table.cos().to(x.dtype), table.sin().to(x.dtype)\n",
                  "        device = x.device.type if isinstance(x.device.type, str) else \"cpu\"\n"
                  "        " + header + "  # the tables in float32\n" + inside + after +
                      "        return cos.to(x.dtype), sin.to(x.dtype)\n");
}

const char* const kAutocastOff = "with torch.autocast(device_type=device, enabled=False):";
const char* const kTablesInside =
    "            table = torch.cat([angles, angles], dim=-1)\n"
    "            cos = table.cos()\n"
    "            sin = table.sin()\n";

TEST(RopeTables, ChainEndingInsideAnAutocastOffBlockIsReplacedInsideIt) {
  ScratchDir dir("rope_tables_autocast");
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "llama_like", [](std::string text) { return autocast_forward(text, kAutocastOff, kTablesInside); }),
      {}, {}});
  ASSERT_TRUE(applied(set)) << manual_step(set);
  const std::string& patched = set.files.at(0).patched;
  // The statement between the chain's first op and the with stays before
  // it; the header, with its comment, keeps the selection inside it.
  EXPECT_NE(patched.find("        device = x.device.type if isinstance(x.device.type, str) else \"cpu\"\n"
                         "        with torch.autocast(device_type=device, enabled=False):  # the tables in float32\n"
                         "            cos_npu = torch.index_select(self.cos_cached, 0, position_ids.reshape(-1))"),
            std::string::npos)
      << patched;
  EXPECT_NE(patched.find("            cos, sin = cos_npu, sin_npu\n        return cos.to(x.dtype), sin.to(x.dtype)\n"),
            std::string::npos)
      << patched;
  EXPECT_EQ(patched.find("angles = position_ids.float()"), std::string::npos);
  EXPECT_EQ(patched.find("table.cos()"), std::string::npos);
}

// Recent HF code turns autocast off through its own `maybe_autocast` wrapper.
TEST(RopeTables, HfMaybeAutocastOffIsTakenLikeAutocastOff) {
  ScratchDir dir("rope_tables_maybe_autocast");
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "llama_like", [](std::string text) {
        return autocast_forward(text, "with maybe_autocast(device_type=device, enabled=False):", kTablesInside);
      }),
      {}, {}});
  ASSERT_TRUE(applied(set)) << manual_step(set);
  EXPECT_NE(set.files.at(0).patched.find("        with maybe_autocast(device_type=device, enabled=False):  # the tables in "
                                         "float32\n            cos_npu = torch.index_select("),
            std::string::npos)
      << set.files.at(0).patched;
}

// A statement between the chain's that reads what the chain only reads (x)
// moves before the replacement; one that changes in place what the chain
// reads does not.
std::string reads_x(std::string text) {
  return replaced(text, "self.inv_freq.float().view(1, 1, -1)\n", "self.inv_freq.float().view(1, 1, -1).to(x.device)\n");
}

TEST(RopeTables, AStatementReadingWhatTheChainOnlyReadsMovesBeforeIt) {
  ScratchDir dir("rope_tables_reads_x");
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "llama_like",
                          [](std::string text) { return autocast_forward(reads_x(text), kAutocastOff, kTablesInside); }),
      {}, {}});
  ASSERT_TRUE(applied(set)) << manual_step(set);
  EXPECT_NE(set.files.at(0).patched.find("        device = x.device.type if isinstance(x.device.type, str) else \"cpu\"\n"
                                         "        with torch.autocast("),
            std::string::npos)
      << set.files.at(0).patched;
}

TEST(RopeTables, AStatementChangingInPlaceWhatTheChainReadsStays) {
  ScratchDir dir("rope_tables_in_place");
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "llama_like",
                          [](std::string text) {
                            text = autocast_forward(reads_x(text), kAutocastOff, kTablesInside);
                            return replaced(text, "        device = x.device.type", "        position_ids.clamp_(min=0)\n        device = x.device.type");
                          }),
      {}, {}});
  EXPECT_FALSE(applied(set));
  EXPECT_NE(manual_step(set).find("sits between the chain's statements and is not part of the chain"), std::string::npos)
      << manual_step(set);
}

// The tables go on lines of their own after __init__'s last line: a comment
// ending that line stays on it, and a CRLF file gets CRLF lines.
TEST(RopeTables, TheTablesGoOnLinesOfTheirOwnAfterInit) {
  const std::string last = "        self.register_buffer(\"inv_freq\", inv_freq, persistent=False)";
  ScratchDir dir("rope_tables_comment");
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "llama_like",
                          [&](std::string text) { return replaced(text, last + "\n", last + "  # not saved\n"); }),
      {}, {}});
  ASSERT_TRUE(applied(set)) << manual_step(set);
  EXPECT_NE(set.files.at(0).patched.find(last + "  # not saved\n        t = torch.arange("), std::string::npos)
      << set.files.at(0).patched;

  ScratchDir crlf_dir("rope_tables_crlf");
  PatchSet crlf = make_patches(PatchRequest{plan_for_model_copy(crlf_dir, "llama_like",
                                                                [](std::string text) {
                                                                  std::string out;
                                                                  for (char ch : text) out += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
                                                                  return out;
                                                                }),
                                            {}, {}});
  ASSERT_TRUE(applied(crlf)) << manual_step(crlf);
  const std::string& p = crlf.files.at(0).patched;
  EXPECT_NE(p.find(last + "\r\n        t = torch.arange(config.max_position_embeddings, dtype=torch.float32)\r\n"), std::string::npos)
      << p;
  for (size_t i = p.find('\n'); i != std::string::npos; i = p.find('\n', i + 1))
    ASSERT_TRUE(i > 0 && p[i - 1] == '\r') << "a bare LF at byte " << i;
}

struct Refusal {
  const char* name;
  const char* from;
  const char* to;
  const char* said;  // part of the manual step
};

class RopeTablesRefused : public ::testing::TestWithParam<Refusal> {};

TEST_P(RopeTablesRefused, StaysAManualStepWithTheReason) {
  const Refusal& r = GetParam();
  ScratchDir dir(std::string("rope_refused_") + r.name);
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "llama_like", [&](std::string text) { return replaced(text, r.from, r.to); }), {}, {}});
  EXPECT_FALSE(applied(set));
  EXPECT_NE(manual_step(set).find(r.said), std::string::npos) << manual_step(set);
}

INSTANTIATE_TEST_SUITE_P(
    Stale, RopeTablesRefused,
    ::testing::Values(
        // A decorator apply knows nothing of may rescale inv_freq before each call.
        Refusal{"decorator", "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids",
                "    @torch.no_grad()\n    @refresh_frequencies\n    def forward(self, x: torch.Tensor, position_ids",
                "is decorated with @refresh_frequencies, which may change the module's state before each call"},
        // Another method changes the frequencies after __init__.
        Refusal{"changed", "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids",
                "    def rescale(self, factor):\n        self.inv_freq.mul_(factor)\n\n"
                "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids",
                "self.inv_freq is changed after __init__, at "},
        // ... or writes into them by index.
        Refusal{"written_by_index", "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids",
                "    def clip(self, n):\n        self.inv_freq[n:] = 0.0\n\n"
                "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids",
                "self.inv_freq is changed after __init__, at "},
        // A checkpoint may carry its own inv_freq, loaded after the tables were built.
        Refusal{"persistent", "self.register_buffer(\"inv_freq\", inv_freq, persistent=False)",
                "self.register_buffer(\"inv_freq\", inv_freq)", "is a persistent buffer"},
        // No length to build the tables over.
        Refusal{"no_length", "    def __init__(self, config: LlamaLikeConfig):\n        super().__init__()\n        dim = config.head_dim",
                "    def __init__(self, dim: int, theta: float):\n        super().__init__()",
                "knows no max_position_embeddings: it has none of max_position_embeddings, "
                "self.max_position_embeddings"}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return std::string(info.param.name); });

// HF's @dynamic_rope_update changes inv_freq before a call for the dynamic
// and LongRoPE types only: the config decides (RULE["apply"]["decorators"]).
std::string dynamic_rope_decorated(std::string text) {
  return replaced(text, "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids",
                  "    @torch.no_grad()\n    @dynamic_rope_update\n    def forward(self, x: torch.Tensor, position_ids");
}

TEST(RopeTables, DynamicRopeUpdateIsHarmlessForTheConfigsRopeType) {
  for (const char* type : {"", "default", "linear", "llama3", "yarn"}) {
    ScratchDir dir(std::string("rope_dynamic_update_") + type);
    PatchSet set = make_patches(PatchRequest{plan_for_model_copy(dir, "llama_like", dynamic_rope_decorated,
                                                                 [&](nlohmann::json config) {
                                                                   if (*type) config["rope_scaling"] = {{"rope_type", type}, {"factor", 2.0}};
                                                                   return config;
                                                                 }),
                                             {}, {}});
    EXPECT_TRUE(applied(set)) << type << ": " << manual_step(set);
    EXPECT_NE(set.files.at(0).patched.find("    @dynamic_rope_update\n"), std::string::npos);
  }
}

TEST(RopeTables, DynamicRopeUpdateRefusedForDynamicTypesOrWithoutAConfig) {
  struct Case {
    const char* name;
    nlohmann::json rope_scaling;  // null: no config at all
    const char* said;
  };
  const Case cases[] = {
      {"dynamic", {{"rope_type", "dynamic"}, {"factor", 2.0}}, "with rope_scaling.rope_type = 'dynamic'"},
      {"old_key", {{"type", "dynamic"}, {"factor", 2.0}}, "with rope_scaling.type = 'dynamic'"},
      {"longrope", {{"rope_type", "longrope"}}, "with rope_scaling.rope_type = 'longrope'"},
      {"no_config", nullptr, "the plan was made without --config to tell which"},
  };
  for (const Case& c : cases) {
    ScratchDir dir(std::string("rope_dynamic_refused_") + c.name);
    PatchSet set = make_patches(PatchRequest{plan_for_model_copy(dir, "llama_like", dynamic_rope_decorated,
                                                                 [&](nlohmann::json config) {
                                                                   if (c.rope_scaling.is_null()) return nlohmann::json();
                                                                   config["rope_scaling"] = c.rope_scaling;
                                                                   return config;
                                                                 }),
                                             {}, {}});
    EXPECT_FALSE(applied(set)) << c.name;
    EXPECT_NE(manual_step(set).find(c.said), std::string::npos) << c.name << ": " << manual_step(set);
    EXPECT_NE(manual_step(set).find("is decorated with @dynamic_rope_update"), std::string::npos) << manual_step(set);
  }
}

// transformers 4.4x's rotary module: the rope type is chosen in __init__ by
// an if on the config, and forward calls a helper that re-registers inv_freq
// only for the dynamic types. The config decides that guard.
std::string guarded_frequency_update(std::string text) {
  text = replaced(text, "        super().__init__()\n        dim = config.head_dim\n",
                  "        super().__init__()\n"
                  "        if hasattr(config, \"rope_scaling\") and config.rope_scaling is not None:\n"
                  "            self.rope_type = config.rope_scaling.get(\"rope_type\", config.rope_scaling.get(\"type\"))\n"
                  "        else:\n"
                  "            self.rope_type = \"default\"\n"
                  "        self.max_seq_len_cached = config.max_position_embeddings\n"
                  "        dim = config.head_dim\n");
  return replaced(text,
                  "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids: torch.Tensor):\n",
                  "    def _frequency_update(self, position_ids, device):\n"
                  "        seq_len = torch.max(position_ids) + 1\n"
                  "        if seq_len > self.max_seq_len_cached:\n"
                  "            self.register_buffer(\"inv_freq\", self.inv_freq / 2, persistent=False)\n"
                  "            self.max_seq_len_cached = seq_len\n\n"
                  "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids: torch.Tensor):\n"
                  "        if \"dynamic\" in self.rope_type:\n"
                  "            self._frequency_update(position_ids, device=x.device)\n");
}

PatchSet guarded_update_patches(const std::string& name, const nlohmann::json& rope_scaling, bool with_config = true,
                                const std::function<std::string(std::string)>& more = nullptr) {
  ScratchDir dir("rope_guarded_update_" + name);
  return make_patches(PatchRequest{plan_for_model_copy(dir, "llama_like",
                                                       [&](std::string text) {
                                                         text = guarded_frequency_update(text);
                                                         return more ? more(text) : text;
                                                       },
                                                       [&](nlohmann::json config) {
                                                         if (!with_config) return nlohmann::json();
                                                         config["rope_scaling"] = rope_scaling;
                                                         return config;
                                                       }),
                                   {}, {}});
}

TEST(RopeTables, AFrequencyUpdateTheConfigRulesOutIsHarmless) {
  const std::pair<const char*, nlohmann::json> cases[] = {
      {"none", nullptr},
      {"linear", {{"rope_type", "linear"}, {"factor", 2.0}}},
      {"old_key", {{"type", "llama3"}, {"factor", 8.0}}},
  };
  for (const auto& [name, rope_scaling] : cases) {
    PatchSet set = guarded_update_patches(name, rope_scaling);
    EXPECT_TRUE(applied(set)) << name << ": " << manual_step(set);
    if (!applied(set)) continue;
    // The guard and the helper stay as they were.
    EXPECT_NE(set.files.at(0).patched.find("        if \"dynamic\" in self.rope_type:\n"
                                           "            self._frequency_update(position_ids, device=x.device)\n"),
              std::string::npos);
  }
}

TEST(RopeTables, AFrequencyUpdateTheConfigMayRunIsRefused) {
  PatchSet dynamic = guarded_update_patches("dynamic", {{"rope_type", "dynamic"}, {"factor", 2.0}});
  EXPECT_FALSE(applied(dynamic));
  EXPECT_NE(manual_step(dynamic).find("self.inv_freq is changed after __init__, at "), std::string::npos)
      << manual_step(dynamic);
  EXPECT_NE(manual_step(dynamic).find("by _frequency_update, which forward calls at "), std::string::npos)
      << manual_step(dynamic);
  EXPECT_NE(manual_step(dynamic).find("when \"dynamic\" in self.rope_type, as it is with "), std::string::npos)
      << manual_step(dynamic);

  // Without a config the guard is open.
  PatchSet unknown = guarded_update_patches("no_config", nullptr, false);
  EXPECT_FALSE(applied(unknown));
  EXPECT_NE(manual_step(unknown).find("when \"dynamic\" in self.rope_type, which the plan, made without --config, "
                                      "cannot decide"),
            std::string::npos)
      << manual_step(unknown);

  // Called from outside the class too: it may run whatever the config says.
  PatchSet outside = guarded_update_patches("outside", nullptr, true, [](std::string text) {
    return text + "\n\ndef refresh(model, position_ids):\n    model.rotary_emb._frequency_update(position_ids, None)\n";
  });
  EXPECT_FALSE(applied(outside));
  EXPECT_NE(manual_step(outside).find("which code outside LlamaRotaryEmbedding calls"), std::string::npos)
      << manual_step(outside);
}

struct WithRefusal {
  const char* name;
  const char* header;
  const char* inside;
  const char* after;
  const char* said;
};

class RopeTablesWithRefused : public ::testing::TestWithParam<WithRefusal> {};

TEST_P(RopeTablesWithRefused, StaysAManualStepWithTheReason) {
  const WithRefusal& r = GetParam();
  ScratchDir dir(std::string("rope_with_refused_") + r.name);
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "llama_like", [&](std::string text) { return autocast_forward(text, r.header, r.inside, r.after); }),
      {}, {}});
  EXPECT_FALSE(applied(set));
  EXPECT_NE(manual_step(set).find(r.said), std::string::npos) << manual_step(set);
}

INSTANTIATE_TEST_SUITE_P(
    With, RopeTablesWithRefused,
    ::testing::Values(
        // Autocast turned on would lower ops moved into it.
        WithRefusal{"autocast_on", "with torch.autocast(device_type=device, enabled=True):", kTablesInside, "",
                    "lie in the header and body, or in several clauses, of the with statement"},
        // Code of the with's own is not the chain's.
        WithRefusal{"other_code_inside", kAutocastOff,
                    "            table = torch.cat([angles, angles], dim=-1)\n"
                    "            marker = 1\n"
                    "            cos = table.cos()\n"
                    "            sin = table.sin()\n",
                    "", "sits inside the with statement at"},
        // The chain goes on after the with.
        WithRefusal{"continues_after", kAutocastOff,
                    "            table = torch.cat([angles, angles], dim=-1)\n"
                    "            cos = table.cos()\n",
                    "        sin = table.sin()\n", "does not end with the body of the with statement at"}),
    [](const ::testing::TestParamInfo<WithRefusal>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace npufuse::apply
