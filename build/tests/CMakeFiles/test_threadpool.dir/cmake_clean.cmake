file(REMOVE_RECURSE
  "CMakeFiles/test_threadpool.dir/test_threadpool.c.o"
  "CMakeFiles/test_threadpool.dir/test_threadpool.c.o.d"
  "CMakeFiles/test_threadpool.dir/testutil.c.o"
  "CMakeFiles/test_threadpool.dir/testutil.c.o.d"
  "test_threadpool"
  "test_threadpool.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_threadpool.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
