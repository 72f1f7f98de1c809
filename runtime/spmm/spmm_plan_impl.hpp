#pragma once
// The SpMM plan's state (SpmmPlan::Impl): its spec (spmm_spec.hpp) and what materialize made of it
// on the device. Shared by the plan of a CsrMatrix (spmm_plan.cpp, spmm_materialize.cpp), of a
// DeviceCsrView64 (spmm_plan_view64.cpp), the calls (spmm_run.cpp) and explain
// (spmm_explain.cpp). Internal: only runtime/spmm includes it.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "dbsparse/abi/spmm.h"
#include "dbsparse/brp.hpp"
#include "dbsparse/spmm.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/spmm/spmm_relu.hpp"
#include "runtime/spmm/spmm_spec.hpp"

namespace dbsparse {
namespace spmm_detail {

template <class U>
inline DeviceBuffer<U> upload(const std::vector<U>& v) {
  return DeviceBuffer<U>(std::span<const U>(v));
}

template <class U>
inline const U* dev(const DeviceBuffer<U>& b) {
  return reinterpret_cast<const U*>(b.ptr());
}

}  // namespace spmm_detail

struct SpmmPlan::Impl {
  spmm_detail::SpmmSpec spec;  // its tables dropped once uploaded
  BrpStats stats;              // BRP path: its conversion's figures
  // The row kernels' CSR: the residual rows (BRP; row_id maps them to C's rows) or all of A (CSR;
  // row_id is the rows' order when there is one).
  DeviceBuffer<int32_t> row_ptr, col_idx, row_id;
  DeviceBuffer<float> vals;
  DeviceBuffer<uint16_t> vals16;  // instead of vals in f16 / bf16
  // The TC groups.
  DeviceBuffer<int32_t> window, old_col, win_group;
  DeviceBuffer<uint8_t> local_id;
  DeviceBuffer<float> group_vals;
  DeviceBuffer<uint16_t> group_vals16;  // instead of group_vals in f16 / bf16
  DeviceBuffer<uint32_t> afrag;         // the groups' A operands in fragment order (SpmmArgs::afrag)
  DeviceBuffer<int32_t> pieces;         // triples: see SpmmArgs::pieces
  // CSR f32 split (SpmmConfig::csr_split): long rows' parts in the rows' launch (SpmmArgs::parts).
  DeviceBuffer<int32_t> parts, part_first;
  DeviceBuffer<float> part_sum;
  DeviceBuffer<uint32_t> part_count;
  // Staged windows (abi::SpmmStageArgs) and the rows left to the CSR kernel then (plain_rows).
  DeviceBuffer<int32_t> st_win_row, st_win_col, st_cols, st_rows, st_ptr, plain_rows;
  DeviceBuffer<uint16_t> st_slot;
  DeviceBuffer<float> st_vals;
  // f16 / bf16 with pieces: the cut units' f32 sums (abi::SpmmAcc), rounded into C by `finalize`.
  DeviceBuffer<float> acc_w;
  DeviceBuffer<int32_t> acc_slot, acc_units;

  CUfunction tc = nullptr, tc_pieces = nullptr;
  CUfunction rows1 = nullptr, rows4 = nullptr, rows1_pieces = nullptr, rows4_pieces = nullptr;
  CUfunction staged = nullptr, finalize = nullptr;
  int carveout = -1;  // the rows kernels' preferred shared carveout (l1_carveout.hpp); -1: the driver's
  std::vector<KernelInfo> kernels;
  // A DeviceCsrView64's arrays (not owned): the plan runs csr_spmm_rows64 on them.
  uint64_t view_row_ptr64 = 0, view_col_idx = 0, view_vals = 0;
  detail::ReluPass relu;  // the epilogue's own pass, where it is not fused

  abi::SpmmAcc acc() const {
    abi::SpmmAcc w{};
    if (spec.acc.n_units == 0) return w;
    w.w = reinterpret_cast<float*>(acc_w.ptr());
    w.slot = spmm_detail::dev(acc_slot);
    w.units = spmm_detail::dev(acc_units);
    w.n_units = spec.acc.n_units;
    w.unit_rows = spec.acc.unit_rows;
    return w;
  }
  uint64_t vals_ptr() const { return spec.dtype == SpmmDtype::F32 ? vals.ptr() : vals16.ptr(); }
  uint64_t group_vals_ptr() const { return spec.dtype == SpmmDtype::F32 ? group_vals.ptr() : group_vals16.ptr(); }
};

namespace spmm_detail {

// The plan of a CsrMatrix<float> from its spec: A's arrays (or BRP's, converted on the device or
// the host) and the spec's tables uploaded, the kernels loaded, BRP's operands expanded.
std::unique_ptr<SpmmPlan::Impl> materialize(Context& ctx, SpmmSpec spec, const CsrMatrix<float>& a);

// The CSR kernels of spec.csr_key1 and (vec4) csr_key4, their L1 preference: both plans' CSR path.
void load_csr_kernels(const Context& ctx, SpmmPlan::Impl& p);

// The epilogue's own pass, where the spec could not fuse it (after the path's kernels).
void load_epilogue(const Context& ctx, SpmmPlan::Impl& p);

}  // namespace spmm_detail
}  // namespace dbsparse
