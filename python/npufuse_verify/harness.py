"""One candidate's check: original chain vs replacement, precision and performance.

The spec (a dict, written by npufuse into the generated harness file):
  candidate, rule, rule_file    the plan candidate and its rule file
  dtype                         activation dtype under test ("float32", "bfloat16", "float16")
  sizes                         RULE["sizes"] with the configured values put in (B, S, H, ...)
  tolerance                     {dtype name: {atol, rtol, cosine}} from npufuse's table
  cut                           null, or {original_module, patched_module, function,
                                arguments: {replace parameter: spelling in the function}}
  device                        cpu | npu | auto
  timing                        {warmup, repeats} (real NPU only)
  estimate                      the cost model's numbers, reported when nothing is measured

The function cut calls the user's function (sliced out of the original file by import)
and the same function of the patched file with the same random inputs. A method gets a
stand-in `self` holding only the attributes the rule binds, so a function that needs
more than the chain falls back to the rule cut (the rule's `search` vs its `replace`),
and the result says why.
"""
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback
import types

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)

from npufuse_verify import device as device_choice  # noqa: E402
from npufuse_verify.line_trace import LinesRun  # noqa: E402


class CutUnavailable(Exception):
    """The function cut cannot be called with what the rule binds; the rule cut is used."""


class PatchedBroken(Exception):
    """The patched file fails where the original works: it does not import, or its function raises."""


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def resolve(module, qualified):
    target = module
    for part in qualified.split("."):
        if not hasattr(target, part):
            raise CutUnavailable(f"{qualified} is not found in {module.__file__}")
        target = getattr(target, part)
    return target


def _is_identifier_path(text):
    return all(part.isidentifier() for part in text.split("."))


def call_plan(function, arguments, inputs, is_method):
    """(self stand-in or None, keyword arguments) for the function, or CutUnavailable."""
    import inspect
    params = list(inspect.signature(function).parameters.values())
    if is_method:
        params = params[1:]
    names = {p.name for p in params}
    fake_self = types.SimpleNamespace() if is_method else None
    kwargs = {}
    for rule_param, spelling in arguments.items():
        if rule_param not in inputs:
            raise CutUnavailable(f"the rule binds {rule_param}, which RULE['inputs'] does not describe")
        value = inputs[rule_param]
        if not spelling:
            # Bound to nothing in the model's code (the rotary tables'
            # length, which apply finds in __init__): the original function
            # does not take it.
            continue
        if spelling in names:
            kwargs[spelling] = value
        elif is_method and spelling.startswith("self.") and _is_identifier_path(spelling):
            holder = fake_self
            parts = spelling.split(".")[1:]
            for part in parts[:-1]:
                if not hasattr(holder, part):
                    setattr(holder, part, types.SimpleNamespace())
                holder = getattr(holder, part)
            setattr(holder, parts[-1], value)
        else:
            raise CutUnavailable(f"{rule_param} is bound to `{spelling}`, which is neither a parameter "
                                 f"of {function.__qualname__} nor an attribute of self")
    for p in params:
        if p.name in kwargs or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is p.empty:
            raise CutUnavailable(f"parameter {p.name} of {function.__qualname__} is not bound by the rule")
    return fake_self, kwargs


def _moved(value, where):
    import torch
    if isinstance(value, torch.Tensor):
        return value.to(where)
    if isinstance(value, types.SimpleNamespace):
        return types.SimpleNamespace(**{k: _moved(v, where) for k, v in vars(value).items()})
    return value


def _cloned(value):
    import torch
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, types.SimpleNamespace):
        return types.SimpleNamespace(**{k: _cloned(v) for k, v in vars(value).items()})
    return value


STUB_MARK = "NpufuseImportStub"


class NpufuseImportStubType(type):
    """Stand-ins for what a model file imports and this machine cannot resolve (HF's
    `from ...activations import ACT2FN`, `from kernel import fp8_gemm`). A stand-in is a
    class, so model classes may derive from it; its attributes and items are
    stand-ins; called with one class or function it returns it (a decorator such as
    `@auto_docstring`), called otherwise it returns a stand-in (a decorator factory
    such as `@deprecate_kwarg(...)`, `logging.get_logger(__name__)`). A class that
    derives from one is an ordinary class. Code that computes with a stand-in fails
    with its name in the message, which is how the harness tells such a failure
    from the model's own."""

    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _stub(f"{cls.__dict__.get('_stub_name', cls.__name__)}.{attr}")

    def __getitem__(cls, key):
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __call__(cls, *args, **kwargs):
        if not cls.__dict__.get("_stub_root"):
            return super().__call__(*args, **kwargs)
        decorated = args[0] if len(args) == 1 and not kwargs else None
        if callable(decorated) and not (isinstance(decorated, NpufuseImportStubType) and
                                        decorated.__dict__.get("_stub_root")):
            return decorated
        return _stub(f"{cls.__dict__['_stub_name']}(...)")

    def __repr__(cls):
        if cls.__dict__.get("_stub_root"):
            return f"<{STUB_MARK} {cls.__dict__['_stub_name']}>"
        return super().__repr__()


def _stub(name):
    return NpufuseImportStubType(STUB_MARK, (), {"_stub_root": True, "_stub_name": name})


def load_module_leniently(path, name):
    """The model file as a module whose unresolvable imports are stand-ins, and the
    imports that were: relative ones, and absolute ones this machine lacks."""
    import builtins
    import types as _types
    stubbed = []
    real_import = builtins.__import__

    def lenient(module_name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0:
            try:
                return real_import(module_name, globals, locals, fromlist, level)
            except ImportError:
                pass
        shown = "." * level + (module_name or "")
        if shown not in stubbed:
            stubbed.append(shown)
        return _stub(shown)

    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    module = _types.ModuleType(name)
    module.__file__ = path
    module.__dict__["__builtins__"] = dict(vars(builtins), __import__=lenient)
    sys.modules[name] = module  # dataclasses look their module up by name
    exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 -- the user's own model file
    return module, stubbed


def _importable(path, name):
    """The model file as a module, and a note when some of its imports had to be
    stand-ins (a package's file with relative imports, HF's `from ...activations
    import`, or a package this machine lacks). CutUnavailable when it cannot be
    loaded even so: the rule cut checks the fusion then."""
    try:
        return load_module(path, name), None
    except ImportError as err:
        sys.modules.pop(name, None)
        first = f"{type(err).__name__}: {err}"
    except Exception as err:  # noqa: BLE001 -- whatever the user's module raises on import
        sys.modules.pop(name, None)
        raise CutUnavailable(f"{os.path.basename(path)} cannot be imported on its own "
                             f"({type(err).__name__}: {err})") from err
    # A HuggingFace modeling file, where this Python has transformers: loaded as a
    # module of its package, so its relative imports resolve as in its own place.
    from npufuse_verify import entries
    try:
        module = entries.load_in_package(path, name)
    except entries.NoEntry:
        module = None
    except Exception as err:  # noqa: BLE001 -- the package's own import failing is the finding
        sys.modules.pop(name, None)
        raise CutUnavailable(f"{os.path.basename(path)} cannot be loaded in its transformers package "
                             f"({type(err).__name__}: {err})") from err
    if module is not None:
        return module, None
    try:
        module, stubbed = load_module_leniently(path, name)
    except Exception as err:  # noqa: BLE001
        sys.modules.pop(name, None)
        raise CutUnavailable(f"{os.path.basename(path)} cannot be imported on its own ({first}), nor with "
                             f"stand-ins for its imports ({type(err).__name__}: {err})") from err
    shown = ", ".join(stubbed[:6]) + (f" and {len(stubbed) - 6} more" if len(stubbed) > 6 else "")
    return module, (f"{os.path.basename(path)} cannot be imported on its own ({first}): loaded with stand-ins "
                    f"for the imports this machine cannot resolve ({shown})")


def function_sides(spec, inputs):
    """Two callables (original, replacement) of no arguments, and the cut's description."""
    cut = spec["cut"]
    tag = "".join(ch if ch.isalnum() else "_" for ch in spec["candidate"])
    original, note = _importable(cut["original_module"], f"npufuse_original_{tag}")
    try:
        patched, _ = _importable(cut["patched_module"], f"npufuse_patched_{tag}")
    except CutUnavailable as why:
        # The original loads and the patched copy does not: the patch broke the file.
        raise PatchedBroken(f"the patched file does not load: {why}") from why
    qualified = cut["function"]
    is_method = "." in qualified
    fn_a, fn_b = resolve(original, qualified), resolve(patched, qualified)
    fake_self, kwargs = call_plan(fn_a, cut["arguments"], inputs, is_method)

    def side(fn):
        def run(where):
            args = {k: _moved(_cloned(v), where) for k, v in kwargs.items()}
            if is_method:
                return fn(_moved(_cloned(fake_self), where), **args)
            return fn(**args)
        return run
    return side(fn_a), side(fn_b), f"function {qualified} (original file vs patched file)", note


def rule_sides(loaded, inputs):
    from npufuse_rules import clone_inputs
    search_name, search = next(iter(loaded.searches.items()))

    def side(fn):
        def run(where):
            return fn(**{k: _moved(v, where) for k, v in clone_inputs(inputs).items()})
        return run
    return side(search), side(loaded.replace), f"rule {loaded.id}: {search_name} vs replace", None


def _to_cpu(value):
    import torch
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, (tuple, list)):
        return type(value)(_to_cpu(v) for v in value)
    return value


def output_scale(reference):
    """max(1, largest |value| over the floating outputs)."""
    from npufuse_rules.compare import flatten_outputs
    scale = 1.0
    for t in flatten_outputs(reference):
        if t.is_floating_point() and t.numel():
            scale = max(scale, float(t.detach().abs().max()))
    return scale


def timed(run, where, warmup, repeats):
    """Median and spread (min, max) in microseconds of one side on the NPU."""
    import torch
    for _ in range(warmup):
        run(where)
    torch.npu.synchronize()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(where)
        torch.npu.synchronize()
        samples.append((time.perf_counter() - start) * 1e6)
    return {"median_us": statistics.median(samples), "min_us": min(samples), "max_us": max(samples),
            "repeats": repeats, "warmup": warmup}


def run(spec):
    # The spec says why no function cut was planned, when none was.
    result = {"candidate": spec["candidate"], "rule": spec["rule"], "dtype": spec["dtype"], "passed": False,
              "error": None, "cut": None, "cut_note": spec.get("cut_note") or None, "outputs": []}
    try:
        where, words = device_choice.select(spec.get("device", "auto"))
        result["device"] = words
        import torch
        from npufuse_rules import (build_inputs, clone_inputs, compare_outputs, exact_outputs, in_replacement_layout,
                                   load_rule)
        loaded = load_rule(spec["rule_file"])
        rule = dict(loaded.rule)
        rule["sizes"] = dict(rule.get("sizes", {}), **spec.get("sizes", {}))
        run_dtype = spec["dtype"]
        if where != "npu" and run_dtype == "float16":
            # CPU builds of torch lack float16 kernels for several ops (tanh in
            # 1.13): the CPU check runs the chain in float32 and says so.
            run_dtype = "float32"
            result["dtype_note"] = "float16 run as float32 on CPU (no CPU float16 kernels for every op)"
        inputs = build_inputs(rule, getattr(torch, run_dtype), seed=spec.get("seed", 1234))
        sides = None
        if spec.get("cut"):
            try:
                sides = function_sides(spec, inputs)
            except CutUnavailable as why:
                result["cut_note"] = f"function cut not used: {why}"
        if sides is None:
            if loaded.replace is None or not loaded.searches:
                raise RuntimeError(f"rule {loaded.id} has no search/replace pair to compare")
            sides = rule_sides(loaded, inputs)
        original, replacement, result["cut"], note = sides
        if note:
            result["cut_note"] = note
        original_ran = False
        # The lines of the patched file the replacement runs: the evidence that
        # the check exercised the patch (docs/verify.md, "kept").
        trace = LinesRun([spec["cut"]["patched_module"]] if spec.get("cut") else [])
        try:
            reference = _to_cpu(original(where))
            original_ran = True
            with trace:
                candidate = _to_cpu(replacement(where))
            if result["cut"].startswith("function "):
                result["lines_run"] = trace.lines()
        except Exception as err:  # noqa: BLE001
            # The function reads more of `self` than the rule binds (a submodule it
            # calls, a merged layer), or computes with a stand-in for an import, or
            # the user's original code does not run on this machine's torch (the
            # official DeepSeek-V3 norm's F.rms_norm on torch 1.13): the chain
            # cannot be cut out with this function. A failure of the patched side
            # alone is the patch's, and stays the result.
            if not result["cut"].startswith("function "):
                raise
            if "SimpleNamespace" in str(err):
                why = f"needs more of self ({err})"
            elif STUB_MARK in str(err) or STUB_MARK in traceback.format_exc():
                why = f"computes with a stand-in for an import ({type(err).__name__}: {err})"
            elif not original_ran:
                why = f"fails on this machine in the original file too ({type(err).__name__}: {err})"
            else:
                result["patched_failed"] = True
                raise
            result["cut_note"] = f"function cut not used: {spec['cut']['function']} {why}"
            original, replacement, result["cut"], _ = rule_sides(loaded, inputs)
            reference = _to_cpu(original(where))
            candidate = _to_cpu(replacement(where))
        tolerance = {name: dict(v) for name, v in (spec.get("tolerance") or {}).items()}
        for name, v in (rule.get("tolerance") or {}).items():  # a rule's own bounds win
            tolerance.setdefault(name, {}).update(v)
        # Rounding errors scale with the values: atol is in units of the output's
        # largest magnitude (at least 1), so a bf16 step of a large output is not a failure.
        scale = output_scale(reference)
        result["atol_scale"] = scale
        for v in tolerance.values():
            if "atol" in v:
                v["atol"] = v["atol"] * scale
        # outputs the fused operator keeps in another documented order are compared in it
        # the rule's own pair: the chain run in float32 on the same inputs tells the
        # chain's low-precision rounding from the replacement's error (compare_outputs)
        exact = None
        if result["cut"].startswith("rule "):  # rule_sides
            exact = exact_outputs(rule, next(iter(loaded.searches.values())), clone_inputs(inputs))
        comparisons = compare_outputs(in_replacement_layout(rule, reference, inputs), candidate, tolerance, exact)
        result["outputs"] = [{"index": c.index, "dtype": str(c.dtype).replace("torch.", ""), "max_abs": c.max_abs,
                              "max_rel": c.max_rel, "cosine": c.cosine, "ok": c.ok, "why": c.why}
                             for c in comparisons]
        result["max_abs"] = max(c.max_abs for c in comparisons)
        result["max_rel"] = max(c.max_rel for c in comparisons)
        result["cosine"] = min(c.cosine for c in comparisons)
        result["passed"] = all(c.ok for c in comparisons)
        if where == "npu":
            t = spec.get("timing", {})
            warmup, repeats = int(t.get("warmup", 5)), int(t.get("repeats", 20))
            before, after = timed(original, where, warmup, repeats), timed(replacement, where, warmup, repeats)
            result["performance"] = {"kind": "measured", "original": before, "replacement": after,
                                     "speedup": before["median_us"] / max(after["median_us"], 1e-9)}
        else:
            result["performance"] = dict(spec.get("estimate") or {}, kind="estimate")
    except PatchedBroken as err:
        result["patched_failed"] = True
        result["error"] = str(err)
        result["performance"] = dict(spec.get("estimate") or {}, kind="estimate")
    except Exception as err:  # the report carries the error text as evidence
        result["error"] = f"{type(err).__name__}: {err}"
        result["traceback"] = traceback.format_exc(limit=6)
        result["performance"] = dict(spec.get("estimate") or {}, kind="estimate")
    return result


def finite(value):
    """JSON has no inf/nan: they become null (the output's `why` says what happened)."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def main(spec):
    print(json.dumps(finite(run(spec))))
    return 0
