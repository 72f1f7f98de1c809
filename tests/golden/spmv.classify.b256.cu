// dbsparse generated kernel: spmv.classify.b256
#define DBS_KEY "spmv.classify.b256"
#include "spmv_classify.cuh"
