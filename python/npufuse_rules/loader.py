"""Finds rule files and imports them with the stand-in torch_npu in place."""
import ast
import importlib.util
import os
import sys
from dataclasses import dataclass, field

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rules_root():
    """rules/ next to python/ in the source tree (NPUFUSE_RULES_DIR overrides it)."""
    return os.environ.get("NPUFUSE_RULES_DIR") or os.path.join(os.path.dirname(_PYTHON_DIR), "rules")


def discover_rule_files(root=None):
    """rules/<family>/<rule>.py, sorted; fixtures/ and files starting with '_' are skipped."""
    root = root or rules_root()
    found = []
    for family in sorted(os.listdir(root)):
        family_dir = os.path.join(root, family)
        if not os.path.isdir(family_dir) or family.startswith(("_", ".")):
            continue
        for name in sorted(os.listdir(family_dir)):
            if name.endswith(".py") and not name.startswith("_"):
                found.append(os.path.join(family_dir, name))
    return found


def literal_rule(source, path):
    """The RULE dict read the way the C++ tool reads it: a plain literal, never executed."""
    tree = ast.parse(source, filename=path)
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "RULE"):
            return ast.literal_eval(node.value)
    raise ValueError(f"{path}:1:1: no module-level `RULE = {{...}}` assignment")


@dataclass
class RuleModule:
    path: str
    module: object
    rule: dict
    literal: dict
    docstring: str
    searches: dict = field(default_factory=dict)
    naives: dict = field(default_factory=dict)
    lookalikes: dict = field(default_factory=dict)

    @property
    def id(self):
        return self.rule["id"]

    @property
    def replace(self):
        return getattr(self.module, "replace", None)


def _ensure_torch_npu():
    if _PYTHON_DIR not in sys.path:
        sys.path.insert(0, _PYTHON_DIR)
    from npufuse_ref import standin
    standin.install()


def load_rule(path):
    """Imports one rule file under a private module name and collects its functions."""
    _ensure_torch_npu()
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    literal = literal_rule(source, path)
    family = os.path.basename(os.path.dirname(path))
    name = "npufuse_rule_" + family + "_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    functions = {k: v for k, v in vars(module).items()
                 if callable(v) and getattr(v, "__module__", None) == name}
    return RuleModule(
        path=path, module=module, rule=module.RULE, literal=literal,
        docstring=ast.get_docstring(ast.parse(source)) or "",
        searches={k: v for k, v in sorted(functions.items()) if k.startswith("search")},
        naives={k: v for k, v in sorted(functions.items()) if k.startswith("naive")},
        lookalikes={k: v for k, v in sorted(functions.items()) if k.startswith("lookalike")})
