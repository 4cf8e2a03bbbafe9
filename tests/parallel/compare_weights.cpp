// sft_compare_weights A B TOL: compares two model folders' safetensors weights (the same
// names and shapes) and exits 1 when a tensor's max |a - b| exceeds TOL × max |a| (TOL 0:
// bit for bit). Prints the worst relative difference.
// sft_compare_weights --metrics A B TOL: the same for the per-step loss, aux_loss, grad_norm,
// mean_token_accuracy, entropy and num_tokens of two runs' trainer_state.json log_history (the same
// steps), or only the comma-separated KEYS given after TOL. Used by tests/parallel/train_mpi.cmake.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "io/json.h"
#include "io/safetensors.h"

namespace {

int compare_metrics(const std::string& a_dir, const std::string& b_dir, double tol,
                    const std::string& only) {
  const sft::Json a = sft::read_json_file(a_dir + "/trainer_state.json", "test");
  const sft::Json b = sft::read_json_file(b_dir + "/trainer_state.json", "test");
  double worst = 0;
  int steps = 0;
  for (const sft::Json& ea : a.at("log_history")) {
    const char* kind = ea.contains("loss") ? "loss" : ea.contains("eval_loss") ? "eval_loss" : "";
    if (*kind == 0) continue;
    const sft::Json* eb = nullptr;
    for (const sft::Json& e : b.at("log_history"))
      if (e.contains(kind) && e.at("step") == ea.at("step")) eb = &e;
    if (eb == nullptr) {
      std::fprintf(stderr, "%s of step %s is not in %s\n", kind, ea.at("step").dump().c_str(),
                   b_dir.c_str());
      return 1;
    }
    for (const char* key :
         {"loss", "aux_loss", "grad_norm", "mean_token_accuracy", "entropy", "num_tokens",
          "eval_loss", "eval_mean_token_accuracy", "eval_entropy"}) {
      if (!ea.contains(key) || !eb->contains(key)) continue;
      if (!only.empty() &&
          ("," + only + ",").find("," + std::string(key) + ",") == std::string::npos)
        continue;
      const double x = ea.at(key).get<double>(), y = eb->at(key).get<double>();
      const double rel = std::fabs(x - y) / std::max(std::fabs(x), 1e-12);
      if (rel > tol)
        std::printf("step %d %s: %.17g vs %.17g\n", ea.at("step").get<int>(), key, x, y);
      worst = std::max(worst, rel);
    }
    ++steps;
  }
  std::printf("%d log entries, max relative difference of the metrics %.3g\n", steps, worst);
  return steps > 0 && worst <= tol ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 5 || argc == 6) && std::string(argv[1]) == "--metrics") try {
      return compare_metrics(argv[2], argv[3], std::atof(argv[4]), argc == 6 ? argv[5] : "");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
  if (argc != 4) {
    std::fprintf(stderr, "usage: sft_compare_weights DIR_A DIR_B TOL\n");
    return 2;
  }
  try {
    const auto a = sft::SafetensorsCheckpoint::open_dir(argv[1]);
    const auto b = sft::SafetensorsCheckpoint::open_dir(argv[2]);
    const double tol = std::atof(argv[3]);
    if (a.names() != b.names()) {
      std::fprintf(stderr, "different tensor names\n");
      return 1;
    }
    double worst = 0;
    std::string worst_name;
    for (const std::string& name : a.names()) {
      const std::vector<float> x = a.tensor(name).to_f32_vector();
      const std::vector<float> y = b.tensor(name).to_f32_vector();
      if (x.size() != y.size()) {
        std::fprintf(stderr, "%s: different sizes\n", name.c_str());
        return 1;
      }
      double diff = 0, scale = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        diff = std::max(diff, std::fabs(double(x[i]) - double(y[i])));
        scale = std::max(scale, std::fabs(double(x[i])));
      }
      const double rel = scale > 0 ? diff / scale : diff;
      if (rel > worst || worst_name.empty()) {
        worst = rel;
        worst_name = name;
      }
    }
    std::printf("max relative difference %.3g (%s)\n", worst, worst_name.c_str());
    return worst <= tol ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
