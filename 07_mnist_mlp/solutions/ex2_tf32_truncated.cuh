/* Exercise 2 (warm-up): TF32 operands left to the tensor cores' truncation.
 *
 * Asked: the tf32 trainer rounds every operand of its two products to TF32 where it is written
 * (MlpTf32::cvt, part2_tensor_cores/01_tc_kernels.cuh). Make cvt return its argument, so that the
 * tensor cores read the fp32 values as they are, ignoring their low 13 bits. Predict first: how
 * far is a product of two truncated operands from the product of the rounded ones, in which
 * direction, and does that average out in z1's sum of 784 products? Then run --check with the
 * rounded trainer's tolerances (TC_TOLERANCES) and with the ones below, and train 10 epochs.
 *
 * Answer: MlpTf32Truncated below is MlpTf32 with cvt the identity; the family is tf32's
 * (part2_tensor_cores/01_tc_steps.cuh's functions, instantiated for it). Rounded to nearest, an
 * operand is off by at most half a TF32 ulp, 2^-11 of itself, in either direction, and z1's 784
 * products' errors mostly cancel. Truncated, it is off by up to a whole ulp, 2^-10, and always
 * toward zero: each product shrinks by up to 2^-9, and the shrinkage of z1's products adds up
 * instead of cancelling. Against --check's reference, whose operands are rounded to nearest, each
 * truncated operand is smaller by half an ulp on average (2^-11 of a value with significand 1,
 * 2^-12 of one near 2), so each product, and z1 with them, comes out smaller by about 7e-4 of
 * itself: more than the rounded trainer's z1 tolerance, 5e-4, which was derived for unbiased errors
 * of up to 2^-11 that cancel. Expect the z1 comparison (and dz2's, through z2) to fail with
 * TC_TOLERANCES. The tolerances below allow a bias of one ulp an operand (2^-9 a product) with
 * room, and still catch a wrong row (an error of the order of 1e-1). What 10 epochs say is another
 * matter: a bias of a few parts in 10^4 in z1 is far below the noise of SGD itself, so expect the
 * accuracy after 10 epochs within the run-to-run spread of tf32's (the bench holds the two within
 * 0.3 points). Rounding where the operands are written costs a few instructions in kernels that
 * write them anyway, and it keeps the errors unbiased: the reason to do it is that it is nearly
 * free, not that 10 epochs can tell. */
#ifndef CH07_EX2_TF32_TRUNCATED_CUH
#define CH07_EX2_TF32_TRUNCATED_CUH

#include "07_mnist_mlp/part2_tensor_cores/01_tc_steps.cuh"

/* TF32 operands stored as fp32 unchanged: the tensor cores truncate them when they read them. */
struct MlpTf32Truncated {
    typedef float T;
    static constexpr bool TC = true;
    static __device__ __forceinline__ float cvt(float v) { return v; }
    static __device__ __forceinline__ void store8(float *p, const float (&v)[8])
    {
        float4 *q = (float4 *)p;
        q[0] = make_float4(v[0], v[1], v[2], v[3]);
        q[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
};

/* In CheckTolerances' order (loss, z1, dz2, v(W1) and v(b1), v(W2) and v(b2), parameters): a
 * product biased by up to 2^-9 (2e-3) moves z1 by up to that much normwise, and the loss and
 * dz2 through z2 by as much; twice that for room. v(W1) and v(b1) take the ReLU flips that the
 * bias causes: every unit whose z1 lies within the bias of the kink may flip, and in the check's
 * last batch of 16 rows one flipped unit is a sixteenth of its column of dW1 (an H100 measured
 * 1.9e-2 there, where 1e-2 was allowed at first); 4e-2 takes that, while an error of a whole row
 * of x in that batch (about 1/16 of the norm spread over the columns it touches, larger where it
 * lands) mostly shows. The parameters move by lr v, a small part of each weight. */
static const CheckTolerances EX2_TOLERANCES = {4e-3, 4e-3, 4e-3, 4e-2, 4e-3, 1e-3};

static const StepStages EX2_STAGES = {TC_LAUNCHES, FUSED_STAGE_NAMES, tc_stage<MlpTf32Truncated>,
                                      NULL};

static const StepFamily EX2_STEPS = {
    .fused = 1,
    .capturable = 1,
    .create = tc_create<MlpTf32Truncated>,
    .destroy = tc_destroy<MlpTf32Truncated>,
    .begin_epoch = tc_begin_epoch<MlpTf32Truncated>,
    .step = tc_step<MlpTf32Truncated>,
    .evaluate = tc_evaluate<MlpTf32Truncated>,
    .tolerances = &EX2_TOLERANCES,
    .stages = &EX2_STAGES,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

#endif
