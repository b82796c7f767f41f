#pragma once

// `nuvec launch`: starts the ranks of a distributed program (MLX's mlx.launch): N local processes, or one per
// host (over ssh when the host is not this machine, in the same working directory), with the ring's host file and
// rank in their environment, or under mpirun for the MPI backend. Each output line is forwarded with its rank in
// front; SIGTERM and SIGINT are passed on to every rank (to a remote one by its process id, over ssh); when a rank
// fails, the others get a grace period to report their own errors, then are killed.

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace nuvec::launch {

struct LaunchOptions {
  int processes = 0;                    // -n: local ranks (or ranks per the host list when hosts are given)
  std::optional<std::string> hosts;     // comma-separated, one rank each (a host may repeat)
  std::optional<std::string> hostfile;  // JSON: the ring's one list of "ip:port" per rank, or MLX's
                                        // {"ssh": host, "ips": [ip, ...]} per rank
  std::string backend = "ring";         // ring or mpi
  int starting_port = 0;                // 0: free ports chosen on this machine
  double grace_seconds = 10;            // how long the others may run after a rank failed
  std::optional<std::string> ssh;       // the program that reaches remote hosts (default: $NUVEC_SSH, else ssh)
  std::vector<std::string> env;         // NAME=VALUE set for every rank (--env, repeatable)
  std::vector<std::string> command;     // the program and its arguments
};

/// Splits `argv` at "--": the options before it (parsed by the caller), the program after it.
std::vector<std::string> command_after_dashes(int argc, char** argv, int& options_end);

/// Runs the ranks to completion; returns 0 when all succeeded, else the first failure's status (1 for a signal).
int run_launch(const LaunchOptions& options, std::FILE* out);

/// `count` distinct ports free on this machine's loopback now, outside the range the kernel gives connecting
/// sockets (ip_local_port_range): between their choice and the ranks' binds, no outgoing connection (the ranks' own,
/// or another job's) can take them.
std::vector<int> free_ports(size_t count);

}  // namespace nuvec::launch
