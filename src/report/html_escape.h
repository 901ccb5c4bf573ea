#pragma once
// Every string the report takes from user files (source lines, names,
// evidence, rule text) goes through here before it reaches the page, so a
// model file cannot inject markup or script into the HTML report.
#include <string>
#include <string_view>

namespace npufuse::report {

// & < > " ' as character references; safe in element text and in quoted
// attribute values.
std::string escape_html(std::string_view text);

}  // namespace npufuse::report
