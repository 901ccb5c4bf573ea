#!/usr/bin/env python3
"""Accounts for every decoder module of a model zoo: candidate, not applicable, no fused op, or unaccounted.

    python3 tools/zoo_report.py --zoo DIR [--npufuse build/npufuse] [--work DIR]
                                [--variant NAME=FLAGS ...] [--md FILE] [--json FILE]

DIR holds one folder per model with its config.json and modeling file, as
tools/export_configs.py writes them from the installed transformers. For every
variant (by default: the plan as given, `--tp 8 --ep 8`, and each chip) the zoo
is analysed with one `npufuse analyze DIR` tree scan, and each model is
decomposed once with `npufuse inspect --format json`.

A module is one step of a block's sub-chains as `inspect` reports it (the
attention's input norm, RoPE, cache write and attention core; the feed-forward's
activation; the MoE gate, top-k, dispatch, experts, combine and shared expert;
MLA's down/up projections and norms; the indexer's scores and top-k; every
projection and residual add; a linear-attention or state-space mixer's conv1d and
recurrence). Its state is read from the plan:

- `candidate`: a candidate (with or without prerequisites) whose lines overlap
  the step's lines and whose module fits it (for a linear mixer's step that only
  one stage runs, a candidate for that stage), or the reference-chain step of that
  name is covered;
- `not_applicable`: only refused candidates fit it (the hard constraint is cited);
- `no_fused_op`: a `no_fused_op` entry fits it, the plan says the code already
  runs it as one fused call (a near-miss such as `F.layer_norm`), the plan
  dismisses the step in its notes with a reason (a plain projection, a residual
  add no RMSNorm follows, a step already fused), the reference
  chain keeps the step a plain op (`torch`), or it is a plain projection in a
  BF16 plan, with the reason said;
- `unaccounted`: none of these. Those are listed by model.

A model whose blocks `inspect` cannot find contributes its module classes
(attention, feed-forward, MoE, norms, rotary) as unaccounted modules, so a
model the tool does not decompose lowers the score instead of vanishing.

Python 3 standard library only.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict

# The family each sub-chain step kind belongs to, and the candidate modules
# (plan `module` values) that can account for it.
FAMILIES = {
    "input_norm": "norm", "post_norm": "norm", "qk_norm": "norm", "q_norm": "norm", "kv_norm": "norm",
    "index_norm": "norm",
    "rope": "rope", "index_rope": "rope",
    "attention_core": "attention_core", "cache_read": "attention_core", "repeat_kv": "attention_core",
    "cache_write": "kv_cache_write",
    "activation": "ffn_activation",
    "gate": "moe_gate", "topk": "moe_gate", "renorm": "moe_gate",
    "dispatch": "moe_permutation",
    "experts": "moe_experts",
    "combine": "moe_combine",
    "shared_expert": "shared_expert",
    "q_down": "mla_prolog", "q_up": "mla_prolog", "kv_down": "mla_prolog", "kv_up": "mla_prolog",
    "nope_rope_split": "mla_prolog", "absorb_uv": "mla_prolog",
    "index_q": "indexer", "index_k": "indexer", "index_score": "indexer", "index_topk": "indexer",
    "conv1d": "linear_attention", "recurrence": "linear_attention",
    "qkv_projection": "projection", "o_projection": "projection", "gate_up_projection": "projection",
    "down_projection": "projection",
    "residual_add": "residual_add",
}
FITS = {
    "norm": {"norm", "mla"},
    "rope": {"rope", "mla", "indexer"},
    "attention_core": {"attention", "mla", "indexer"},
    "kv_cache_write": {"kv_cache", "attention", "mla"},
    "ffn_activation": {"ffn", "moe_experts"},
    "moe_gate": {"moe_gate", "moe_routing"},
    "moe_permutation": {"moe_routing", "moe_experts"},
    "moe_experts": {"moe_experts", "moe_routing", "ffn"},
    "moe_combine": {"moe_routing", "moe_experts"},
    "shared_expert": {"ffn", "moe_experts"},
    "mla_prolog": {"mla", "norm", "rope"},
    "indexer": {"indexer"},
    "linear_attention": {"attention"},
    "projection": {"quant", "mla", "ffn"},
    "residual_add": {"norm"},
}
# Families for which a torch_npu operator exists whatever the model's
# quantisation (projections fuse only when quantised, residual adds only with
# the norm that follows; both are counted apart).
WITH_FUSED_OP = {"norm", "rope", "attention_core", "kv_cache_write", "ffn_activation", "moe_gate", "moe_permutation",
                 "moe_experts", "moe_combine", "shared_expert", "mla_prolog", "indexer", "linear_attention"}
# Module-tree roles that stand for modules when a model's blocks are not found.
TREE_ROLES = {"attention": "attention_core", "attention_core": "attention_core", "mlp": "ffn_activation",
              "moe": "moe_experts", "router": "moe_gate", "rms_norm": "norm", "layer_norm": "norm",
              "rotary_embedding": "rope", "indexer": "indexer"}
# Steps a fused attention core takes in: its cache read and the K/V head repeat.
TAKEN_BY_CORE = {"cache_read", "repeat_kv"}
# MLA prolog rules whose absorb prerequisite takes kv_b_proj apart: W_UK goes into
# the prolog's query, W_UV is applied after the attention over the latent cache.
ABSORBING_PROLOGS = ("mla.mla_prolog_hf@", "mla.mla_prolog_hf_complex@", "mla.mla_prolog_hf_half_rope@")
RANK = {"candidate": 0, "candidate_with_prerequisites": 0, "not_applicable": 1, "no_fused_op": 2}
STATES = ["candidate", "not_applicable", "no_fused_op", "unaccounted"]


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def inspect_model(npufuse, folder):
    p = run([npufuse, "inspect", folder, "--format", "json"])
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["inspect failed"])[0]
    try:
        return json.loads(p.stdout), None
    except json.JSONDecodeError as err:
        return None, f"inspect printed no JSON: {err}"


def ranges_of(candidate):
    out = []
    for loc in [candidate.get("location")] + candidate.get("extra_locations", []) + candidate.get("parts", []):
        if loc:
            out.append((os.path.realpath(loc["file"]), loc["start_line"], loc["end_line"]))
    return out


def plan_entries(plan):
    """Every candidate and alternative, with its line ranges."""
    for c in plan.get("candidates", []):
        for entry in [c] + c.get("alternatives", []):
            yield entry, ranges_of(entry)


def overlaps(spans, ranges):
    for s in spans:
        f = os.path.realpath(s["file"])
        lo, hi = s["line"], max(s["line"], s.get("end_line", s["line"]))
        for rf, rlo, rhi in ranges:
            if rf == f and rlo <= hi and lo <= rhi:
                return True
    return False


ALREADY_FUSED = re.compile(r"near-miss: (\S+) did not match at (.+):(\d+) \(.*already (?:runs|computes)[^(]*")


def already_fused(plan):
    """[(rule module, file, line, note)] of the plan's near-misses that say the code already runs one fused call."""
    out = []
    for note in plan.get("notes", []):
        m = ALREADY_FUSED.match(note)
        if m:
            out.append((m.group(1).split(".")[0], os.path.realpath(m.group(2)), int(m.group(3)), note))
    return out


DISMISSED = re.compile(r"^(\w+)\.(\w+) of .+ at (.+):(\d+): "
                       r"(no fusion needed|no fused operator|no new operator|the sum feeds an RMSNorm)(.*)$")


def dismissed(plan):
    """{(kind, file, line): reason} of the steps the plan dismisses in its notes (a plain projection,
    a residual add with no norm to join, a step the model already runs fused)."""
    out = {}
    for note in plan.get("notes", []):
        m = DISMISSED.match(note)
        if m:
            out[(m.group(2), os.path.realpath(m.group(3)), int(m.group(4)))] = m.group(5) + m.group(6)
    return out


def chain_steps(plan):
    """Reference-chain step name -> the statuses it has over the stages."""
    out = defaultdict(set)
    for rc in plan.get("reference_chains", []):
        for st in rc.get("steps", []):
            out[st["name"]].add(st["status"])
    return out


def tree_modules(structure):
    """(family, class) of the module classes in the tree, once each."""
    seen = set()

    def walk(node):
        if not node:
            return
        role = node.get("role", "")
        fam = TREE_ROLES.get(role)
        if fam:
            seen.add((fam, node.get("class", "")))
        for child in node.get("children", []):
            walk(child)
    walk((structure or {}).get("root"))
    return sorted(seen)


# Roles of a decoder layer's children that the block decomposition makes a chain of.
CHAIN_ROLES = {"attention": "attention_core", "attention_core": "attention_core", "mlp": "ffn_activation",
               "moe": "moe_experts", "indexer": "indexer"}


def unchained_modules(inventory):
    """Rows for the attention, feed-forward, MoE and indexer modules an analysed decoder layer of the tree
    holds but no chain of the decomposition names (a module the block analysis did not see): unaccounted."""
    chained = {m.get("class", "") for block in inventory.get("chains", []) for m in block.get("modules", [])}
    # Only the layers the decomposition analysed (a vision tower's layers are not the decoder's).
    blocks = {block.get("block_class", "") for block in inventory.get("chains", [])}
    rows, seen = [], set()

    def walk(node, in_layer):
        role = node.get("role", "")
        cls = node.get("class", "")
        if in_layer and cls in chained:
            return
        if in_layer and role in CHAIN_ROLES:
            if cls not in seen:
                seen.add(cls)
                rows.append({"block": "", "module": cls, "kind": CHAIN_ROLES[role], "family": CHAIN_ROLES[role],
                             "state": "unaccounted", "where": cls,
                             "why": "in a decoder layer of the module tree, but no chain of the decomposition names it"})
            return
        for child in node.get("children", []):
            walk(child, in_layer or (role == "decoder_layer" and cls in blocks))
    root = (inventory.get("structure") or {}).get("root")
    if root:
        walk(root, False)
    return rows


# A residual add's plan reason that names no cause: the sum feeds an RMSNorm and no
# rule says why it was not fused, or what reads the sum was not worked out.
RESIDUAL_GAP = re.compile(r"no add\+RMSNorm rule matched here|joins the next RMSNorm .* where one follows it")


def account_step(module, step, entries, chain, quant, fused=(), dismissals=None):
    kind = step["kind"]
    family = FAMILIES.get(kind, "other")
    fits = FITS.get(family, set())
    best = None
    # A linear mixer's step that one stage's branch runs (its prefill convolution and
    # recurrence, its cached decode step) takes a candidate for that stage only, as
    # the plan does: a decode operator matched in the decode helper leaves prefill open.
    stage = step.get("stages") if family == "linear_attention" and step.get("stages") in ("prefill", "decode") else None
    for entry, ranges in entries:
        if entry.get("module") not in fits or not overlaps(step.get("spans", []), ranges):
            continue
        if stage and entry.get("stages") and stage not in entry["stages"]:
            continue
        if best is None or RANK.get(entry["status"], 9) < RANK.get(best["status"], 9):
            best = entry
    if best is not None:
        state = "candidate" if RANK[best["status"]] == 0 else best["status"]
        why = best["id"] if state != "not_applicable" else "; ".join(best.get("blocking", [])) or best["id"]
        return family, state, why, best["id"]
    for rule_module, f, line, note in fused:
        if rule_module in fits and overlaps(step.get("spans", []), [(f, line, line)]):
            return family, "no_fused_op", "already one fused call: " + note.split(": ", 2)[-1][:160], ""
    for span in step.get("spans", [])[:1]:
        why = (dismissals or {}).get((kind, os.path.realpath(span["file"]), span["line"]))
        if why and kind == "residual_add" and RESIDUAL_GAP.search(why):
            # The sum feeds an RMSNorm and no add+RMSNorm candidate takes it, with no
            # reason given (or the reason is not worked out): a gap, not a reason.
            return family, "unaccounted", "no add+RMSNorm candidate takes this residual add: " + why.split(": ", 1)[-1][:120], ""
        if why:
            return family, "no_fused_op", "the plan: " + why[:160], ""
    name = "attention" if kind == "attention_core" else kind
    statuses = chain.get(name, set())
    if "covered" in statuses:
        return family, "candidate", f"reference chain step {name} covered", ""
    if "blocked" in statuses:
        return family, "not_applicable", f"reference chain step {name} blocked", ""
    if "torch" in statuses:
        return family, "no_fused_op", f"the reference chain keeps {name} a plain op", ""
    if family == "projection" and quant in ("", "bf16"):
        return family, "no_fused_op", "a plain projection in a BF16 plan: matmul; fused projections are quantised ones", ""
    if family == "residual_add":
        return family, "unaccounted", "no add+norm candidate takes this residual add", ""
    return family, "unaccounted", f"{module} step {kind}: no candidate, status or reason names it", ""


def account_model(name, inventory, plan):
    quant = (plan or {}).get("options", {}).get("quant", "")
    rows = []
    if inventory and inventory.get("chains") and plan:
        entries = list(plan_entries(plan))
        chain = chain_steps(plan)
        fused = already_fused(plan)
        dismissals = dismissed(plan)
        for block in inventory["chains"]:
            for module in block.get("modules", []):
                steps = module.get("steps", [])
                states = [account_step(module["module"], step, entries, chain, quant, fused, dismissals)
                          for step in steps]
                # The attention core's state, for the reads it takes in.
                core = next((st for step, st in reversed(list(zip(steps, states))) if step["kind"] == "attention_core"), None)
                # The absorbing prolog's state, whether it is a candidate or refused by a check
                # (its reason is then the blocking constraint, the rule id comes apart).
                prolog = next((st for st in states if (st[2].startswith(ABSORBING_PROLOGS) or (st[3] or "").startswith(
                    ABSORBING_PROLOGS)) and st[1] != "unaccounted"), None)
                for step, (family, state, why, _) in zip(steps, states):
                    if state == "unaccounted" and step["kind"] in TAKEN_BY_CORE and core and core[1] != "unaccounted":
                        # The fused attention reads the cache and the un-repeated K/V itself.
                        state, why = core[1], f"taken in by the attention core ({core[2]})"
                    if step["kind"] == "kv_up" and state in ("unaccounted", "no_fused_op") and prolog:
                        if prolog[1] == "not_applicable":
                            state, why = prolog[1], ("only the MLA prolog's absorb would take it in (W_UK into its query, W_UV "
                                                     f"after the attention), and the prolog is refused: {prolog[2]}")
                        else:
                            state, why = prolog[1], f"absorbed by the MLA prolog's prerequisite: W_UK folded into its query, W_UV after the attention ({prolog[2]})"
                    span = (step.get("spans") or [{}])[0]
                    where = f"{os.path.basename(span.get('file', '?'))}:{span.get('line', '?')}"
                    rows.append({"block": block.get("block_class", ""), "module": module["module"], "kind": step["kind"],
                                 "family": family, "state": state, "why": why, "where": where})
        rows += unchained_modules(inventory)
        return rows, True
    for family, cls in tree_modules((inventory or {}).get("structure")):
        rows.append({"block": "", "module": cls, "kind": family, "family": family, "state": "unaccounted",
                     "why": "the model's blocks were not decomposed", "where": cls})
    return rows, False


def scan(npufuse, zoo, work, flags):
    os.makedirs(work, exist_ok=True)
    p = run([npufuse, "analyze", zoo, "--out", work, "--no-cache", "--no-progress"] + flags)
    summary_path = os.path.join(work, "summary.json")
    if not os.path.exists(summary_path):
        sys.exit(f"zoo_report: the tree scan wrote no summary: {p.stderr.strip()[:500]}")
    with open(summary_path, encoding="utf-8") as handle:
        summary = json.load(handle)
    plans = {}
    for m in summary.get("models", []):
        if m.get("plan"):
            with open(os.path.join(work, m["plan"]), encoding="utf-8") as handle:
                plans[m["name"]] = json.load(handle)
    failures = {f.get("name", "?"): f.get("error", "") for f in summary.get("failures", [])}
    return plans, failures


def nothing_to_fuse(why):
    """A step no torch_npu operator would take: the code already runs it as one kernel, it is a plain
    GEMM (a router's linear), or the plan says no documented operator computes it."""
    return (why.startswith("already one fused call") or why.startswith("the plan: no new operator needed")
            or why.startswith("the plan: no fusion needed: plain projection")
            or re.search(r"no documented (torch_npu )?operator", why) is not None)


def totals(rows):
    c = Counter(r["state"] for r in rows)
    n = sum(c.values())
    accounted = n - c["unaccounted"]
    # A step the code already runs as one kernel (F.layer_norm, a lone F.gelu)
    # has nothing left to fuse: it is accounted, but no opportunity.
    fused = [r for r in rows if r["family"] in WITH_FUSED_OP and not nothing_to_fuse(r["why"])]
    fused_candidates = sum(1 for r in fused if r["state"] == "candidate")
    return {"modules": n, **{s: c[s] for s in STATES},
            "accounted_pct": round(100.0 * accounted / n, 1) if n else None,
            "with_fused_op": len(fused), "with_fused_op_candidates": fused_candidates,
            "candidate_pct_of_fused": round(100.0 * fused_candidates / len(fused), 1) if fused else None}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", required=True, help="folder of model folders (tools/export_configs.py --out)")
    ap.add_argument("--npufuse", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "npufuse"))
    ap.add_argument("--work", default="zoo-report", help="folder for the plans of each variant")
    ap.add_argument("--variant", action="append", default=None,
                    help="NAME=FLAGS, e.g. 'tp8ep8=--tp 8 --ep 8' (default: as given, tp8ep8, A2, A3)")
    ap.add_argument("--md", default=None, help="write the Markdown report here")
    ap.add_argument("--json", default=None, help="write the per-model accounting here")
    args = ap.parse_args(argv)
    variants = [v.split("=", 1) for v in (args.variant or ["default=", "tp8ep8=--tp 8 --ep 8", "A2=--chip A2",
                                                            "A3=--chip A3"])]
    folders = sorted(d for d in os.listdir(args.zoo) if os.path.isdir(os.path.join(args.zoo, d)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        inspected = dict(zip(folders, pool.map(lambda d: inspect_model(args.npufuse, os.path.join(args.zoo, d)), folders)))
    report = {"zoo": os.path.abspath(args.zoo), "models": len(folders), "variants": {}}
    for name, flags in variants:
        plans, failures = scan(args.npufuse, args.zoo, os.path.join(args.work, name), flags.split())
        per_model, all_rows = {}, []
        for d in folders:
            inventory, inspect_error = inspected[d]
            rows, decomposed = account_model(d, inventory, plans.get(d))
            per_model[d] = {"decomposed": decomposed, "inspect_error": inspect_error,
                            "analyze_error": failures.get(d), "totals": totals(rows), "rows": rows}
            all_rows += rows
        by_family = {}
        for fam in sorted({r["family"] for r in all_rows}):
            by_family[fam] = totals([r for r in all_rows if r["family"] == fam])
        report["variants"][name] = {"flags": flags, "totals": totals(all_rows), "by_family": by_family,
                                    "decomposed": sum(1 for m in per_model.values() if m["decomposed"]),
                                    "models": per_model}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1, sort_keys=True)
    text = markdown(report)
    if args.md:
        with open(args.md, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    return 0


def pct(x):
    return "n/a" if x is None else f"{x:.1f}%"


def markdown(report):
    out = ["# Zoo report", "",
           f"{report['models']} model folders (every causal LM of the pinned transformers with a modeling file, "
           "from `tools/export_configs.py`), accounted by `tools/zoo_report.py`. A module is one sub-chain step of a "
           "decoder block as `npufuse inspect` reports it; a model whose blocks are not found counts its module "
           "classes as unaccounted, and so does a decomposed model for an attention, feed-forward, MoE or indexer "
           "module that an analysed decoder layer holds but no sub-chain names.", "",
           "Regenerate (the zoo and the plans are not kept in the repository):", "",
           "```sh",
           "build/venv/bin/python tools/export_configs.py --out zoo",
           "python3 tools/zoo_report.py --zoo zoo --md docs/zoo.md",
           "```", "",
           "States: `candidate` (with or without prerequisites), `not_applicable` (a hard constraint refuses every "
           "candidate there), `no_fused_op` (a no-fused-op entry, a step the reference chain keeps a plain op, or a "
           "plain BF16 projection), `unaccounted` (none of these). \"Candidates where an operator exists\" counts the "
           "families a torch_npu operator covers whatever the quantisation: norms, RoPE, attention core, cache write, "
           "activation, MoE gate / permutation / experts / combine, shared expert, MLA prolog, indexer, linear attention "
           "(conv1d, gated delta rule); a step the code already runs as one kernel (`F.layer_norm`, a lone `F.gelu`), "
           "or one no documented operator computes (a selective state-space scan), is accounted but not counted there. "
           "A K/V cache read or `repeat_kv` that a fused attention takes in has the attention core's state, and MLA's "
           "`kv_b_proj` (step kv_up) the state of an `mla.mla_prolog_hf` (or `_complex`, `_half_rope`) candidate in the same module, whose absorb "
           "prerequisite folds W_UK into the prolog's query and applies W_UV after the attention (not applicable, with "
           "the prolog's refusal, where a check refuses that prolog).", "",
           "## Per variant", "",
           "| variant | flags | models decomposed | modules | candidate | not applicable | no fused op | unaccounted | accounted | candidates where an operator exists |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, v in report["variants"].items():
        t = v["totals"]
        out.append(f"| {name} | `{v['flags'] or '(none)'}` | {v['decomposed']} / {report['models']} | {t['modules']} | "
                   f"{t['candidate']} | {t['not_applicable']} | {t['no_fused_op']} | {t['unaccounted']} | "
                   f"{pct(t['accounted_pct'])} | {t['with_fused_op_candidates']} / {t['with_fused_op']} "
                   f"({pct(t['candidate_pct_of_fused'])}) |")
    first = next(iter(report["variants"].values()))
    out += ["", "## Per module family (first variant)", "",
            "| family | modules | candidate | not applicable | no fused op | unaccounted |", "|---|---:|---:|---:|---:|---:|"]
    for fam, t in first["by_family"].items():
        out.append(f"| {fam} | {t['modules']} | {t['candidate']} | {t['not_applicable']} | {t['no_fused_op']} | {t['unaccounted']} |")
    out += ["", "## Unaccounted modules by model (first variant)", ""]
    for model, m in sorted(first["models"].items()):
        rows = [r for r in m["rows"] if r["state"] == "unaccounted"]
        if not rows and not m["inspect_error"]:
            continue
        kinds = Counter((r["module"] if not m["decomposed"] else f"{r['module']}.{r['kind']}") for r in rows)
        detail = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in sorted(kinds.items()))
        note = "not decomposed: " if not m["decomposed"] else ""
        if m["inspect_error"]:
            note = f"inspect failed ({m['inspect_error'][:120]}): "
        out.append(f"- `{model}` ({len(rows)}): {note}{detail}")
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
