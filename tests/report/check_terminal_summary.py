#!/usr/bin/env python3
"""`npufuse analyze` at a terminal (docs/cli.md): driven through a
pseudo-terminal, it prints the one-screen summary and writes the full reports;
the summary's content is checked against the JSON plan it wrote (every
candidate's operator, status and id; every fact asked for with its flag; the
blocked chains with their reason; report paths that exist and hold exactly what
`--format md|html|json` prints through a pipe). Piping, --format and -o keep
their output."""
import argparse
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile

# The analyze flag that gives each fact (docs/cli.md, "Deployment file"); any
# other fact is given by a `NAME = value` line of a --deploy file.
FLAGS = {
    "tp": "--tp N", "num_heads": "--tp N", "num_kv_heads": "--tp N",
    "ep": "--ep N", "local_expert_num": "--ep N", "dp": "--dp N",
    "chip": "--chip A2|A3|...", "quant": "--quant bf16|w8a8|w8a8c8|w4a16",
    "stage": "--stage prefill|decode", "torch_npu_version": "--torch-npu-version V",
}
MODULE_EN = {"attention": "Attention core", "kv_cache": "KV cache", "rope": "RoPE", "norm": "Norm", "ffn": "FFN",
             "moe_gate": "MoE gate", "moe_routing": "MoE routing", "moe_experts": "MoE experts", "mla": "MLA",
             "indexer": "Indexer", "quant": "Quantisation", "other": "Other"}
STATUS_ZH = {"candidate": "候选", "candidate_with_prerequisites": "候选（需前置改造）", "not_applicable": "不适配",
             "no_fused_op": "无现成融合算子"}

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def on_terminal(argv, cwd):
    """Runs argv with stdout on a pseudo-terminal; returns (status, stdout text, stderr text)."""
    master, slave = pty.openpty()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=slave, stderr=err,
                                env=dict(os.environ, NPUFUSE_HTML_LAYOUT="builtin"))
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        status = proc.wait()
        err.seek(0)
        # The terminal turns "\n" into "\r\n".
        return status, out.decode().replace("\r\n", "\n"), err.read().decode()


def piped(argv, cwd):
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=dict(os.environ, NPUFUSE_HTML_LAYOUT="builtin"))
    return proc.returncode, proc.stdout, proc.stderr.decode()


def section(text, heading):
    """The lines after the line starting with `heading`, up to a blank line."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(heading):
            out = []
            for l in lines[i + 1:]:
                if not l:
                    break
                out.append(l)
            return out
    return []


def read(path):
    with open(path, "rb") as f:
        return f.read()


def report_paths(summary, heading, labels):
    rows = section(summary, heading)
    paths = {}
    for row in rows:
        for kind, label in labels.items():
            m = re.match(r"^  " + re.escape(label) + r" +(\S.*)$", row)
            if m:
                paths[kind] = m.group(1)
    return rows, paths


def check_summary_against_plan(name, summary, plan, lang):
    zh = lang == "zh"
    rows = section(summary, "候选（模块、融合算子、状态、ID）" if zh else "Candidates (module, fused operator, status, id)")
    check(len(rows) == len(plan["candidates"]),
          f"{name}: {len(rows)} candidate lines for {len(plan['candidates'])} candidates")
    for c in plan["candidates"]:
        # The id ends the line, or a space or the Chinese full-width bracket of "(+N alternatives)" follows it.
        mine = [r for r in rows if re.search(re.escape(c["id"]) + r"( |$|（)", r)]
        check(len(mine) == 1, f"{name}: one line for {c['id']}, found {len(mine)}")
        if not mine:
            continue
        row = mine[0]
        status = STATUS_ZH[c["status"]] if zh else c["status"]
        check(f"  {status}  " in row, f"{name}: {c['id']}: status {status} missing: {row!r}")
        if c["apis"]:
            check(c["apis"][0] in row, f"{name}: {c['id']}: operator {c['apis'][0]} missing: {row!r}")
        else:
            check("—" in row, f"{name}: {c['id']}: no operator, no dash: {row!r}")
        if not zh:
            check(row.startswith("  " + MODULE_EN[c["module"]]), f"{name}: {c['id']}: module missing: {row!r}")
        if c.get("alternatives"):
            check("alternative" in row or "备选" in row, f"{name}: {c['id']}: alternatives not counted: {row!r}")

    facts = section(summary, "仍需提供的事实" if zh else "Facts still asked for")
    asked = set(plan["unknown_facts"])
    # Rules a --ep or --quant would let through: the notes name the fact
    # they wait on ("... is not offered: it applies only when ep > 1, and ep
    # is not known ...").
    waiting = {}
    for note in plan["notes"]:
        m = re.match(r"^(\S+) matched at .* but is not offered: .*, and (.+) is not known", note)
        if m:
            for fact in m.group(2).split(", "):
                asked.add(fact)
                waiting.setdefault(fact, []).append(m.group(1))
    check(bool(facts) == bool(asked), f"{name}: facts section {facts} for asked facts {sorted(asked)}")
    deploy_label = "--deploy 文件中的行" if zh else "--deploy FILE lines"
    for fact in sorted(asked):
        flag = FLAGS.get(fact)
        if flag:
            mine = [r for r in facts if r.startswith("  " + flag + " ")]
            check(len(mine) == 1 and re.search(r"\s" + re.escape(fact) + r"(,|$| —)", mine[0]),
                  f"{name}: fact {fact} not under {flag}: {facts}")
            for rule in waiting.get(fact, [])[:1]:
                check(mine and (rule in mine[0] or "more" in mine[0] or "等" in mine[0]),
                      f"{name}: rule {rule} waiting on {fact} not named: {mine}")
        else:
            mine = [r for r in facts if r.startswith("  " + deploy_label)]
            check(len(mine) == 1 and f"{fact} = …" in mine[0], f"{name}: fact {fact} not as a --deploy line: {facts}")

    blocked = section(summary, "被阻断" if zh else "Blocked")
    not_applicable = [c for c in plan["candidates"] if c["status"] == "not_applicable"]
    check(bool(blocked) == bool(not_applicable), f"{name}: blocked section {blocked} for {len(not_applicable)}")
    for c in not_applicable:
        check("  " + c["id"] in blocked, f"{name}: blocked {c['id']} not listed: {blocked}")
        violated = [k for k in c["checks"] if k["answer"] == "violated" and k["severity"] == "error"]
        if violated and "  " + c["id"] in blocked:
            reason = blocked[blocked.index("  " + c["id"]) + 1]
            words = violated[0]["message"]
            message = words["zh"] if zh and words.get("zh") else words["en"]
            check(reason.startswith("      " + violated[0]["api"] + ": " + message[:60]),
                  f"{name}: {c['id']}: reason {reason!r} is not the violated constraint")


def run_case(npufuse, source, work, name, args, lang="en"):
    """One model at a terminal with --out: the summary, then the reports against piped runs."""
    out_dir = os.path.join(work, name)
    status, summary, err = on_terminal([npufuse, "analyze", *args, "--out", out_dir, "--lang", lang], source)
    check(status == 0, f"{name}: exit {status}: {err}")
    labels = {"md": "Markdown", "html": "HTML", "json": "JSON 计划" if lang == "zh" else "JSON plan"}
    rows, paths = report_paths(summary, "完整报告" if lang == "zh" else "Full report", labels)
    check(set(paths) == {"md", "html", "json"}, f"{name}: report paths {paths} in {rows}")
    for kind, path in paths.items():
        full = os.path.join(source, path)
        check(os.path.isfile(full), f"{name}: {path} does not exist")
        check(os.path.dirname(os.path.abspath(full)) == os.path.abspath(out_dir), f"{name}: {path} not under --out")
        if not os.path.isfile(full):
            continue
        # The file holds exactly what the pipe gets for that format.
        pipe_args = [npufuse, "analyze", *args, "--lang", lang] + ([] if kind == "md" else ["--format", kind])
        _, expected, _ = piped(pipe_args, source)
        check(read(full) == expected, f"{name}: {path} differs from `analyze --format {kind}` through a pipe")
    if "json" in paths and os.path.isfile(os.path.join(source, paths["json"])):
        plan = json.loads(read(os.path.join(source, paths["json"])))
        check_summary_against_plan(name, summary, plan, lang)
    if "json" in paths:
        check(f"npufuse explain ID --plan {paths['json']}" in summary, f"{name}: no explain hint for the JSON plan")
    check(len(summary.split("\n")) < 60, f"{name}: the summary runs to {len(summary.split(chr(10)))} lines")
    return summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npufuse", required=True)
    ap.add_argument("--source-dir", required=True)
    a = ap.parse_args()
    npufuse, source = os.path.abspath(a.npufuse), os.path.abspath(a.source_dir)
    work = tempfile.mkdtemp(prefix="npufuse_tty_")
    try:
        llama = ["tests/models/llama_like/model.py", "--config", "tests/models/llama_like/config.json", "--chip", "A2"]
        run_case(npufuse, source, work, "llama", llama)
        # Experts per rank and three EP rules wait on --ep; chip and quant unknown.
        run_case(npufuse, source, work, "qwen3_moe", ["tests/models/qwen3_moe_like"])
        # A hard constraint blocks MLA's V absorb; Chinese throughout.
        zh = run_case(npufuse, source, work, "deepseek_zh", ["tests/models/deepseek_v3_like"], lang="zh")
        check("npufuse analyze：tests/models/deepseek_v3_like 中有" in zh, f"deepseek_zh: header not Chinese: {zh[:200]}")

        # Without --out the reports go beside the input file.
        model_dir = os.path.join(work, "beside")
        os.makedirs(model_dir)
        shutil.copy(os.path.join(source, "tests/models/llama_like/model.py"), os.path.join(model_dir, "modeling_x.py"))
        shutil.copy(os.path.join(source, "tests/models/llama_like/config.json"), os.path.join(model_dir, "config.json"))
        status, summary, err = on_terminal([npufuse, "analyze", "modeling_x.py", "--config", "config.json"], model_dir)
        check(status == 0, f"beside: exit {status}: {err}")
        for ext in ("md", "html", "json"):
            path = f"modeling_x.npufuse.{ext}"
            check(os.path.isfile(os.path.join(model_dir, path)), f"beside: {path} not written beside the input")
            check(f"  {path}" in summary, f"beside: {path} not named in the summary")

        # A model folder given as input holds its reports, named after it.
        folder = os.path.join(work, "folder_case", "tiny_llama")
        os.makedirs(folder)
        shutil.copy(os.path.join(source, "tests/models/llama_like/model.py"), os.path.join(folder, "model.py"))
        shutil.copy(os.path.join(source, "tests/models/llama_like/config.json"), os.path.join(folder, "config.json"))
        status, summary, err = on_terminal([npufuse, "analyze", "tiny_llama/"], os.path.dirname(folder))
        check(status == 0, f"folder: exit {status}: {err}")
        for ext in ("md", "html", "json"):
            path = os.path.join("tiny_llama", f"tiny_llama.npufuse.{ext}")
            check(os.path.isfile(os.path.join(os.path.dirname(folder), path)), f"folder: {path} not written")
            check(f"  {path}" in summary, f"folder: {path} not named in the summary: {summary[-400:]}")

        # A report that cannot be written: the summary still prints, the error
        # says what to do, exit 2.
        blocker = os.path.join(work, "a_file")
        open(blocker, "w").close()
        status, summary, err = on_terminal([npufuse, "analyze", *llama, "--out", os.path.join(blocker, "sub")], source)
        check(status == 2, f"unwritable: exit {status}")
        check("Candidates (module" in summary and "Full report" not in summary, f"unwritable: summary {summary[:300]}")
        check("--out DIR" in err, f"unwritable: stderr {err!r}")

        # --format, -o and pipes: exactly what they printed before, no files.
        _, md_pipe, _ = piped([npufuse, "analyze", *llama], source)
        quiet_dir = os.path.join(work, "not_written")
        status, md_tty, _ = on_terminal([npufuse, "analyze", *llama, "--format", "md", "--out", quiet_dir], source)
        check(status == 0 and md_tty.encode() == md_pipe.replace(b"\r\n", b"\n"), "--format md at a terminal is not the plan")
        plan_file = os.path.join(work, "plan.md")
        status, o_tty, _ = on_terminal([npufuse, "analyze", *llama, "-o", plan_file, "--out", quiet_dir], source)
        check(status == 0 and o_tty == "" and read(plan_file) == md_pipe, "-o at a terminal does not write just the plan")
        status, _, _ = piped([npufuse, "analyze", *llama, "--out", quiet_dir], source)
        check(status == 0 and not os.path.exists(quiet_dir), "a piped run or --format wrote report files")
        check(md_pipe.startswith(b"# ") and b"Candidates (module" not in md_pipe, "the pipe got the summary")

        # --format summary: the same screen and report files through a pipe
        # (the demo's log); with -o it is refused.
        asked_dir = os.path.join(work, "asked")
        status, asked, err = piped([npufuse, "analyze", *llama, "--format", "summary", "--out", asked_dir], source)
        asked = asked.decode()
        _, tty_summary, _ = on_terminal([npufuse, "analyze", *llama, "--out", asked_dir], source)
        check(status == 0 and "Candidates (module" in asked, f"--format summary through a pipe: exit {status}: {asked[:200]}")
        check(asked.replace("\r\n", "\n") == tty_summary.replace("\r\n", "\n"),
              "--format summary through a pipe differs from the terminal's summary")
        for ext in ("md", "html", "json"):
            check(any(f.endswith(f".npufuse.{ext}") for f in os.listdir(asked_dir)), f"--format summary wrote no .{ext} report")
        status, _, err = piped([npufuse, "analyze", *llama, "--format", "summary", "-o", plan_file], source)
        check(status == 2 and "-o" in err, f"--format summary with -o: exit {status}, {err!r}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        return 1
    print("terminal summary: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
