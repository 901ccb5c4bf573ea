"""sparse_mode semantics and atten_mask validation shared by the attention operators.

Mask convention of the device: a True (non-zero) entry means "do not attend".
"""
import torch

from ._common import ConstraintError, require

OPTIMIZED_MASK = 2048
INT_MAX = 2147483647
_MASK_DTYPES = (torch.bool, torch.int8, torch.uint8)


def _as_bool(op, mask):
    require(mask.dtype in _MASK_DTYPES, op, "atten_mask dtype must be bool, int8 or uint8")
    return mask != 0


_EXPECTED = []


def _expected_optimized_mask():
    if not _EXPECTED:
        _EXPECTED.append(torch.ones(OPTIMIZED_MASK, OPTIMIZED_MASK, dtype=torch.bool).triu(1))
    return _EXPECTED[0]


def check_optimized_mask(op, sparse_mode, mask):
    """Modes 2/3/4 take the compressed 2048 x 2048 mask: upper triangle (j > i) set."""
    if mask is None:
        raise ConstraintError(op, f"sparse_mode {sparse_mode} needs the optimized atten_mask "
                                  "of shape (2048, 2048) (upper triangle True)")
    shapes = ((OPTIMIZED_MASK,) * 2, (1,) + (OPTIMIZED_MASK,) * 2, (1, 1) + (OPTIMIZED_MASK,) * 2)
    require(tuple(mask.shape) in shapes, op,
            f"sparse_mode {sparse_mode} needs atten_mask of shape (2048, 2048), (1, 2048, 2048) "
            f"or (1, 1, 2048, 2048), got {tuple(mask.shape)}")
    m = _as_bool(op, mask).reshape(OPTIMIZED_MASK, OPTIMIZED_MASK)
    require(torch.equal(m, _expected_optimized_mask()), op,
            "the optimized atten_mask must be triu(ones(2048, 2048), diagonal=1): "
            "True above the diagonal, False on and below it")


def check_full_mask(op, mask, batch, q_len, kv_len):
    """Modes 0/1: (Q_S, KV_S), (1, Q_S, KV_S), (B|1, 1, Q_S, KV_S); (B, KV_S) when Q_S is 1.

    Shapes whose query axis is 1 while Q_S > 1 are accepted by the device and then
    mishandled, so they are rejected here.
    """
    shape = tuple(mask.shape)
    ok = False
    if mask.dim() == 2:
        ok = (shape[0] >= q_len and shape[1] >= kv_len) or (q_len == 1 and shape[0] == batch
                                                          and shape[1] >= kv_len)
    elif mask.dim() == 3:
        ok = shape[0] == 1 and shape[1] >= q_len and shape[2] >= kv_len
    elif mask.dim() == 4:
        ok = shape[0] in (1, batch) and shape[1] == 1 and shape[2] >= q_len and shape[3] >= kv_len
    require(ok, op, f"atten_mask shape {shape} must be (Q_S, KV_S), (1, Q_S, KV_S), "
                    f"(B, 1, Q_S, KV_S) or (1, 1, Q_S, KV_S) with Q_S={q_len}, KV_S={kv_len} "
                    "(B, KV_S allowed only when Q_S is 1)")
    _as_bool(op, mask)


def user_mask_rows(mask, batch_index, q_len, kv_len, q_is_one):
    """The (q_len, kv_len) slice of a full mask for one batch (True = masked)."""
    m = mask != 0
    if m.dim() == 2:
        if q_is_one and m.shape[0] > 1:
            return m[batch_index:batch_index + 1, :kv_len]  # the (B, KV_S) form
        return m[:q_len, :kv_len]
    if m.dim() == 3:
        return m[0, :q_len, :kv_len]
    b = batch_index if m.shape[0] > 1 else 0
    return m[b, 0, :q_len, :kv_len]


def allowed_positions(sparse_mode, q_len, kv_len, pre_tokens, next_tokens, user_masked):
    """Boolean (q_len, kv_len): True where query row i may attend key column j."""
    i = torch.arange(q_len).unsqueeze(1)
    j = torch.arange(kv_len).unsqueeze(0)
    if sparse_mode == 0:
        if user_masked is None:
            return torch.ones(q_len, kv_len, dtype=torch.bool)
        band = (j - i <= next_tokens) & (i - j <= pre_tokens)
        return band & ~user_masked
    if sparse_mode == 1:
        return ~user_masked
    if sparse_mode == 2:
        return j <= i
    shift = kv_len - q_len
    if sparse_mode == 3:
        return j <= i + shift
    if sparse_mode == 4:
        d = j - i - shift
        return (d <= next_tokens) & (-d <= pre_tokens)
    raise AssertionError(sparse_mode)
