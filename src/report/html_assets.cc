#include "report/html_assets.h"

namespace npufuse::report {

const char* html_style() {
  return R"CSS(
:root { --ok:#2e7d32; --pre:#b26a00; --na:#c62828; --nf:#6a1b9a; --ink:#1d1d1f; --muted:#666; --line:#ddd; }
* { box-sizing: border-box; } [hidden] { display: none !important; }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--ink); margin: 0; display: grid; grid-template-columns: 15rem 1fr; }
nav { position: sticky; top: 0; height: 100vh; overflow: auto; padding: 1rem; background: #f6f6f8; border-right: 1px solid var(--line); }
nav a { display: block; color: var(--ink); text-decoration: none; padding: .15rem 0; }
main { padding: 1rem 2rem 4rem; min-width: 0; }
h1 { margin-top: 0; } h2 { border-bottom: 1px solid var(--line); padding-bottom: .2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; } th, td { border: 1px solid var(--line); padding: .2rem .5rem; text-align: left; vertical-align: top; }
code, pre { font: 12px/1.4 ui-monospace, monospace; }
.badge { display: inline-block; padding: 0 .5rem; border-radius: 1rem; color: #fff; font-size: 12px; font-weight: 600; }
.badge.st-candidate { background: var(--ok); } .badge.st-candidate_with_prerequisites { background: var(--pre); }
.badge.st-not_applicable { background: var(--na); } .badge.st-no_fused_op { background: var(--nf); }
.chain ul { list-style: none; padding-left: 1rem; } .chain-step { border-left: 4px solid #bbb; padding-left: .5rem; margin: .15rem 0; }
.chain-step[data-status=covered] { border-left-color: var(--ok); } .chain-step[data-status=blocked] { border-left-color: var(--na); }
.chain-step[data-status=open], .chain-step[data-status=not_mapped] { border-left-color: var(--nf); }
.card { border: 1px solid var(--line); border-left: 6px solid #999; border-radius: 6px; padding: .5rem 1rem; margin: .8rem 0; }
.card.st-candidate { border-left-color: var(--ok); } .card.st-candidate_with_prerequisites { border-left-color: var(--pre); }
.card.st-not_applicable { border-left-color: var(--na); } .card.st-no_fused_op { border-left-color: var(--nf); }
.card:target { box-shadow: 0 0 0 3px #4a90e2; }
.card h4 { margin: .3rem 0; } dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .8rem; margin: .3rem 0; } dl.meta dt { color: var(--muted); }
.ans-holds { color: var(--ok); font-weight: 600; } .ans-violated { color: var(--na); font-weight: 600; } .ans-unknown { color: var(--pre); font-weight: 600; }
.snippet { margin: .5rem 0; } .snippet figcaption { color: var(--muted); font-size: 12px; }
.snippet pre { background: #fafafa; border: 1px solid var(--line); padding: .3rem 0; overflow: auto; }
.snippet .line { display: block; padding: 0 .5rem; white-space: pre; } .snippet .line.hit { background: #fff3c4; }
.snippet .ln { display: inline-block; width: 3.5em; color: #999; user-select: none; }
#filters { position: sticky; top: 0; background: #fff; border-bottom: 1px solid var(--line); padding: .5rem 0; z-index: 1; display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; }
figure.block { margin: 1rem 0; border: 1px solid var(--line); border-radius: 6px; padding: .5rem; overflow: auto; max-height: 80vh; }
figure.block figcaption { font-weight: 600; margin-bottom: .3rem; } figure.block figcaption small { font-weight: 400; color: var(--muted); }
svg.dataflow .edges path { fill: none; stroke: #999; stroke-width: 1; } svg.dataflow marker path { fill: #999; }
svg.dataflow .node rect { fill: #f2f2f2; stroke: #bbb; } svg.dataflow .node text { font: 11px ui-monospace, monospace; text-anchor: middle; fill: var(--ink); }
svg .chain rect, svg .chain polygon, svg .chain path { stroke-width: 2; } svg .chain text { fill: #fff !important; font-weight: 600; }
svg .st-candidate rect, svg .st-candidate polygon, svg .st-candidate path { fill: var(--ok) !important; stroke: var(--ok) !important; }
svg .st-candidate_with_prerequisites rect, svg .st-candidate_with_prerequisites polygon, svg .st-candidate_with_prerequisites path { fill: var(--pre) !important; stroke: var(--pre) !important; }
svg .st-not_applicable rect, svg .st-not_applicable polygon, svg .st-not_applicable path { fill: var(--na) !important; stroke: var(--na) !important; }
svg .st-no_fused_op rect, svg .st-no_fused_op polygon, svg .st-no_fused_op path { fill: var(--nf) !important; stroke: var(--nf) !important; }
svg a.dim, svg a .dim { opacity: .25; }
.legend span { display: inline-block; margin-right: 1rem; } .legend i { display: inline-block; width: .8rem; height: .8rem; border-radius: 3px; margin-right: .3rem; vertical-align: middle; }
ul.review { list-style: none; padding-left: 0; } ul.review > li { margin: .3rem 0; } ul.review ul { list-style: disc; }
details.alternatives { margin: .5rem 0; } .card .card { border-left-width: 4px; }
#selftest-result { display: none; }
)CSS";
}

const char* html_script() {
  return R"JS(
(function () {
  'use strict';
  var cards = Array.prototype.slice.call(document.querySelectorAll('#cards > article.card'));
  var countOut = document.getElementById('f-count');
  function checkedStatuses() {
    var set = {};
    document.querySelectorAll('#filters input[name=status]').forEach(function (box) { if (box.checked) set[box.value] = true; });
    return set;
  }
  function linkTarget(a) { return (a.getAttribute('href') || a.getAttribute('xlink:href') || '').replace(/^#/, ''); }
  function applyFilters() {
    var statuses = checkedStatuses();
    var stage = document.getElementById('f-stage').value;
    var module = document.getElementById('f-module').value;
    var shown = 0;
    cards.forEach(function (card) {
      var stages = (card.getAttribute('data-stages') || '').split(' ');
      var ok = !!statuses[card.getAttribute('data-status')] &&
               (stage === 'all' || stages.indexOf(stage) >= 0) &&
               (module === 'all' || card.getAttribute('data-module') === module);
      card.hidden = !ok;
      if (ok) shown++;
    });
    countOut.textContent = String(shown);
    document.querySelectorAll('svg a').forEach(function (a) {
      var target = linkTarget(a);
      var card = target ? document.getElementById(target) : null;
      a.classList.toggle('dim', !!card && card.hidden);
    });
    return shown;
  }
  document.querySelectorAll('#filters input, #filters select').forEach(function (el) {
    el.addEventListener('change', applyFilters);
  });
  applyFilters();

  function setFilters(statusList, stage, module) {
    document.querySelectorAll('#filters input[name=status]').forEach(function (box) {
      box.checked = statusList === null || statusList.indexOf(box.value) >= 0;
    });
    document.getElementById('f-stage').value = stage;
    document.getElementById('f-module').value = module;
    return applyFilters();
  }
  function selfTest() {
    var result = { cards: cards.length, expected_cards: Number(document.getElementById('cards').getAttribute('data-count')),
                   blocks: document.querySelectorAll('figure.block').length,
                   blocks_with_svg: document.querySelectorAll('figure.block svg').length,
                   chain_links: 0, broken_links: [], checks: [], failures: [] };
    function expect(name, got, want) {
      result.checks.push({ name: name, got: got, want: want });
      if (got !== want) result.failures.push(name + ': got ' + got + ', want ' + want);
    }
    expect('cards', result.cards, result.expected_cards);
    document.querySelectorAll('figure.block svg a').forEach(function (a) {
      // dot wraps tooltip-only nodes in an <a> without a link; only links count.
      if (!linkTarget(a)) return;
      result.chain_links++;
      if (!document.getElementById(linkTarget(a))) result.broken_links.push(linkTarget(a));
    });
    expect('broken_links', result.broken_links.length, 0);
    var statuses = [];
    document.querySelectorAll('#filters input[name=status]').forEach(function (box) { statuses.push(box.value); });
    statuses.forEach(function (s) {
      var want = cards.filter(function (c) { return c.getAttribute('data-status') === s; }).length;
      expect('status=' + s, setFilters([s], 'all', 'all'), want);
    });
    expect('no status', setFilters([], 'all', 'all'), 0);
    ['prefill', 'decode'].forEach(function (st) {
      var want = cards.filter(function (c) { return (c.getAttribute('data-stages') || '').split(' ').indexOf(st) >= 0; }).length;
      expect('stage=' + st, setFilters(null, st, 'all'), want);
    });
    document.querySelectorAll('#f-module option').forEach(function (opt) {
      if (opt.value === 'all') return;
      var want = cards.filter(function (c) { return c.getAttribute('data-module') === opt.value; }).length;
      expect('module=' + opt.value, setFilters(null, 'all', opt.value), want);
    });
    var hiddenVisible = cards.filter(function (c) { return c.hidden && c.offsetParent !== null; }).length;
    expect('hidden cards not rendered', hiddenVisible, 0);
    expect('reset', setFilters(null, 'all', 'all'), cards.length);
    result.ok = result.failures.length === 0;
    var out = document.getElementById('selftest-result');
    out.textContent = JSON.stringify(result);
    document.body.setAttribute('data-selftest', result.ok ? 'pass' : 'fail');
  }
  if (location.hash === '#selftest') selfTest();
})();
)JS";
}

}  // namespace npufuse::report
