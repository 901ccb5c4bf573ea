#include "plan/opaque_cache.h"

#include <fmt/format.h>

#include <algorithm>

#include "plan/candidate_checks.h"
#include "plan/stage_split.h"

namespace npufuse::plan {
namespace {

const model::CacheAccess* update_call_in(const Candidate& c, const model::CacheOrganisation& cache) {
  for (const model::CacheAccess& a : cache.accesses) {
    if (a.mechanism != "cache_update") continue;
    Location at{a.where.file, a.where.line, a.where.end_line > 0 ? a.where.end_line : a.where.line};
    if (std::any_of(c.parts.begin(), c.parts.end(), [&](const Location& p) { return overlaps(p, at); })) return &a;
  }
  return nullptr;
}

// A step that writes or reads the K/V cache: the attention's (module
// kv_cache), or MLA's latent and rope-key caches.
bool cache_step(const Candidate& c) {
  if (c.module == "kv_cache") return true;
  return c.module == "mla" && (c.id.rfind("mla.cache_write@", 0) == 0 || c.id.rfind("mla.cache_read@", 0) == 0);
}

// A matched candidate of the same module instance whose operator writes the
// latent caches itself (npu_kv_rmsnorm_rope_cache).
const Candidate* latent_cache_writer(const std::vector<Candidate>& matched, const std::string& instance) {
  for (const Candidate& c : matched)
    if (c.instance == instance && c.status != Status::NoFusedOp && c.status != Status::NotApplicable &&
        std::find(c.apis.begin(), c.apis.end(), "npu_kv_rmsnorm_rope_cache") != c.apis.end())
      return &c;
  return nullptr;
}

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// The matched cache writes inside a local update method ("StaticLayerCache.update").
std::vector<std::string> local_update_writes(const std::vector<Candidate>& matched) {
  std::vector<std::string> out;
  for (const Candidate& c : matched) {
    const std::string& fn = c.apply_function;
    bool in_update = fn.size() > 7 && fn.compare(fn.size() - 7, 7, ".update") == 0;
    if (c.module == "kv_cache" && c.status != Status::NoFusedOp && in_update)
      out.push_back(fmt::format("{} (in {})", c.id, fn));
  }
  return out;
}

}  // namespace

void resolve_opaque_cache_steps(std::vector<Candidate>& candidates, const std::vector<Candidate>& matched,
                                const model::CacheOrganisation& cache, const rules::Rule* rule,
                                const CandidateContext& ctx, std::vector<std::string>& notes) {
  std::vector<std::string> local_writes = local_update_writes(matched);
  std::vector<Candidate> out;
  // One candidate per update call: its write and its read are the same call.
  std::vector<std::pair<const model::CacheAccess*, size_t>> done;
  for (Candidate& c : candidates) {
    const model::CacheAccess* call =
        c.status == Status::NoFusedOp && cache_step(c) ? update_call_in(c, cache) : nullptr;
    if (call && !local_writes.empty()) {
      notes.push_back(fmt::format("{}: covered where the cache is written: `{}` runs the update method the analysed "
                                  "files define, whose writes are candidates {}",
                                  c.id, call->text, fmt::join(local_writes, ", ")));
      continue;
    }
    if (!call || !rule) {
      out.push_back(std::move(c));
      continue;
    }
    auto seen = std::find_if(done.begin(), done.end(), [&](const auto& d) { return d.first == call; });
    if (seen != done.end()) {
      Candidate& first = out[seen->second];
      for (const std::string& e : c.evidence) add_unique(first.evidence, e);
      continue;
    }
    Candidate r;
    r.module = "kv_cache";
    r.rule = rule->id;
    r.title = fmt::format("{} through an opaque cache class -> static cache written in place ({})", call->text,
                          fmt::join(rule->apis, ", "));
    r.title_zh = fmt::format("{}经由不透明的缓存类 -> 原地写入的静态缓存（{}）", call->text, fmt::join(rule->apis, ", "));
    r.apis = rule->apis;
    r.location = c.location;
    r.parts = c.parts;
    r.instance = c.instance;
    r.id = fmt::format("{}@{}:{}", rule->id, r.location.file, r.location.start_line);
    r.stages = split_stages(rule->stages, "", ctx.requested_stage);
    if (r.stages.empty()) r.stages = c.stages;
    r.evidence = c.evidence;
    r.evidence.push_back(fmt::format(
        "{} at {} calls update() on a cache object whose class is not in the analysed files: what it stores and how "
        "it grows cannot be read, so no cache-write pattern can match it",
        call->function, call->where.str()));
    if (c.module == "mla") {
      if (const Candidate* writer = latent_cache_writer(matched, c.instance))
        r.evidence.push_back(fmt::format(
            "the values written are MLA's latent and rope key; {} writes both into caches the model owns with "
            "npu_kv_rmsnorm_rope_cache, which then replaces this write",
            writer->id));
      else
        r.evidence.push_back("the values written are MLA's latent and rope key: the static caches are the latent cache "
                             "and the rope-key cache");
    }
    r.checks = rule_checks(*rule, ctx, r.stages, r.evidence);
    for (const CheckResult& check : r.checks) {
      if (check.answer == check::Answer::Violated && check.severity == "error") add_unique(r.blocking, blocking_text(check));
      for (const std::string& m : check.missing) add_unique(r.missing_facts, m);
    }
    std::sort(r.missing_facts.begin(), r.missing_facts.end());
    r.prerequisites.push_back(PrerequisiteItem{
        "own_the_cache",
        fmt::format("`{}` goes through a cache class outside the analysed files (HF DynamicCache or similar): replace it "
                    "by a cache the model owns, so that its writes and reads are visible and can be fused",
                    call->text),
        fmt::format("`{}`经由所分析文件之外的缓存类（HF DynamicCache等）完成：改为由模型自己持有的缓存，使其读写可见、可融合",
                    call->text),
        false, r.location});
    for (const rules::Prerequisite& p : rule->prerequisites)
      r.prerequisites.push_back(PrerequisiteItem{p.id, p.en, p.zh, p.mechanical, r.location});
    r.verification_cut = c.verification_cut;
    r.status = r.blocking.empty() ? Status::CandidateWithPrerequisites : Status::NotApplicable;
    done.emplace_back(call, out.size());
    out.push_back(std::move(r));
  }
  candidates = std::move(out);
}

}  // namespace npufuse::plan
