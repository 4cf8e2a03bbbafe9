// The one-rank communicator: every collective is the identity (comm.cpp returns before
// moving data when size() == 1; the movers below are still correct for one rank).
#include <cstring>

#include "parallel/comm.h"

namespace sft {

namespace {

class LocalComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string kind() const override { return "local"; }
  std::unique_ptr<Comm> split(int /*color*/, int /*key*/) override {
    return std::make_unique<LocalComm>();
  }

 protected:
  void exchange(const void* send, std::span<const size_t> send_counts,
                std::span<const size_t> send_displs, void* recv,
                std::span<const size_t> /*recv_counts*/, std::span<const size_t> recv_displs,
                size_t elem_size) override {
    if (send_counts[0] == 0) return;
    std::memmove(static_cast<char*>(recv) + recv_displs[0] * elem_size,
                 static_cast<const char*>(send) + send_displs[0] * elem_size,
                 send_counts[0] * elem_size);
  }
  void gather_all(void*, std::span<const size_t>, std::span<const size_t>, size_t) override {}
  void broadcast_bytes(void*, size_t, int) override {}
  void do_barrier() override {}
};

}  // namespace

std::unique_ptr<Comm> make_local_comm() {
  return std::make_unique<LocalComm>();
}

}  // namespace sft
