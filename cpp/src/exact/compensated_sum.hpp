// Internal (not installed): compensated (Neumaier) summation, shared by the kernels' sums.
#pragma once

#include <cmath>

namespace pgexact {

// Adds x to sum, keeping the rounding error in comp (the sum is sum + comp): the error stays at
// a few ulps of the result however many terms of either sign go in, which matters where trees
// cancel each other out.
inline void add_compensated(double& sum, double& comp, double x) {
  const double t = sum + x;
  comp += (std::fabs(sum) >= std::fabs(x)) ? (sum - t) + x : (x - t) + sum;
  sum = t;
}

}  // namespace pgexact
