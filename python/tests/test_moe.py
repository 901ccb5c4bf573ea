"""MoE routers, routing, grouped matmul and finalize against per-token direct formulations."""
import unittest

import torch

from npufuse_ref import moe
from tests import direct


def pairs_by_expert(expert_idx, start, end):
    """Flattened pair numbers t * K + j grouped by expert (ascending), row-major within an expert."""
    k = expert_idx.shape[1]
    out = []
    for e in range(start, end):
        for t in range(expert_idx.shape[0]):
            for j in range(k):
                if int(expert_idx[t, j]) == e:
                    out.append(t * k + j)
    return out


class GatingTopKSoftmax(unittest.TestCase):
    def test_softmax_then_topk_and_column_major_row_idx(self):
        torch.manual_seed(0)
        x = torch.randn(5, 8)
        y, idx, row_idx = moe.npu_moe_gating_top_k_softmax(x, k=2)
        probs = torch.exp(x.double()) / torch.exp(x.double()).sum(-1, keepdim=True)
        for t in range(5):
            order = sorted(range(8), key=lambda e: -float(probs[t, e]))[:2]
            self.assertEqual(idx[t].tolist(), order)
            torch.testing.assert_close(y[t].double(), probs[t, order])
            self.assertEqual(row_idx[t].tolist(), [t, 5 + t])
        self.assertEqual(idx.dtype, torch.int32)

    def test_finished_rows_and_k_limit(self):
        x = torch.randn(3, 4)
        y, idx, _ = moe.npu_moe_gating_top_k_softmax(x, torch.tensor([False, True, False]), k=2)
        self.assertEqual(idx[1].tolist(), [4, 4])
        self.assertEqual(y[1].tolist(), [0.0, 0.0])
        with self.assertRaisesRegex(ValueError, "k must"):
            moe.npu_moe_gating_top_k_softmax(x, k=5)


def grouped_gate_direct(x, k, bias, k_group, group_count, mode, sigmoid, scale, eps=1e-20):
    """Per-row loops: group scores, surviving groups, top-k of the biased scores."""
    x = x.double()
    scores = torch.sigmoid(x) if sigmoid else torch.softmax(x, -1)
    choice = scores + (bias.double() if bias is not None else 0)
    per = x.shape[1] // group_count
    ys, ids = [], []
    for t in range(x.shape[0]):
        gs = []
        for g in range(group_count):
            vals = sorted(choice[t, g * per:(g + 1) * per].tolist(), reverse=True)
            gs.append(vals[0] if mode == 0 else vals[0] + vals[1])
        keep = sorted(range(group_count), key=lambda g: (-gs[g], g))[:k_group]
        cand = [e for e in range(x.shape[1]) if e // per in keep]
        top = sorted(cand, key=lambda e: (-float(choice[t, e]), e))[:k]
        w = scores[t, top]
        if sigmoid:
            w = w / (w.sum() + eps)
        ys.append(w * scale)
        ids.append(top)
    return torch.stack(ys), ids


class GatingTopK(unittest.TestCase):
    def test_deepseek_grouped_sigmoid_router(self):
        torch.manual_seed(1)
        x, bias = torch.randn(4, 64), torch.randn(64) * 0.1
        for mode in (0, 1):
            y, idx, norm_out = moe.npu_moe_gating_top_k(
                x, 6, bias=bias, k_group=3, group_count=8, group_select_mode=mode, norm_type=1,
                routed_scaling_factor=2.5, out_flag=True)
            want_y, want_ids = grouped_gate_direct(x, 6, bias, 3, 8, mode, True, 2.5)
            self.assertEqual(idx.tolist(), want_ids)
            torch.testing.assert_close(y.double(), want_y, atol=1e-6, rtol=1e-6)
            torch.testing.assert_close(norm_out.double(), torch.sigmoid(x.double()), atol=1e-6, rtol=1e-6)

    def test_softmax_router_without_groups_is_not_renormalised(self):
        torch.manual_seed(2)
        x = torch.randn(3, 16)
        y, idx, norm_out = moe.npu_moe_gating_top_k(x, 4, norm_type=0)
        want_y, want_ids = grouped_gate_direct(x, 4, None, 1, 1, 0, False, 1.0)
        self.assertEqual(idx.tolist(), want_ids)
        torch.testing.assert_close(y.double(), want_y, atol=1e-6, rtol=1e-6)
        self.assertEqual(norm_out.numel(), 0)

    def test_constraints(self):
        x = torch.randn(2, 64)
        with self.assertRaisesRegex(ValueError, "renorm"):
            moe.npu_moe_gating_top_k(x, 2, renorm=1)
        with self.assertRaisesRegex(ValueError, "k must"):
            moe.npu_moe_gating_top_k(x, 17, k_group=2, group_count=8)
        with self.assertRaisesRegex(ValueError, "2048"):
            moe.npu_moe_gating_top_k(torch.randn(1, 4096), 2)
        with self.assertRaisesRegex(ValueError, "bias dtype"):
            moe.npu_moe_gating_top_k(x, 2, bias=torch.randn(64, dtype=torch.float64))


class InitRoutingV1(unittest.TestCase):
    def test_doc_example(self):
        x = torch.tensor([[0.1] * 4, [0.2] * 4, [0.3] * 4])
        row_idx = torch.tensor([[0, 3], [1, 4], [2, 5]], dtype=torch.int32)
        expert_idx = torch.tensor([[1, 2], [0, 1], [0, 2]], dtype=torch.int32)
        ex, erow, eexp = moe.npu_moe_init_routing(x, row_idx, expert_idx, 3)
        self.assertEqual(eexp.tolist(), [0, 0, 1, 1, 2, 2])
        self.assertEqual(erow.tolist(), [2, 0, 1, 4, 3, 5])
        torch.testing.assert_close(ex[:, 0], torch.tensor([0.2, 0.3, 0.1, 0.2, 0.1, 0.3]))
        cum = moe.npu_moe_compute_expert_tokens(eexp, 4)
        self.assertEqual(cum.tolist(), [2, 4, 6, 6])


class InitRoutingV2(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(3)
        self.x = torch.randn(4, 8)
        self.expert_idx = torch.tensor([[2, 0], [1, 2], [3, 0], [0, 1]], dtype=torch.int32)

    def test_dropless_full_range_outputs(self):
        order = pairs_by_expert(self.expert_idx, 0, 4)
        for kind, want_stats in ((0, [3, 5, 7, 8]), (1, [3, 2, 2, 1])):
            ex, erow, stats, _ = moe.npu_moe_init_routing_v2(
                self.x, self.expert_idx, expert_num=4, expert_tokens_num_type=kind,
                expert_tokens_num_flag=True, active_expert_range=[0, 4])
            torch.testing.assert_close(ex, self.x[[p // 2 for p in order]])
            self.assertEqual([erow[p].item() for p in order], list(range(8)))
            self.assertEqual(stats.tolist(), want_stats)
        _, erow, stats, _ = moe.npu_moe_init_routing_v2(
            self.x, self.expert_idx, expert_num=4, expert_tokens_num_type=2,
            expert_tokens_num_flag=True, row_idx_type=1)
        self.assertEqual(erow.tolist(), order)
        self.assertEqual(stats.tolist(), [[0, 3], [1, 2], [2, 2], [3, 1]])

    def test_active_expert_range_keeps_local_experts(self):
        order = pairs_by_expert(self.expert_idx, 1, 3)
        ex, erow, stats, _ = moe.npu_moe_init_routing_v2(
            self.x, self.expert_idx, expert_num=4, expert_tokens_num_type=1,
            expert_tokens_num_flag=True, active_expert_range=[1, 3])
        torch.testing.assert_close(ex[:len(order)], self.x[[p // 2 for p in order]])
        self.assertEqual(float(ex[len(order):].abs().sum()), 0.0)
        self.assertEqual(stats.tolist(), [2, 2])
        dropped = [p for p in range(8) if p not in order]
        self.assertTrue(all(erow[p].item() == -1 for p in dropped))

    def test_index_dtypes(self):
        with self.assertRaisesRegex(ValueError, "int32"):
            moe.npu_moe_init_routing_v2(self.x, self.expert_idx.long(), expert_num=4)
        with self.assertRaisesRegex(ValueError, "int64"):
            moe.npu_grouped_matmul([self.x], [torch.randn(4, 8, 2)], group_type=0,
                                   group_list=torch.tensor([2, 2, 2, 2], dtype=torch.int32),
                                   group_list_type=1)

    def test_dynamic_quant_mode(self):
        ex, _, _, scale = moe.npu_moe_init_routing_v2(self.x, self.expert_idx, expert_num=4,
                                                       quant_mode=1)
        order = pairs_by_expert(self.expert_idx, 0, 4)
        rows = self.x[[p // 2 for p in order]].double()
        torch.testing.assert_close(scale.double(), rows.abs().amax(-1) / 127)
        self.assertEqual(ex.dtype, torch.int8)
        self.assertLessEqual(float((ex.double() * scale.double().unsqueeze(-1) - rows).abs().max()),
                             float(scale.max()) / 2 + 1e-6)

    def test_static_quant_mode(self):
        ex, _, _, _ = moe.npu_moe_init_routing_v2(self.x, self.expert_idx, expert_num=4, quant_mode=0,
                                                   scale=torch.tensor([20.0]), offset=torch.tensor([1.0]))
        order = pairs_by_expert(self.expert_idx, 0, 4)
        want = (self.x[[p // 2 for p in order]] * 20 + 1).round().clamp(-128, 127)
        torch.testing.assert_close(ex.float(), want)


class GroupedMatmul(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(4)
        self.x = torch.randn(7, 16)
        self.w = torch.randn(3, 16, 8)
        self.sizes = [3, 0, 4]

    def direct(self):
        outs, row = [], 0
        for e, n in enumerate(self.sizes):
            outs.append(self.x[row:row + n].double() @ self.w[e].double())
            row += n
        return outs

    def test_count_and_cumsum_group_lists(self):
        want = torch.cat(self.direct()).float()
        y = moe.npu_grouped_matmul([self.x], [self.w], group_list=torch.tensor(self.sizes),
                                   group_type=0, group_list_type=1, split_item=3)
        self.assertEqual(len(y), 1)
        torch.testing.assert_close(y[0], want, atol=1e-5, rtol=1e-5)
        y = moe.npu_grouped_matmul([self.x], [self.w], group_list=torch.tensor([3, 3, 7]),
                                   group_type=0, group_list_type=0, split_item=2)
        torch.testing.assert_close(y[0], want, atol=1e-5, rtol=1e-5)
        parts = moe.npu_grouped_matmul([self.x], [self.w], group_list=torch.tensor([3, 3, 7]),
                                       group_type=0, split_item=0)
        self.assertEqual([p.shape[0] for p in parts], self.sizes)

    def test_key_value_group_list_with_per_token_int8(self):
        xq = torch.randint(-5, 5, (5, 16), dtype=torch.int8)
        wq = torch.randint(-5, 5, (3, 16, 8), dtype=torch.int8)
        scale = torch.rand(3, 8)
        pts = torch.rand(5)
        y = moe.npu_grouped_matmul([xq], [wq], scale=[scale], per_token_scale=[pts],
                                   group_list=torch.tensor([[2, 3], [0, 2], [0, 0]]), group_type=0,
                                   group_list_type=2, split_item=3, output_dtype=torch.bfloat16)[0]
        acc = torch.cat([xq[:3].double() @ wq[2].double() * scale[2].double(),
                         xq[3:].double() @ wq[0].double() * scale[0].double()])
        torch.testing.assert_close(y.float(), (acc * pts.double().unsqueeze(-1)).float(),
                                   atol=0.05, rtol=0.01)

    def test_weight_only_fake_quant(self):
        wq = torch.randint(-8, 8, (3, 16, 8), dtype=torch.int8)
        s, o = torch.rand(3, 8), torch.randn(3, 8)
        y = moe.npu_grouped_matmul([self.x], [wq], antiquant_scale=[s], antiquant_offset=[o],
                                   group_list=torch.tensor(self.sizes), group_type=0,
                                   group_list_type=1, split_item=3)[0]
        row, want = 0, []
        for e, n in enumerate(self.sizes):
            w = (wq[e].double() + o[e].double()) * s[e].double()
            want.append(self.x[row:row + n].double() @ w)
            row += n
        torch.testing.assert_close(y, torch.cat(want).float(), atol=1e-4, rtol=1e-4)


class FinalizeAndChain(unittest.TestCase):
    def test_v2_chain_equals_per_token_expert_mix(self):
        """gating -> init_routing_v2 (count) -> GMM (group_list_type 1) -> finalize (mode 2)."""
        torch.manual_seed(5)
        tokens, hidden, inter, experts, k = 6, 16, 12, 4, 2
        x = torch.randn(tokens, hidden)
        logits = torch.randn(tokens, experts)
        w_up = torch.randn(experts, hidden, 2 * inter) * 0.2
        w_down = torch.randn(experts, inter, hidden) * 0.2
        shared = torch.randn(tokens, hidden)
        weights, ids, _ = moe.npu_moe_gating_top_k_softmax(logits, k=k)
        ex, erow, counts, _ = moe.npu_moe_init_routing_v2(
            x, ids, expert_num=experts, expert_tokens_num_type=1, expert_tokens_num_flag=True,
            active_expert_range=[0, experts])
        up = moe.npu_grouped_matmul([ex], [w_up], group_list=counts, group_type=0,
                                    group_list_type=1, split_item=3)[0]
        gate, lin = up.chunk(2, -1)
        act = torch.nn.functional.silu(gate) * lin
        down = moe.npu_grouped_matmul([act], [w_down], group_list=counts, group_type=0,
                                      group_list_type=1, split_item=3)[0]
        out = moe.npu_moe_finalize_routing(down, shared, None, None, weights, erow, ids,
                                           drop_pad_mode=2)
        want = shared.double().clone()
        for t in range(tokens):
            for j in range(k):
                e = int(ids[t, j])
                h = x[t].double() @ w_up[e].double()
                a = direct.silu(h[:inter]) * h[inter:]
                want[t] += float(weights[t, j]) * (a @ w_down[e].double())
        torch.testing.assert_close(out.double(), want, atol=1e-4, rtol=1e-4)

    def test_column_major_mode0_with_bias_and_two_skips(self):
        torch.manual_seed(6)
        rows, k, h, e = 3, 2, 4, 3
        expanded = torch.randn(rows * k, h)
        dst = torch.randperm(rows * k).to(torch.int32)
        expert = torch.randint(0, e, (rows, k), dtype=torch.int32)
        scales, bias = torch.rand(rows, k), torch.randn(e, h)
        s1, s2 = torch.randn(rows, h), torch.randn(rows, h)
        out = moe.npu_moe_finalize_routing(expanded, s1, s2, bias, scales, dst, expert, drop_pad_mode=0)
        want = s1.double() + s2.double()
        for i in range(rows):
            for j in range(k):
                r = expanded[int(dst[j * rows + i])].double() + bias[int(expert[i, j])].double()
                want[i] += float(scales[i, j]) * r
        torch.testing.assert_close(out.double(), want, atol=1e-5, rtol=1e-5)
        with self.assertRaisesRegex(ValueError, "skip2"):
            moe.npu_moe_finalize_routing(expanded, None, s2, bias, scales, dst, expert)


class FinalizeDropPad(unittest.TestCase):
    def test_drop_pad_modes_read_e_c_h_rows_and_skip_dropped_pairs(self):
        torch.manual_seed(8)
        rows, k, e, c, h = 3, 2, 2, 2, 4
        expanded = torch.randn(e, c, h)
        flat = expanded.reshape(-1, h)
        scales = torch.rand(rows, k)
        expert = torch.tensor([[0, 1], [1, 0], [0, 1]], dtype=torch.int32)
        # Row-major destinations (mode 3) into the flattened (E * C) slots: expert 0 owns
        # slots 0-1, expert 1 slots 2-3; token 2's pairs found both experts full (-1).
        dst_row_major = torch.tensor([0, 2, 3, 1, -1, -1], dtype=torch.int32)
        out3 = moe.npu_moe_finalize_routing(expanded, None, None, None, scales, dst_row_major,
                                            expert, drop_pad_mode=3)
        want = torch.zeros(rows, h, dtype=torch.float64)
        for i in range(rows):
            for j in range(k):
                d = int(dst_row_major[i * k + j])
                if d >= 0:
                    want[i] += float(scales[i, j]) * flat[d].double()
        torch.testing.assert_close(out3.double(), want, atol=1e-5, rtol=1e-5)
        col_major = dst_row_major.reshape(rows, k).t().reshape(-1).contiguous()
        out1 = moe.npu_moe_finalize_routing(expanded, None, None, None, scales, col_major, expert,
                                            drop_pad_mode=1)
        torch.testing.assert_close(out1, out3)


class ActiveNum(unittest.TestCase):
    def test_active_num_caps_the_rows(self):
        torch.manual_seed(9)
        x = torch.randn(4, 8)
        ids = torch.tensor([[2, 0], [1, 2], [3, 0], [0, 1]], dtype=torch.int32)
        ex, erow, _, _ = moe.npu_moe_init_routing_v2(x, ids, expert_num=4, active_num=5)
        order = pairs_by_expert(ids, 0, 4)
        self.assertEqual(tuple(ex.shape), (5, 8))
        torch.testing.assert_close(ex, x[[p // 2 for p in order[:5]]])


class ReRouting(unittest.TestCase):
    def test_rank_major_to_expert_major(self):
        counts = torch.tensor([[1, 2], [2, 1]], dtype=torch.int32)  # 2 ranks x 2 local experts
        tokens = torch.arange(6).float().unsqueeze(1).expand(6, 4).contiguous()
        scales = torch.arange(6).float()
        out, out_s, idx, per_expert = moe.npu_moe_re_routing(tokens, counts, per_token_scales=scales)
        # rank0: e0 -> row 0, e1 -> rows 1,2; rank1: e0 -> rows 3,4, e1 -> row 5
        self.assertEqual(idx.tolist(), [0, 3, 4, 1, 2, 5])
        self.assertEqual(out[:, 0].tolist(), [0, 3, 4, 1, 2, 5])
        self.assertEqual(out_s.tolist(), [0, 3, 4, 1, 2, 5])
        self.assertEqual(per_expert.tolist(), [3, 3])


class GroupedMatmulFinalizeRouting(unittest.TestCase):
    def test_a8w8_scatter_add_with_shared_expert(self):
        torch.manual_seed(10)
        m, k, n, e = 6, 32, 8, 3
        x = torch.randint(-8, 8, (m, k), dtype=torch.int8)
        w = torch.randint(-8, 8, (e, k, n), dtype=torch.int8)
        scale, pts, logit = torch.rand(e, n) * 0.1, torch.rand(m), torch.rand(m)
        row_index = torch.tensor([2, 0, 1, 2, 3, 0])
        shared = torch.randn(2, n).bfloat16()
        out = moe.npu_grouped_matmul_finalize_routing(
            x, w, torch.tensor([2, 3, 1]), scale=scale, pertoken_scale=pts, logit=logit,
            row_index=row_index, shared_input=shared, shared_input_weight=0.5,
            shared_input_offset=1, output_bs=4)
        want = torch.zeros(4, n, dtype=torch.float64)
        experts = [0, 0, 1, 1, 1, 2]
        for r in range(m):
            y = x[r].double() @ w[experts[r]].double() * scale[experts[r]].double() * float(pts[r])
            want[int(row_index[r])] += float(logit[r]) * y
        want[1:3] += 0.5 * shared.double()
        self.assertEqual(out.dtype, torch.float32)
        torch.testing.assert_close(out.double(), want, atol=1e-4, rtol=1e-5)


class GroupedMatmulSwigluQuant(unittest.TestCase):
    def test_a8w8_gate_first_then_per_token_quant(self):
        torch.manual_seed(12)
        x = torch.randint(-8, 8, (5, 32), dtype=torch.int8)
        w = torch.randint(-8, 8, (2, 32, 16), dtype=torch.int8)
        ws, xs = torch.rand(2, 16) * 0.05, torch.rand(5) * 0.05
        y, scale = moe.npu_grouped_matmul_swiglu_quant_v2(x, [w], [ws], xs, torch.tensor([2, 5]))
        rows = []
        for r, e in enumerate([0, 0, 1, 1, 1]):
            c = x[r].double() @ w[e].double() * ws[e].double() * float(xs[r])
            rows.append(direct.silu(c[:8]) * c[8:])
        s = torch.stack(rows)
        torch.testing.assert_close(scale.double(), s.abs().amax(-1) / 127, atol=1e-7, rtol=1e-5)
        self.assertLessEqual(float((y.double() - s / (s.abs().amax(-1, keepdim=True) / 127)).abs().max()), 0.51)


class SingleRankMc2(unittest.TestCase):
    def test_combine_add_rms_norm_and_first_version_pair(self):
        torch.manual_seed(11)
        x = torch.randn(3, 8)
        ids = torch.tensor([[0, 2], [1, 0], [2, 3]], dtype=torch.int32)
        weights, residual, gamma = torch.rand(3, 2), torch.randn(3, 1, 8), torch.rand(8)
        expand_x, _, expand_idx, _, ep_recv, tp_recv, _ = moe.npu_moe_distribute_dispatch(
            x, ids, "ep", 1, 0, 4)
        self.assertEqual(tuple(expand_idx.shape), (6,))
        combined = moe.npu_moe_distribute_combine(expand_x, ids, expand_idx, ep_recv, weights, "ep",
                                                  1, 0, 4)
        torch.testing.assert_close(combined, x * weights.sum(-1, keepdim=True), atol=1e-5, rtol=1e-5)
        y, rstd, xo = moe.npu_moe_distribute_combine_add_rms_norm(
            expand_x, ids, expand_idx, ep_recv, weights, residual, gamma, "ep", 1, 0, 4)
        s = combined.unsqueeze(1).double() + residual.double()
        torch.testing.assert_close(xo.double(), s, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(y.double(), direct.rms_norm(s, gamma, 1e-6), atol=1e-5, rtol=1e-5)
        self.assertEqual(tuple(rstd.shape), (3, 1, 1))

    def test_dispatch_combine_roundtrip(self):
        torch.manual_seed(7)
        x = torch.randn(3, 8)
        ids = torch.tensor([[0, 2], [1, 0], [2, 3]], dtype=torch.int32)
        weights = torch.rand(3, 2)
        expand_x, _, assist, counts, ep_recv, tp_recv, _ = moe.npu_moe_distribute_dispatch_v2(
            x, ids, "ep", 1, 0, 4)
        self.assertEqual(counts.tolist(), [2, 1, 2, 1])
        doubled = expand_x * 2
        out = moe.npu_moe_distribute_combine_v2(doubled, ids, assist, ep_recv, weights, "ep", 1, 0, 4,
                                                tp_send_counts=tp_recv, shared_expert_x=x)
        want = x + 2 * x * weights.sum(-1, keepdim=True)
        torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-5)

    def test_multi_rank_is_not_emulated(self):
        with self.assertRaises(NotImplementedError):
            moe.npu_moe_distribute_dispatch_v2(torch.randn(1, 8), torch.tensor([[0]]), "ep", 2, 0, 4)


if __name__ == "__main__":
    unittest.main()
