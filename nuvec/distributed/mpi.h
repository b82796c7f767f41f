#pragma once

// The MPI backend, through Open MPI when the build found it (NUVEC_HAVE_MPI). Every call is non-blocking and waited
// on with the timeout, so a rank that never joins ends in an error rather than a hang.

#include <memory>

#include "nuvec/core/communicator.h"

namespace nuvec::distributed::detail {

/// Whether this build has MPI and this process was started by mpirun.
bool mpi_launched();

/// The world group (MPI initialized on first use, finalized at exit unless a collective failed).
std::shared_ptr<nuvec::detail::Communicator> mpi_world();

}  // namespace nuvec::distributed::detail
