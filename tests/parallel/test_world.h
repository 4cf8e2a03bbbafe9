// The parallel tests' one communicator: the world that mpirun (or a single process) gives, made
// once per test binary, with a timeout so that a test whose peer died fails instead of hanging.
#pragma once

#include <memory>

#include "parallel/comm.h"

namespace sft::test {

inline Comm& world() {
  static std::unique_ptr<Comm> w = [] {
    std::unique_ptr<Comm> c = make_comm_from_environment();
    c->set_timeout(60);
    return c;
  }();
  return *w;
}

}  // namespace sft::test
