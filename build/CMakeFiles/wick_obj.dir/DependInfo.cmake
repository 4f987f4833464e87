
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/core/create.c" "CMakeFiles/wick_obj.dir/src/core/create.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/create.c.o.d"
  "/work/main/src/core/device.c" "CMakeFiles/wick_obj.dir/src/core/device.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/device.c.o.d"
  "/work/main/src/core/dtype.c" "CMakeFiles/wick_obj.dir/src/core/dtype.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/dtype.c.o.d"
  "/work/main/src/core/elementwise.c" "CMakeFiles/wick_obj.dir/src/core/elementwise.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/elementwise.c.o.d"
  "/work/main/src/core/error.c" "CMakeFiles/wick_obj.dir/src/core/error.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/error.c.o.d"
  "/work/main/src/core/join.c" "CMakeFiles/wick_obj.dir/src/core/join.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/join.c.o.d"
  "/work/main/src/core/layout.c" "CMakeFiles/wick_obj.dir/src/core/layout.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/layout.c.o.d"
  "/work/main/src/core/matmul.c" "CMakeFiles/wick_obj.dir/src/core/matmul.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/matmul.c.o.d"
  "/work/main/src/core/readback.c" "CMakeFiles/wick_obj.dir/src/core/readback.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/readback.c.o.d"
  "/work/main/src/core/reduce.c" "CMakeFiles/wick_obj.dir/src/core/reduce.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/reduce.c.o.d"
  "/work/main/src/core/storage.c" "CMakeFiles/wick_obj.dir/src/core/storage.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/storage.c.o.d"
  "/work/main/src/core/tensor.c" "CMakeFiles/wick_obj.dir/src/core/tensor.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/tensor.c.o.d"
  "/work/main/src/core/views.c" "CMakeFiles/wick_obj.dir/src/core/views.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/core/views.c.o.d"
  "/work/main/src/cpu/cpu_alloc.c" "CMakeFiles/wick_obj.dir/src/cpu/cpu_alloc.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/cpu_alloc.c.o.d"
  "/work/main/src/cpu/cpu_backend.c" "CMakeFiles/wick_obj.dir/src/cpu/cpu_backend.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/cpu_backend.c.o.d"
  "/work/main/src/cpu/cpu_binary.c" "CMakeFiles/wick_obj.dir/src/cpu/cpu_binary.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/cpu_binary.c.o.d"
  "/work/main/src/cpu/cpu_copy.c" "CMakeFiles/wick_obj.dir/src/cpu/cpu_copy.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/cpu_copy.c.o.d"
  "/work/main/src/cpu/cpu_iter.c" "CMakeFiles/wick_obj.dir/src/cpu/cpu_iter.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/cpu_iter.c.o.d"
  "/work/main/src/cpu/cpu_matmul.c" "CMakeFiles/wick_obj.dir/src/cpu/cpu_matmul.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/cpu_matmul.c.o.d"
  "/work/main/src/cpu/cpu_reduce.c" "CMakeFiles/wick_obj.dir/src/cpu/cpu_reduce.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/cpu_reduce.c.o.d"
  "/work/main/src/cpu/cpu_unary.c" "CMakeFiles/wick_obj.dir/src/cpu/cpu_unary.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/cpu_unary.c.o.d"
  "/work/main/src/cpu/gemm_avx2.c" "CMakeFiles/wick_obj.dir/src/cpu/gemm_avx2.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/gemm_avx2.c.o.d"
  "/work/main/src/cpu/gemm_avx512.c" "CMakeFiles/wick_obj.dir/src/cpu/gemm_avx512.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/gemm_avx512.c.o.d"
  "/work/main/src/cpu/gemm_generic.c" "CMakeFiles/wick_obj.dir/src/cpu/gemm_generic.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/gemm_generic.c.o.d"
  "/work/main/src/cpu/threadpool.c" "CMakeFiles/wick_obj.dir/src/cpu/threadpool.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/threadpool.c.o.d"
  "/work/main/src/cpu/vmath.c" "CMakeFiles/wick_obj.dir/src/cpu/vmath.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/vmath.c.o.d"
  "/work/main/src/cpu/vmath_avx2.c" "CMakeFiles/wick_obj.dir/src/cpu/vmath_avx2.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/vmath_avx2.c.o.d"
  "/work/main/src/cpu/vmath_avx512.c" "CMakeFiles/wick_obj.dir/src/cpu/vmath_avx512.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/cpu/vmath_avx512.c.o.d"
  "/work/main/src/io/npy.c" "CMakeFiles/wick_obj.dir/src/io/npy.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/io/npy.c.o.d"
  "/work/main/src/io/npz.c" "CMakeFiles/wick_obj.dir/src/io/npz.c.o" "gcc" "CMakeFiles/wick_obj.dir/src/io/npz.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
