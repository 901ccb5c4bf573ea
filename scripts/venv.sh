#!/usr/bin/env bash
# Creates (once) the virtual environment the verifier's torch-2.x side uses:
# build/venv with torch 2.13.0 (CPU build) and one pinned transformers.
# Sourced by scripts/deps.sh; idempotent: a venv whose stamp matches the pins is
# left as it is. Prints nothing when there is nothing to do.
#
# Why transformers 5.18.0: the newest release this project's machines can install
# without a download; it carries every development-set model (llama, qwen2, qwen3,
# mixtral, deepseek_v3) in the current form (attention interface, DynamicCache,
# per-layer-type configs) and supports torch 2.13. Model checks build HF models
# through it; the zoo corpus (tools/) is read from its models/ folder.
NPUFUSE_TORCH_PIN="torch==2.13.0"
NPUFUSE_TRANSFORMERS_PIN="transformers==5.18.0"
npufuse_venv_dir="${NPUFUSE_VENV:-$(pwd)/build/venv}"
npufuse_venv_stamp="$npufuse_venv_dir/.npufuse-pins"
npufuse_pins="$NPUFUSE_TORCH_PIN $NPUFUSE_TRANSFORMERS_PIN"
if [ ! -x "$npufuse_venv_dir/bin/python" ] || [ "$(cat "$npufuse_venv_stamp" 2>/dev/null)" != "$npufuse_pins" ]; then
  # The base interpreter: the first python3 on PATH that is CPython 3.11 (the
  # torch 2.13.0 wheel is built for it), else Debian's.
  npufuse_base=""
  for candidate in python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      npufuse_base="$candidate"
      break
    fi
  done
  if [ -z "$npufuse_base" ]; then
    echo "npufuse: no Python 3.11 with venv found; the torch 2.x checks need one" >&2
    return 1 2>/dev/null || exit 1
  fi
  echo "npufuse: creating $npufuse_venv_dir ($npufuse_pins)" >&2
  rm -rf "$npufuse_venv_dir"
  mkdir -p "$(dirname "$npufuse_venv_dir")"
  "$npufuse_base" -m venv "$npufuse_venv_dir"
  "$npufuse_venv_dir/bin/python" -m pip install -q --disable-pip-version-check $npufuse_pins 2>&1 |
    grep -v "^WARNING: Location" >&2 || true
  "$npufuse_venv_dir/bin/python" -c 'import torch, transformers' 
  echo "$npufuse_pins" > "$npufuse_venv_stamp"
fi
export NPUFUSE_VENV_PYTHON="$npufuse_venv_dir/bin/python"
