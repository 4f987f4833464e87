# Empty dependencies file for wick_cli.
# This may be replaced when dependencies are built.
