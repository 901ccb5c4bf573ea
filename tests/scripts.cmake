# Script-driven tests, included from tests/CMakeLists.txt.

# Every test model runs on CPU: prefill + decode through its cache must
# reproduce the cache-free forward.
add_test(NAME models_run COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/models/run_models_test.py)
