#include "pgexact/model/serialize.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

namespace pgexact {
namespace {

constexpr char kMagic[8] = {'P', 'G', 'X', 'A', 'R', 'E', 'N', 'A'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint32_t kByteOrder = 0x01020304;

class Writer {
 public:
  template <typename T>
  void scalar(T v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    out.append(p, sizeof(T));
  }
  template <typename T>
  void array(const std::vector<T>& v) {
    scalar<std::uint64_t>(v.size());
    if (!v.empty()) out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string out;
};

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  template <typename T>
  T scalar() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, s_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <typename T>
  std::vector<T> array() {
    const auto n = scalar<std::uint64_t>();
    if (n > (s_.size() - pos_) / sizeof(T)) throw ModelError("serialized arena: array longer than the data");
    std::vector<T> v(static_cast<std::size_t>(n));
    if (n > 0) std::memcpy(v.data(), s_.data() + pos_, static_cast<std::size_t>(n) * sizeof(T));
    pos_ += static_cast<std::size_t>(n) * sizeof(T);
    return v;
  }
  bool done() const { return pos_ == s_.size(); }

 private:
  void need(std::size_t n) const {
    if (s_.size() - pos_ < n) throw ModelError("serialized arena: truncated data");
  }
  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string serialize_arena(const Arena& a) {
  Writer w;
  w.out.append(kMagic, sizeof(kMagic));
  w.scalar<std::uint32_t>(kVersion);
  w.scalar<std::uint32_t>(kByteOrder);
  w.scalar<std::int32_t>(a.n_features);
  w.scalar<std::uint8_t>(static_cast<std::uint8_t>(a.category_rule));
  w.scalar<std::uint8_t>(a.input_float32 ? 1 : 0);
  w.array(a.base_score);
  w.array(a.tree_root);
  w.array(a.tree_output);
  w.array(a.feature);
  w.array(a.left);
  w.array(a.right);
  w.array(a.threshold);
  w.array(a.value);
  w.array(a.flags);
  w.array(a.cat_begin);
  w.array(a.cat_size);
  w.array(a.cat_words);
  return std::move(w.out);
}

Arena deserialize_arena(std::string_view bytes) {
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    throw ModelError("serialized arena: not a pgexact arena (bad magic)");
  }
  Reader r(bytes.substr(sizeof(kMagic)));
  if (r.scalar<std::uint32_t>() != kVersion) throw ModelError("serialized arena: unsupported format version");
  if (r.scalar<std::uint32_t>() != kByteOrder) throw ModelError("serialized arena: written on a machine of another byte order");
  ModelInput in;
  in.n_features = r.scalar<std::int32_t>();
  const auto rule = r.scalar<std::uint8_t>();
  if (rule > 3) throw ModelError("serialized arena: unknown category rule");
  in.category_rule = static_cast<CategoryRule>(rule);
  in.input_float32 = r.scalar<std::uint8_t>() != 0;
  in.base_score = r.array<double>();
  const auto root = r.array<std::int32_t>();
  const auto output = r.array<std::int32_t>();
  const auto feature = r.array<std::int32_t>();
  const auto left = r.array<std::int32_t>();
  const auto right = r.array<std::int32_t>();
  const auto threshold = r.array<double>();
  const auto value = r.array<double>();
  const auto flags = r.array<std::uint8_t>();
  const auto cat_begin = r.array<std::int32_t>();
  const auto cat_size = r.array<std::int32_t>();
  const auto cat_words = r.array<std::uint32_t>();
  if (!r.done()) throw ModelError("serialized arena: trailing bytes");
  const std::size_t n = feature.size();
  if (left.size() != n || right.size() != n || threshold.size() != n || value.size() != n || flags.size() != n ||
      cat_begin.size() != n || cat_size.size() != n || output.size() != root.size()) {
    throw ModelError("serialized arena: inconsistent array lengths");
  }
  in.op = (n > 0 && (flags[0] & kLessEqual)) ? SplitOp::LessEqual : SplitOp::Less;
  // Trees are stored in pre-order, each a contiguous block starting at its root.
  CategoryBudget budget;  // nodes of a hostile file may all point at one large set
  for (std::size_t t = 0; t < root.size(); ++t) {
    const std::int64_t begin = root[t];
    const std::int64_t end = t + 1 < root.size() ? root[t + 1] : static_cast<std::int64_t>(n);
    if (begin < 0 || end > static_cast<std::int64_t>(n) || begin >= end) throw ModelError("serialized arena: bad tree offsets");
    TreeInput tree;
    tree.output = output[t];
    for (std::int64_t g = begin; g < end; ++g) {
      const bool leaf = feature[g] < 0;
      auto local = [&](std::int32_t id) -> std::int32_t {
        if (id < begin || id >= end) throw ModelError("serialized arena: child outside its tree");
        return static_cast<std::int32_t>(id - begin);
      };
      tree.left.push_back(leaf ? -1 : local(left[g]));
      tree.right.push_back(leaf ? -1 : local(right[g]));
      tree.feature.push_back(leaf ? 0 : feature[g]);
      tree.threshold.push_back(threshold[g]);
      tree.value.push_back(value[g]);
      tree.default_left.push_back((flags[g] & kDefaultLeft) ? 1 : 0);
      tree.missing.push_back(static_cast<std::uint8_t>((flags[g] >> kMissingShift) & 3u));
      if (!leaf && (flags[g] & kCategorical)) {
        const std::int64_t cb = cat_begin[g];
        const std::int64_t cs = cat_size[g];
        if (cb < 0 || cs < 0 || cb + cs > static_cast<std::int64_t>(cat_words.size())) {
          throw ModelError("serialized arena: bad category set");
        }
        budget.charge(cs);
        tree.cat_nodes.push_back(static_cast<std::int32_t>(g - begin));
        tree.cat_bitsets.emplace_back(cat_words.begin() + cb, cat_words.begin() + cb + cs);
      }
    }
    in.trees.push_back(std::move(tree));
  }
  return build_arena(std::move(in));
}

}  // namespace pgexact
