#pragma once
// Deterministic, seeded matrix generators, named by parameter strings:
//   stencil2d:n=512                       5-point Laplacian on an n×n grid
//   stencil3d:n=80,points=27              7- or 27-point stencil on an n³ grid
//   fem:nodes=700000,k=3,blocks=9,seed=1  dense k×k sub-blocks, `blocks` block columns per block row
//   banded:n=1000000,bw=8                 |i-j| <= bw
//   uniform:n=1000000,d=16,seed=1         d distinct random columns per row
//   rmat:scale=19,ef=8,seed=1             Graph500 R-MAT (A=0.57, B=C=0.19), symmetrised, no self loops
//   powerlaw:n=1000000,avg=8,alpha=1.5,max=200000,seed=1   power-law row lengths
//   roadnet:n=1400000,seed=1              road-network-like grid graph (as roadNet-TX: 2.8 a row, max ~12)
//   community:n=100000,k=100,p_in=0.02,p_out=0.00005,seed=1,scramble=0   stochastic block model
//   pruned:rows=4096,cols=4096,density=0.3,block=1,seed=1   normal weights pruned by magnitude
//                                         (per row, or in block x block tiles per block row)
// Values are deterministic pseudo-random in [-1, 1] (stencils use the Laplacian's values; pruned
// keeps its normal(0, 1) weights).
#include <map>
#include <string>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

struct GeneratorSpec {
  std::string kind;
  std::map<std::string, std::string> params;  // with defaults filled in
  std::string to_string() const;              // canonical text: kind:k=v,... in key order
};

// Throws InputError (file = the spec, line 0) naming the unknown kind or parameter, or bad value.
GeneratorSpec parse_generator_spec(const std::string& text);
CsrMatrix<double> generate(const GeneratorSpec& spec);
CsrMatrix<double> generate(const std::string& text);

// One line of help per generator, for --help texts.
std::string generator_help();

}  // namespace dbsparse
