file(REMOVE_RECURSE
  "CMakeFiles/test_backend_contract.dir/test_backend_contract.c.o"
  "CMakeFiles/test_backend_contract.dir/test_backend_contract.c.o.d"
  "CMakeFiles/test_backend_contract.dir/testutil.c.o"
  "CMakeFiles/test_backend_contract.dir/testutil.c.o.d"
  "test_backend_contract"
  "test_backend_contract.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_backend_contract.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
