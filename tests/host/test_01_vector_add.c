/* Host test for chapter 01: the float4 version's split into whole vectors and a scalar
 * tail covers every element exactly once, for every n from 0 to 4096 and every grid. */
#include <stdio.h>
#include <stdlib.h>

static int covers_exactly_once(int n, int threads)
{
    int *hits = calloc((size_t)n + 1, sizeof(int));
    int n4 = n / 4, ok = 1;
    for (int t = 0; t < threads; t++) {
        for (int i = t; i < n4; i += threads)
            for (int k = 0; k < 4; k++) hits[4 * i + k]++;
        int tail = 4 * n4 + t;
        if (tail < n) hits[tail]++;
    }
    for (int i = 0; i < n; i++) ok &= hits[i] == 1;
    free(hits);
    return ok;
}

int main(void)
{
    int ok = 1;
    const int grids[] = {4, 256, 1000};
    for (int g = 0; g < 3; g++)
        for (int n = 0; n <= 4096; n++) ok &= covers_exactly_once(n, grids[g]);
    printf("%s 01_vector_add: float4 + tail split covers each element once (n = 0..4096)\n",
           ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
