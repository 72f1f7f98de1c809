// dbsparse generated kernel: spmv.scalar.f64.b128
#define DBS_KEY "spmv.scalar.f64.b128"
#include "spmv_csr_scalar.cuh"
