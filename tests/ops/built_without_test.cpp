// Builds without CUDA or MPI link and explain themselves instead of crashing.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "ops/backend.h"
#include "parallel/comm.h"

namespace sft {

#if !SFT_WITH_CUDA
TEST(BuiltWithout, CudaSaysHowToGetIt) {
  EXPECT_FALSE(cuda_available());
  try {
    cuda_init(0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[cuda] sft was built without CUDA; rebuild with -DSFT_CUDA=ON");
  }
}
#endif

TEST(BuiltWithout, MpiSaysHowToGetIt) {
  if (mpi_built()) GTEST_SKIP() << "built with MPI (tests/parallel covers it)";
  EXPECT_THROW(make_mpi_comm(), Error);
}

TEST(LocalComm, IsTheIdentity) {
  auto comm = make_local_comm();
  std::vector<float> v = {1, 2, 3};
  comm->all_reduce_sum(v);
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
}

}  // namespace sft
