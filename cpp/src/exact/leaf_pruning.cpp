#include "leaf_pruning.hpp"

#include <cstdlib>
#include <string>

namespace pgexact {
namespace pairs {

bool pruning_enabled() {
  const char* flag = std::getenv("PGEXACT_LEAF_PRUNING");
  return flag == nullptr || std::string(flag) != "0";
}
double prune_share() {
  const char* flag = std::getenv("PGEXACT_LEAF_PRUNING");
  return flag != nullptr && std::string(flag) == "reckless" ? 1e-2 : kPruneShare;
}

}  // namespace pairs
}  // namespace pgexact
