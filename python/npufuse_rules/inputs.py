"""Random inputs for a rule's search/replace pair, built from RULE["inputs"] and RULE["sizes"].

An input spec is a dict:
  shape  list of ints or size expressions ("S", "2 * I", "D // 2") over RULE["sizes"]
  dtype  "act" (the dtype under test), "float32", "complex64", "int64", "int32", "int8", "bool", or
         "param" (a Python scalar/string passed as is: "value", or "expr" over the sizes)
  init   randn (default) | uniform (low, high) | ones_noise | zeros | randint (low, high) |
         arange (from `start`) | unique_randint (high: distinct values) | causal_mask_2048 |
         unit_complex (complex64 e^(i theta), a freqs_cis table) |
         causal_additive (float mask, 0 or a large negative above the causal diagonal) |
         sliding_additive (causal_additive that also masks keys `window` or more back) |
         int8_grid (n * step, n integers in [-127, 127], every `group`-wide run of the last axis
         holding one +-127, the step halved per run a random 0 .. `octaves`-1 times: symmetric
         int8 quantisation per run is lossless on it)
"""
import ast
import operator

import torch

_DTYPES = {"complex64": torch.complex64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "int64": torch.int64, "int32": torch.int32, "int8": torch.int8, "bool": torch.bool}
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv, ast.Pow: operator.pow,
           ast.Mod: operator.mod}


def resolve_size(value, sizes):
    """An int, or an arithmetic expression over the size names (no calls, no attributes), or a list of them."""
    if isinstance(value, (int, float)):
        return value

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in sizes:
                raise KeyError(f"size {node.id!r} is not in RULE['sizes']")
            return sizes[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.List):  # a list of sizes (varlen sequence lengths that sum to T)
            return [ev(e) for e in node.elts]
        raise ValueError(f"unsupported size expression {value!r}")

    return ev(ast.parse(str(value), mode="eval"))


def _shape(spec, sizes):
    return [int(resolve_size(v, sizes)) for v in spec.get("shape", [])]


class ConcatCache:
    """Stand-in for a cache object whose class lies outside the analysed files
    (HF DynamicCache): `update` appends along the sequence and returns all keys
    and values of the layer."""

    def __init__(self, past_keys, past_values):
        self.key_cache, self.value_cache = [past_keys], [past_values]

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], key_states], dim=-2)
        self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], value_states], dim=-2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]


def _make(spec, sizes, act_dtype, gen):
    kind = spec.get("dtype", "act")
    if kind == "param":
        return resolve_size(spec["expr"], sizes) if "expr" in spec else spec.get("value")
    dtype = act_dtype if kind == "act" else _DTYPES[kind]
    shape = _shape(spec, sizes)
    init = spec.get("init", "randint" if not dtype.is_floating_point and dtype != torch.bool
                    else "randn")
    if init == "concat_cache":  # a cache object holding one layer's past keys and values of `shape`
        return ConcatCache(torch.randn(shape, generator=gen).to(dtype), torch.randn(shape, generator=gen).to(dtype))
    if init == "randn":
        t = torch.randn(shape, generator=gen) * spec.get("scale", 1.0)
    elif init == "uniform":
        low, high = spec.get("low", -1.0), spec.get("high", 1.0)
        t = torch.rand(shape, generator=gen) * (high - low) + low
    elif init == "half_repeated":  # a RoPE cos/sin table: the last axis is cat(h, h), as cat(freqs, freqs).cos() gives
        head = list(shape[:-1]) + [shape[-1] // 2]
        h = torch.rand(head, generator=gen) * 2 - 1
        t = torch.cat((h, h), dim=-1)
    elif init == "ones_noise":
        t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
    elif init == "unit_complex":  # e^(i*theta): a rotary frequency table (freqs_cis)
        theta = (torch.rand(shape, generator=gen) * 2 - 1) * 3.141592653589793
        return torch.polar(torch.ones(shape), theta).to(dtype)
    elif init == "zeros":
        t = torch.zeros(shape)
    elif init == "randint":
        low = int(resolve_size(spec.get("low", 0), sizes))
        high = int(resolve_size(spec.get("high", 2), sizes))
        t = torch.randint(low, high, shape, generator=gen)
    elif init == "arange":
        n = 1
        for s in shape:
            n *= s
        t = torch.arange(n).reshape(shape) + int(resolve_size(spec.get("start", 0), sizes))
    elif init == "unique_per_row":  # distinct along the last axis only: a top-k's expert ids per token
        high = int(resolve_size(spec["high"], sizes))
        rows = 1
        for s in shape[:-1]:
            rows *= s
        t = torch.stack([torch.randperm(high, generator=gen)[:shape[-1]] for _ in range(rows)]).reshape(shape)
    elif init == "unique_randint":
        high = int(resolve_size(spec["high"], sizes))
        n = 1
        for s in shape:
            n *= s
        t = torch.randperm(high, generator=gen)[:n].reshape(shape)
    elif init == "causal_topk":  # [.., S, K] key positions per query, distinct, none after the query (right-aligned causal)
        q_len, k = shape[-2], shape[-1]
        kv_len = int(resolve_size(spec["high"], sizes))
        if k > kv_len - q_len + 1:
            raise ValueError(f"causal_topk: {k} positions per row do not fit before the first query of {kv_len} keys")
        rows = []
        for _ in range(max(1, t_count(shape[:-2]))):
            for i in range(q_len):
                rows.append(torch.randperm(kv_len - q_len + i + 1, generator=gen)[:k])
        t = torch.stack(rows).reshape(shape)
    elif init == "causal_mask_2048":
        t = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
        return t
    elif init == "causal_additive":
        q_len, kv_len = shape[-2], shape[-1]
        masked = torch.ones(q_len, kv_len, dtype=torch.bool).triu(diagonal=kv_len - q_len + 1)
        t = torch.zeros(shape)
        t = t.masked_fill(masked, torch.finfo(dtype).min if dtype.is_floating_point else 1)
    elif init == "causal_keep":  # bool, True where a query may attend (GPT-J's tril buffer)
        q_len, kv_len = shape[-2], shape[-1]
        keep = torch.ones(q_len, kv_len, dtype=torch.bool).tril(diagonal=kv_len - q_len)
        return keep.expand(shape).clone()
    elif init == "padded_additive":  # each row keeps a random valid prefix of the keys (right padding)
        kv_len = shape[-1]
        lengths = torch.randint(1, kv_len + 1, (shape[0],), generator=gen)
        masked = torch.arange(kv_len)[None, :] >= lengths[:, None]
        t = torch.zeros(shape).masked_fill(masked.view(shape[0], *([1] * (len(shape) - 2)), kv_len),
                                           torch.finfo(dtype).min)
    elif init == "sliding_additive":  # causal and at most `window` keys back (self included)
        q_len, kv_len = shape[-2], shape[-1]
        window = int(resolve_size(spec["window"], sizes))
        i = torch.arange(q_len).unsqueeze(1) + (kv_len - q_len)
        j = torch.arange(kv_len).unsqueeze(0)
        masked = (j > i) | (i - j >= window)
        t = torch.zeros(shape).masked_fill(masked, torch.finfo(dtype).min)
    elif init == "int8_grid":  # per-run int8 quantisation (scale = max|x| / 127) gives back exactly these values
        step = float(spec.get("step", 2.0 ** -7))
        group = int(resolve_size(spec.get("group", shape[-1]), sizes))
        if shape[-1] % group:
            raise ValueError(f"int8_grid: group {group} does not divide the last axis {shape[-1]}")
        runs = list(shape[:-1]) + [shape[-1] // group, group]
        n = torch.randint(-126, 127, runs, generator=gen)
        peak = torch.randint(0, group, runs[:-1] + [1], generator=gen)
        sign = torch.randint(0, 2, runs[:-1] + [1], generator=gen) * 2 - 1
        n = n.scatter(-1, peak, 127 * sign)
        # `octaves` > 1: each run's step is also halved a random 0 .. octaves-1 times, so the runs'
        # scales differ (a per-tensor scale then loses the small runs) and every value stays exact
        halvings = torch.randint(0, int(spec.get("octaves", 1)), runs[:-1] + [1], generator=gen)
        t = (n * step * torch.pow(2.0, -halvings.double())).reshape(shape)
    else:
        raise ValueError(f"unknown init {init!r}")
    return t.to(dtype)


def check_dtype(rule):
    """The one dtype a single-dtype check runs in (rejected mappings, verify sizes): float32,
    unless the rule's operator takes only half precision (RULE["dtypes"] lacks float32)."""
    names = rule.get("dtypes", ["float32", "bfloat16"])
    return torch.float32 if "float32" in names else _DTYPES[names[0]]


def t_count(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def build_inputs(rule, act_dtype=torch.float32, seed=0):
    """An ordered dict name -> value following RULE["inputs"] (dict order = parameter order)."""
    gen = torch.Generator().manual_seed(seed)
    sizes = rule.get("sizes", {})
    return {name: _make(spec, sizes, act_dtype, gen) for name, spec in rule["inputs"].items()}


def clone_inputs(inputs):
    """Fresh copies so that in-place replacements (cache writes) never leak between runs."""
    def fresh(v):
        if isinstance(v, torch.Tensor):
            return v.clone()
        if isinstance(v, ConcatCache):
            return ConcatCache(v.key_cache[0].clone(), v.value_cache[0].clone())
        return v
    return {k: fresh(v) for k, v in inputs.items()}
