/* The answers to chapter 05's exercises (README, "Exercises"): each file one exercise, its
 * kernels and launchers with the chapter's SgemmLauncher signature. main.cu lists them in
 * its fp32 version table with the role "exercise", so --check validates them on every check
 * shape and --bench times them like the chapter's own versions. */
#ifndef CH05_SOLUTIONS_SOLUTIONS_CUH
#define CH05_SOLUTIONS_SOLUTIONS_CUH

#include "05_matmul_tiled/solutions/ex1_thread_tile.cuh"
#include "05_matmul_tiled/solutions/ex2_hopper_config.cuh"
#include "05_matmul_tiled/solutions/ex3_vector_loads.cuh"
#include "05_matmul_tiled/solutions/ex4_register_prefetch.cuh"
#include "05_matmul_tiled/solutions/ex5_three_stages.cuh"
#include "05_matmul_tiled/solutions/ex6_few_columns.cuh"

#endif
