// dbsparse generated kernel: spmv.vector.f32.b256.l8
#define DBS_KEY "spmv.vector.f32.b256.l8"
#include "spmv_csr_vector.cuh"
