# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
add_test(test_fuzz_npy "/work/main/build/tests/test_fuzz_npy")
set_tests_properties(test_fuzz_npy PROPERTIES  ENVIRONMENT "WICK_ORACLE_DIR=/work/main/build/tests/oracle" TIMEOUT "600" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;12;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(test_npy "/work/main/build/tests/test_npy")
set_tests_properties(test_npy PROPERTIES  ENVIRONMENT "WICK_ORACLE_DIR=/work/main/build/tests/oracle" TIMEOUT "600" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;12;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test(oracle_generate "/usr/bin/python3" "/work/main/tests/oracle/gen_oracle.py" "/work/main/build/tests/oracle")
set_tests_properties(oracle_generate PROPERTIES  FIXTURES_SETUP "oracle_data" TIMEOUT "600" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;19;add_test;/work/main/tests/CMakeLists.txt;0;")
