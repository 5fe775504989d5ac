// A driver for profiling the pair kernel from C++ (perf sees its symbols; the Python extension is
// stripped). Built by bench/profile/profile_pairs.py, which also writes its inputs:
//
//   profile_pairs MODEL.json ROWS.bin N_ROWS MODE [THREADS]
//
// MODEL.json: an XGBoost JSON model; ROWS.bin: float64 rows, row-major, n_features per row
// (numpy's tofile); MODE: count (enumerate every tree pair once: pairs, bytes, ns per pair),
// set (PG2 of all features), curve (PGI2's curve of a per-row random ranking), rank (greedy).
// Times are wall-clock seconds of one call; sigma = 0.3, normal noise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "pgexact/model/arena.hpp"
#include "pgexact/exact/kernels.hpp"
#include "pgexact/exact/leaf_pairs.hpp"
#include "pgexact/exact/ranking.hpp"
#include "pgexact/model/xgboost_parser.hpp"

using namespace pgexact;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void count_pairs(const Arena& a) {
  const auto t0 = std::chrono::steady_clock::now();
  const LeafBoxes boxes(a);
  PairScratch scratch;
  PairList list;
  long long pairs = 0, entries = 0, bytes = 0;
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    for (std::int64_t s = t; s < a.n_trees(); ++s) {
      list.clear();
      enumerate_pairs(a, boxes, t, s, boxes.tree_first[t], boxes.tree_first[t + 1], scratch, list);
      pairs += static_cast<long long>(list.n_pairs);
      entries += static_cast<long long>(list.n_features);
      bytes += static_cast<long long>(list.bytes());
    }
  }
  const double sec = seconds_since(t0);
  std::printf("trees %lld, leaves %d, pairs (s >= t) %lld, entries per pair %.2f, %.1f bytes per pair, "
              "enumeration %.3f s = %.1f ns per pair\n",
              static_cast<long long>(a.n_trees()), boxes.n_leaves(), pairs, double(entries) / double(pairs),
              double(bytes) / double(pairs), sec, sec * 1e9 / double(pairs));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s MODEL.json ROWS.bin N_ROWS count|set|curve|rank [THREADS]\n", argv[0]);
    return 2;
  }
  std::ifstream model_file(argv[1], std::ios::binary);
  std::stringstream text;
  text << model_file.rdbuf();
  XGBoostModelInfo info;
  const Arena a = build_arena(parse_xgboost_json(text.str(), -1, &info));
  const std::string mode = argv[4];
  if (mode == "count") {
    count_pairs(a);
    return 0;
  }
  const std::int64_t rows = std::stoll(argv[3]);
  const int threads = argc > 5 ? std::stoi(argv[5]) : 1;
  const std::int64_t d = a.n_features;
  std::vector<double> X(static_cast<std::size_t>(rows * d));
  std::ifstream rows_file(argv[2], std::ios::binary);
  rows_file.read(reinterpret_cast<char*>(X.data()), static_cast<std::streamsize>(X.size() * sizeof(double)));
  if (!rows_file) {
    std::fprintf(stderr, "%s holds fewer than %lld rows of %lld features\n", argv[2], static_cast<long long>(rows),
                 static_cast<long long>(d));
    return 2;
  }
  Noise noise;
  noise.family.assign(static_cast<std::size_t>(d), NoiseFamily::Normal);
  noise.sigma.assign(static_cast<std::size_t>(d), 0.3);
  std::vector<std::int64_t> ranking;
  std::mt19937_64 rng(1);
  for (std::int64_t i = 0; i < rows; ++i) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(d));
    for (std::int64_t j = 0; j < d; ++j) order[static_cast<std::size_t>(j)] = j;
    std::shuffle(order.begin(), order.end(), rng);
    ranking.insert(ranking.end(), order.begin(), order.end());
  }
  std::vector<double> out(static_cast<std::size_t>(rows * d));
  std::vector<std::int64_t> chosen(static_cast<std::size_t>(rows * d));
  const std::vector<std::uint8_t> all(static_cast<std::size_t>(d), 1);
  const auto t0 = std::chrono::steady_clock::now();
  if (mode == "set") {
    pg2_batch(a, noise, X.data(), rows, all.data(), false, threads, Pruning::Full, out.data());
  } else if (mode == "curve") {
    pg2_curve_batch(a, noise, X.data(), rows, ranking.data(), true, d, threads, Pruning::Full, out.data());
  } else if (mode == "rank") {
    greedy_rank_batch(a, noise, X.data(), rows, threads, Pruning::Full, chosen.data(), out.data());
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  const double sec = seconds_since(t0);
  std::printf("%s: %lld rows, %d thread(s): %.3f s, %.3f ms per row (first value %.17g)\n", mode.c_str(),
              static_cast<long long>(rows), threads, sec, sec * 1e3 / double(rows), out[0]);
  return 0;
}
