#include "pgexact/model/json.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

#include "pgexact/model/arena.hpp"  // ModelError

namespace pgexact {
namespace {

// Model files nest about six levels deep; anything far deeper is hostile, and refusing it keeps
// the recursive descent well inside the stack.
constexpr int kMaxNesting = 128;
// No declared container may claim more elements than there are bytes left to hold them.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 31;

[[noreturn]] void fail_at(std::size_t pos, const std::string& what) {
  throw ModelError("malformed model file at byte " + std::to_string(pos) + ": " + what);
}

// Decimal exponent of the leading significant digit of a number that from_chars found out of
// range (so it is far from 0: its sign tells overflow from underflow). The explicit exponent is
// clamped, so a hostile "1e99999999999999999999" cannot overflow an integer.
long decimal_exponent(const char* first, const char* last) {
  const char* p = first;
  if (p < last && *p == '-') ++p;
  long int_digits = 0;   // digits before the point, from the first nonzero one
  long frac_zeros = 0;   // zeros right after the point, before the first nonzero digit
  bool nonzero = false;
  bool point = false;
  for (; p < last && *p != 'e' && *p != 'E'; ++p) {
    if (*p == '.') {
      point = true;
    } else if (!point) {
      if (nonzero || *p != '0') {
        nonzero = true;
        if (int_digits < 100000) ++int_digits;
      }
    } else if (!nonzero) {
      if (*p != '0') nonzero = true;
      else if (frac_zeros < 100000) ++frac_zeros;
    }
  }
  const long lead = int_digits > 0 ? int_digits - 1 : -(frac_zeros + 1);
  long exponent = 0;
  if (p < last) {
    ++p;
    bool neg = false;
    if (p < last && (*p == '-' || *p == '+')) neg = *p++ == '-';
    for (; p < last && *p >= '0' && *p <= '9'; ++p) {
      if (exponent < 100000) exponent = exponent * 10 + (*p - '0');
    }
    if (neg) exponent = -exponent;
  }
  return lead + exponent;
}

// Objects with repeated keys are ambiguous (which one does the writer mean?): refuse them.
void check_unique_keys(const JsonValue& obj, std::size_t pos) {
  const auto& m = obj.members;
  if (m.size() < 2) return;
  if (m.size() <= 32) {
    for (std::size_t i = 1; i < m.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (m[i].first == m[j].first) fail_at(pos, "key '" + m[i].first.substr(0, 60) + "' appears twice in an object");
      }
    }
    return;
  }
  std::vector<std::string_view> keys;
  keys.reserve(m.size());
  for (const auto& kv : m) keys.emplace_back(kv.first);
  std::sort(keys.begin(), keys.end());
  for (std::size_t i = 1; i < keys.size(); ++i) {
    if (keys[i] == keys[i - 1]) fail_at(pos, "key '" + std::string(keys[i].substr(0, 60)) + "' appears twice in an object");
  }
}

// Adds a parsed element to an array, keeping all-number arrays packed.
void append(JsonValue& array, JsonValue&& v) {
  const bool numeric = v.type == JsonValue::Type::Number || v.type == JsonValue::Type::Bool;
  if (numeric && v.inexact_integer) array.inexact_integer = true;
  if (array.items.empty() && numeric) {
    array.numbers.push_back(v.number);
    return;
  }
  if (array.items.empty() && !array.numbers.empty()) {
    for (double d : array.numbers) {
      JsonValue n;
      n.type = JsonValue::Type::Number;
      n.number = d;
      array.items.push_back(std::move(n));
    }
    array.numbers.clear();
  }
  array.items.push_back(std::move(v));
}

class TextParser {
 public:
  explicit TextParser(std::string_view s) : s_(s) {}
  // Byte offset of the first number beyond double range (npos: none).
  std::size_t first_out_of_range() const { return first_out_of_range_; }

  JsonValue parse_document() {
    JsonValue v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail_at(pos_, "trailing characters after the document");
    return v;
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
  std::size_t first_out_of_range_ = std::string_view::npos;

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  char peek() {
    skip_ws();
    if (pos_ >= s_.size()) fail_at(pos_, "unexpected end of input");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail_at(pos_, std::string("expected '") + c + "'");
    ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  JsonValue parse_value(int depth) {
    if (depth > kMaxNesting) fail_at(pos_, "nesting deeper than 128 levels");
    JsonValue v;
    const char c = peek();
    if (c == '{') {
      ++pos_;
      v.type = JsonValue::Type::Object;
      if (peek() == '}') { ++pos_; return v; }
      while (true) {
        if (peek() != '"') fail_at(pos_, "expected a string key");
        std::string key = parse_string();
        expect(':');
        JsonValue member = parse_value(depth + 1);
        v.members.emplace_back(std::move(key), std::move(member));
        const char d = peek();
        ++pos_;
        if (d == '}') break;
        if (d != ',') fail_at(pos_ - 1, "expected ',' or '}'");
      }
      check_unique_keys(v, pos_);
    } else if (c == '[') {
      ++pos_;
      v.type = JsonValue::Type::Array;
      if (peek() == ']') { ++pos_; return v; }
      while (true) {
        append(v, parse_value(depth + 1));
        const char d = peek();
        ++pos_;
        if (d == ']') break;
        if (d != ',') fail_at(pos_ - 1, "expected ',' or ']'");
      }
    } else if (c == '"') {
      v.type = JsonValue::Type::String;
      v.string = parse_string();
    } else if (literal("true")) {
      v.type = JsonValue::Type::Bool;
      v.number = 1.0;
    } else if (literal("false")) {
      v.type = JsonValue::Type::Bool;
    } else if (literal("null")) {
      v.type = JsonValue::Type::Null;
    } else {
      parse_number(v);
    }
    return v;
  }

  void parse_number(JsonValue& v) {
    const std::size_t start = pos_;
    bool integer = true;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if ((c >= '0' && c <= '9') || c == '-' || c == '+') {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        integer = false;
        ++pos_;
      } else {
        break;
      }
    }
    if (start == pos_) fail_at(pos_, "unexpected character");
    double d = 0.0;
    const char* first = s_.data() + start;
    const char* last = s_.data() + pos_;
    if (*first == '+') fail_at(start, "malformed number");
    const auto res = std::from_chars(first, last, d);
    if (res.ptr != last || (res.ec != std::errc() && res.ec != std::errc::result_out_of_range)) {
      fail_at(start, "malformed number");
    }
    if (res.ec == std::errc::result_out_of_range) {
      if (first_out_of_range_ == std::string_view::npos) first_out_of_range_ = start;
      // Beyond double range: a huge magnitude overflows to +-inf (the model validation rejects
      // non-finite values later), a tiny one underflows to a signed zero.
      const bool negative = *first == '-';
      d = decimal_exponent(first, last) > 0 ? (negative ? -HUGE_VAL : HUGE_VAL) : (negative ? -0.0 : 0.0);
    }
    v.type = JsonValue::Type::Number;
    v.number = d;
    v.is_integer = integer;
    if (integer && std::fabs(d) >= 9007199254740992.0) {
      // beyond 2^53, or a token that rounds to 2^53 without being it ("9007199254740993")
      const char* digits = *first == '-' ? first + 1 : first;
      while (last - digits > 1 && *digits == '0') ++digits;
      v.inexact_integer = std::string_view(digits, static_cast<std::size_t>(last - digits)) != "9007199254740992";
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail_at(pos_, "unterminated string");
      const char c = s_[pos_++];
      if (c == '"') break;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) fail_at(pos_, "unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail_at(pos_, "short \\u escape");
          unsigned code = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[pos_++];
            code <<= 4;
            if (h >= '0' && h <= '9') code |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f') code |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') code |= static_cast<unsigned>(h - 'A' + 10);
            else fail_at(pos_ - 1, "bad \\u escape");
          }
          // A high surrogate followed by an escaped low one is one code point (4 UTF-8 bytes);
          // a lone surrogate, which UTF-8 cannot hold, becomes U+FFFD.
          unsigned cp = code;
          if (code >= 0xD800 && code <= 0xDFFF) {
            cp = 0xFFFD;
            unsigned low = 0;
            bool paired = code <= 0xDBFF && pos_ + 6 <= s_.size() && s_[pos_] == '\\' && s_[pos_ + 1] == 'u';
            for (int k = 2; paired && k < 6; ++k) {
              const char h = s_[pos_ + k];
              low <<= 4;
              if (h >= '0' && h <= '9') low |= static_cast<unsigned>(h - '0');
              else if (h >= 'a' && h <= 'f') low |= static_cast<unsigned>(h - 'a' + 10);
              else if (h >= 'A' && h <= 'F') low |= static_cast<unsigned>(h - 'A' + 10);
              else paired = false;
            }
            if (paired && low >= 0xDC00 && low <= 0xDFFF) {
              pos_ += 6;
              cp = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
              out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
              out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
              out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
              out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
              break;
            }
          }
          code = cp;
          if (code < 0x80) {
            out.push_back(static_cast<char>(code));
          } else if (code < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (code >> 6)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
          } else {
            out.push_back(static_cast<char>(0xE0 | (code >> 12)));
            out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
          }
          break;
        }
        default: fail_at(pos_ - 1, "bad escape");
      }
    }
    return out;
  }
};

class UbjParser {
 public:
  explicit UbjParser(std::string_view s) : s_(s) {}

  JsonValue parse_document() {
    JsonValue v = parse_value(next(), 0);
    if (pos_ != s_.size()) fail_at(pos_, "trailing bytes after the document");
    return v;
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;

  char next() {
    if (pos_ >= s_.size()) fail_at(pos_, "unexpected end of input");
    return s_[pos_++];
  }
  void need(std::size_t n) {
    if (s_.size() - pos_ < n) fail_at(pos_, "unexpected end of input");
  }
  // UBJSON numbers are big-endian.
  template <typename T>
  T read_be() {
    need(sizeof(T));
    unsigned char b[sizeof(T)];
    for (std::size_t k = 0; k < sizeof(T); ++k) b[sizeof(T) - 1 - k] = static_cast<unsigned char>(s_[pos_ + k]);
    pos_ += sizeof(T);
    T out;
    std::memcpy(&out, b, sizeof(T));
    return out;
  }

  static bool is_numeric_marker(char m) {
    return m == 'i' || m == 'U' || m == 'I' || m == 'l' || m == 'L' || m == 'd' || m == 'D';
  }

  double read_number(char marker, bool* integer) {
    *integer = true;
    switch (marker) {
      case 'i': return static_cast<double>(read_be<std::int8_t>());
      case 'U': return static_cast<double>(read_be<std::uint8_t>());
      case 'I': return static_cast<double>(read_be<std::int16_t>());
      case 'l': return static_cast<double>(read_be<std::int32_t>());
      case 'L': return static_cast<double>(read_be<std::int64_t>());
      case 'd': *integer = false; return static_cast<double>(read_be<float>());
      case 'D': *integer = false; return read_be<double>();
      default: fail_at(pos_ - 1, "expected a number");
    }
  }

  std::uint64_t read_count() {
    bool integer = true;
    const double n = read_number(next(), &integer);
    if (!integer || n < 0 || n > static_cast<double>(kMaxElements)) fail_at(pos_, "invalid length");
    return static_cast<std::uint64_t>(n);
  }

  std::string read_string_body() {
    const std::uint64_t n = read_count();
    need(n);
    const std::size_t bad = first_invalid_utf8(s_.substr(pos_, n));
    if (bad != std::string_view::npos) {
      fail_at(pos_ + bad, "a string is not valid UTF-8 (UBJSON strings are UTF-8; re-save the model with its library)");
    }
    std::string out(s_.substr(pos_, n));
    pos_ += n;
    return out;
  }

  JsonValue parse_value(char marker, int depth) {
    if (depth > kMaxNesting) fail_at(pos_, "nesting deeper than 128 levels");
    JsonValue v;
    switch (marker) {
      case 'Z': v.type = JsonValue::Type::Null; return v;
      case 'T': v.type = JsonValue::Type::Bool; v.number = 1.0; return v;
      case 'F': v.type = JsonValue::Type::Bool; return v;
      case 'S': v.type = JsonValue::Type::String; v.string = read_string_body(); return v;
      case 'C':
        v.type = JsonValue::Type::String;
        v.string = std::string(1, next());
        if (static_cast<unsigned char>(v.string[0]) >= 0x80) fail_at(pos_ - 1, "a UBJSON char is not ASCII");
        return v;
      case '[': parse_array(v, depth); return v;
      case '{': parse_object(v, depth); return v;
      default:
        if (!is_numeric_marker(marker)) fail_at(pos_ - 1, "unknown type marker");
        v.type = JsonValue::Type::Number;
        v.number = read_number(marker, &v.is_integer);
        v.inexact_integer = v.is_integer && std::fabs(v.number) > 9007199254740992.0;
        return v;
    }
  }

  // Optional "$<type>" and "#<count>" headers of an optimised container.
  void read_container_header(char* type, std::int64_t* count) {
    *type = 0;
    *count = -1;
    need(1);
    if (s_[pos_] == '$') {
      ++pos_;
      *type = next();
      need(1);
      if (s_[pos_] != '#') fail_at(pos_, "typed container without a count");
    }
    if (s_[pos_] == '#') {
      ++pos_;
      *count = static_cast<std::int64_t>(read_count());
      // Even zero-byte elements (null, true, false) cannot outnumber the file's bytes in a
      // model we write; a larger count is a memory bomb, not a model.
      if (static_cast<std::uint64_t>(*count) > s_.size()) fail_at(pos_, "container longer than the file");
    }
  }

  void parse_array(JsonValue& v, int depth) {
    v.type = JsonValue::Type::Array;
    char type = 0;
    std::int64_t count = -1;
    read_container_header(&type, &count);
    if (count >= 0) {
      if (type != 0 && is_numeric_marker(type)) {
        // A typed numeric array: at least one byte per element must still be there.
        need(static_cast<std::size_t>(count));
        v.numbers.reserve(static_cast<std::size_t>(count));
        bool integer = true;
        for (std::int64_t k = 0; k < count; ++k) {
          v.numbers.push_back(read_number(type, &integer));
          if (integer && std::fabs(v.numbers.back()) > 9007199254740992.0) v.inexact_integer = true;
        }
        return;
      }
      for (std::int64_t k = 0; k < count; ++k) append(v, parse_value(type != 0 ? type : next(), depth + 1));
      return;
    }
    while (true) {
      const char m = next();
      if (m == ']') return;
      append(v, parse_value(m, depth + 1));
    }
  }

  void parse_object(JsonValue& v, int depth) {
    v.type = JsonValue::Type::Object;
    char type = 0;
    std::int64_t count = -1;
    read_container_header(&type, &count);
    if (count >= 0) {
      need(static_cast<std::size_t>(count));
      for (std::int64_t k = 0; k < count; ++k) {
        std::string key = read_string_body();
        v.members.emplace_back(std::move(key), parse_value(type != 0 ? type : next(), depth + 1));
      }
      check_unique_keys(v, pos_);
      return;
    }
    while (true) {
      need(1);
      if (s_[pos_] == '}') {
        ++pos_;
        check_unique_keys(v, pos_);
        return;
      }
      std::string key = read_string_body();
      v.members.emplace_back(std::move(key), parse_value(next(), depth + 1));
    }
  }
};

}  // namespace

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

const JsonValue& JsonValue::at(std::string_view key, std::string_view path) const {
  const JsonValue* v = find(key);
  if (v == nullptr) {
    throw ModelError("malformed model file: missing field " + std::string(path) + "." + std::string(key));
  }
  return *v;
}

bool is_valid_utf8(std::string_view s) { return first_invalid_utf8(s) == std::string_view::npos; }

std::size_t first_invalid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1Fu;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0Fu;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07u;
    } else {
      return i;
    }
    if (s.size() - i < len) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    const std::uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string printable_utf8(const std::string& s) {
  std::string_view rest(s);
  if (first_invalid_utf8(rest) == std::string_view::npos) return s;
  std::string out;
  while (!rest.empty()) {
    const std::size_t bad = first_invalid_utf8(rest);
    if (bad == std::string_view::npos) {
      out.append(rest);
      break;
    }
    out.append(rest.substr(0, bad));
    static const char* kHex = "0123456789abcdef";
    const auto b = static_cast<unsigned char>(rest[bad]);
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
    rest.remove_prefix(bad + 1);
  }
  return out;
}

JsonValue parse_json(std::string_view text, std::size_t* first_out_of_range) {
  // JSON is UTF-8 (RFC 8259); a stray byte in a key or a value is a corrupted file, which the
  // libraries' readers take in ways of their own (CatBoost's crashes on some): refuse it.
  const std::size_t bad = first_invalid_utf8(text);
  if (bad != std::string_view::npos) {
    fail_at(bad, "the text is not valid UTF-8 (a JSON model file must be UTF-8; re-save the model with its library)");
  }
  TextParser parser(text);
  JsonValue doc = parser.parse_document();
  if (first_out_of_range != nullptr) *first_out_of_range = parser.first_out_of_range();
  return doc;
}

JsonValue parse_ubjson(std::string_view bytes) { return UbjParser(bytes).parse_document(); }

}  // namespace pgexact
