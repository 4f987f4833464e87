# Empty compiler generated dependencies file for wick_static.
# This may be replaced when dependencies are built.
