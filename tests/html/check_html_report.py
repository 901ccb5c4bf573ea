#!/usr/bin/env python3
"""The HTML report in a real browser.

For each test model: `npufuse analyze --format html` writes the page, headless
Chromium loads it with the #selftest fragment (the page's own script then
drives the filters and writes what it saw into <pre id="selftest-result">),
and the dumped DOM is checked against the JSON plan of the same analysis:
one card per candidate, one SVG picture per block, every chain node linked
to a card, every filter combination showing the right cards. A copy of a
model with markup planted in its matched lines checks that nothing from the
source runs. A screenshot of each page is kept under --artefacts.

Exit 77 (ctest SKIP_RETURN_CODE) when Chromium is not installed, except
under CI, where its absence is a failure.
"""
import argparse
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

MODELS = ["llama_like", "qwen3_moe_like"]
PLANTED = "<img src=x onerror=\"document.body.setAttribute('data-injected','1')\">"


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class PageFacts(html.parser.HTMLParser):
    """Counts what the checks need from the dumped DOM."""

    def __init__(self):
        super().__init__()
        self.cards = 0
        self.figures = 0
        self.figure_svgs = 0
        self.in_figure = 0
        self.body = {}
        self.selftest = None
        self._in_result = False
        self.scripts = 0
        self.images = 0
        self.chains = []       # (chain id, stage) per reference-chain block
        self.chain_steps = 0
        self.chain_links = []  # card anchors the chain steps link to
        self.ids = set()
        self._in_step = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "body":
            self.body = a
        if tag == "article" and "card" in classes:
            self.cards += 1
        if tag == "figure" and "block" in classes:
            self.figures += 1
            self.in_figure += 1
            self._svg_seen = False
        if tag == "svg" and self.in_figure and not self._svg_seen:
            self.figure_svgs += 1
            self._svg_seen = True
        if tag == "pre" and a.get("id") == "selftest-result":
            self._in_result = True
            self.selftest = ""
        if tag == "script":
            self.scripts += 1
        if tag == "img":
            self.images += 1
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "div" and "chain" in classes:
            self.chains.append((a.get("data-chain"), a.get("data-stage")))
        if tag == "li" and "chain-step" in classes:
            self.chain_steps += 1
            self._in_step = True
        if tag == "a" and self._in_step and (a.get("href") or "").startswith("#"):
            self.chain_links.append(a["href"][1:])

    def handle_endtag(self, tag):
        if tag == "figure" and self.in_figure:
            self.in_figure -= 1
        if tag == "pre":
            self._in_result = False
        if tag == "li":
            self._in_step = False

    def handle_data(self, data):
        if self._in_result:
            self.selftest += data


def chromium_args(chromium, profile):
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--hide-scrollbars", f"--user-data-dir={profile}"]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def analyze(npufuse, source_dir, model_dir, fmt, out=None):
    cmd = [npufuse, "analyze", model_dir, "--config", os.path.join(model_dir, "config.json"), "--format", fmt]
    if out:
        cmd += ["-o", out]
    r = run(cmd, cwd=source_dir)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}: {r.stderr}")
    return r.stdout


def load(chromium, page, profile):
    r = run(chromium_args(chromium, profile) + ["--dump-dom", "file://" + page + "#selftest"])
    if r.returncode != 0 or "<html" not in r.stdout:
        raise SystemExit(f"FAIL: chromium could not load {page}: {r.stderr[-2000:]}")
    facts = PageFacts()
    facts.feed(r.stdout)
    return facts


def screenshot(chromium, page, png, profile):
    r = run(chromium_args(chromium, profile) + [f"--screenshot={png}", "--window-size=1400,2400", "file://" + page])
    with open(png, "rb") as f:
        head = f.read(8)
    if r.returncode != 0 or head != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"FAIL: no screenshot of {page}: {r.stderr[-2000:]}")


def check_model(args, chromium, name, failures):
    model_dir = os.path.join("tests", "models", name)
    page = os.path.abspath(os.path.join(args.artefacts, name + ".html"))
    plan = json.loads(analyze(args.npufuse, args.source_dir, model_dir, "json"))
    analyze(args.npufuse, args.source_dir, model_dir, "html", page)
    with tempfile.TemporaryDirectory() as profile:
        facts = load(chromium, page, profile)
        screenshot(chromium, page, os.path.join(args.artefacts, name + ".png"), profile)
    want_cards = len(plan["candidates"])
    result = json.loads(facts.selftest or "{}")

    def expect(what, got, want):
        if got != want:
            failures.append(f"{name}: {what}: got {got!r}, want {want!r}")

    expect("cards in the DOM vs the JSON plan", facts.cards, want_cards)
    expect("self-test ran and passed", facts.body.get("data-selftest"), "pass")
    expect("self-test failures", result.get("failures"), [])
    expect("cards the page counted", result.get("cards"), want_cards)
    if facts.figures < 1:
        failures.append(f"{name}: no block picture")
    expect("blocks with an SVG", facts.figure_svgs, facts.figures)
    if not result.get("chain_links"):
        failures.append(f"{name}: no chain node links to a card")
    # The reference chains of the plan, each step shown, every candidate link landing on a card.
    expect("reference chains in the DOM", facts.chains,
           [(c["id"], c["stage"]) for c in plan.get("reference_chains", [])])
    expect("reference-chain steps in the DOM", facts.chain_steps,
           sum(len(c["steps"]) for c in plan.get("reference_chains", [])))
    expect("chain-step links without a card", [a for a in facts.chain_links if a not in facts.ids], [])
    statuses = {c["status"] for c in plan["candidates"]}
    tested = {c["name"].split("=", 1)[1] for c in result.get("checks", []) if c["name"].startswith("status=")}
    expect("statuses the filter was tried with", sorted(tested), sorted(statuses))
    print(f"{name}: {facts.cards} cards, {facts.figures} pictures, {result.get('chain_links')} chain links, "
          f"{len(result.get('checks', []))} filter checks")


def check_injection(args, chromium, failures):
    """Markup planted in a matched line of a model copy shows as text."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(args.source_dir, "tests", "models", "llama_like")
        dst = os.path.join(tmp, "evil_model")
        shutil.copytree(src, dst)
        path = os.path.join(dst, "model.py")
        with open(path) as f:
            lines = f.read().split("\n")
        # Every line that computes a variance gets the payload as a trailing comment.
        planted = 0
        for i, line in enumerate(lines):
            if ".pow(2)" in line:
                lines[i] = line + "  # " + PLANTED
                planted += 1
        if planted == 0:
            failures.append("injection: found no line to plant markup in")
            return
        with open(path, "w") as f:
            f.write("\n".join(lines))
        page = os.path.join(tmp, "evil.html")
        analyze(args.npufuse, args.source_dir, dst, "html", page)
        with open(page) as f:
            text = f.read()
        if PLANTED in text:
            failures.append("injection: the planted markup is in the page unescaped")
        with tempfile.TemporaryDirectory() as profile:
            facts = load(chromium, page, profile)
        if facts.body.get("data-injected"):
            failures.append("injection: the planted handler ran")
        if facts.images:
            failures.append(f"injection: {facts.images} <img> elements in the DOM")
        print(f"injection: markup planted on {planted} lines stayed text")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npufuse", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--artefacts", required=True, help="where the pages and screenshots are kept")
    args = ap.parse_args()
    chromium = find_chromium()
    if not chromium:
        if os.environ.get("CI"):
            print("FAIL: chromium is not installed (scripts/test.sh installs it)")
            return 1
        print("SKIP: chromium is not installed; `apt-get install chromium` to run the browser test")
        return 77
    os.makedirs(args.artefacts, exist_ok=True)
    os.chdir(args.source_dir)
    # The built-in layout is what a machine without graphviz draws; test that one.
    os.environ["NPUFUSE_HTML_LAYOUT"] = "builtin"
    failures = []
    for name in MODELS:
        check_model(args, chromium, name, failures)
    check_injection(args, chromium, failures)
    for f in failures:
        print("FAIL:", f)
    print(f"artefacts: {args.artefacts}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
