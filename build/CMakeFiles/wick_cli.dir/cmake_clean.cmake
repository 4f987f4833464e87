file(REMOVE_RECURSE
  "CMakeFiles/wick_cli.dir/tools/wick.c.o"
  "CMakeFiles/wick_cli.dir/tools/wick.c.o.d"
  "wick"
  "wick.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/wick_cli.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
