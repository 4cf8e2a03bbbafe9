// Built without CUDA (so without NCCL): a device communicator says why there is none.
#include "core/error.h"
#include "parallel/device_comm.h"

namespace sft {

std::unique_ptr<DeviceComm> make_device_comm(Comm& host) {
  fail("parallel", "collectives on device memory over " + std::to_string(host.size()) +
                       " ranks need NCCL, and this sft was built without CUDA (hint: rebuild "
                       "with -DSFT_CUDA=ON, or --use_cpu)");
}

bool nccl_built() {
  return false;
}

}  // namespace sft
