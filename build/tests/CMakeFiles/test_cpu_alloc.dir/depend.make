# Empty dependencies file for test_cpu_alloc.
# This may be replaced when dependencies are built.
