// Internal to the kernels (not installed): their switches in the environment.
#pragma once

#include <cstdlib>
#include <string>

namespace pgexact {

// The value of environment variable `name`, "" where it is unset: the PGEXACT_* switches that
// tests and before/after benchmarks set to run one path or another (the Python layer sets none).
// Each is read where its path is chosen, once per call, so a test can change it between calls.
inline std::string env_switch(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace pgexact
