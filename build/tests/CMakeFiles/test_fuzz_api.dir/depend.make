# Empty dependencies file for test_fuzz_api.
# This may be replaced when dependencies are built.
