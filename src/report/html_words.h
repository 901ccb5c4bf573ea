#pragma once
// The words of the HTML report, in English and Chinese. Module titles come
// from module_names.h, as in the Markdown plan.
#include <string>
#include <vector>

#include "check/evaluate.h"
#include "plan/plan.h"
#include "report/plan_markdown.h"
#include "report/plan_names.h"

namespace npufuse::report {

struct HtmlWords {
  const char* html_lang;
  const char* title;
  const char* tool_line;  // {version}, {schema}
  const char* contents;
  const char* inputs;
  const char* file;
  const char* setting;
  const char* value;
  const char* config;
  const char* none_given;
  const char* chip;
  const char* parallel;
  const char* quant;
  const char* stage;
  const char* torch_npu;
  const char* rules;
  const char* catalog;
  const char* embedded;
  const char* unknown;
  const char* facts;
  const char* facts_known;
  const char* fact;
  const char* source;
  const char* facts_none;
  const char* facts_asked;
  const char* facts_asked_none;
  const char* needed_by;
  const char* step1;
  const char* module;
  const char* chains;
  const char* stages;
  const char* no_candidates;
  const char* step2;
  const char* covered_by;
  const char* left_open;
  const char* blocked;
  const char* pictures;
  const char* pictures_intro;
  const char* no_pictures;
  const char* legend_plain;
  const char* step3;
  const char* filters;
  const char* status;
  const char* all;
  const char* shown;
  const char* id;
  const char* rule;
  const char* where;
  const char* more_places;
  const char* parts;
  const char* instance;
  const char* apis;
  const char* confidence;
  const char* evidence;
  const char* checks;
  const char* api;
  const char* constraint;
  const char* answer;
  const char* severity;
  const char* what_it_says;
  const char* doc;
  const char* no_checks;
  const char* missing_facts;
  const char* prerequisites;
  const char* mechanical;
  const char* manual;
  const char* escapes;
  const char* blocking;
  const char* near_miss;
  const char* cut;
  const char* matched_lines;
  const char* source_unavailable;
  const char* alternatives;
  const char* alternative;
  const char* in_pictures;
  const char* requirements;
  const char* requirements_none;
  const char* subgraph;
  const char* inputs_word;
  const char* outputs_word;
  const char* why_nothing_fits;
  const char* step4;
  const char* step4_intro;
  const char* notes;
  const char* layout_dot;
  const char* layout_builtin;
  const char* too_large;
};

const HtmlWords& html_words(Lang lang);

}  // namespace npufuse::report
