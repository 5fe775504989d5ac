#include "leaf_pruning.hpp"

#include "pgexact/exact/pair_kernel.hpp"  // kDefaultTolerance

#include <cstdlib>
#include <string>

namespace pgexact {
namespace pairs {

PruneBudget prune_budget(double tol) {
  const char* flag = std::getenv("PGEXACT_LEAF_PRUNING");
  const std::string mode = flag == nullptr ? "" : flag;
  PruneBudget budget;
  // `!(tol >= ...)` also turns pruning off for a NaN the bindings should have refused.
  if (mode == "0" || !(tol >= kDefaultTolerance)) return budget;
  budget.on = true;
  budget.certify = tol;
  budget.share = mode == "reckless" ? 1e-2 : tol / 10.0;
  return budget;
}

}  // namespace pairs
}  // namespace pgexact
