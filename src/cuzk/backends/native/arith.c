/* Which Montgomery product the kernels use: the MULX/ADX assembly of
 * mont_x86.h where the CPU has BMI2 and ADX, else mont.h's portable C. */
#include "kernels.h"
#include "mont.h"

int cuzk_use_adx = 0;

int arith_adx_supported(void)
{
#ifdef CUZK_ADX_PATH
    __builtin_cpu_init();
    return __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("adx");
#else
    return 0;
#endif
}

int arith_select(int adx)
{
    if (adx && !arith_adx_supported())
        return 0;
    cuzk_use_adx = adx;
    return 1;
}

int arith_is_adx(void) { return cuzk_use_adx; }
