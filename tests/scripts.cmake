# Script-driven tests, included from tests/CMakeLists.txt.

# Every test model runs on CPU: prefill + decode through its cache must
# reproduce the cache-free forward.
add_test(NAME models_run COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/models/run_models_test.py)

# Every fusion rule under rules/: literal metadata, catalog references, fixtures, and
# each search alternative against its torch_npu replacement (stand-in on CPU).
add_test(NAME rules_numeric COMMAND /usr/bin/python3 -m unittest discover -s ${CMAKE_SOURCE_DIR}/python/tests -p "test_rules*.py" -t ${CMAKE_SOURCE_DIR}/python)

# The parser against CPython: every .py file of the stdlib and of torch must
# dump exactly like ast.dump (tests/conformance/exceptions.txt lists the known
# differences), plus the hand-written 3.12/3.13 cases and rejected inputs.
add_test(NAME parser_conformance
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/conformance/run_conformance.py
                 --npufuse $<TARGET_FILE:npufuse>)
set_tests_properties(parser_conformance PROPERTIES TIMEOUT 600)

# CPU reference semantics of the torch_npu operators (python/npufuse_ref) against
# direct torch formulations and the doc examples; also the stand-in torch_npu.
add_test(NAME python_ref COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/python/tests/reference_suite.py)
set_tests_properties(python_ref PROPERTIES TIMEOUT 300)

# The same Python suites on torch 2.x with the pinned transformers: the virtual
# environment scripts/venv.sh makes in build/venv (scripts/test.sh always does). The
# model check's HuggingFace cases run only there.
set(NPUFUSE_VENV_PYTHON "${CMAKE_BINARY_DIR}/venv/bin/python" CACHE FILEPATH
    "Python of the virtual environment with torch 2.x and transformers (scripts/venv.sh)")
if(EXISTS "${NPUFUSE_VENV_PYTHON}")
  add_test(NAME python_ref_torch2 COMMAND ${NPUFUSE_VENV_PYTHON} ${CMAKE_SOURCE_DIR}/python/tests/reference_suite.py)
  set_tests_properties(python_ref_torch2 PROPERTIES TIMEOUT 600)
  add_test(NAME rules_numeric_torch2
           COMMAND ${NPUFUSE_VENV_PYTHON} -m unittest discover -s ${CMAKE_SOURCE_DIR}/python/tests -p "test_rules*.py"
                   -t ${CMAKE_SOURCE_DIR}/python)
  # apply --verify on the development set's HuggingFace models, taken from the pinned
  # transformers as a user would: the whole-model check through the transformers entry,
  # kept candidates exercised, a wrong stand-in operator rolled back at model level.
  foreach(_model llama qwen2 qwen3 mixtral deepseek_v3)
    add_test(NAME apply_verify_hf_${_model}
             COMMAND ${NPUFUSE_VENV_PYTHON} ${CMAKE_SOURCE_DIR}/tests/verify/check_hf_verify.py
                     --npufuse $<TARGET_FILE:npufuse> --python ${NPUFUSE_VENV_PYTHON} --model ${_model})
    set_tests_properties(apply_verify_hf_${_model} PROPERTIES TIMEOUT 900)
  endforeach()
  # Every causal LM of the pinned transformers exported and scanned: no plan
  # offers the compressed causal mask (sparse_mode 2/3) where the config shows
  # windowed or chunked layers, a window in use or an indexer's top-k.
  add_test(NAME zoo_mask_provenance
           COMMAND ${NPUFUSE_VENV_PYTHON} ${CMAKE_SOURCE_DIR}/tests/tools/check_zoo_masks.py
                   --npufuse $<TARGET_FILE:npufuse>)
  set_tests_properties(zoo_mask_provenance PROPERTIES TIMEOUT 600)
else()
  message(STATUS "npufuse: no ${NPUFUSE_VENV_PYTHON} (scripts/venv.sh makes it): the torch 2.x Python tests are left out")
endif()

# The frontend fuzz target's seed corpus and past crashes, replayed through the
# same entry point with the normal compiler (scripts/fuzz.sh does the fuzzing).
add_executable(frontend_fuzz_replay ${CMAKE_SOURCE_DIR}/fuzz/replay_main.cc ${CMAKE_SOURCE_DIR}/fuzz/frontend_fuzz.cc)
target_link_libraries(frontend_fuzz_replay PRIVATE npufuse_frontend)
add_test(NAME fuzz_replay
         COMMAND frontend_fuzz_replay ${CMAKE_SOURCE_DIR}/fuzz/corpus ${CMAKE_SOURCE_DIR}/fuzz/regressions)

# The lexer's token stream against CPython's tokenize module over the local
# standard library (lex_dump is built with the benchmarks).
if(NPUFUSE_BUILD_BENCH)
  add_test(NAME lexer_vs_cpython_tokenize
           COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/compare_tokens.py
                   $<TARGET_FILE:lex_dump> /usr/lib/python3.11)
  set_tests_properties(lexer_vs_cpython_tokenize PROPERTIES TIMEOUT 300)
endif()

# The C++ rule reader against the Python one: `npufuse rules show --json` for every
# rule (embedded copy, and the golden fixture directory) equals what
# python/npufuse_rules reads from the same file.
add_test(NAME rules_cli_python
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/rules/compare_with_python.py --npufuse $<TARGET_FILE:npufuse>)
add_test(NAME rules_cli_python_fixture
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/rules/compare_with_python.py --npufuse $<TARGET_FILE:npufuse>
                 --rules ${CMAKE_SOURCE_DIR}/tests/data/rules/fixture_rules)

# `npufuse analyze` of every test model: the JSON plan against
# docs/analyze.schema.json (Debian's python3-jsonschema) and the SARIF log's
# structure.
add_test(NAME analyze_schema
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/report/validate_analyze_outputs.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR})
set_tests_properties(analyze_schema PROPERTIES TIMEOUT 300)

# `npufuse analyze` at a terminal, through a pseudo-terminal: the one-screen
# summary checked against the JSON plan it wrote (each candidate's operator,
# status and id, each fact asked for under its flag, the blocked chains with
# their reason), the report files beside the input or under --out holding what
# the pipe prints, and --format, -o and pipes unchanged.
add_test(NAME analyze_terminal_summary
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/report/check_terminal_summary.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR})
set_tests_properties(analyze_terminal_summary PROPERTIES TIMEOUT 300)

# tools/compare_ports.py (plans against the expert Ascend ports): found, refused,
# missed and extra on a fixture plan and port entry, and on llama_like's live plan.
add_test(NAME compare_ports
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/ports/compare_ports_test.py
                 --npufuse $<TARGET_FILE:npufuse>)

# `npufuse apply` on each test model: apply prints exactly the applied
# candidates and manual steps of tests/apply/expected/<model>.json, the patched
# copy parses, the diff passes `git apply --check`, and with the CPU stand-in
# torch_npu the patched model computes the original's logits (each operator
# the patch calls, made wrong in turn, must be caught).
foreach(_model deepseek_v32_like deepseek_v3_like gemma_style gpt_oss_like gptj_style hybrid_moe_like llama_like qwen3_like
               qwen3_moe_like rope_caller_broadcast rope_inner_broadcast vllm_style)
  add_test(NAME apply_patched_model_${_model}
           COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/apply/check_patched_model.py
                   --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR} --model ${_model})
  set_tests_properties(apply_patched_model_${_model} PROPERTIES TIMEOUT 300)
endforeach()

# The RoPE rewrites (rope.rope_half, rope.rope_half_rotary_mul) on each form real code
# gives its cos/sin tables their unit axes (HF's unsqueeze_dim, `cos[None, None]` or
# `unsqueeze(0).unsqueeze(0)` inside the helper or in its caller, an index inside the
# multiply): applied, equal to the original on CPU, and on the fused operator's path.
add_test(NAME apply_rope_table_forms
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/apply/check_rope_table_forms.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR})
set_tests_properties(apply_rope_table_forms PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)

# A plan's candidate ids found again whatever form of the same path apply, verify,
# apply --verify and explain are given (relative, absolute, through a symlink, from
# another folder); missing output folders made; a changed file an error naming it.
add_test(NAME apply_plan_paths
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/apply/check_plan_paths.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR})
set_tests_properties(apply_plan_paths PROPERTIES TIMEOUT 600)

# The HTML report in headless Chromium: cards, pictures and filters checked in
# the DOM against the JSON plan, planted markup stays text, screenshots kept
# under html_artefacts/. Skipped (77) when Chromium is missing, except in CI.
add_test(NAME html_report_browser
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/html/check_html_report.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR}
                 --artefacts ${CMAKE_BINARY_DIR}/html_artefacts)
set_tests_properties(html_report_browser PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)

# `npufuse verify` and the `apply --verify` loop (docs/verify.md): the llama-like
# plan verified on CPU (every candidate passes, the whole patched model matches);
# a rules copy with a broken norm.rms_norm replace rolled back with its numbers;
# a broken rope.rope_half rolled back and its plan alternative kept in its place;
# apply --verify on every test model, nothing rolled back, kept sets matching at
# model level.
add_test(NAME verify_llama_like
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/verify/check_verify_cli.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR} --case llama)
set_tests_properties(verify_llama_like PROPERTIES TIMEOUT 900)
add_test(NAME apply_verify_wrong_replacement
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/verify/check_verify_cli.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR} --case wrong)
set_tests_properties(apply_verify_wrong_replacement PROPERTIES TIMEOUT 900)
add_test(NAME apply_verify_alternative
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/verify/check_verify_cli.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR} --case alternative)
set_tests_properties(apply_verify_alternative PROPERTIES TIMEOUT 900)
# `verify OUT` from another folder than the one analyze and apply ran in with relative
# paths: the candidates are found again and verified.
add_test(NAME verify_apply_output_from_elsewhere
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/verify/check_verify_cli.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR} --case relative)
set_tests_properties(verify_apply_output_from_elsewhere PROPERTIES TIMEOUT 900)
# A model the machine cannot build (the process is killed): judged by the harnesses, the
# model check skipped once with the reason and what to do.
add_test(NAME apply_verify_model_too_large
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/verify/check_verify_cli.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR} --case killed)
set_tests_properties(apply_verify_model_too_large PROPERTIES TIMEOUT 900)
# A package's model file (relative imports): the user's functions are run with stand-ins
# for those imports; a helper that rebinds a bound parameter is checked by its rule cut.
add_test(NAME apply_verify_package_file
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/verify/check_verify_cli.py
                 --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR} --case package)
set_tests_properties(apply_verify_package_file PROPERTIES TIMEOUT 900)
foreach(_model deepseek_v32_like deepseek_v3_like gemma_style gpt_oss_like gptj_style hybrid_moe_like llama_like qwen3_like
               qwen3_moe_like rope_caller_broadcast rope_inner_broadcast vllm_style)
  add_test(NAME apply_verify_${_model}
           COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/verify/check_verify_cli.py
                   --npufuse $<TARGET_FILE:npufuse> --source-dir ${CMAKE_SOURCE_DIR} --case models --model ${_model})
  set_tests_properties(apply_verify_${_model} PROPERTIES TIMEOUT 1200)
endforeach()

# The docs and data folders name no folder of one machine (/work/..., /home/...):
# folders outside the repository are variables the text defines ($REAL, $SHARED).
add_test(NAME docs_no_machine_paths
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/docs/check_no_machine_paths.py ${CMAKE_SOURCE_DIR})

# tools/zoo_report.py (the transformers zoo as a corpus): every module of
# a small zoo of test models in one of four states, an undecomposed model
# counted as unaccounted, two variants, the Markdown tables.
add_test(NAME zoo_report
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/tools/check_zoo_report.py
                 --npufuse $<TARGET_FILE:npufuse>)
