#include "apps/launch/launch.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "nuvec/serve/stop_signals.h"

namespace nuvec::launch {

namespace {

using Clock = std::chrono::steady_clock;

bool is_local(const std::string& host) {
  std::array<char, 256> name{};
  gethostname(name.data(), name.size() - 1);
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == name.data();
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) {
      parts.push_back(text.substr(start, comma - start));
    }
    start = comma + 1;
  }
  return parts;
}

/// `count` ports that are free on this machine now (the sockets stay open until all are chosen, so they differ).
std::vector<int> free_ports(size_t count) {
  std::vector<int> sockets;
  std::vector<int> ports;
  for (size_t i = 0; i < count; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      throw std::runtime_error(std::string("cannot find a free port: ").append(std::strerror(errno)));
    }
    sockets.push_back(fd);
    ports.push_back(ntohs(address.sin_port));
  }
  for (int fd : sockets) {
    ::close(fd);
  }
  return ports;
}

/// A word quoted for sh.
std::string quoted(const std::string& word) {
  std::string q = "'";
  for (char c : word) {
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return q + "'";
}

struct Rank {
  int index = 0;
  pid_t pid = -1;
  std::array<int, 2> fds{-1, -1};  // stdout, stderr
  std::array<std::string, 2> partial;
  bool running = true;
  int status = 0;
};

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
            Rank& rank) {
  std::array<std::array<int, 2>, 2> pipes{};
  for (auto& p : pipes) {
    if (::pipe2(p.data(), O_CLOEXEC) != 0) {  // ranks started later do not inherit them
      throw std::runtime_error(std::string("cannot create a pipe: ").append(std::strerror(errno)));
    }
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    throw std::runtime_error(std::string("cannot start a process: ").append(std::strerror(errno)));
  }
  if (pid == 0) {
    ::dup2(pipes[0][1], STDOUT_FILENO);
    ::dup2(pipes[1][1], STDERR_FILENO);
    for (auto& p : pipes) {
      ::close(p[0]);
      ::close(p[1]);
    }
    for (const auto& [name, value] : env) {
      ::setenv(name.c_str(), value.c_str(), 1);
    }
    std::vector<char*> args;
    for (const auto& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "nuvec launch: cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  for (size_t i = 0; i < 2; ++i) {
    ::close(pipes[i][1]);
    rank.fds[i] = pipes[i][0];
  }
  return pid;
}

/// Writes the complete lines of `text` (appended to `partial`) with the rank in front.
void forward(Rank& rank, size_t stream, const char* text, size_t n, std::FILE* out) {
  std::string& partial = rank.partial[stream];
  partial.append(text, n);
  size_t start = 0;
  for (size_t newline; (newline = partial.find('\n', start)) != std::string::npos; start = newline + 1) {
    std::fprintf(out, "[%d] %.*s\n", rank.index, static_cast<int>(newline - start), partial.data() + start);
  }
  partial.erase(0, start);
  std::fflush(out);
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 1; }

/// Sends a stop signal received since the last call on to the running ranks (a server's ranks stop together, rank 0
/// first draining its requests) instead of ending the launcher alone and leaving them orphaned.
void forward_stop_signal(const std::vector<Rank>& ranks) {
  const int signal = serve::StopSignals::take();
  if (signal == 0) {
    return;
  }
  for (const auto& rank : ranks) {
    if (rank.running) {
      ::kill(rank.pid, signal);
    }
  }
}

/// Forwards the ranks' output until all have exited; kills the rest `grace` after the first failure.
int supervise(std::vector<Rank>& ranks, double grace, std::FILE* out) {
  const serve::StopSignals signals;
  std::optional<Clock::time_point> failed_at;
  int result = 0;
  for (;;) {
    forward_stop_signal(ranks);
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, size_t>> owners;
    for (size_t r = 0; r < ranks.size(); ++r) {
      for (size_t s = 0; s < 2; ++s) {
        if (ranks[r].fds[s] >= 0) {
          fds.push_back({ranks[r].fds[s], POLLIN, 0});
          owners.emplace_back(r, s);
        }
      }
    }
    bool any_running = false;
    for (auto& rank : ranks) {
      any_running = any_running || rank.running;
    }
    if (fds.empty() && !any_running) {
      return result;
    }
    ::poll(fds.data(), fds.size(), 100);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) {
        continue;
      }
      auto& rank = ranks[owners[i].first];
      std::array<char, 65536> buffer{};
      const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (n > 0) {
        forward(rank, owners[i].second, buffer.data(), static_cast<size_t>(n), out);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(fds[i].fd);
        rank.fds[owners[i].second] = -1;
        forward(rank, owners[i].second, "\n", rank.partial[owners[i].second].empty() ? 0 : 1, out);
      }
    }
    for (auto& rank : ranks) {
      if (rank.running && ::waitpid(rank.pid, &rank.status, WNOHANG) == rank.pid) {
        rank.running = false;
        if (rank.status != 0) {
          std::fprintf(out, "nuvec launch: rank %d %s %d\n", rank.index,
                       WIFEXITED(rank.status) ? "exited with status" : "was killed by signal",
                       WIFEXITED(rank.status) ? WEXITSTATUS(rank.status) : WTERMSIG(rank.status));
          std::fflush(out);
          if (!failed_at) {
            failed_at = Clock::now();
            result = exit_code(rank.status);
          }
        }
      }
    }
    if (failed_at && Clock::now() - *failed_at > std::chrono::duration<double>(grace)) {
      for (auto& rank : ranks) {
        if (rank.running) {
          ::kill(rank.pid, SIGKILL);
        }
      }
    }
  }
}

int launch_mpi(const LaunchOptions& o, std::FILE* out) {
  std::vector<std::string> argv{"mpirun", "--tag-output"};
  if (o.hosts) {
    argv.insert(argv.end(), {"--host", *o.hosts});
  }
  const int n = o.processes > 0 ? o.processes : (o.hosts ? static_cast<int>(split_commas(*o.hosts).size()) : 1);
  argv.insert(argv.end(), {"-np", std::to_string(n)});
  argv.insert(argv.end(), o.command.begin(), o.command.end());
  std::vector<Rank> ranks(1);
  ranks[0].pid = spawn(argv, {}, ranks[0]);
  return supervise(ranks, o.grace_seconds, out);
}

}  // namespace

std::vector<std::string> command_after_dashes(int argc, char** argv, int& options_end) {
  options_end = argc;
  std::vector<std::string> command;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      options_end = i;
      command.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  return command;
}

int run_launch(const LaunchOptions& o, std::FILE* out) {
  if (o.command.empty()) {
    throw std::invalid_argument("the program to run goes after --: nuvec launch -n 2 -- PROGRAM ARGS");
  }
  if (o.backend == "mpi") {
    return launch_mpi(o, out);
  }
  if (o.backend != "ring") {
    throw std::invalid_argument(std::string("--backend expects ring or mpi, got '").append(o.backend).append("'"));
  }
  std::vector<std::string> hosts;
  std::vector<std::string> addresses;
  std::string hostfile;
  if (o.hostfile) {
    hostfile = *o.hostfile;
    std::ifstream file(hostfile);
    for (const auto& entry : nlohmann::json::parse(file)) {
      const auto address = (entry.is_array() ? entry.at(0) : entry).get<std::string>();
      addresses.push_back(address);
      hosts.push_back(address.substr(0, address.rfind(':')));
    }
  } else {
    hosts = o.hosts ? split_commas(*o.hosts) : std::vector<std::string>(static_cast<size_t>(o.processes), "127.0.0.1");
    if (hosts.empty() || (o.hosts && o.processes > 0 && static_cast<size_t>(o.processes) != hosts.size())) {
      throw std::invalid_argument("-n expects the number of ranks (one per --hosts entry when hosts are given)");
    }
    const std::vector<int> ports = o.starting_port > 0 ? std::vector<int>{} : free_ports(hosts.size());
    nlohmann::json json = nlohmann::json::array();
    for (size_t r = 0; r < hosts.size(); ++r) {
      const int port = o.starting_port > 0 ? o.starting_port + static_cast<int>(r) : ports[r];
      addresses.push_back(hosts[r] + ":" + std::to_string(port));
      json.push_back({addresses.back()});
    }
    std::string path = "/tmp/nuvec-hostfile-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) {
      throw std::runtime_error(std::string("cannot write the host file: ").append(std::strerror(errno)));
    }
    const std::string text = json.dump();
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!written) {
      throw std::runtime_error(std::string("cannot write the host file ").append(path));
    }
    hostfile = path;
  }
  std::vector<Rank> ranks(hosts.size());
  std::array<char, 4096> cwd{};
  const bool have_cwd = ::getcwd(cwd.data(), cwd.size()) != nullptr;
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].index = static_cast<int>(r);
    const std::string rank = std::to_string(r);
    if (is_local(hosts[r])) {
      ranks[r].pid = spawn(o.command, {{"NUVEC_RANK", rank}, {"MLX_RANK", rank}, {"NUVEC_HOSTFILE", hostfile},
                                       {"MLX_HOSTFILE", hostfile}},
                           ranks[r]);
      continue;
    }
    // A remote rank gets the host file's text and the same working directory.
    std::ifstream file(hostfile);
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const std::string remote_file = std::string("/tmp/nuvec-hostfile-").append(std::to_string(::getpid())) + ".json";
    std::string script = std::string("printf %s ").append(quoted(text)).append(" > ").append(remote_file);
    if (have_cwd) {
      script.append(" && cd ").append(quoted(cwd.data()));
    }
    script.append(" && NUVEC_RANK=").append(rank).append(" MLX_RANK=").append(rank);
    script.append(" NUVEC_HOSTFILE=").append(remote_file).append(" MLX_HOSTFILE=").append(remote_file).append(" exec");
    for (const auto& word : o.command) {
      script.append(" ").append(quoted(word));
    }
    ranks[r].pid = spawn({"ssh", hosts[r], script}, {}, ranks[r]);
  }
  const int result = supervise(ranks, o.grace_seconds, out);
  if (!o.hostfile) {
    ::unlink(hostfile.c_str());
  }
  return result;
}

}  // namespace nuvec::launch
