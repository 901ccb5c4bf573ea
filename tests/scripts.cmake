# Script-driven tests, included from tests/CMakeLists.txt.

# Every test model runs on CPU: prefill + decode through its cache must
# reproduce the cache-free forward.
add_test(NAME models_run COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/models/run_models_test.py)

# Every fusion rule under rules/: literal metadata, catalog references, fixtures, and
# each search alternative against its torch_npu replacement (stand-in on CPU).
add_test(NAME rules_numeric COMMAND /usr/bin/python3 -m unittest discover -s ${CMAKE_SOURCE_DIR}/python/tests -p "test_rules*.py" -t ${CMAKE_SOURCE_DIR}/python)
