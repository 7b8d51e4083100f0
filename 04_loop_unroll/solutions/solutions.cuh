/* The answers to chapter 04's exercises (README, "Exercises"): each file one exercise,
 * its kernels and launchers with the chapter's signatures (ReduceLauncher for the sum,
 * PolyLauncher for the polynomial). main.cu lists them in its version tables with the role
 * "exercise", so --check validates them and --bench times them like the chapter's own. */
#ifndef CH04_SOLUTIONS_CUH
#define CH04_SOLUTIONS_CUH

#include "ex1_k32_tree.cuh"
#include "ex2_gs_u32.cuh"
#include "ex3_poly_k8_full.cuh"
#include "ex4_gs_u4_acc4.cuh"
#include "ex5_poly_even_odd.cuh"
#include "ex6_poly_estrin.cuh"

#endif
