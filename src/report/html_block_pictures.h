#pragma once
// The blocks the HTML report draws: every decoder layer, attention, MoE and
// indexer class of the model, each as its forward's dataflow with
// submodules and helpers inlined (what the matcher saw), and each op tagged
// with the plan candidate whose chain holds it.
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/source_set.h"
#include "plan/plan.h"
#include "report/svg_dataflow_graph.h"

namespace npufuse::report {

struct BlockPicture {
  std::string class_name;
  std::string role;  // decoder_layer, attention, moe, indexer (model::role_name)
  std::string file;
  int line = 0;
  PictureGraph graph;
};

std::vector<BlockPicture> block_pictures(const model::SourceSet& sources, const model::ModelConfig& config,
                                         const plan::Plan& plan);

// The owner lookup block_pictures uses: the candidate whose matched ops
// include `op` (same file and bytes; an alternative counts for the chain it
// belongs to), else a no_fused_op item whose lines hold it.
OpOwner candidate_owner(const plan::Plan& plan);

}  // namespace npufuse::report
