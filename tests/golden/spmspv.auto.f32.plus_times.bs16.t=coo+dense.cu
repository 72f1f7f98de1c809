// dbsparse generated kernel: spmspv.auto.f32.plus_times.bs16.t=coo+dense
#define DBS_DIR 0
#define DBS_SEMIRING PlusTimes
#define DBS_HAS_COO 1
#define DBS_HAS_DENSE 1
#define DBS_HAS_CSR 0
#define DBS_HAS_CSC 0
#define DBS_PULL_COO_WARP 0
#include "spmspv.cuh"
