#!/usr/bin/env python3
"""Compare an `npufuse analyze --format json` plan with what expert Ascend ports use.

For one model, every expert port that covers it (docs/expert-ports/ports.json)
is compared on its own: each fused operator the port calls is either found in
the plan (the candidate id and status are printed), refused by the plan
(`not_applicable`) or missed; each plan recommendation that no expert operator
accounts for is listed as an extra.

Usage:
  compare_ports.py PLAN.json --model llama [--ports ports.json] [--port NAME]
                   [--stage prefill|decode|both] [--all-when]
                   [--must-not expert_choices.json] [--rules DIR] [--format md|json]

Only the operators a port runs in its default configuration are compared
unless --all-when is given, since a plan for a bf16 deployment should not be
blamed for missing a W8A8-only kernel. Python 3 standard library only.
"""

import argparse
import ast
import json
import os
import re
import sys

REPO_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEFAULT_PORTS = os.path.join(REPO_ROOT, "docs", "expert-ports", "ports.json")
DEFAULT_RULES = os.path.join(REPO_ROOT, "rules")

# ports.json speaks of a port's modules; plans of candidate modules. An
# expert operator is looked for among the plan modules its module maps to.
PLAN_MODULES = {
    "norm": {"norm"},
    "rope": {"rope"},
    "attention_core": {"attention", "mla"},  # MLA rules (FIA over the latent, V absorb) are module mla
    "kv_cache_write": {"kv_cache", "attention"},
    "mla_prolog": {"mla"},
    "indexer": {"indexer"},
    "moe_gate": {"moe_gate"},
    "moe_routing": {"moe_routing"},
    "experts": {"moe_experts"},
    "combine": {"moe_routing", "moe_experts"},
    "shared_experts": {"ffn", "moe_experts"},
    "quant": {"quant"},
    "other": {"ffn", "other"},
}

# Operators that do the same job for a module with different interfaces. A
# plan that offers another member of the family covers the expert's chain (the
# port picked a variant: prompt/incre flash attention versus fused infer
# attention, a static versus a paged cache write); the report says which.
API_FAMILIES = [
    {"npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2",
     "npu_prompt_flash_attention", "npu_incre_flash_attention"},
    {"scatter_update_", "scatter_update", "npu_scatter_nd_update_",
     "npu_scatter_nd_update", "npu_scatter_nd_update_v2", "npu_scatter_pa_kv_cache"},
    {"npu_apply_rotary_pos_emb", "npu_rotary_mul"},
    {"npu_grouped_matmul", "npu_gmm"},
]

# Roles that one specific rule family serves. A per-head QK-norm is the same
# API as the layer norms, so the role, not the API, tells them apart.
ROLE_RULES = {
    "qk_head_norm": {"norm.qk_norm"},
}

RECOMMENDING = {"candidate", "candidate_with_prerequisites"}


def family_of(api):
    for family in API_FAMILIES:
        if api in family:
            return family
    return {api}


def load_json(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"compare_ports: cannot read {path}: {error}")


def op_applies(op, model, stage, all_when):
    if "covers" in op and model not in op["covers"]:
        return False
    if not all_when and not op.get("when", "").startswith("default"):
        return False
    return stage == "both" or stage in op.get("stages", [])


def role_allows(op, candidate):
    rule = candidate.get("rule", "")
    wanted = ROLE_RULES.get(op.get("role", ""))
    if wanted is not None:
        return rule in wanted
    reserved = set().union(*ROLE_RULES.values())
    return rule not in reserved


def candidate_serves(op, candidate, wanted_stages):
    """How `candidate` covers the expert op: 'exact', 'equivalent' or None."""
    if candidate.get("module") not in PLAN_MODULES.get(op["module"], set()):
        return None
    if not wanted_stages & set(candidate.get("stages", [])):
        return None
    if not role_allows(op, candidate):
        return None
    apis = set(candidate.get("apis", []))
    if op["api"] in apis:
        return "exact"
    if apis & family_of(op["api"]):
        return "equivalent"
    return None


def gap_is_about(op, candidate):
    """Whether a no_fused_op item speaks of the expert op's step.

    Attention sub-chain steps share the `attention` module; the cache steps
    (`attention.cache_write`) belong to the cache write, the others
    (`attention.repeat_kv`, `attention.attention_core`) to the core."""
    step = candidate.get("id", "").split("@", 1)[0]
    about_cache = "cache" in step
    if op["module"] == "kv_cache_write":
        return about_cache
    if op["module"] == "attention_core":
        return not about_cache
    return True


def location_text(candidate):
    loc = candidate.get("location") or {}
    name = os.path.basename(loc.get("file", "?"))
    start, end = loc.get("start_line", 0), loc.get("end_line", 0)
    return f"{name}:{start}" if start == end else f"{name}:{start}-{end}"


def classify_op(op, candidates, stage):
    """One expert op against the plan: the outcome and the candidates behind it."""
    wanted_stages = set(op.get("stages", [])) if stage == "both" else {stage}
    serving = []
    for candidate in candidates:
        how = candidate_serves(op, candidate, wanted_stages)
        if how is not None:
            serving.append((how, candidate))
    # Exact API first, then recommendations before refusals.
    serving.sort(key=lambda item: (item[0] != "exact",
                                   item[1].get("status") not in RECOMMENDING))
    recommended = [(h, c) for h, c in serving if c.get("status") in RECOMMENDING]
    refused = [(h, c) for h, c in serving if c.get("status") == "not_applicable"]
    if recommended:
        covered = set()
        for _, candidate in recommended:
            covered |= set(candidate.get("stages", []))
        outcome = "found" if wanted_stages <= covered else "found_partial_stages"
        return outcome, recommended
    if refused:
        return "refused", refused
    gaps = [c for c in candidates
            if c.get("status") == "no_fused_op"
            and c.get("module") in PLAN_MODULES.get(op["module"], set())
            and gap_is_about(op, c)]
    return "missed", [("no_fused_op", c) for c in gaps]


def near_miss_notes(plan, op):
    """Plan notes that speak of a rule of the op's modules: the matcher's reasons."""
    prefixes = tuple(m + "." for m in PLAN_MODULES.get(op["module"], set()))
    return [note for note in plan.get("notes", [])
            if note.startswith("near-miss:") and
            note[len("near-miss: "):].startswith(prefixes)]


def flatten_candidates(plan):
    """Plan entries and their `alternatives` (schema 2) as one list.

    An alternative is another rule for the same chain; it inherits what it
    does not state from its entry and is named after the entry, so that an
    expert op met only by an alternative is still found, and said to be."""
    flat = []
    for entry in plan.get("candidates", []):
        flat.append(entry)
        for alternative in entry.get("alternatives", []):
            merged = {key: entry.get(key) for key in ("module", "stages", "location")}
            merged.update(alternative)
            merged["id"] = alternative.get("id") or f"{entry['id']} (alternative {alternative.get('rule', '?')})"
            merged["alternative_of"] = entry["id"]
            flat.append(merged)
    return flat


def compare_port(plan, port, model, stage, all_when):
    candidates = flatten_candidates(plan)
    ops = [op for op in port.get("ops", []) if op_applies(op, model, stage, all_when)]
    rows = []
    used = set()
    for op in ops:
        outcome, hits = classify_op(op, candidates, stage)
        for _, candidate in hits:
            if outcome != "missed":
                used.add(candidate["id"])
        rows.append({
            "api": op["api"],
            "module": op["module"],
            "role": op.get("role", ""),
            "stages": op.get("stages", []),
            "when": op.get("when", ""),
            "evidence": op.get("evidence", ""),
            "outcome": outcome,
            "candidates": [{"id": c["id"], "status": c.get("status", ""),
                            "apis": c.get("apis", []), "stages": c.get("stages", []),
                            "match": how, "location": location_text(c)}
                           for how, c in hits],
            "near_misses": near_miss_notes(plan, op) if outcome == "missed" else [],
        })
    kept = port.get("kept_in_torch", [])
    extras = []
    used_entries = {c.get("alternative_of", c["id"]) for c in candidates if c["id"] in used}
    for candidate in plan.get("candidates", []):
        if candidate["id"] in used_entries or candidate.get("status") not in RECOMMENDING:
            continue
        kept_here = [k for k in kept
                     if candidate.get("module") in PLAN_MODULES.get(k.get("module", ""), set())]
        extras.append({
            "id": candidate["id"],
            "status": candidate.get("status", ""),
            "module": candidate.get("module", ""),
            "apis": candidate.get("apis", []),
            "stages": candidate.get("stages", []),
            "location": location_text(candidate),
            "prerequisite_only": not candidate.get("apis"),
            "expert_kept_in_torch": [f"{k['what']} ({k['evidence']})" for k in kept_here],
        })
    return {"port": port["port"], "repo": port.get("repo", ""),
            "commit": port.get("commit", ""), "ops": rows, "extras": extras}


def rule_facts(rules_dir, rule_id):
    """The `facts` of a rule's RULE literal (rules/<family>/<name>.py), or None."""
    family, _, name = rule_id.partition(".")
    path = os.path.join(rules_dir, family, name + ".py")
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
    except (OSError, SyntaxError):
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "RULE"):
            try:
                return ast.literal_eval(node.value).get("facts", {})
            except ValueError:
                return None
    return None


def unless_verdict(unless, facts):
    """'cleared' when the rule's facts fix every `name=value` setting the
    exception names, 'forbidden' when they fix one to another value, and
    'check' when the exception cannot be decided from the facts (it names no
    setting, or a setting the rule does not fix)."""
    settings = re.findall(r"(\w+)\s*=\s*'([^']*)'|(\w+)\s*=\s*([\w.]+)", unless)
    if not settings or facts is None:
        return "check"
    verdict = "cleared"
    for quoted_name, quoted_value, plain_name, plain_value in settings:
        name, value = (quoted_name, quoted_value) if quoted_name else (plain_name, plain_value)
        if name not in facts:
            verdict = "check"
        elif str(facts[name]) != value:
            return "forbidden"
    return verdict


def forbidden_uses(plan, choices, model, rules_dir):
    """Recommendations of an API the expert notes forbid for this model.

    Each is `forbidden`, `cleared` when the note allows the API under a
    setting that the recommending rule fixes (npu_rotary_mul in half mode), or
    `check` when only a person can tell from the note and the plan."""
    entry = choices.get(model) or {}
    found = []
    for rule in entry.get("must_not", []):
        for candidate in plan.get("candidates", []):
            if candidate.get("status") not in RECOMMENDING or rule["api"] not in candidate.get("apis", []):
                continue
            unless = rule.get("unless", "")
            verdict = (unless_verdict(unless, rule_facts(rules_dir, candidate.get("rule", "")))
                       if unless else "forbidden")
            found.append({"id": candidate["id"], "api": rule["api"], "unless": unless,
                          "why": rule.get("why", ""), "verdict": verdict})
    return found


def summary(result):
    counts = {}
    for row in result["ops"]:
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    return counts


def render_md(report):
    out = [f"# Plan vs expert ports: {report['model']} (stage {report['stage']})", ""]
    for result in report["ports"]:
        out.append(f"## {result['port']} ({result['repo']}@{result['commit'][:8]})")
        out.append("")
        if not result["ops"]:
            out.append("Not compared: every operator of this port needs a switch "
                       "(quantisation, parallel mode); see --all-when.")
            out.append("")
            continue
        counts = summary(result)
        out.append(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
        out.append("")
        out.append("| expert op | module | stages | evidence | outcome | plan |")
        out.append("|---|---|---|---|---|---|")
        for row in result["ops"]:
            plan_cell = "; ".join(
                f"`{c['id']}` (no_fused_op)" if c["match"] == "no_fused_op" else
                f"`{c['id']}` ({c['status']}, {c['match']}: {', '.join(c['apis']) or '-'})"
                for c in row["candidates"]) or "-"
            role = f" ({row['role']})" if row["role"] and row["role"] != row["module"] else ""
            out.append(f"| {row['api']}{role} | {row['module']} | {'+'.join(row['stages'])} | "
                       f"{row['evidence']} | {row['outcome']} | {plan_cell} |")
        misses = [row for row in result["ops"] if row["near_misses"]]
        if misses:
            out.append("")
            out.append("Near-misses the plan reports for the missed modules:")
            for row in misses:
                for note in row["near_misses"]:
                    out.append(f"- {row['api']}: {note}")
        out.append("")
        if result["extras"]:
            out.append("Extra recommendations (no expert op of this port accounts for them):")
            for extra in result["extras"]:
                what = "prerequisite only" if extra["prerequisite_only"] else ", ".join(extra["apis"])
                kept = (f"; the port kept this in torch: {'; '.join(extra['expert_kept_in_torch'])}"
                        if extra["expert_kept_in_torch"] else "")
                out.append(f"- `{extra['id']}` ({extra['status']}, {what}, "
                           f"{'+'.join(extra['stages'])}){kept}")
        else:
            out.append("Extra recommendations: none.")
        out.append("")
    if report.get("forbidden") is not None:
        out.append("## APIs the expert notes forbid for this model")
        out.append("")
        if not report["forbidden"]:
            out.append("None recommended.")
        for item in report["forbidden"]:
            if item["verdict"] == "cleared":
                out.append(f"- cleared: `{item['id']}` recommends {item['api']} and its rule fixes "
                           f"{item['unless']}")
            elif item["verdict"] == "check":
                out.append(f"- CHECK BY HAND: `{item['id']}` recommends {item['api']}, allowed only if "
                           f"{item['unless']}: {item['why']}")
            else:
                unless = f" (allowed only if {item['unless']})" if item["unless"] else ""
                out.append(f"- FORBIDDEN: `{item['id']}` recommends {item['api']}{unless}: {item['why']}")
        out.append("")
    return "\n".join(out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("plan", help="JSON plan from `npufuse analyze --format json`")
    parser.add_argument("--model", required=True, help="model name as in a port's `covers`")
    parser.add_argument("--ports", default=DEFAULT_PORTS, help="ports.json (default: docs/expert-ports)")
    parser.add_argument("--port", action="append", default=[], help="compare only this port (repeatable)")
    parser.add_argument("--stage", choices=["prefill", "decode", "both"],
                        help="default: the plan's own --stage, else both")
    parser.add_argument("--all-when", action="store_true",
                        help="also compare operators that need a switch (quantisation, parallel mode)")
    parser.add_argument("--must-not", help="expert_choices JSON whose must_not lists forbidden APIs")
    parser.add_argument("--rules", default=DEFAULT_RULES,
                        help="rules directory, to read a rule's facts (default: rules/)")
    parser.add_argument("--format", choices=["md", "json"], default="md")
    args = parser.parse_args(argv)

    plan = load_json(args.plan)
    ports = load_json(args.ports)
    stage = args.stage or (plan.get("options", {}).get("stage") or "both")
    chosen = [p for p in ports.get("ports", []) if args.model in p.get("covers", [])
              and (not args.port or p["port"] in args.port)]
    if not chosen:
        sys.exit(f"compare_ports: no port in {args.ports} covers model '{args.model}'"
                 + (f" with the names {args.port}" if args.port else ""))
    report = {"model": args.model, "stage": stage,
              "ports": [compare_port(plan, p, args.model, stage, args.all_when) for p in chosen]}
    if args.must_not:
        report["forbidden"] = forbidden_uses(plan, load_json(args.must_not), args.model, args.rules)
    if args.format == "json":
        print(json.dumps(report, indent=1))
    else:
        print(render_md(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
