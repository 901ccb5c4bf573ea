"""How a whole-model check builds and runs a model file: the three kinds of entry.

Every entry answers the same four questions for a model file (original or patched):
`build(config)` -> a model with random weights, `prefill(model, ids)` -> logits,
`decode(model, ids, prompt_len)` -> the logits of a prompt and of each decode step after
it through the model's own cache, and `padded(model, ids, mask)` -> logits of a
left-padded batch (or None when the model takes no attention mask). Logits come back as
float32 tensors `[batch, positions, vocab]`; positions a model does not return (official
inference code returns the last position only) are left out on both sides alike.

- `SelfContained`: a file that defines `from_config(dict)`, `full_logits(model, ids)` and
  `incremental_logits(model, ids, prompt_len)` (npufuse's own test models).
- `Transformers`: a HuggingFace modeling file, inside an installed transformers
  (`transformers/models/<m>/modeling_<m>.py`) or a copy beside a config.json whose
  `model_type` names an installed model. The file is loaded as a module of the package
  `transformers.models.<m>` (its relative imports resolve as in the original's place),
  the model is built from the model's own config class with eager attention, and the
  cache is the model's own (`past_key_values`).
- `Inference`: official inference code in the style of DeepSeek's `inference/model.py`:
  a dataclass of arguments (`ModelArgs`) and a model class built from it, whose forward
  takes the token ids and an integer start position (`forward(tokens, start_pos=0)`) and
  keeps its own cache. Found from the code: the dataclass that a module's `__init__`
  takes, and the one such module whose forward takes a start position with every other
  parameter defaulted.
- `Callable`: `--entry module:callable`: the callable gets `(model_module, config dict)`
  and returns an object with `build`, `prefill`, `decode` and, optionally, `padded`
  methods of the signatures above (docs/verify.md).

`find(path, config)` returns the entry for a file, or raises `NoEntry` with the reason and
what the user must give.
"""
import dataclasses
import importlib
import importlib.util
import inspect
import os
import sys

ENTRY_POINTS = ("from_config", "full_logits", "incremental_logits")


class NoEntry(Exception):
    """The model cannot be built here; the message says why and what to give."""


def _load(path, name, package=None):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    if package is not None:
        module.__package__ = package
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class SelfContained:
    kind = "self-contained"

    def __init__(self, module):
        self.module = module

    def full_config(self, config):
        return dict(config)

    def build(self, config):
        return self.module.from_config(config).eval()

    def prefill(self, model, ids):
        return self.module.full_logits(model, ids).float()

    def decode(self, model, ids, prompt_len):
        return self.module.incremental_logits(model, ids, prompt_len).float()

    def padded(self, model, ids, mask):
        return None


# ---------------------------------------------------------------- transformers


def _transformers_package_of(path):
    """(model folder name, True when the file is the installed module itself) or None."""
    parts = os.path.realpath(path).split(os.sep)
    if len(parts) >= 4 and parts[-3] == "models" and parts[-4] == "transformers":
        return parts[-2]
    return None


def model_type_of(path, config):
    folder = _transformers_package_of(path)
    if folder:
        return folder
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem.startswith("modeling_"):
        return stem[len("modeling_"):]
    return config.get("model_type")


def is_transformers_file(path):
    """A HuggingFace modeling file: inside transformers/models/, or importing the package's own modules."""
    if _transformers_package_of(path):
        return True
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    return "from ...modeling_utils import" in text or "from ...configuration_utils import" in text


def load_in_package(path, name):
    """A HuggingFace modeling file loaded as a module of its package in the installed
    transformers; NoEntry when it is none or this Python has no transformers."""
    if not is_transformers_file(path):
        raise NoEntry(f"{path} is not a HuggingFace modeling file")
    return Transformers.load(path, {}, name)


class Transformers:
    kind = "transformers"

    def __init__(self, module, config_class, model_class):
        self.module = module
        self.config_class = config_class
        self.model_class = model_class
        self.notes = ["attention forced to eager (config._attn_implementation = 'eager'): the patch of an "
                      "eager attention function runs only there"]

    @staticmethod
    def load(path, config, name):
        try:
            import transformers  # noqa: F401
        except ImportError as err:
            raise NoEntry(f"a HuggingFace model file needs transformers in the verifying Python ({err}); "
                          "pass --python with an interpreter that has it") from err
        folder = model_type_of(path, config)
        package = f"transformers.models.{folder}"
        try:
            importlib.import_module(package)
        except ImportError as err:
            raise NoEntry(f"the installed transformers has no package {package} ({err}); give --entry") from err
        module = _load(path, f"{package}.{name}", package)
        return module

    @classmethod
    def find(cls, module, config):
        import torch
        try:
            from transformers import PreTrainedConfig as ConfigBase
        except ImportError:
            from transformers import PretrainedConfig as ConfigBase
        from transformers import PreTrainedModel
        classes = {n: v for n, v in vars(module).items() if inspect.isclass(v)}
        models = {n: v for n, v in classes.items()
                  if issubclass(v, PreTrainedModel) and v.__module__ == module.__name__}
        wanted = list(config.get("architectures") or [])
        chosen = next((models[n] for n in wanted if n in models), None)
        if chosen is None:
            chosen = next((v for n, v in models.items() if n.endswith("ForCausalLM")), None)
        if chosen is None:
            raise NoEntry(f"{module.__file__} defines no *ForCausalLM model class (architectures: {wanted}); "
                          "give --entry")
        config_class = getattr(chosen, "config_class", None)
        if not (inspect.isclass(config_class) and issubclass(config_class, ConfigBase)):
            raise NoEntry(f"{chosen.__name__} names no config class; give --entry")
        del torch
        return cls(module, config_class, chosen)

    def make_config(self, config):
        cfg = self.config_class.from_dict(dict(config))
        cfg._attn_implementation = "eager"
        if hasattr(cfg, "_experts_implementation"):
            try:
                cfg._experts_implementation = "eager"
            except (ValueError, AttributeError):
                pass
        cfg.use_cache = True
        return cfg

    def full_config(self, config):
        """The user's config through the model's config class: the defaults and computed fields too."""
        return self.config_class.from_dict(dict(config)).to_dict()

    def build(self, config):
        model = self.model_class(self.make_config(config))
        return model.eval()

    def prefill(self, model, ids):
        import torch
        with torch.no_grad():
            return model(input_ids=ids, use_cache=False).logits.float()

    def decode(self, model, ids, prompt_len):
        import torch
        with torch.no_grad():
            out = model(input_ids=ids[:, :prompt_len], use_cache=True)
            logits, past = [out.logits.float()], out.past_key_values
            for t in range(prompt_len, ids.shape[1]):
                out = model(input_ids=ids[:, t:t + 1], past_key_values=past, use_cache=True)
                logits.append(out.logits.float())
                past = out.past_key_values
        return torch.cat(logits, dim=1)

    def padded(self, model, ids, mask):
        import torch
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            return model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False).logits.float()


# ---------------------------------------------------------------- official inference code


# Official inference code names its arguments its own way; where the config given is a
# HuggingFace one (the plan's config.json), each field is read from the HF key that holds
# the same fact. Keys under rope_scaling are written "rope_scaling.<key>".
HF_NAME_OF_FIELD = {
    "dim": "hidden_size", "inter_dim": "intermediate_size", "moe_inter_dim": "moe_intermediate_size",
    "n_layers": "num_hidden_layers", "n_dense_layers": "first_k_dense_replace",
    "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
    "n_activated_experts": "num_experts_per_tok", "n_expert_groups": "n_group", "n_limited_groups": "topk_group",
    "score_func": "scoring_func", "route_scale": "routed_scaling_factor", "norm_eps": "rms_norm_eps",
    "original_seq_len": "rope_scaling.original_max_position_embeddings", "rope_factor": "rope_scaling.factor",
    "beta_fast": "rope_scaling.beta_fast", "beta_slow": "rope_scaling.beta_slow", "mscale": "rope_scaling.mscale",
}


def _hf_value(config, key):
    if key.startswith("rope_scaling."):
        scaling = config.get("rope_scaling") or config.get("rope_parameters") or {}
        return scaling.get(key.split(".", 1)[1]) if isinstance(scaling, dict) else None
    return config.get(key)


def _random_weights(model):
    """Seeded random weights for code that leaves them to a checkpoint (`torch.empty`):
    matrices ~ N(0, 1/fan_in), a norm's weight ~ 1 + N(0, 0.1), other vectors ~ N(0, 0.02)."""
    import torch
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.is_floating_point():
                continue
            if p.dim() >= 2:
                p.normal_(0.0, p.shape[-1] ** -0.5)
            elif "norm" in name:
                p.normal_(1.0, 0.1)
            else:
                p.normal_(0.0, 0.02)


class Inference:
    kind = "inference"

    def __init__(self, module, args_class, model_class, start_name):
        self.module = module
        self.args_class = args_class
        self.model_class = model_class
        self.start_name = start_name
        self.notes = [f"built as {model_class.__name__}({args_class.__name__}(...)), run as "
                      f"forward(tokens, {start_name}=...); weights cast to float32 after building and drawn at random (seeded)"]

    @classmethod
    def find(cls, module):
        import torch
        args_classes = [v for v in vars(module).values()
                        if inspect.isclass(v) and dataclasses.is_dataclass(v) and v.__module__ == module.__name__]
        found = []
        for value in vars(module).values():
            if not (inspect.isclass(value) and issubclass(value, torch.nn.Module)
                    and value.__module__ == module.__name__):
                continue
            try:
                init = list(inspect.signature(value.__init__).parameters.values())[1:]
                forward = list(inspect.signature(value.forward).parameters.values())[1:]
            except (TypeError, ValueError):
                continue
            if len(init) != 1 or not forward:
                continue
            args_class = next((a for a in args_classes
                               if init[0].annotation is a or init[0].annotation == a.__name__), None)
            if args_class is None:
                continue
            start = next((p.name for p in forward[1:] if "pos" in p.name), None)
            if start is None or any(p.default is p.empty for p in forward[1:]):
                continue
            found.append((value, args_class, start))
        if len(found) != 1:
            names = ", ".join(v.__name__ for v, _, _ in found) or "none"
            raise NoEntry(f"{module.__file__}: expected one model class built from an arguments dataclass whose "
                          f"forward takes the tokens and a start position (found: {names}); give --entry")
        model_class, args_class, start = found[0]
        return cls(module, args_class, model_class, start)

    def full_config(self, config):
        fields = {f.name: f for f in dataclasses.fields(self.args_class)}
        full = {}
        for name, f in fields.items():
            if f.default is not dataclasses.MISSING:
                full[name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                full[name] = f.default_factory()
        for name in fields:
            if name in config:
                full[name] = config[name]
            elif name in HF_NAME_OF_FIELD and _hf_value(config, HF_NAME_OF_FIELD[name]) is not None:
                full[name] = _hf_value(config, HF_NAME_OF_FIELD[name])
        return full

    def build(self, config):
        import torch
        fields = {f.name for f in dataclasses.fields(self.args_class)}
        args = self.args_class(**{k: v for k, v in config.items() if k in fields})
        if "dtype" in fields and isinstance(getattr(args, "dtype"), str) and args.dtype not in ("bf16", "float32"):
            # Quantised weight formats (fp8) need kernels this check does not run.
            args.dtype = "bf16"
        model = self.model_class(args).float()
        _random_weights(model)
        return model.eval()

    def _run(self, model, tokens, start):
        import torch
        with torch.no_grad():
            out = model(tokens, **{self.start_name: start})
        out = out.float()
        return out[:, None, :] if out.dim() == 2 else out

    def prefill(self, model, ids):
        return self._run(model, ids, 0)

    def decode(self, model, ids, prompt_len):
        import torch
        logits = [self._run(model, ids[:, :prompt_len], 0)]
        for t in range(prompt_len, ids.shape[1]):
            logits.append(self._run(model, ids[:, t:t + 1], t))
        return torch.cat(logits, dim=1)

    def padded(self, model, ids, mask):
        return None


class Callable:
    kind = "entry"

    def __init__(self, spec, module, config):
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise NoEntry(f"--entry {spec}: expected module:callable")
        try:
            target = importlib.import_module(module_name)
        except ImportError as err:
            raise NoEntry(f"--entry {spec}: cannot import {module_name} ({err})") from err
        factory = getattr(target, attr, None)
        if factory is None:
            raise NoEntry(f"--entry {spec}: {module_name} has no {attr}")
        self.impl = factory(module, config)
        missing = [m for m in ("build", "prefill", "decode") if not hasattr(self.impl, m)]
        if missing:
            raise NoEntry(f"--entry {spec}: the object it returns lacks {', '.join(missing)}")
        self.notes = [f"built and run through --entry {spec}"]

    def full_config(self, config):
        return dict(config)

    def build(self, config):
        return self.impl.build(config)

    def prefill(self, model, ids):
        return self.impl.prefill(model, ids).float()

    def decode(self, model, ids, prompt_len):
        return self.impl.decode(model, ids, prompt_len).float()

    def padded(self, model, ids, mask):
        fn = getattr(self.impl, "padded", None)
        return fn(model, ids, mask).float() if fn else None
