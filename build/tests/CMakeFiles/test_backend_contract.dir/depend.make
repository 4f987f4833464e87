# Empty dependencies file for test_backend_contract.
# This may be replaced when dependencies are built.
