// dbsparse generated kernel: spmv.vector.f32.b256.l8
#define DBS_KEY "spmv.vector.f32.b256.l8"
#define DBS_VALUE_T float
#define DBS_BLOCK 256
#define DBS_LANES 8
#include "spmv_csr_vector.cuh"
