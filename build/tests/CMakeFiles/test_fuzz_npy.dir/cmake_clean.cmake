file(REMOVE_RECURSE
  "CMakeFiles/test_fuzz_npy.dir/test_fuzz_npy.c.o"
  "CMakeFiles/test_fuzz_npy.dir/test_fuzz_npy.c.o.d"
  "CMakeFiles/test_fuzz_npy.dir/testutil.c.o"
  "CMakeFiles/test_fuzz_npy.dir/testutil.c.o.d"
  "test_fuzz_npy"
  "test_fuzz_npy.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_fuzz_npy.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
