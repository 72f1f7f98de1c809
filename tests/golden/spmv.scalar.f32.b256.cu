// dbsparse generated kernel: spmv.scalar.f32.b256
#define DBS_KEY "spmv.scalar.f32.b256"
#include "spmv_csr_scalar.cuh"
