file(REMOVE_RECURSE
  "libwick.a"
)
