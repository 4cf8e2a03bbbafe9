// Stand-in for libFuzzer when the compiler is not clang: accepts the same command line
// (-max_total_time=N, -seed=N, corpus folders; other -flags ignored), runs every corpus
// file through the target, then random mutations of them until the time is up.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/rng.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void mutate(std::vector<uint8_t>& input, sft::Rng& rng) {
  const int edits = 1 + static_cast<int>(rng.below(4));
  for (int e = 0; e < edits; ++e) {
    switch (rng.below(4)) {
      case 0:  // flip a byte
        if (!input.empty()) input[rng.below(input.size())] = static_cast<uint8_t>(rng.next_u32());
        break;
      case 1:  // insert a byte
        input.insert(input.begin() + static_cast<std::ptrdiff_t>(rng.below(input.size() + 1)),
                     static_cast<uint8_t>(rng.next_u32()));
        break;
      case 2:  // erase a byte
        if (!input.empty())
          input.erase(input.begin() + static_cast<std::ptrdiff_t>(rng.below(input.size())));
        break;
      default:  // truncate
        if (!input.empty()) input.resize(rng.below(input.size()));
        break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  double max_seconds = 10;
  uint64_t seed = 1;
  std::vector<std::vector<uint8_t>> corpus;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("-max_total_time=", 0) == 0) {
      max_seconds = std::stod(arg.substr(16));
    } else if (arg.rfind("-seed=", 0) == 0) {
      seed = std::stoull(arg.substr(6));
    } else if (arg.rfind("-", 0) == 0) {
      continue;
    } else if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg)) {
        if (entry.is_regular_file()) corpus.push_back(read_all(entry.path()));
      }
    } else {
      corpus.push_back(read_all(arg));
    }
  }
  for (const auto& input : corpus) LLVMFuzzerTestOneInput(input.data(), input.size());
  if (corpus.empty()) corpus.emplace_back();
  sft::Rng rng(seed);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(max_seconds);
  uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<uint8_t> input = corpus[rng.below(corpus.size())];
    mutate(input, rng);
    LLVMFuzzerTestOneInput(input.data(), input.size());
    ++runs;
  }
  std::printf("standalone fuzz driver: %zu corpus inputs, %llu mutated runs, no crash\n",
              corpus.size(), static_cast<unsigned long long>(runs));
  return 0;
}
