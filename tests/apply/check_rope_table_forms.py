"""The RoPE rewrites on the forms real code gives its cos/sin tables.

A model's rotation multiplies by tables broadcast to the queries' rank, but
where they get their unit axes differs: HF's `cos.unsqueeze(unsqueeze_dim)`
on [B, S, D] tables inside the helper; `cos[None, None]` or
`cos.unsqueeze(0).unsqueeze(0)` on [S, D] tables inside it; the same done by
the caller before it calls the helper; an index inside the multiply. For
each form and for each of rope.rope_half (npu_apply_rotary_pos_emb, BSND)
and rope.rope_half_rotary_mul (npu_rotary_mul), this analyses a small
module, applies that rule's candidate alone (`apply --only`), and runs the
original and the patched module on the same random q, k and tables with the
CPU stand-in torch_npu: the rewrite must be applied, give the original's
values, and call the fused operator on the way (the operator made wrong must
change the result).

Usage: check_rope_table_forms.py --npufuse BIN --source-dir DIR
"""
import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

TOLERANCE = 1e-5

TEMPLATE = '''\
import torch
from torch import nn


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(q, k, cos, sin{params}):
{helper}


class Attention(nn.Module):
    def forward(self, q, k, cos, sin):
{forward}
        return q, k
'''

CALL = "q, k = apply_rope(q, k, cos, sin)"
MULTIPLY = """\
q_embed = (q * cos) + (rotate_half(q) * sin)
k_embed = (k * cos) + (rotate_half(k) * sin)
return q_embed, k_embed"""

# name: (extra helper parameters, helper body, forward body, table axes)
FORMS = {
    "hf_unsqueeze_dim": (", unsqueeze_dim=1",
                         "cos = cos.unsqueeze(unsqueeze_dim)\nsin = sin.unsqueeze(unsqueeze_dim)\n" + MULTIPLY,
                         CALL, "BSD"),
    "inside_none_index": ("", "cos = cos[None, None]\nsin = sin[None, None]\n" + MULTIPLY, CALL, "SD"),
    "inside_unsqueeze_twice": ("", "cos = cos.unsqueeze(0).unsqueeze(0)\nsin = sin.unsqueeze(0).unsqueeze(0)\n" + MULTIPLY,
                               CALL, "SD"),
    "inside_batch_index": ("", "cos = cos[:, None]\nsin = sin[:, None]\n" + MULTIPLY, CALL, "BSD"),
    "inside_the_multiply": ("", "return q * cos[None, None] + rotate_half(q) * sin[None, None], "
                                "k * cos[None, None] + rotate_half(k) * sin[None, None]", CALL, "SD"),
    "caller_none_index": ("", MULTIPLY, "cos = cos[None, None]\nsin = sin[None, None]\n" + CALL, "SD"),
    "caller_unsqueeze_twice": ("", MULTIPLY, "cos = cos.unsqueeze(0).unsqueeze(0)\nsin = sin.unsqueeze(0).unsqueeze(0)\n"
                               + CALL, "SD"),
    "caller_batch_unsqueeze": ("", MULTIPLY, "cos = cos.unsqueeze(1)\nsin = sin.unsqueeze(1)\n" + CALL, "BSD"),
}

RULES = {"rope.rope_half": "npu_apply_rotary_pos_emb", "rope.rope_half_rotary_mul": "npu_rotary_mul"}


def source_of(form):
    params, helper, forward, _ = FORMS[form]
    return TEMPLATE.format(params=params, helper=textwrap.indent(helper, "    "),
                           forward=textwrap.indent(forward, "        "))


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs(axes):
    import torch
    g = torch.Generator().manual_seed(7)
    b, s, d = 2, 5, 64
    q = torch.randn(b, 4, s, d, generator=g)
    k = torch.randn(b, 2, s, d, generator=g)
    positions = torch.arange(3, 3 + s, dtype=torch.float32)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    angles = torch.outer(positions, inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    cos, sin = angles.cos(), angles.sin()
    if axes == "BSD":  # per-sequence tables (a left-padded batch shifts the positions)
        cos = torch.stack([cos, torch.roll(cos, 1, 0)])
        sin = torch.stack([sin, torch.roll(sin, 1, 0)])
    return q, k, cos, sin


def difference(original, patched, axes):
    q, k, cos, sin = inputs(axes)
    a = original.Attention()(q.clone(), k.clone(), cos.clone(), sin.clone())
    b = patched.Attention()(q.clone(), k.clone(), cos.clone(), sin.clone())
    for x, y in zip(a, b):
        # A result of another rank would broadcast in the subtraction below (5-D tables give 5-D queries).
        if x.shape != y.shape:
            raise ValueError(f"the patched module returns shape {tuple(y.shape)}, the original {tuple(x.shape)}")
    return max(float((x - y).abs().max()) for x, y in zip(a, b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npufuse", required=True)
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    npufuse = str(Path(args.npufuse).resolve())
    src = Path(args.source_dir).resolve()
    sys.path.insert(0, str(src / "python" / "torch_npu_standin"))
    sys.path.insert(0, str(src / "python"))
    import torch_npu
    from npufuse_verify.wrong_operator import wrong_version
    if not getattr(torch_npu, "IS_NPUFUSE_STANDIN", False):
        print("a real torch_npu is installed: the CPU comparison needs the stand-in")
        return 77
    problems = []
    tmp = Path(tempfile.mkdtemp(prefix="npufuse_rope_forms_"))
    try:
        for form in FORMS:
            work = tmp / form
            work.mkdir()
            (work / "model.py").write_text(source_of(form))
            plan = work / "plan.json"
            r = subprocess.run([npufuse, "analyze", "model.py", "--format", "json", "-o", str(plan)], cwd=work,
                               capture_output=True, text=True)
            if r.returncode != 0:
                problems.append(f"{form}: analyze failed: {r.stderr}")
                continue
            found = {}
            for c in json.loads(plan.read_text())["candidates"]:
                for x in [c] + c.get("alternatives", []):
                    found.setdefault(x["rule"], x["id"])
            original = load(work / "model.py", f"original_{form}")
            for rule, op in RULES.items():
                if rule not in found:
                    problems.append(f"{form}: no {rule} candidate in the plan")
                    continue
                out = work / rule
                r = subprocess.run([npufuse, "apply", "model.py", "--plan", str(plan), "--only", found[rule],
                                    "--out", str(out)], cwd=work, capture_output=True, text=True)
                if r.returncode != 0 or f"applied: {found[rule]}" not in r.stdout.splitlines():
                    problems.append(f"{form}: {rule} not applied: {r.stdout}{r.stderr}")
                    continue
                patched = load(out / "model.py", f"patched_{form}_{rule.replace('.', '_')}")
                try:
                    worst = difference(original, patched, FORMS[form][3])
                except Exception as e:  # the patched module does not run: the bug this test is for
                    problems.append(f"{form}: {rule}: the patched module fails: {type(e).__name__}: {e}\n"
                                    + (out / "model.py").read_text())
                    continue
                right = getattr(torch_npu, op)
                setattr(torch_npu, op, wrong_version(right))
                try:
                    spoiled = difference(original, patched, FORMS[form][3])
                finally:
                    setattr(torch_npu, op, right)
                print(f"{form}: {rule}: max |difference| {worst:.3g}, with a wrong {op} {spoiled:.3g}")
                if not worst <= TOLERANCE:
                    problems.append(f"{form}: {rule}: the patched module differs by {worst:.3g}")
                if spoiled <= TOLERANCE:
                    problems.append(f"{form}: {rule}: a wrong {op} goes unnoticed: the rewrite is not on the path")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
