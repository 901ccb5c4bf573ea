#!/usr/bin/env bash
# Set-up command 1: install what is missing, build the npufuse executable (and
# nothing else: no tests, no benchmarks), and run it on the bundled example
# model. At a terminal it ends with analyze's one-screen summary and the
# paths of the full reports, written under build/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
NPUFUSE_DEPS=build
source scripts/deps.sh
scripts/build.sh --target npufuse
example=examples/llama_like/modeling_llama_like.py
config=examples/llama_like/config.json
out=build/demo
mkdir -p "$out"
echo "== npufuse parse $example"
build/npufuse parse "$example"
echo
echo "== npufuse inspect $example --config $config > $out/llama_like.inspect.md"
build/npufuse inspect "$example" --config "$config" >"$out/llama_like.inspect.md"
echo "module tree, sizes, dataflow and sub-chains: $out/llama_like.inspect.md"
echo
echo "== npufuse analyze $example --config $config --chip A2 --tp 1 --out $out"
build/npufuse analyze "$example" --config "$config" --chip A2 --tp 1 --out "$out"
