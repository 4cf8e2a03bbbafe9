#include "train/subset_dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"
#include "core/rng.h"

namespace sft {

std::pair<std::shared_ptr<data::PreparedDataset>, std::shared_ptr<data::PreparedDataset>>
split_dataset(std::shared_ptr<const data::PreparedDataset> base, double eval_ratio, uint64_t seed) {
  const size_t n = base->num_rows();
  const size_t n_eval = static_cast<size_t>(std::ceil(eval_ratio * static_cast<double>(n)));
  if (n_eval == 0 || n_eval >= n)
    fail("train", "--eval_split_ratio " + std::to_string(eval_ratio) + " of " + std::to_string(n) +
                      " rows leaves an empty train or eval set (hint: a ratio in (0, 1) and more "
                      "rows, or a test split)");
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  Rng rng(seed, /*stream=*/0x5e11);  // its own stream: independent of the loader's shuffle
  for (size_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  std::vector<size_t> eval(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_eval));
  std::vector<size_t> train(order.begin() + static_cast<std::ptrdiff_t>(n_eval), order.end());
  std::sort(eval.begin(), eval.end());
  std::sort(train.begin(), train.end());
  return {std::make_shared<SubsetDataset>(base, std::move(train)),
          std::make_shared<SubsetDataset>(base, std::move(eval))};
}

}  // namespace sft
