file(REMOVE_RECURSE
  "CMakeFiles/test_cpu_alloc.dir/test_cpu_alloc.c.o"
  "CMakeFiles/test_cpu_alloc.dir/test_cpu_alloc.c.o.d"
  "CMakeFiles/test_cpu_alloc.dir/testutil.c.o"
  "CMakeFiles/test_cpu_alloc.dir/testutil.c.o.d"
  "test_cpu_alloc"
  "test_cpu_alloc.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_cpu_alloc.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
