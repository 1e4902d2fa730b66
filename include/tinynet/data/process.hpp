#pragma once
/// \file
/// Running an external command (npm, tar) for the fetcher: no shell, so paths need no
/// quoting; in a directory of our choosing; output to a log file whose tail goes into
/// error messages; killed (its own process group, nothing else) if it outlives a timeout.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace tinynet::data::detail {

/// How a command ended: `ok()` when it ran and exited 0; otherwise `error` says why.
struct ProcessResult {
  int exit_code = -1;
  std::string error;  ///< empty on success
  bool ok() const { return error.empty(); }
};

/// The last `max_lines` non-empty lines of a text file, joined by " | ".
inline std::string log_tail(const std::filesystem::path& log, int max_lines = 3) {
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  std::string out;
  const std::size_t first = lines.size() > static_cast<std::size_t>(max_lines) ? lines.size() - max_lines : 0;
  for (std::size_t i = first; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

/// Runs `argv` (argv[0] looked up on PATH) in `cwd` with stdin from /dev/null and stdout
/// and stderr to `log`; waits at most `timeout_s` seconds, then kills its process group.
inline ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                                 const std::filesystem::path& log, long timeout_s) {
  ProcessResult result;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  // The actions run in order: after the chdir a relative log path would resolve inside cwd.
  const std::string abs_cwd = std::filesystem::absolute(cwd).string();
  const std::string abs_log = std::filesystem::absolute(log).string();
  posix_spawn_file_actions_addchdir_np(&actions, abs_cwd.c_str());
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, abs_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // Its own process group, so a timeout can end it and the children it started (npm runs node).
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    result.error = "cannot run '" + argv[0] + "': " + std::strerror(rc);
    return result;
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      result.error = "waiting for '" + argv[0] + "' failed: " + std::strerror(errno);
      return result;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.error = "'" + argv[0] + "' did not finish within " + std::to_string(timeout_s) + " s";
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
    if (result.exit_code != 0) {
      std::ostringstream os;
      os << "'" << argv[0] << "' exited with status " << result.exit_code;
      if (result.exit_code == 127) os << " (command not found?)";
      if (const std::string tail = log_tail(log); !tail.empty()) os << ": " << tail;
      result.error = os.str();
    }
  } else {
    result.error = "'" + argv[0] + "' was killed by signal " + std::to_string(WTERMSIG(status));
  }
  return result;
}

}  // namespace tinynet::data::detail
