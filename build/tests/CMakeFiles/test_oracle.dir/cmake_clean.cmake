file(REMOVE_RECURSE
  "CMakeFiles/test_oracle.dir/test_oracle.c.o"
  "CMakeFiles/test_oracle.dir/test_oracle.c.o.d"
  "CMakeFiles/test_oracle.dir/testutil.c.o"
  "CMakeFiles/test_oracle.dir/testutil.c.o.d"
  "test_oracle"
  "test_oracle.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_oracle.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
