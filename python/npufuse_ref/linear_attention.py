"""Gated delta rule (Gated DeltaNet linear attention): npu_chunk_gated_delta_rule and
npu_recurrent_gated_delta_rule; the short causal convolution in front of it: npu_masked_causal_conv1d.

Both take packed tokens (TND: [T, N, D]) and keep the state per value head as
[Dv, Dk] (value axis first). Per value head h, token t (documented formula):

    S_t = exp(g_t) * S_{t-1} + beta_t * (v_t - exp(g_t) * S_{t-1} k_t) k_t^T
    o_t = S_t (scale * q_t)

q and k are used as given (no L2 normalisation inside), beta is the write strength
itself (after the model's sigmoid), g the log decay. Nk query/key heads serve Nv value
heads; value head h reads key head h // (Nv / Nk). The documentation does not say how
the heads are grouped: this reference assumes consecutive value heads share a key head
(the layout repeat_interleave gives), which is exact when Nk == Nv.
"""
import torch

from ._common import as_int_list, f32, require


def _heads(op, query, key, value):
    require(query.dim() == 3 and key.dim() == 3 and value.dim() == 3, op,
            "query, key and value are [T, N, D] (TND)")
    require(query.shape == key.shape, op, "query and key have the same shape [T, Nk, Dk]")
    require(value.shape[0] == query.shape[0], op, "query and value have the same token count T")
    nk, nv = query.shape[1], value.shape[1]
    require(nv % nk == 0, op, "Nv must be a multiple of Nk")
    return nk, nv


def _step(state, q, k, v, beta, g, gk, scale):
    """One token for every value head: state [Nv, Dv, Dk], q/k [Nv, Dk], v [Nv, Dv], beta/g [Nv]."""
    decay = torch.ones(state.shape[0]) if g is None else g.exp()
    state = state * decay[:, None, None]
    if gk is not None:
        state = state * gk.exp()[:, None, :]
    b = torch.ones(state.shape[0]) if beta is None else beta
    predicted = torch.einsum("hvk,hk->hv", state, k)
    state = state + torch.einsum("hv,hk->hvk", (v - predicted) * b[:, None], k)
    out = torch.einsum("hvk,hk->hv", state, q * scale)
    return state, out


def _per_value_head(x, nv):
    # [T, Nk, D] -> [T, Nv, D]: value head h reads key head h // (Nv // Nk)
    return x.repeat_interleave(nv // x.shape[1], dim=1)


def npu_chunk_gated_delta_rule(query, key, value, *, beta=None, initial_state=None, actual_seq_lengths=None,
                               scale=None, g=None):
    op = "npu_chunk_gated_delta_rule"
    nk, nv = _heads(op, query, key, value)
    require(nk <= 64 and nv <= 64, op, "Nk <= 64 and Nv <= 64")
    require(query.shape[2] == 128 and value.shape[2] == 128, op, "Dk = Dv = 128")
    t = query.shape[0]
    lens = as_int_list(actual_seq_lengths) if actual_seq_lengths is not None else [t]
    require(sum(lens) == t and all(n >= 0 for n in lens), op, "actual_seq_lengths sum to T")
    dk, dv = query.shape[2], value.shape[2]
    if initial_state is not None:
        require(tuple(initial_state.shape) == (len(lens), nv, dv, dk), op, "initial_state is [B, Nv, Dv, Dk]")
    scale = 1.0 if scale is None else float(scale)
    q, k, v = _per_value_head(f32(query), nv), _per_value_head(f32(key), nv), f32(value)
    b, gg = f32(beta), f32(g)
    out = torch.zeros(t, nv, dv)
    finals = []
    start = 0
    for i, n in enumerate(lens):
        state = f32(initial_state[i]).clone() if initial_state is not None else torch.zeros(nv, dv, dk)
        for pos in range(start, start + n):
            state, out[pos] = _step(state, q[pos], k[pos], v[pos], None if b is None else b[pos],
                                    None if gg is None else gg[pos], None, scale)
        finals.append(state)
        start += n
    return out.to(value.dtype), torch.stack(finals).to(value.dtype)


def npu_recurrent_gated_delta_rule(query, key, value, state, *, beta=None, scale=None, actual_seq_lengths=None,
                                   ssm_state_indices=None, num_accepted_tokens=None, g=None, gk=None):
    """Updates `state` in place. Each request starts from the slot of its first token
    (num_accepted_tokens None: one accepted token) and every token's new state is
    written into that token's slot, so the request's final state lies in the slot of
    its last token. Speculative acceptance (num_accepted_tokens) is not modelled."""
    op = "npu_recurrent_gated_delta_rule"
    nk, nv = _heads(op, query, key, value)
    require(1 <= nk <= 256 and 1 <= nv <= 256, op, "1 <= Nk, Nv <= 256")
    dk, dv = query.shape[2], value.shape[2]
    require(1 <= dk <= 512 and 1 <= dv <= 512, op, "1 <= Dk, Dv <= 512")
    t = query.shape[0]
    require(state.dim() == 4 and tuple(state.shape[1:]) == (nv, dv, dk) and state.shape[0] >= t, op,
            "state is [BlockNum, Nv, Dv, Dk] with BlockNum >= T")
    lens = as_int_list(actual_seq_lengths) if actual_seq_lengths is not None else [1] * t
    require(sum(lens) == t and all(1 <= n <= 8 for n in lens), op, "each actual_seq_lengths value in [1, 8], summing to T")
    if num_accepted_tokens is not None:
        require(all(int(a) == 1 for a in as_int_list(num_accepted_tokens)), op,
                "num_accepted_tokens other than 1 (speculative acceptance) is not modelled by the CPU reference")
    slots = as_int_list(ssm_state_indices) if ssm_state_indices is not None else list(range(t))
    require(len(slots) == t and all(0 <= s < state.shape[0] for s in slots), op,
            "ssm_state_indices has T entries in [0, BlockNum)")
    scale = dk ** -0.5 if scale is None else float(scale)
    q, k, v = _per_value_head(f32(query), nv), _per_value_head(f32(key), nv), f32(value)
    b, gg, gkk = f32(beta), f32(g), f32(gk)
    out = torch.zeros(t, nv, dv)
    start = 0
    for n in lens:
        s = f32(state[slots[start]]).clone()
        for pos in range(start, start + n):
            s, out[pos] = _step(s, q[pos], k[pos], v[pos], None if b is None else b[pos],
                                None if gg is None else gg[pos], None if gkk is None else gkk[pos], scale)
            state[slots[pos]] = s.to(state.dtype)
        start += n
    return out.to(value.dtype)


def npu_masked_causal_conv1d(input, weight, *, mask=None):
    """output[s, b, h] = sum_k weight[k, h] * input[s - (W - 1) + k, b, h], W = 3, positions
    before the start read as 0; where mask[b, s] is False the output is 0."""
    op = "npu_masked_causal_conv1d"
    require(input.dim() == 3, op, "input is [S, B, H] (sequence first)")
    require(weight.dim() == 2 and weight.shape[0] == 3 and weight.shape[1] == input.shape[2], op,
            "weight is [W, H] with W = 3")
    s, b, h = input.shape
    x = torch.cat([torch.zeros(2, b, h), f32(input)], dim=0)
    w = f32(weight)
    out = sum(w[k] * x[k:k + s] for k in range(3))
    if mask is not None:
        require(mask.dtype == torch.bool and tuple(mask.shape) == (b, s), op, "mask is bool [B, S]")
        out = out * mask.t()[..., None].to(out.dtype)
    return out.to(input.dtype)
