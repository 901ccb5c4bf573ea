#pragma once
// How a model keeps its KV cache, read from the forward code: where keys and
// values are written into a cache and by what index, and whether the cache is
// one contiguous tensor per layer or paged (blocks addressed by slot_mapping
// and block tables).
#include <string>
#include <vector>

#include "model/source_set.h"

namespace npufuse::model {

struct CacheAccess {
  std::string function;   // "Class.method" or helper name
  SourceSpan where;
  // `cache_update` (an HF-style `cache.update(k, v, ...)`), `cat_growth`
  // (`torch.cat` of the past and the new keys), `index_copy` (`index_copy_`
  // into a cache), `slice_write` (`cache[..., start:end] = x`), `slot_mapping`
  // (a paged write addressed by slot), `block_table` (a paged read),
  // `whole_read` (a tensor written by index_copy_ or a slice is then read
  // whole, not through a slice: returned, passed on or rebound, so the
  // attention gets every slot of a preallocated buffer, written or not).
  std::string mechanism;
  std::string text;         // the statement or call as written (first line)
  std::string write_index;  // the index expression as written; empty when none
};

struct CacheOrganisation {
  // `paged`, `contiguous`, or `not found`.
  std::string organisation = "not found";
  // `slot_mapping`, `position` (start_pos/kv_len slices, index_copy_ with a
  // position), `append` (cat / Cache.update grow the cache by the new tokens),
  // several joined by "+", or empty.
  std::string write_index;
  std::vector<CacheAccess> accesses;
  // A `whole_read` access among them: attention is given the whole of a
  // preallocated cache buffer (qwen3_like's StaticKVCache.update returns
  // them; gemma_style attends over them), not the written slots only.
  const CacheAccess* whole_read() const;
};

CacheOrganisation find_kv_cache(const SourceSet& sources, const std::vector<const ClassDecl*>& module_classes);

}  // namespace npufuse::model
