# Empty dependencies file for test_threadpool.
# This may be replaced when dependencies are built.
