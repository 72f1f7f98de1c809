// dbsparse generated kernel: spmv.longrow.f64.b256
#define DBS_KEY "spmv.longrow.f64.b256"
#include "spmv_csr_longrow.cuh"
