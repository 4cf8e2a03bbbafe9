#include <cstdlib>
#include <string>

#include "dist/comm.h"

namespace sft {

std::unique_ptr<Comm> make_comm_from_environment() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && std::atoi(v) > 1) return make_mpi_comm();
  }
  return make_local_comm();
}

}  // namespace sft
