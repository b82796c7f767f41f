#include "nuvec/distributed/timeout.h"

#include <cstdlib>
#include <sstream>
#include <string>

#include "nuvec/core/error.h"

namespace nuvec::distributed::detail {

std::chrono::milliseconds timeout() {
  const char* text = std::getenv("NUVEC_DISTRIBUTED_TIMEOUT");
  if (text == nullptr || *text == '\0') {
    return std::chrono::seconds(300);
  }
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds > 0)) {
    throw_invalid(std::string("[distributed] NUVEC_DISTRIBUTED_TIMEOUT must be a positive number of seconds; got '")
                      .append(text)
                      .append("'."));
  }
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

std::string timeout_text(std::chrono::milliseconds limit) {
  std::ostringstream text;
  text << "NUVEC_DISTRIBUTED_TIMEOUT, " << std::chrono::duration<double>(limit).count() << " s";
  return text.str();
}

}  // namespace nuvec::distributed::detail
