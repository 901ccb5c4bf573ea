"""RoPE operators against rotate_half / complex-number formulations."""
import unittest

import torch

from npufuse_ref import rope
from tests import direct


def angles(positions, dim, base=10000.0):
    inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return positions.double().unsqueeze(-1) * inv


class RotaryMul(unittest.TestCase):
    def test_half_mode_equals_rotate_half_formula(self):
        torch.manual_seed(0)
        x = torch.randn(2, 5, 4, 32)  # BSND
        a = angles(torch.arange(5), 32)
        cos = torch.cat([a.cos(), a.cos()], -1).reshape(1, 5, 1, 32).float()
        sin = torch.cat([a.sin(), a.sin()], -1).reshape(1, 5, 1, 32).float()
        out = rope.npu_rotary_mul(x, cos, sin)
        want = x.double() * cos.double() + direct.rotate_half(x.double()) * sin.double()
        torch.testing.assert_close(out, want.float())

    def test_interleave_mode_equals_complex_rotation(self):
        torch.manual_seed(1)
        x = torch.randn(1, 3, 2, 16)  # BSND
        a = angles(torch.arange(3), 16)  # (3, 8)
        cos = a.cos().repeat_interleave(2, -1).reshape(1, 3, 1, 16).float()
        sin = a.sin().repeat_interleave(2, -1).reshape(1, 3, 1, 16).float()
        out = rope.npu_rotary_mul(x, cos, sin, rotary_mode="interleave")
        want = direct.complex_rope(x, a.reshape(1, 3, 1, 8))
        torch.testing.assert_close(out, want.float(), atol=1e-5, rtol=1e-5)

    def test_odd_or_wide_head_dim_is_rejected(self):
        with self.assertRaisesRegex(ValueError, "even"):
            rope.npu_rotary_mul(torch.randn(1, 1, 1, 7), torch.randn(1, 1, 1, 7), torch.randn(1, 1, 1, 7))
        with self.assertRaisesRegex(ValueError, "896"):
            rope.npu_rotary_mul(torch.randn(1, 1, 1, 896), torch.randn(1, 1, 1, 896), torch.randn(1, 1, 1, 896))


class ApplyRotaryPosEmb(unittest.TestCase):
    def test_in_place_half_rope_on_q_and_k(self):
        torch.manual_seed(2)
        q, k = torch.randn(2, 3, 4, 128), torch.randn(2, 3, 1, 128)
        a = angles(torch.arange(3), 128)
        cos = torch.cat([a.cos(), a.cos()], -1).reshape(1, 3, 1, 128).expand(2, 3, 1, 128).float().contiguous()
        sin = torch.cat([a.sin(), a.sin()], -1).reshape(1, 3, 1, 128).expand(2, 3, 1, 128).float().contiguous()
        q0, k0 = q.clone(), k.clone()
        rq, rk = rope.npu_apply_rotary_pos_emb(q, k, cos, sin)
        self.assertIs(rq, q)
        want_q = q0.double() * cos.double() + direct.rotate_half(q0.double()) * sin.double()
        torch.testing.assert_close(q, want_q.float())
        want_k = k0.double() * cos.double() + direct.rotate_half(k0.double()) * sin.double()
        torch.testing.assert_close(k, want_k.float())

    def test_a2_constraints(self):
        q = torch.randn(1, 2, 1, 96)
        c = torch.randn(1, 2, 1, 96)
        with self.assertRaisesRegex(ValueError, "64 or 128"):
            rope.npu_apply_rotary_pos_emb(q, q.clone(), c, c)
        with self.assertRaisesRegex(ValueError, "layout"):
            rope.npu_apply_rotary_pos_emb(q, q.clone(), c, c, layout="BSH")
        q = torch.randn(2, 2, 1, 64)
        c = torch.randn(1, 2, 1, 64)
        with self.assertRaisesRegex(ValueError, "cos/sin"):
            rope.npu_apply_rotary_pos_emb(q, q.clone(), c, c)


class InterleaveRope(unittest.TestCase):
    def test_equals_complex_rope_up_to_the_even_odd_permutation(self):
        torch.manual_seed(3)
        x = torch.randn(2, 4, 3, 64)  # (B, N, S, D)
        a = angles(torch.arange(3), 64)  # (S, 32)
        cos = torch.cat([a.cos(), a.cos()], -1).reshape(1, 1, 3, 64).expand(2, 1, 3, 64).float()
        sin = torch.cat([a.sin(), a.sin()], -1).reshape(1, 1, 3, 64).expand(2, 1, 3, 64).float()
        out = rope.npu_interleave_rope(x, cos, sin)
        rotated = direct.complex_rope(x, a.reshape(1, 1, 3, 32))
        permuted = torch.cat([rotated[..., 0::2], rotated[..., 1::2]], -1)
        torch.testing.assert_close(out, permuted.float(), atol=1e-5, rtol=1e-5)

    def test_head_dim_must_be_64(self):
        x = torch.randn(1, 1, 2, 128)
        with self.assertRaisesRegex(ValueError, "64"):
            rope.npu_interleave_rope(x, torch.randn(1, 1, 2, 128), torch.randn(1, 1, 2, 128))


class Mrope(unittest.TestCase):
    def test_one_dim_positions_half_mode_partial_rotary(self):
        torch.manual_seed(4)
        tokens, heads, head, rot = 5, 2, 64, 32
        pos = torch.tensor([0, 3, 1, 7, 2])
        a = angles(torch.arange(10), rot)
        cache = torch.cat([a.cos(), a.sin()], -1).float()
        q = torch.randn(tokens, heads * head)
        k = torch.randn(tokens, heads * head)
        q_out, k_out = rope.npu_mrope(pos, q, k, cache, head)
        qh = q.double().reshape(tokens, heads, head)
        c = torch.cat([a[pos].cos(), a[pos].cos()], -1).unsqueeze(1)
        s = torch.cat([a[pos].sin(), a[pos].sin()], -1).unsqueeze(1)
        rotated = qh[..., :rot] * c + direct.rotate_half(qh[..., :rot]) * s
        want = torch.cat([rotated, qh[..., rot:]], -1).reshape(tokens, -1)
        torch.testing.assert_close(q_out, want.float(), atol=1e-5, rtol=1e-5)

    def test_interleaved_mode_is_gpt_j_rotation(self):
        torch.manual_seed(6)
        pos = torch.tensor([1, 4, 2])
        a = angles(torch.arange(8), 32)
        cache = torch.cat([a.cos(), a.sin()], -1).float()
        q = torch.randn(3, 2 * 32)
        out, _ = rope.npu_mrope(pos, q, q.clone(), cache, 32, rotary_mode="interleaved")
        want = direct.complex_rope(q.reshape(3, 2, 32), a[pos].unsqueeze(1)).reshape(3, -1)
        torch.testing.assert_close(out, want.float(), atol=1e-5, rtol=1e-5)

    def test_mrope_sections_pick_position_rows(self):
        torch.manual_seed(5)
        tokens, head = 3, 32
        pos = torch.stack([torch.tensor([0, 1, 2]), torch.tensor([4, 5, 6]), torch.tensor([7, 8, 9])])
        a = angles(torch.arange(10), head)
        cache = torch.cat([a.cos(), a.sin()], -1).float()
        q = torch.randn(tokens, head)
        out, _ = rope.npu_mrope(pos, q, q.clone(), cache, head, mrope_section=[4, 6, 6])
        sel = torch.cat([a[pos[0]][:, :4], a[pos[1]][:, 4:10], a[pos[2]][:, 10:]], -1)
        c = torch.cat([sel.cos(), sel.cos()], -1)
        s = torch.cat([sel.sin(), sel.sin()], -1)
        want = q.double() * c + direct.rotate_half(q.double()) * s
        torch.testing.assert_close(out, want.float(), atol=1e-5, rtol=1e-5)


if __name__ == "__main__":
    unittest.main()
