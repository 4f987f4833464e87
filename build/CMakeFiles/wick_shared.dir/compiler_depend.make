# Empty compiler generated dependencies file for wick_shared.
# This may be replaced when dependencies are built.
