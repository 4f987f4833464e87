file(REMOVE_RECURSE
  "CMakeFiles/test_fuzz_api.dir/test_fuzz_api.c.o"
  "CMakeFiles/test_fuzz_api.dir/test_fuzz_api.c.o.d"
  "CMakeFiles/test_fuzz_api.dir/testutil.c.o"
  "CMakeFiles/test_fuzz_api.dir/testutil.c.o.d"
  "test_fuzz_api"
  "test_fuzz_api.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_fuzz_api.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
