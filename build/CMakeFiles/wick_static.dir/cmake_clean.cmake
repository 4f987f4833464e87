file(REMOVE_RECURSE
  "libwick.a"
  "libwick.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/wick_static.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
