# Empty dependencies file for test_oracle.
# This may be replaced when dependencies are built.
