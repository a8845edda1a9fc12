"""mxsim format names -> the independent oracles' types (gfloat FormatInfo, ml_dtypes dtypes) and
mxsim rounding-mode names -> gfloat's RoundMode."""

import ml_dtypes
import numpy as np
from gfloat import RoundMode
from gfloat.formats import (
    format_info_ocp_e2m1,
    format_info_ocp_e2m3,
    format_info_ocp_e3m2,
    format_info_ocp_e4m3,
    format_info_ocp_e5m2,
    format_info_ocp_e8m0,
    format_info_ocp_int8,
    format_info_p3109,
)

GFLOAT_FORMATS = {
    "fp8_e4m3": format_info_ocp_e4m3,
    "fp8_e5m2": format_info_ocp_e5m2,
    "fp6_e3m2": format_info_ocp_e3m2,
    "fp6_e2m3": format_info_ocp_e2m3,
    "fp4_e2m1": format_info_ocp_e2m1,
    "e8m0": format_info_ocp_e8m0,
    "int8": format_info_ocp_int8,
}
# IEEE P3109 binary8pP: gfloat's own definition (signed, extended: +-Inf at 0x7F / 0xFF)
GFLOAT_P3109 = {f"binary8p{p}": format_info_p3109(8, p) for p in range(1, 8)}
ML_DTYPES = {
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
    "e8m0": ml_dtypes.float8_e8m0fnu,
    "fp8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "fp8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "bf16": ml_dtypes.bfloat16,
    "fp16": np.float16,
}
GFLOAT_MODES = {
    "rne": RoundMode.TiesToEven,
    "rna": RoundMode.TiesToAway,
    "rtz": RoundMode.TowardZero,
    "rup": RoundMode.TowardPositive,
    "rdn": RoundMode.TowardNegative,
}
