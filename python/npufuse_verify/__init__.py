"""Runs what `npufuse verify` generates: one harness per candidate, and the model-level check.

- `harness.run(spec)`: the original chain (the user's function, or the rule's `search`)
  against the replacement (the patched function, or the rule's `replace`) on random inputs
  of the configured shapes and dtype; precision numbers and a performance observation.
- `model_check.run(...)`: the original and the patched model file built with the same
  random weights, logits compared for a full forward and for prefill plus decode steps.
- `device.npu_available()`: a real torch_npu with an NPU, never faked.

The C++ side (src/verify/) writes the specs, runs these with /usr/bin/python3 and reads
the one JSON object each prints on its last stdout line (docs/verify.md).
"""
