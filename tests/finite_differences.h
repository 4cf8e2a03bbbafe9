// float64 central finite differences, shared by the reference-kernel checks (tests/ops) and the
// conformance suite (tests/conformance): the gradient of a scalar f is compared element by
// element with the analytic one.
#pragma once

#include <cmath>
#include <functional>
#include <vector>

namespace sft::test {

inline constexpr double kFdTolerance = 1e-6;

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// ‖numeric − analytic‖ / ‖numeric‖, numeric the central difference of f over every element of x
// (x is perturbed in place and restored).
inline double fd_error(std::vector<double>& x, const std::function<double()>& f,
                       const std::vector<double>& analytic) {
  const double h = 1e-6;
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double fp = f();
    x[i] = keep - h;
    const double fm = f();
    x[i] = keep;
    const double g = (fp - fm) / (2 * h);
    num += (g - analytic[i]) * (g - analytic[i]);
    den += g * g;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace sft::test
