"""mxsim format names -> the independent oracles' types (gfloat FormatInfo, ml_dtypes dtypes)."""

from gfloat.formats import (
    format_info_ocp_e2m1,
    format_info_ocp_e2m3,
    format_info_ocp_e3m2,
    format_info_ocp_e4m3,
    format_info_ocp_e5m2,
    format_info_ocp_e8m0,
    format_info_ocp_int8,
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
