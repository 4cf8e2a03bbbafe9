// Reading files written by the reference Python library, bit for bit.
#include <gtest/gtest.h>

#include <cmath>

#include "io/safetensors.h"
#include "io/safetensors_test_util.h"
#include "test_paths.h"

namespace sft {

namespace {
const std::string kDir = "tests/fixtures/safetensors/";
}

TEST(SafetensorsReader, ReadsEveryDTypeThePythonLibraryWrites) {
  const Json expected =
      test::load_all_dtypes_expectation(test::source_path(kDir + "all_dtypes.json"));
  SafetensorsFile file = SafetensorsFile::open(test::source_path(kDir + "all_dtypes.safetensors"));
  EXPECT_EQ(Json(file.metadata()), expected["metadata"]);
  ASSERT_EQ(file.entries().size(), expected["tensors"].size());
  for (size_t i = 0; i < file.entries().size(); ++i) {
    const TensorEntry& entry = file.entries()[i];
    const Json& want = expected["tensors"][i];
    SCOPED_TRACE(entry.name);
    EXPECT_EQ(entry.name, want["name"]);
    EXPECT_EQ(dtype_name(entry.dtype), want["dtype"].get<std::string>());
    EXPECT_EQ(Json(entry.shape), want["shape"]);
    Tensor t = file.tensor(entry.name);
    EXPECT_TRUE(t.is_borrowed());  // zero-copy from the mapping
    EXPECT_EQ(test::to_hex(t.byte_span()), want["hex"].get<std::string>());
    // Values decoded through our conversions equal the values Python wrote.
    // Wide values are not all exact in f32; their bytes were compared above.
    if (entry.dtype == DType::kI64 || entry.dtype == DType::kI32 || entry.dtype == DType::kF64)
      continue;
    std::vector<float> values = t.to_f32_vector();
    ASSERT_EQ(values.size(), want["values"].size());
    for (size_t k = 0; k < values.size(); ++k) {
      double w = test::json_number(want["values"][k]);
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(values[k])) << k;
      } else {
        EXPECT_EQ(static_cast<double>(values[k]), w) << k;
        EXPECT_EQ(std::signbit(values[k]), std::signbit(w)) << k;
      }
    }
  }
}

TEST(SafetensorsReader, UnknownTensorNamesTheFile) {
  SafetensorsFile file = SafetensorsFile::open(test::source_path(kDir + "all_dtypes.safetensors"));
  try {
    file.tensor("nope");
    FAIL();
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(e.code(), SafetensorsErrc::kUnknownTensor);
    EXPECT_NE(std::string(e.what()).find("all_dtypes.safetensors: tensor 'nope'"),
              std::string::npos);
  }
}

TEST(SafetensorsReader, MissingFileIsAClearError) {
  try {
    SafetensorsFile::open("/nonexistent/model.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "[io] cannot open /nonexistent/model.safetensors: No such file or directory");
  }
}

}  // namespace sft
