// A small read-only JSON / UBJSON document model, enough for XGBoost's model files.
//
// Arrays whose elements are all numbers (or booleans) are stored packed as doubles, so a
// model with 10^5 nodes costs a few flat vectors rather than 10^6 heap objects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pgexact {

class JsonValue {
 public:
  enum class Type : std::uint8_t { Null, Bool, Number, String, Array, Object };

  Type type = Type::Null;
  double number = 0.0;                                     // Number, Bool (0 / 1)
  bool is_integer = false;                                  // Number written without . or e
  // An integer token beyond 2^53 in magnitude (a Number), or an array directly holding one:
  // CatBoost's and XGBoost's readers keep such tokens as 64-bit integers and do not read them
  // as doubles.
  bool inexact_integer = false;
  std::string string;                                       // String
  std::vector<double> numbers;                              // Array of numbers (packed)
  std::vector<JsonValue> items;                             // Array of anything else
  std::vector<std::pair<std::string, JsonValue>> members;   // Object, in file order

  bool is_object() const { return type == Type::Object; }
  bool is_array() const { return type == Type::Array; }
  std::size_t size() const { return items.empty() ? numbers.size() : items.size(); }

  // Member lookup; nullptr when absent (or when this is not an object).
  const JsonValue* find(std::string_view key) const;
  // Member lookup that throws ModelError("missing field <path>") when absent.
  const JsonValue& at(std::string_view key, std::string_view path) const;
};

// Parses text JSON, which must be valid UTF-8. Throws ModelError with the byte offset on
// malformed input. A number beyond double range reads as +-inf or a signed zero; the offset of
// the first such number is stored in `first_out_of_range` when given (npos: none).
JsonValue parse_json(std::string_view text, std::size_t* first_out_of_range = nullptr);

// Parses Universal Binary JSON as written by XGBoost (`.ubj`, `save_raw("ubj")`).
JsonValue parse_ubjson(std::string_view bytes);

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF). Strings handed to Python (feature names, objective) must be.
bool is_valid_utf8(std::string_view s);
// Offset of the first byte where `s` stops being well-formed UTF-8; npos when it is.
std::size_t first_invalid_utf8(std::string_view s);

}  // namespace pgexact
