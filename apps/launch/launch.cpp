#include "apps/launch/launch.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nuvec/cpu/thread_pool.h"
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

/// The kernel's ephemeral port range, [first, last] (Linux's default when it cannot be read).
std::pair<int, int> ephemeral_ports() {
  std::pair<int, int> range{32768, 60999};
  std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 0;
  int last = 0;
  if (file >> first >> last && first > 0 && first <= last) {
    range = {first, last};
  }
  return range;
}

/// A socket bound to `port` on loopback, or -1.
int bound_socket(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return -1;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// A word quoted for sh.
std::string quoted(const std::string& word) {
  std::string q = "'";
  for (char c : word) {
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return q + "'";
}

/// The first line a remote rank's shell prints: its process id, which the command keeps (exec), so that a stop signal
/// can be passed on with `ssh HOST kill`.
constexpr std::string_view pid_marker = "nuvec-launch-pid";

using Env = std::vector<std::pair<std::string, std::string>>;

struct Rank {
  int index = 0;
  std::string host;  // the ssh destination; empty for this machine
  pid_t pid = -1;    // the rank, or the ssh that runs it
  std::optional<pid_t> remote_pid;
  bool awaiting_pid = false;
  std::array<int, 2> fds{-1, -1};  // stdout, stderr
  std::array<std::string, 2> partial;
  bool running = true;
  bool killed = false;
  int status = 0;
};

/// Starts `argv` with `env` added to this environment; its stdout and stderr go to new pipes whose read ends land in
/// `fds`, or to /dev/null without `fds`.
pid_t spawn(const std::vector<std::string>& argv, const Env& env, std::array<int, 2>* fds) {
  std::array<std::array<int, 2>, 2> pipes{};
  for (auto& p : pipes) {
    p = {-1, -1};
    if (fds != nullptr && ::pipe2(p.data(), O_CLOEXEC) != 0) {  // ranks started later do not inherit them
      throw std::runtime_error(std::string("cannot create a pipe: ").append(std::strerror(errno)));
    }
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    throw std::runtime_error(std::string("cannot start a process: ").append(std::strerror(errno)));
  }
  if (pid == 0) {
    const int null = fds == nullptr ? ::open("/dev/null", O_WRONLY) : -1;
    ::dup2(fds != nullptr ? pipes[0][1] : null, STDOUT_FILENO);
    ::dup2(fds != nullptr ? pipes[1][1] : null, STDERR_FILENO);
    for (auto& p : pipes) {
      for (const int fd : p) {
        if (fd >= 0) {
          ::close(fd);
        }
      }
    }
    for (const auto& [name, value] : env) {
      ::setenv(name.c_str(), value.c_str(), 1);
    }
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "nuvec launch: cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  if (fds != nullptr) {
    for (size_t i = 0; i < 2; ++i) {
      ::close(pipes[i][1]);
      (*fds)[i] = pipes[i][0];
    }
  }
  return pid;
}

/// Writes the complete lines of `text` (appended to `partial`) with the rank in front; a remote rank's first line,
/// its process id, is kept instead.
void forward(Rank& rank, size_t stream, const char* text, size_t n, std::FILE* out) {
  std::string& partial = rank.partial[stream];
  partial.append(text, n);
  size_t start = 0;
  for (size_t newline; (newline = partial.find('\n', start)) != std::string::npos; start = newline + 1) {
    const std::string_view line(partial.data() + start, newline - start);
    if (stream == 0 && rank.awaiting_pid) {
      rank.awaiting_pid = false;
      if (line.starts_with(pid_marker)) {
        rank.remote_pid = std::atoi(std::string(line.substr(pid_marker.size())).c_str());
        continue;
      }
    }
    std::fprintf(out, "[%d] %.*s\n", rank.index, static_cast<int>(line.size()), line.data());
  }
  partial.erase(0, start);
  std::fflush(out);
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 1; }

/// The ranks and what reaches the remote ones.
struct Ranks {
  std::vector<Rank> ranks;
  std::string ssh;
  std::vector<pid_t> helpers;  // the ssh commands that pass signals on

  /// Sends `signal` (SIGTERM, SIGINT or SIGKILL) to a rank. A remote one gets it by `ssh HOST kill -SIG PID`: ending
  /// the ssh client would leave its command running. SIGKILL also ends the client, so that a host that stopped
  /// answering cannot hold the launcher; so does any signal before the remote process id is known.
  void signal(Rank& rank, int signal) {
    if (rank.host.empty() || !rank.remote_pid) {
      ::kill(rank.pid, signal);
      return;
    }
    const char* name = signal == SIGKILL ? "KILL" : signal == SIGINT ? "INT" : "TERM";
    helpers.push_back(
        spawn({ssh, rank.host, std::string("kill -").append(name).append(" ") + std::to_string(*rank.remote_pid)}, {},
              nullptr));
    if (signal == SIGKILL) {
      ::kill(rank.pid, SIGKILL);
    }
  }

  /// Sends a stop signal received since the last call on to the running ranks (a server's ranks stop together, rank
  /// 0 first draining its requests) instead of ending the launcher alone and leaving them orphaned.
  void forward_stop_signal() {
    const int received = serve::StopSignals::take();
    if (received == 0) {
      return;
    }
    for (auto& rank : ranks) {
      if (rank.running) {
        signal(rank, received);
      }
    }
  }

  /// Reaps the signal helpers, giving them a few seconds to deliver their signal (a rank may have ended before its
  /// helper reached the host), then ends those that still run (a host that stopped answering).
  void reap_helpers() {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    for (const pid_t helper : helpers) {
      int status = 0;
      while (::waitpid(helper, &status, WNOHANG) == 0) {
        if (Clock::now() > deadline) {
          ::kill(helper, SIGKILL);
          ::waitpid(helper, &status, 0);
          break;
        }
        ::usleep(10000);
      }
    }
    helpers.clear();
  }
};

/// Forwards the ranks' output until all have exited; kills the rest `grace` after the first failure.
int supervise(Ranks& all, double grace, std::FILE* out) {
  const serve::StopSignals signals;
  std::vector<Rank>& ranks = all.ranks;
  std::optional<Clock::time_point> failed_at;
  int result = 0;
  for (;;) {
    all.forward_stop_signal();
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
      all.reap_helpers();
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
        if (rank.running && !rank.killed) {
          rank.killed = true;
          all.signal(rank, SIGKILL);
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
  Ranks ranks{std::vector<Rank>(1), "", {}};
  ranks.ranks[0].pid = spawn(argv, {}, &ranks.ranks[0].fds);
  return supervise(ranks, o.grace_seconds, out);
}

/// Where a rank runs and where its ring listens.
struct Placement {
  std::string host;     // the ssh destination; empty for this machine
  std::string address;  // "ip:port", the rank's entry in the ring's host file
};

std::string here_or(const std::string& host) { return is_local(host) ? std::string() : host; }

/// The ranks of --hosts, or -n ranks on this machine.
std::vector<Placement> host_list_placements(const LaunchOptions& o) {
  const std::vector<std::string> hosts =
      o.hosts ? split_commas(*o.hosts) : std::vector<std::string>(static_cast<size_t>(o.processes), "127.0.0.1");
  if (hosts.empty() || (o.hosts && o.processes > 0 && static_cast<size_t>(o.processes) != hosts.size())) {
    throw std::invalid_argument("-n expects the number of ranks (one per --hosts entry when hosts are given)");
  }
  const std::vector<int> ports = o.starting_port > 0 ? std::vector<int>{} : free_ports(hosts.size());
  std::vector<Placement> ranks;
  for (size_t r = 0; r < hosts.size(); ++r) {
    const int port = o.starting_port > 0 ? o.starting_port + static_cast<int>(r) : ports[r];
    ranks.push_back({here_or(hosts[r]), hosts[r] + ":" + std::to_string(port)});
  }
  return ranks;
}

/// The ranks of --hostfile: the ring's own format (per rank "ip:port", or a list of them whose first is used; the
/// rank runs on that ip), or mlx.launch's (per rank {"ssh": host, "ips": [ip, ...]}: it runs on host and listens on
/// its first ip, at the port --starting-port gives or a free one of this machine).
std::vector<Placement> hostfile_placements(const std::string& path, int starting_port) {
  std::ifstream file(path);
  if (!file) {
    throw std::runtime_error("cannot read the host file " + path + ": " + std::strerror(errno));
  }
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(file);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument("the host file " + path + " is not JSON: " + e.what());
  }
  if (!json.is_array() || json.empty()) {
    throw std::invalid_argument("the host file " + path + " must be a JSON list with one entry per rank; got " +
                                json.dump());
  }
  std::vector<int> ports;
  std::vector<Placement> ranks;
  for (size_t r = 0; r < json.size(); ++r) {
    const nlohmann::json& entry = json[r];
    const nlohmann::json& first = entry.is_array() && !entry.empty() ? entry[0] : entry;
    const bool mlx_entry = entry.is_object() && entry.contains("ssh") && entry["ssh"].is_string() &&
                           entry.contains("ips") && entry["ips"].is_array() && !entry["ips"].empty() &&
                           entry["ips"][0].is_string();
    if (first.is_string() && first.get<std::string>().rfind(':') != std::string::npos) {
      const auto address = first.get<std::string>();
      ranks.push_back({here_or(address.substr(0, address.rfind(':'))), address});
    } else if (mlx_entry) {
      if (starting_port <= 0 && ports.empty()) {
        ports = free_ports(json.size());
      }
      const int port = starting_port > 0 ? starting_port + static_cast<int>(r) : ports[r];
      ranks.push_back(
          {here_or(entry["ssh"].get<std::string>()), entry["ips"][0].get<std::string>() + ":" + std::to_string(port)});
    } else {
      throw std::invalid_argument(
          "the host file " + path + ": entry " + std::to_string(r) +
          R"( is neither "ip:port" (or a list of them) nor {"ssh": host, "ips": [ip, ...]}; got )" + entry.dump());
    }
  }
  return ranks;
}

/// The environment of every rank: the launcher's NUVEC_* and MLX_* variables but the per-rank ones (a remote shell
/// starts without them), sorted by name, then --env's NAME=VALUE pairs.
Env rank_environment(const std::vector<std::string>& extra) {
  Env env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const size_t equals = text.find('=');
    const std::string name = text.substr(0, equals);
    if (equals != std::string::npos && (name.starts_with("NUVEC_") || name.starts_with("MLX_")) &&
        name != "NUVEC_RANK" && name != "MLX_RANK" && name != "NUVEC_HOSTFILE" && name != "MLX_HOSTFILE" &&
        name != "NUVEC_SSH") {
      env.emplace_back(name, text.substr(equals + 1));
    }
  }
  std::sort(env.begin(), env.end());
  for (const std::string& pair : extra) {
    const size_t equals = pair.find('=');
    // The name goes into a remote shell's command line unquoted, so it must be a plain name.
    const bool plain = equals != std::string::npos && equals > 0 &&
                       std::isdigit(static_cast<unsigned char>(pair[0])) == 0 &&
                       std::all_of(pair.begin(), pair.begin() + static_cast<std::ptrdiff_t>(equals),
                                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; });
    if (!plain) {
      throw std::invalid_argument("--env expects NAME=VALUE with a NAME of letters, digits and _; got '" + pair + "'");
    }
    env.emplace_back(pair.substr(0, equals), pair.substr(equals + 1));
  }
  return env;
}

/// The thread counts of the ranks on this machine: its cores shared among them (at least one each) as
/// NUVEC_NUM_THREADS, and the same count for OpenBLAS and OpenMP, each where neither this environment nor --env sets
/// it (NUVEC_NUM_THREADS, where set, is the count). Otherwise each rank's pool takes every core, and OpenBLAS starts a
/// worker per core that spins for a while after the library loads and after each call: the ranks' threads crowd each
/// other out, and a small all-reduce waits for a descheduled thread (two ranks on two cores: 14 or 140 us at 1 KiB
/// from run to run, 17-27 us with one OpenBLAS thread each).
Env local_thread_counts(const std::vector<Placement>& placements, const Env& env) {
  const auto set_by = [&](const std::string& name) -> std::optional<std::string> {
    for (const auto& [key, value] : env) {
      if (key == name) {
        return value;
      }
    }
    if (const char* value = std::getenv(name.c_str())) {
      return value;
    }
    return std::nullopt;
  };
  const auto local =
      std::count_if(placements.begin(), placements.end(), [](const Placement& p) { return p.host.empty(); });
  if (local == 0) {
    return {};
  }
  const std::string count =
      set_by("NUVEC_NUM_THREADS").value_or(std::to_string(std::max<int64_t>(1, cpu::available_cores() / local)));
  Env counts;
  for (const char* name : {"NUVEC_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"}) {
    if (!set_by(name)) {
      counts.emplace_back(name, count);
    }
  }
  return counts;
}

/// The command line a remote rank's shell runs: writes the host file there, enters this working directory, prints
/// its process id (pid_marker), then becomes the program with the environment.
std::string remote_script(const std::string& hostfile_text, const std::string& remote_file, const std::string& cwd,
                          const Env& env, const std::vector<std::string>& command) {
  std::string script = std::string("printf %s ").append(quoted(hostfile_text)).append(" > ").append(remote_file);
  if (!cwd.empty()) {
    script.append(" && cd ").append(quoted(cwd));
  }
  script.append(" && echo ").append(pid_marker).append(" $$ && exec env");
  for (const auto& [name, value] : env) {
    script.append(" ").append(name).append("=").append(quoted(value));
  }
  for (const auto& word : command) {
    script.append(" ").append(quoted(word));
  }
  return script;
}

/// A file of this machine removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& text) : path_("/tmp/nuvec-hostfile-XXXXXX") {
    const int fd = ::mkstemp(path_.data());
    if (fd < 0) {
      throw std::runtime_error(std::string("cannot write the host file: ").append(std::strerror(errno)));
    }
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!written) {
      ::unlink(path_.c_str());
      throw std::runtime_error(std::string("cannot write the host file ").append(path_));
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  TempFile(TempFile&&) = delete;
  TempFile& operator=(TempFile&&) = delete;
  ~TempFile() { ::unlink(path_.c_str()); }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::vector<int> free_ports(size_t count) {
  const auto [first, last] = ephemeral_ports();
  // Below the ephemeral range when it leaves room there, else above it.
  const bool below = first > 10000;
  const int lowest = below ? std::max(1024, first - 20000) : last + 1;
  const int highest = below ? first - 1 : 65535;
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(lowest, std::max(lowest, highest));
  std::vector<int> sockets;  // kept open until all are chosen, so that they differ
  std::vector<int> ports;
  for (int attempt = 0; ports.size() < count && attempt < 1000; ++attempt) {
    const int port = pick(random);
    if (std::find(ports.begin(), ports.end(), port) != ports.end()) {
      continue;
    }
    const int fd = bound_socket(port);
    if (fd >= 0) {
      sockets.push_back(fd);
      ports.push_back(port);
    }
  }
  for (int fd : sockets) {
    ::close(fd);
  }
  if (ports.size() < count) {
    throw std::runtime_error("cannot find " + std::to_string(count) + " free ports between " +
                             std::to_string(lowest) + " and " + std::to_string(highest) + ".");
  }
  return ports;
}

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
  const std::vector<Placement> placements =
      o.hostfile ? hostfile_placements(*o.hostfile, o.starting_port) : host_list_placements(o);
  nlohmann::json json = nlohmann::json::array();
  for (const Placement& p : placements) {
    json.push_back({p.address});
  }
  const std::string text = json.dump();
  const TempFile hostfile(text);
  const Env env = rank_environment(o.env);
  const char* ssh_variable = std::getenv("NUVEC_SSH");
  Ranks ranks{std::vector<Rank>(placements.size()),
              o.ssh ? *o.ssh : (ssh_variable != nullptr && *ssh_variable != '\0' ? ssh_variable : "ssh"),
              {}};
  std::array<char, 4096> cwd{};
  const bool have_cwd = ::getcwd(cwd.data(), cwd.size()) != nullptr;
  const Env local_threads = local_thread_counts(placements, env);
  for (size_t r = 0; r < placements.size(); ++r) {
    Rank& rank = ranks.ranks[r];
    rank.index = static_cast<int>(r);
    rank.host = placements[r].host;
    const std::string index = std::to_string(r);
    // A remote rank gets its own copy of the host file (several ranks may share a host).
    const std::string file = rank.host.empty()
                                 ? hostfile.path()
                                 : "/tmp/nuvec-hostfile-" + std::to_string(::getpid()) + "-" + index + ".json";
    Env rank_env = env;
    rank_env.insert(rank_env.end(),
                    {{"NUVEC_RANK", index}, {"MLX_RANK", index}, {"NUVEC_HOSTFILE", file}, {"MLX_HOSTFILE", file}});
    if (rank.host.empty()) {
      rank_env.insert(rank_env.end(), local_threads.begin(), local_threads.end());
      rank.pid = spawn(o.command, rank_env, &rank.fds);
    } else {
      rank.awaiting_pid = true;
      rank.pid =
          spawn({ranks.ssh, rank.host, remote_script(text, file, have_cwd ? cwd.data() : "", rank_env, o.command)}, {},
                &rank.fds);
    }
  }
  return supervise(ranks, o.grace_seconds, out);
}

}  // namespace nuvec::launch
