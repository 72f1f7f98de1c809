// dbsparse generated kernel: spmm.csr.v4.l8.w4.r4.max
#include "spmm_reduce.cuh"
