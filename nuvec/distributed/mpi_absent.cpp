// The MPI backend of a build without MPI: never launched, and asking for it says why.
#ifndef NUVEC_HAVE_MPI

#include "nuvec/core/error.h"
#include "nuvec/distributed/mpi.h"

namespace nuvec::distributed::detail {

bool mpi_launched() { return false; }

std::shared_ptr<nuvec::detail::Communicator> mpi_world() {
  throw_unsupported("[distributed] This build has no MPI backend: install libopenmpi-dev and rebuild.");
}

}  // namespace nuvec::distributed::detail

#endif
