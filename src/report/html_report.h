#pragma once
// The plan as one self-contained HTML page (`analyze --format html`): the
// same content and order as the Markdown plan, plus a dataflow picture per
// block with each fusible chain's ops coloured by status and linked to its
// candidate card, source snippets with the matched lines marked, filters by
// status, stage and module, and the review checklist. CSS, script and SVG
// are inline; the page fetches nothing.
#include <string>
#include <vector>

#include "plan/plan.h"
#include "report/html_block_pictures.h"
#include "report/html_snippet.h"
#include "report/plan_markdown.h"

namespace npufuse::report {

enum class PictureLayout { Auto, Builtin };  // Auto: graphviz dot when on PATH, else built-in

struct HtmlInputs {
  const plan::Plan* plan = nullptr;
  std::vector<BlockPicture> blocks;
  SourceTexts* sources = nullptr;  // may be null: no snippets
  Lang lang = Lang::En;
  PictureLayout layout = PictureLayout::Auto;
};

std::string plan_to_html(const HtmlInputs& in);

// Reads the plan's model files and config again (for the pictures and the
// snippets) and renders the page. NPUFUSE_HTML_LAYOUT=builtin skips dot.
std::string render_html_report(const plan::Plan& plan, Lang lang);

}  // namespace npufuse::report
