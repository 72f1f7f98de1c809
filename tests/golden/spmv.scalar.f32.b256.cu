// dbsparse generated kernel: spmv.scalar.f32.b256
#define DBS_KEY "spmv.scalar.f32.b256"
#define DBS_VALUE_T float
#define DBS_BLOCK 256
#include "spmv_csr_scalar.cuh"
