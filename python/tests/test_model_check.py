"""The whole-model check: its kinds of entry, the small config, the lines it records.

Runs on Debian's torch 1.13 and on torch 2.x; the HuggingFace cases need transformers
(the project's virtual environment has the pinned one) and are skipped without it,
saying so.
"""
import importlib.util
import json
import os
import shutil
import tempfile
import unittest

from npufuse_verify import entries, model_check, wrong_operator
from npufuse_verify.line_trace import LinesRun
from npufuse_verify.tiny_config import tiny

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA_LIKE = os.path.join(ROOT, "tests", "models", "llama_like")

# Official-inference style: an arguments dataclass, weights left to a checkpoint
# (torch.empty), a cache kept in buffers, forward(tokens, start_pos) returning the last
# position's logits.
INFERENCE_STYLE = '''import math
from dataclasses import dataclass

import torch
from torch import nn
import torch.nn.functional as F


@dataclass
class RunArgs:
    max_batch_size: int = 4
    max_seq_len: int = 4096
    vocab_size: int = 32000
    dim: int = 4096
    n_layers: int = 8
    n_heads: int = 32
    inter_dim: int = 11008
    rope_theta: float = 10000.0


class Norm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


class SelfAttention(nn.Module):
    def __init__(self, args: RunArgs):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wqkv = nn.Linear(args.dim, 3 * args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        shape = (args.max_batch_size, args.max_seq_len, self.n_heads, self.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape), persistent=False)

    def forward(self, x, start_pos, cos, sin):
        b, s, _ = x.shape
        q, k, v = self.wqkv(x).view(b, s, 3, self.n_heads, self.head_dim).unbind(2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        end = start_pos + s
        self.k_cache[:b, start_pos:end] = k
        self.v_cache[:b, start_pos:end] = v
        keys, values = self.k_cache[:b, :end], self.v_cache[:b, :end]
        scores = torch.einsum("bshd,bthd->bhst", q, keys) / math.sqrt(self.head_dim)
        if s > 1:
            scores = scores + torch.full((s, end), float("-inf")).triu_(start_pos + 1)
        out = torch.einsum("bhst,bthd->bshd", scores.softmax(-1), values)
        return self.wo(out.reshape(b, s, -1))


class Block(nn.Module):
    def __init__(self, args: RunArgs):
        super().__init__()
        self.attn_norm, self.ffn_norm = Norm(args.dim), Norm(args.dim)
        self.attn = SelfAttention(args)
        self.w1 = nn.Linear(args.dim, args.inter_dim, bias=False)
        self.w2 = nn.Linear(args.inter_dim, args.dim, bias=False)

    def forward(self, x, start_pos, cos, sin):
        x = x + self.attn(self.attn_norm(x), start_pos, cos, sin)
        return x + self.w2(F.silu(self.w1(self.ffn_norm(x))))


class Model(nn.Module):
    def __init__(self, args: RunArgs):
        super().__init__()
        self.embed = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList(Block(args) for _ in range(args.n_layers))
        self.norm = Norm(args.dim)
        self.head = nn.Linear(args.dim, args.vocab_size, bias=False)
        half = args.dim // args.n_heads // 2
        freqs = 1.0 / (args.rope_theta ** (torch.arange(half).float() / half))
        angles = torch.outer(torch.arange(args.max_seq_len).float(), freqs)
        self.register_buffer("cos", angles.cos()[:, None, :], persistent=False)
        self.register_buffer("sin", angles.sin()[:, None, :], persistent=False)

    @torch.no_grad()
    def forward(self, tokens, start_pos: int = 0):
        s = tokens.shape[1]
        h = self.embed(tokens)
        cos, sin = self.cos[start_pos:start_pos + s], self.sin[start_pos:start_pos + s]
        for layer in self.layers:
            h = layer(h, start_pos, cos, sin)
        return self.head(self.norm(h)[:, -1])
'''

INFERENCE_CONFIG = {"dim": 2048, "n_layers": 16, "n_heads": 16, "inter_dim": 5632, "vocab_size": 32000,
                    "max_seq_len": 8192}


def _write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


class TinyConfig(unittest.TestCase):
    def test_keeps_every_layer_type_once_and_says_what_changed(self):
        config = {"num_hidden_layers": 6, "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
                  "sliding_window": 1024, "hidden_size": 4096, "num_attention_heads": 32,
                  "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 262144,
                  "pad_token_id": 0, "eos_token_id": [1, 106]}
        small, notes = tiny(config)
        self.assertEqual(small["layer_types"], ["sliding_attention", "full_attention"])
        self.assertEqual(small["num_hidden_layers"], 2)
        self.assertEqual((small["num_attention_heads"], small["num_key_value_heads"]), (4, 1))
        self.assertEqual(small["hidden_size"], 4 * 128)
        self.assertLess(small["sliding_window"], model_check.PROMPT)
        self.assertIn("vocab_size: 262144 -> 512", notes)
        self.assertEqual(config["num_hidden_layers"], 6, "the user's config is left as it was")

    def test_experts_never_fewer_than_top_k_and_groups_scale_with_them(self):
        small, _ = tiny({"n_routed_experts": 256, "num_experts_per_tok": 8, "n_group": 8, "topk_group": 4,
                         "first_k_dense_replace": 3, "num_hidden_layers": 61, "kv_lora_rank": 512,
                         "q_lora_rank": 1536, "qk_rope_head_dim": 64, "num_attention_heads": 128,
                         "num_key_value_heads": 128, "hidden_size": 7168})
        self.assertLessEqual(small["n_routed_experts"], 16)
        self.assertEqual(small["n_routed_experts"] % small["n_group"], 0)
        reachable = small["topk_group"] * small["n_routed_experts"] // small["n_group"]
        self.assertLessEqual(small["num_experts_per_tok"], reachable)
        self.assertEqual((small["first_k_dense_replace"], small["num_hidden_layers"]), (1, 2))
        self.assertEqual((small["kv_lora_rank"], small["qk_rope_head_dim"]), (512, 64), "MLA ranks stay")

    def test_nested_text_config_and_inference_names(self):
        small, notes = tiny({"text_config": {"hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256,
                                             "num_hidden_layers": 34}, "vision_config": {"hidden_size": 1152}})
        self.assertEqual(small["text_config"]["num_hidden_layers"], 2)
        self.assertTrue(any(n.startswith("text_config.") for n in notes))
        small, _ = tiny(INFERENCE_CONFIG)
        self.assertEqual((small["n_layers"], small["n_heads"], small["dim"]), (2, 4, 4 * 128))
        self.assertEqual(small["max_seq_len"], 64)


class LineTrace(unittest.TestCase):
    def test_records_the_lines_of_watched_files_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = _write(tmp, "watched.py", "def f(x):\n    y = x + 1\n    if y > 5:\n        y = 0\n    return y\n")
            spec = importlib.util.spec_from_file_location("npufuse_watched", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            with LinesRun([path]) as trace:
                module.f(1)
            self.assertEqual(trace.lines()[path], [1, 2, 3, 5])


class InferenceEntry(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.tmp, "patched"))
        self.original = _write(self.tmp, "model.py", INFERENCE_STYLE)
        self.config = _write(self.tmp, "config.json", json.dumps(INFERENCE_CONFIG))
        os.environ.pop(wrong_operator.ENVIRONMENT, None)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_the_model_class_and_its_arguments_are_found_and_the_copy_matches(self):
        patched = _write(os.path.join(self.tmp, "patched"), "model.py", INFERENCE_STYLE)
        result = model_check.run(self.original, patched, self.config, device="cpu")
        self.assertIsNone(result["error"], result)
        self.assertEqual(result["entry"], "inference")
        self.assertTrue(result["passed"], result["rows"])
        self.assertEqual([r["stage"] for r in result["rows"]], ["prefill", "prefill+3 decode steps"])
        self.assertTrue(any("no left-padded batch" in n for n in result["notes"]))
        norm_line = INFERENCE_STYLE.splitlines().index(
            "        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight") + 1
        self.assertIn(norm_line, result["lines_run"][patched])

    def test_a_changed_line_that_computes_something_else_fails(self):
        wrong = INFERENCE_STYLE.replace("keepdim=True) + self.eps)", "keepdim=True) + 0.5)")
        patched = _write(os.path.join(self.tmp, "patched"), "model.py", wrong)
        result = model_check.run(self.original, patched, self.config, device="cpu")
        self.assertIsNone(result["error"], result)
        self.assertFalse(result["passed"])
        self.assertGreater(result["rows"][0]["max_abs"], 1e-3)

    def test_a_file_with_no_entry_is_skipped_with_what_to_give(self):
        bare = _write(self.tmp, "bare.py", "import torch\n\ndef helper(x):\n    return x\n")
        result = model_check.run(bare, bare, self.config, device="cpu")
        self.assertFalse(result["passed"])
        self.assertIn("--entry", result["skipped"])


class CallableEntry(unittest.TestCase):
    def test_entry_contract(self):
        with tempfile.TemporaryDirectory() as tmp:
            original = _write(tmp, "model.py", INFERENCE_STYLE)
            config = _write(tmp, "config.json", json.dumps(INFERENCE_CONFIG))
            _write(tmp, "my_entry.py", '''import dataclasses


class Runner:
    def __init__(self, module, config):
        self.module = module

    def build(self, config):
        fields = {f.name for f in dataclasses.fields(self.module.RunArgs)}
        model = self.module.Model(self.module.RunArgs(**{k: v for k, v in config.items() if k in fields}))
        for p in model.parameters():
            p.data.normal_(0, 0.05)
        return model

    def prefill(self, model, ids):
        return model(ids, 0)[:, None]

    def decode(self, model, ids, prompt_len):
        import torch
        out = [model(ids[:, :prompt_len], 0)[:, None]]
        for t in range(prompt_len, ids.shape[1]):
            out.append(model(ids[:, t:t + 1], t)[:, None])
        return torch.cat(out, 1)


def make(module, config):
    return Runner(module, config)
''')
            import sys
            sys.path.insert(0, tmp)
            try:
                result = model_check.run(original, original, config, device="cpu", entry="my_entry:make")
            finally:
                sys.path.remove(tmp)
            self.assertIsNone(result["error"], result)
            self.assertEqual(result["entry"], "entry")
            self.assertTrue(result["passed"], result)


class SelfContainedEntry(unittest.TestCase):
    def test_wrong_standin_operator_is_seen_by_the_model_check(self):
        # llama_like calls no torch_npu operator itself: the patched copy below does.
        with open(os.path.join(LLAMA_LIKE, "model.py"), encoding="utf-8") as handle:
            text = handle.read()
        self.assertIn("def from_config", text)
        with tempfile.TemporaryDirectory() as tmp:
            original = _write(tmp, "model.py", text)
            shutil.copy(os.path.join(LLAMA_LIKE, "config.json"), os.path.join(tmp, "config.json"))
            shutil.copy(os.path.join(LLAMA_LIKE, "config.tiny.json"), os.path.join(tmp, "config.tiny.json"))
            result = model_check.run(original, original, os.path.join(tmp, "config.json"), device="cpu")
            self.assertEqual(result["entry"], "self-contained")
            self.assertTrue(result["passed"], result)


def _transformers():
    try:
        import transformers  # noqa: F401
        return True
    except ImportError:
        return False


@unittest.skipUnless(_transformers(), "transformers is not installed in this Python (the project's venv has it)")
class TransformersEntry(unittest.TestCase):
    """HF llama from the installed transformers, loaded in its package's place."""

    def setUp(self):
        import transformers
        self.tmp = tempfile.mkdtemp()
        folder = os.path.join(os.path.dirname(transformers.__file__), "models", "llama")
        self.original = os.path.join(folder, "modeling_llama.py")
        with open(self.original, encoding="utf-8") as handle:
            self.text = handle.read()
        from transformers import LlamaConfig
        self.config = _write(self.tmp, "config.json", json.dumps(LlamaConfig().to_dict()))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_copy_matches_on_prefill_decode_and_padding(self):
        patched = _write(self.tmp, "modeling_llama.py", self.text)
        result = model_check.run(self.original, patched, self.config, device="cpu")
        self.assertIsNone(result["error"], result)
        self.assertEqual(result["entry"], "transformers")
        self.assertEqual([r["stage"] for r in result["rows"]],
                         ["prefill", "prefill+3 decode steps", "left-padded batch"])
        self.assertTrue(result["passed"], result["rows"])
        self.assertTrue(any("eager" in n for n in result["notes"]))

    def test_a_wrong_norm_in_the_copy_is_caught(self):
        marker = "variance + self.variance_epsilon"
        self.assertIn(marker, self.text)
        patched = _write(self.tmp, "modeling_llama.py", self.text.replace(marker, "variance * 4 + self.variance_epsilon"))
        result = model_check.run(self.original, patched, self.config, device="cpu")
        self.assertIsNone(result["error"], result)
        self.assertFalse(result["passed"])
        line = self.text[:self.text.index(marker)].count("\n") + 1
        self.assertIn(line, result["lines_run"][patched])


if __name__ == "__main__":
    unittest.main()
