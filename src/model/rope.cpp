// Rotary embeddings: inv_freq per rope type (mirrors transformers' modeling_rope_utils) and the
// rotation itself. See rope.h.
#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace sft::model {

namespace {

std::vector<float> default_inv_freq(double base, int64_t dim) {
  std::vector<float> inv(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) {
    // transformers: 1 / base ** (arange(0, dim, 2).float() / dim) in fp32.
    const float expo = static_cast<float>(2 * i) / static_cast<float>(dim);
    inv[static_cast<size_t>(i)] = 1.0f / static_cast<float>(std::pow(base, double(expo)));
  }
  return inv;
}

double yarn_mscale(double scale, double m) {
  return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
}

}  // namespace

RopeFrequencies rope_frequencies(const ModelConfig& config, int64_t seq_len) {
  const RopeConfig& r = config.rope;
  // Partial rotary (partial_rotary_factor < 1): the tables cover a head's first `dim` dims
  // (transformers: int(head_dim * partial_rotary_factor)); the layer plan checks the count.
  const int64_t dim =
      static_cast<int64_t>(static_cast<double>(config.head_dim) * r.partial_rotary_factor);
  RopeFrequencies out;
  switch (r.type) {
    case RopeType::kDefault:
      out.inv_freq = default_inv_freq(r.theta, dim);
      break;
    case RopeType::kLinear:
      out.inv_freq = default_inv_freq(r.theta, dim);
      for (float& f : out.inv_freq) f /= static_cast<float>(r.factor);
      break;
    case RopeType::kDynamic: {
      const double max_pos = static_cast<double>(config.max_position_embeddings);
      const double len = std::max(static_cast<double>(seq_len), max_pos);
      const double base = r.theta * std::pow(r.factor * len / max_pos - (r.factor - 1),
                                             double(dim) / double(dim - 2));
      out.inv_freq = default_inv_freq(base, dim);
      break;
    }
    case RopeType::kLlama3: {
      out.inv_freq = default_inv_freq(r.theta, dim);
      const double old_len = static_cast<double>(r.original_max_position_embeddings);
      const double low_wavelen = old_len / r.low_freq_factor;
      const double high_wavelen = old_len / r.high_freq_factor;
      for (float& f : out.inv_freq) {
        const float wavelen = 2.0f * static_cast<float>(std::numbers::pi) / f;
        const float scaled = wavelen > low_wavelen ? f / static_cast<float>(r.factor) : f;
        const float smooth =
            (static_cast<float>(old_len) / wavelen - static_cast<float>(r.low_freq_factor)) /
            static_cast<float>(r.high_freq_factor - r.low_freq_factor);
        const float smoothed =
            (1 - smooth) * scaled / static_cast<float>(r.factor) + smooth * scaled;
        const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
        f = medium ? smoothed : scaled;
      }
      break;
    }
    case RopeType::kYarn: {
      const double orig = r.original_max_position_embeddings > 0
                              ? static_cast<double>(r.original_max_position_embeddings)
                              : static_cast<double>(config.max_position_embeddings);
      const double factor = r.factor;
      if (r.attention_factor) {
        out.attention_scaling = *r.attention_factor;
      } else if (r.mscale && r.mscale_all_dim && *r.mscale != 0 && *r.mscale_all_dim != 0) {
        out.attention_scaling =
            yarn_mscale(factor, *r.mscale) / yarn_mscale(factor, *r.mscale_all_dim);
      } else {
        out.attention_scaling = yarn_mscale(factor, 1.0);
      }
      auto correction_dim = [&](double rotations) {
        return (double(dim) * std::log(orig / (rotations * 2 * std::numbers::pi))) /
               (2 * std::log(r.theta));
      };
      double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
      if (r.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
      }
      low = std::max(low, 0.0);
      high = std::min(high, double(dim - 1));
      if (low == high) high += 0.001;
      out.inv_freq.resize(static_cast<size_t>(dim / 2));
      for (int64_t i = 0; i < dim / 2; ++i) {
        const float pos_freq = static_cast<float>(
            std::pow(r.theta, double(static_cast<float>(2 * i) / static_cast<float>(dim))));
        const float extrap = 1.0f / pos_freq;
        const float interp = 1.0f / (static_cast<float>(factor) * pos_freq);
        float ramp =
            (static_cast<float>(i) - static_cast<float>(low)) / static_cast<float>(high - low);
        ramp = std::clamp(ramp, 0.0f, 1.0f);
        const float extrap_factor = 1.0f - ramp;
        out.inv_freq[static_cast<size_t>(i)] =
            interp * (1 - extrap_factor) + extrap * extrap_factor;
      }
      break;
    }
    case RopeType::kLongrope: {
      // transformers' _compute_longrope_parameters: inv_freq = 1 / (ext · base^(2i/dim)) in fp32,
      // ext the long factors when seq_len passes original_max_position_embeddings, else the
      // short ones; cos and sin times attention_factor or sqrt(1 + ln f / ln original).
      const double orig = static_cast<double>(r.original_max_position_embeddings);
      const std::vector<double>& ext =
          static_cast<double>(seq_len) > orig ? r.long_factor : r.short_factor;
      if (static_cast<int64_t>(ext.size()) != dim / 2)
        fail("model", "longrope needs " + std::to_string(dim / 2) + " factors, got " +
                          std::to_string(ext.size()));
      out.inv_freq.resize(static_cast<size_t>(dim / 2));
      for (int64_t i = 0; i < dim / 2; ++i) {
        const float shape = static_cast<float>(2 * i) / static_cast<float>(dim);
        const float pw = static_cast<float>(std::pow(r.theta, double(shape)));
        out.inv_freq[static_cast<size_t>(i)] =
            1.0f / (static_cast<float>(ext[static_cast<size_t>(i)]) * pw);
      }
      if (r.attention_factor)
        out.attention_scaling = *r.attention_factor;
      else
        out.attention_scaling =
            r.factor <= 1.0 ? 1.0 : std::sqrt(1 + std::log(r.factor) / std::log(orig));
      break;
    }
  }
  return out;
}

void rope_tables(float* cos, float* sin, const RopeFrequencies& f, const int64_t* positions,
                 int64_t T) {
  const int64_t half = static_cast<int64_t>(f.inv_freq.size());
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      // transformers forms the angle in fp32, then cos/sin in fp32.
      const float angle = f.inv_freq[static_cast<size_t>(i)] * static_cast<float>(positions[t]);
      cos[t * half + i] = static_cast<float>(std::cos(double(angle)) * f.attention_scaling);
      sin[t * half + i] = static_cast<float>(std::sin(double(angle)) * f.attention_scaling);
    }
  }
}

}  // namespace sft::model
