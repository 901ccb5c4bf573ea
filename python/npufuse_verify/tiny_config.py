"""A small config with the structure of the user's: what a whole-model check can build in seconds.

`tiny(config_dict)` returns `(small_dict, notes)`. It keeps what decides the code paths a
patch may sit on, and shrinks the sizes that only cost time:

- every layer type the config lists (`layer_types`: sliding/full, linear/full attention),
  each kept once, in the order first met; a dense prefix before MoE layers
  (`first_k_dense_replace`) kept as one dense layer; `mlp_only_layers` kept where they
  fall inside the smaller stack; at least two layers, so a chain from one layer into the
  next exists;
- the grouping of query heads over KV heads (4 query heads, KV heads in the same ratio),
  a head dimension the attention and RoPE operators take (64, or 128 where the config
  has 128), the partial rotary factor and the RoPE scaling as they are;
- MoE: at most 16 experts and never fewer than top-k; expert groups scaled down with
  them (`n_group`, `topk_group`); shared experts as they are;
- MLA: the latent ranks and per-head dimensions as they are (the fused MLA operators
  document fixed values for them); only the head count and hidden size shrink;
- a sliding window shorter than the check's prompt, so the window changes the result;
- a nested `text_config` (multimodal checkpoints) shrunk the same way.

Nothing here guesses a value the config does not have: a key is changed only when
present. Every change is listed in `notes` as `key: old -> new`.
"""

HEAD_DIMS = (64, 128)
MAX_EXPERTS = 16
SMALL_VOCAB = 512
SLIDING_WINDOW = 4

# The names one size goes by across model families: HF configs, and the `ModelArgs`
# dataclasses of official inference code (DeepSeek's dim, n_layers, n_heads, ...).
HIDDEN = ("hidden_size", "dim", "d_model", "n_embd")
LAYERS = ("num_hidden_layers", "n_layers", "num_layers", "n_layer")
HEADS = ("num_attention_heads", "n_heads", "n_head")
KV_HEADS = ("num_key_value_heads", "n_kv_heads", "num_kv_heads")
INTERMEDIATE = ("intermediate_size", "inter_dim", "ffn_hidden_size", "ffn_dim")
MOE_INTERMEDIATE = ("moe_intermediate_size", "moe_inter_dim", "shared_expert_intermediate_size",
                    "expert_intermediate_size")
EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
TOPK_KEYS = ("num_experts_per_tok", "n_activated_experts", "moe_topk", "top_k", "num_experts_per_token")
GROUPS = ("n_group", "n_expert_groups")
TOPK_GROUPS = ("topk_group", "n_limited_groups")
DENSE_PREFIX = ("first_k_dense_replace", "n_dense_layers")
TOKEN_ID_KEYS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")


def _key(config, names):
    """The first of names the config holds as an int, or None."""
    return next((k for k in names if isinstance(config.get(k), int) and not isinstance(config.get(k), bool)), None)


def _note(notes, key, old, new):
    if old != new:
        notes.append(f"{key}: {old} -> {new}")


def _set(config, notes, key, value, prefix=""):
    if key in config and config[key] != value:
        _note(notes, prefix + key, config[key], value)
        config[key] = value


def _layer_plan(config, notes, prefix):
    """Shrinks the layer stack, keeping each layer kind once."""
    layers_key = _key(config, LAYERS)
    if layers_key is None:
        return
    layers = config[layers_key]
    types = config.get("layer_types")
    if isinstance(types, list) and types and len(types) == layers:
        kept = []
        for t in types:
            if t not in kept:
                kept.append(t)
        if len(kept) == 1:
            kept = kept * 2
        _note(notes, prefix + "layer_types", f"{len(types)} layers", kept)
        config["layer_types"] = kept
        n = len(kept)
    else:
        n = min(layers, 2)
    dense_key = _key(config, DENSE_PREFIX)
    if dense_key and 0 < config[dense_key] < layers:
        _set(config, notes, dense_key, 1, prefix)
        n = max(n, 2)
    step = config.get("decoder_sparse_step")
    if isinstance(step, int) and step > 1:
        n = max(n, step)
    if isinstance(config.get("layer_types"), list) and len(config["layer_types"]) != n:
        config["layer_types"] = (config["layer_types"] * n)[:n]
    only = config.get("mlp_only_layers")
    if isinstance(only, list) and only:
        _set(config, notes, "mlp_only_layers", [i for i in only if i < n] or [0], prefix)
    _set(config, notes, layers_key, n, prefix)


def _heads(config, notes, prefix):
    heads_key = _key(config, HEADS)
    if heads_key is None or config[heads_key] <= 0:
        return None
    heads = config[heads_key]
    kv_key = _key(config, KV_HEADS)
    small_heads = min(heads, 4)
    if kv_key and config[kv_key] > 0:
        group = max(1, heads // config[kv_key])
        small_heads = max(small_heads, group)
        _set(config, notes, kv_key, max(1, small_heads // group), prefix)
    _set(config, notes, heads_key, small_heads, prefix)
    return small_heads


def _head_dim(config):
    given = config.get("head_dim")
    if isinstance(given, int) and given in HEAD_DIMS:
        return given
    hidden_key, heads_key = _key(config, HIDDEN), _key(config, HEADS)
    if hidden_key and heads_key and config[heads_key] and config[hidden_key] % config[heads_key] == 0 \
            and config[hidden_key] // config[heads_key] in HEAD_DIMS:
        return config[hidden_key] // config[heads_key]
    return 64


def _experts(config, notes, prefix):
    expert_key = _key(config, EXPERT_KEYS)
    if expert_key is None or config[expert_key] <= 0:
        return
    experts = config[expert_key]
    topk_key = _key(config, TOPK_KEYS)
    top_k = config[topk_key] if topk_key else 1
    small = max(min(experts, MAX_EXPERTS), top_k)
    groups_key = _key(config, GROUPS)
    if groups_key and config[groups_key] > 1:
        small_groups = min(config[groups_key], 4)
        while small % small_groups:
            small += 1
        _set(config, notes, groups_key, small_groups, prefix)
        topk_group_key = _key(config, TOPK_GROUPS)
        if topk_group_key:
            small_topk_group = min(config[topk_group_key], max(1, small_groups // 2))
            _set(config, notes, topk_group_key, small_topk_group, prefix)
            reachable = small_topk_group * (small // small_groups)
            if topk_key and top_k > reachable:
                _set(config, notes, topk_key, reachable, prefix)
    _set(config, notes, expert_key, small, prefix)


def _shrink(config, notes, prefix=""):
    _layer_plan(config, notes, prefix)
    head_dim = _head_dim(config)  # before the head count shrinks: hidden / heads may give it
    heads = _heads(config, notes, prefix)
    mla = "kv_lora_rank" in config
    hidden_key = _key(config, HIDDEN)
    if heads and hidden_key:
        if mla:
            # MLA's per-head sizes stay; the hidden size only needs to hold the ranks' inputs.
            hidden = 1024
        else:
            _set(config, notes, "head_dim", head_dim, prefix)
            hidden = heads * head_dim
        _set(config, notes, hidden_key, hidden, prefix)
        if mla and isinstance(config.get("q_lora_rank"), int) and config["q_lora_rank"] > 384:
            _set(config, notes, "q_lora_rank", 384, prefix)
    if hidden_key:
        hidden = config[hidden_key]
        for key in INTERMEDIATE:
            if _key(config, (key,)):
                _set(config, notes, key, 2 * hidden, prefix)
        for key in MOE_INTERMEDIATE:
            if _key(config, (key,)):
                _set(config, notes, key, 128, prefix)
    # Inference code that sizes its caches by a maximum length: short ones, with a
    # context-extension threshold below them kept below them.
    if _key(config, ("max_seq_len",)) and config["max_seq_len"] > 64:
        extended = _key(config, ("original_seq_len",)) and config["max_seq_len"] > config["original_seq_len"]
        _set(config, notes, "max_seq_len", 64, prefix)
        if extended:
            _set(config, notes, "original_seq_len", 32, prefix)
    _experts(config, notes, prefix)
    window = config.get("sliding_window")
    if isinstance(window, int) and window > SLIDING_WINDOW:
        _set(config, notes, "sliding_window", SLIDING_WINDOW, prefix)
    vocab = config.get("vocab_size")
    if isinstance(vocab, int) and vocab > SMALL_VOCAB:
        _set(config, notes, "vocab_size", SMALL_VOCAB, prefix)
        for key in TOKEN_ID_KEYS:
            value = config.get(key)
            if isinstance(value, int) and value >= SMALL_VOCAB:
                _set(config, notes, key, SMALL_VOCAB - 1, prefix)
            elif isinstance(value, list):
                _set(config, notes, key, [min(v, SMALL_VOCAB - 1) if isinstance(v, int) else v for v in value],
                     prefix)
    for key in ("torch_dtype", "dtype"):
        _set(config, notes, key, "float32", prefix)
    nested = config.get("text_config")
    if isinstance(nested, dict):
        config["text_config"] = dict(nested)
        _shrink(config["text_config"], notes, prefix + "text_config.")


def tiny(config):
    """(a copy of config with small sizes and the same structure, the changes as notes)."""
    small = dict(config)
    notes = []
    _shrink(small, notes)
    return small, notes
