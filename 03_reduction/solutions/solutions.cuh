/* The answers to chapter 03's exercises (README, "Exercises"): each file one exercise,
 * its kernels and launchers with the chapter's ReduceLauncher signature. main.cu lists
 * them in its version table with the role "exercise", so --check validates them and
 * --bench times them like the chapter's own versions. */
#ifndef CH03_SOLUTIONS_CUH
#define CH03_SOLUTIONS_CUH

#include "ex1_block_size.cuh"
#include "ex2_one_float4.cuh"
#include "ex3_cg_reduce.cuh"
#include "ex4_atomic.cuh"
#include "ex5_grid_sync.cuh"
#include "ex6_kahan.cuh"

#endif
