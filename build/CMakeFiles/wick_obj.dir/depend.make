# Empty dependencies file for wick_obj.
# This may be replaced when dependencies are built.
