// Compact binary form of an Arena, for pickling and for shipping a model to other processes.
#pragma once

#include <string>
#include <string_view>

#include "pgexact/model/arena.hpp"

namespace pgexact {

// The node and tree arrays, little-endian, behind a magic tag and a format version.
std::string serialize_arena(const Arena& arena);

// Rebuilds the arena through build_arena, so a corrupted or hostile byte string is validated
// like any model file: ModelError, never a crash.
Arena deserialize_arena(std::string_view bytes);

}  // namespace pgexact
