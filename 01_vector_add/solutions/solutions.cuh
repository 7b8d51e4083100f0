/* The answers to chapter 01's exercises (README, "Exercises"): each a version with the
 * chapter's launcher signature, registered in main.cu's table with role "exercise", so
 * --check validates it and --bench times it like the chapter's own versions. */
#ifndef CH01_SOLUTIONS_CUH
#define CH01_SOLUTIONS_CUH

#include "ex1_block_32.cuh"
#include "ex2_one_block_per_sm.cuh"
#include "ex3_unroll4.cuh"
#include "ex4_two_pass.cuh"
#include "ex5_float4x2.cuh"

#endif
