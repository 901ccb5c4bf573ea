"""A deliberately wrong stand-in operator: the test aid that shows a check can fail.

`NPUFUSE_WRONG_OPERATOR=npu_rms_norm[,npu_rotary_mul...]` in the environment of a verify
run makes those operators of the CPU stand-in torch_npu return a plausible but wrong
result (`wrong_version`). The harnesses and the model check then see a patch whose fused
operator is wrong, and must roll its candidate back with the numbers (docs/verify.md).
It never touches a real torch_npu: `device.select` calls `spoil_from_environment` on the
CPU path only.
"""
import os

ENVIRONMENT = "NPUFUSE_WRONG_OPERATOR"


def wrong_version(fn):
    """fn with its first floating output scaled and tilted along its last
    axis (a uniform scale alone would be undone by a renormalisation after
    the operator, such as norm_topk_prob's): a plausible but wrong
    operator. An output that is one of the inputs (an in-place operator such
    as npu_apply_rotary_pos_emb) is changed in place, as the caller reads it
    there; an operator returning nothing has the first input it wrote
    changed."""
    import torch

    def tilt(item):
        n = item.shape[-1] if item.dim() else 1
        return 0.01 + 0.05 * torch.arange(n, dtype=item.dtype, device=item.device) / n

    def spoiled(item, args):
        if any(isinstance(a, torch.Tensor) and a.data_ptr() == item.data_ptr() for a in args):
            return item.mul_(1.25).add_(tilt(item))
        return item * 1.25 + tilt(item)

    def perturbed(*args, **kwargs):
        before = [a.clone() if isinstance(a, torch.Tensor) and a.is_floating_point() else None for a in args]
        result = fn(*args, **kwargs)
        if result is None:
            # An operator that only writes its inputs (a cache scatter): spoil
            # the first floating input it changed, where the caller reads it.
            for a, old in zip(args, before):
                if old is not None and not torch.equal(a, old):
                    a.mul_(1.25).add_(tilt(a))
                    break
            return result
        if isinstance(result, torch.Tensor):
            return spoiled(result, args) if result.is_floating_point() else result
        items = list(result)
        for i, item in enumerate(items):
            if isinstance(item, torch.Tensor) and item.is_floating_point():
                items[i] = spoiled(item, args)
                break
        return type(result)(items) if isinstance(result, tuple) else items

    return perturbed


def spoil_from_environment(torch_npu):
    """Replaces the operators $NPUFUSE_WRONG_OPERATOR names with wrong versions; returns their names."""
    names = [n.strip() for n in os.environ.get(ENVIRONMENT, "").split(",") if n.strip()]
    for name in names:
        right = getattr(torch_npu, name, None)
        if right is None:
            raise RuntimeError(f"{ENVIRONMENT}={name}: the stand-in torch_npu has no such operator")
        if not getattr(right, "npufuse_wrong", False):
            wrong = wrong_version(right)
            wrong.npufuse_wrong = True
            setattr(torch_npu, name, wrong)
    return names
