#pragma once
// The report's only style sheet and script, written inline into the page so
// the file opens anywhere with no network.
namespace npufuse::report {

const char* html_style();
// Filters (status, stage, module) and, when the page is opened with the
// fragment #selftest, a self-test that drives the filters and writes what
// it saw into <pre id="selftest-result"> as JSON (the browser test reads it).
const char* html_script();

}  // namespace npufuse::report
