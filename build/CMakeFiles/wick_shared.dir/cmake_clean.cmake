file(REMOVE_RECURSE
  "libwick.pdb"
  "libwick.so"
  "libwick.so.0"
  "libwick.so.0.1.0"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/wick_shared.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
