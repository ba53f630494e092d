#include "net/systemd_notify.hpp"

#include <string>

#include <systemd/sd-daemon.h>

namespace tb {

bool notify_systemd(std::string_view state) {
  std::string text{state};
  // 0: keep NOTIFY_SOCKET for the later calls (stopping, reloading).
  return sd_notify(0, text.c_str()) > 0;
}

void notify_ready(std::string_view status) {
  std::string state{"READY=1\nSTATUS="};
  state.append(status);
  notify_systemd(state);
}

void notify_stopping() {
  notify_systemd("STOPPING=1\nSTATUS=shutting down");
}

} // namespace tb
