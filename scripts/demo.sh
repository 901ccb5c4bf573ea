#!/usr/bin/env bash
# Set-up command 1: install what is missing, build, and run the main job on
# the bundled example model.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
scripts/build.sh
example=examples/llama_like/modeling_llama_like.py
echo "== npufuse parse $example"
build/npufuse parse "$example"
echo
echo "== npufuse inspect $example --config examples/llama_like/config.json"
build/npufuse inspect "$example" --config examples/llama_like/config.json
echo
echo "== npufuse analyze $example --config examples/llama_like/config.json --chip A2 --tp 1"
build/npufuse analyze "$example" --config examples/llama_like/config.json --chip A2 --tp 1
