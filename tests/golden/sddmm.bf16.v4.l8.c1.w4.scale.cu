// dbsparse generated kernel: sddmm.bf16.v4.l8.c1.w4.scale
#include "sddmm_csr.cuh"
